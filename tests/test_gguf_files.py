"""Malformed, truncated, unsupported or inconsistent GGUF files: a clear ValueError or
FileNotFoundError naming the problem, never a crash."""

from __future__ import annotations

import numpy as np
import pytest

import kvgen
from llama_models import random_llama, write_llama_gguf

SHAPE = dict(vocab_size=50, hidden_size=32, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
             intermediate_size=48, max_position_embeddings=32)


@pytest.fixture(scope="module")
def hf():
    return random_llama(**SHAPE)


@pytest.fixture(scope="module")
def good(hf, tmp_path_factory):
    return write_llama_gguf(hf, tmp_path_factory.mktemp("good") / "good.gguf")


def test_the_good_file_loads(good):
    model = kvgen.Model.load(good)
    assert (model.architecture, model.vocab_size, model._core.num_kv_heads) == ("llama", 50, 2)
    assert "F32" in model.description


@pytest.mark.parametrize("fraction", [0.05, 0.5, 0.99])
def test_truncated_files(good, tmp_path, fraction):
    data = good.read_bytes()
    path = tmp_path / "cut.gguf"
    path.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(ValueError, match="cut.gguf"):
        kvgen.Model.load(path)


def test_garbage_after_the_magic(tmp_path):
    path = tmp_path / "garbage.gguf"
    path.write_bytes(b"GGUF" + np.random.default_rng(0).bytes(4000))
    with pytest.raises(ValueError, match="not a readable GGUF file"):
        kvgen.Model.load(path)


def test_not_a_gguf_file(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"\x00" * 100)
    with pytest.raises(ValueError, match="not a GGUF file"):
        kvgen.Model.load(path)
    with pytest.raises(FileNotFoundError, match="no such file or directory"):
        kvgen.Model.load(tmp_path / "missing.gguf")


def test_unknown_architecture(hf, tmp_path):
    with pytest.raises(ValueError, match="GGUF architecture 'falcon' is not supported"):
        kvgen.Model.load(write_llama_gguf(hf, tmp_path / "f.gguf", arch="falcon"))


def test_unsupported_tensor_type_is_named(hf, tmp_path):
    # an IQ4_NL tensor: 18-byte blocks of 32 values
    extra = {"blk.0.attn_q.weight": np.zeros((32, 18), dtype=np.uint8)}
    path = write_llama_gguf(hf, tmp_path / "k.gguf", skip=["blk.0.attn_q.weight"], extra=extra)
    with pytest.raises(ValueError, match="'blk.0.attn_q.weight' has type IQ4_NL, which kvgen does not read"):
        kvgen.Model.load(path)


def test_missing_tensor(hf, tmp_path):
    with pytest.raises(ValueError, match="GGUF tensor 'blk.1.ffn_up.weight' is missing"):
        kvgen.Model.load(write_llama_gguf(hf, tmp_path / "m.gguf", skip=["blk.1.ffn_up.weight"]))


def test_unexpected_tensor(hf, tmp_path):
    path = write_llama_gguf(hf, tmp_path / "u.gguf", extra={"blk.0.mystery.weight": np.ones((4, 4), np.float32)})
    with pytest.raises(ValueError, match="unexpected GGUF tensors.*blk.0.mystery.weight"):
        kvgen.Model.load(path)


def test_metadata_inconsistent_with_tensors(hf, tmp_path):
    wrong = {"blk.0.ffn_up.weight": np.ones((10, 32), np.float32)}
    path = write_llama_gguf(hf, tmp_path / "s.gguf", skip=["blk.0.ffn_up.weight"], extra=wrong)
    with pytest.raises(ValueError, match=r"'blk.0.ffn_up.weight' has shape \(10, 32\), expected \(48, 32\)"):
        kvgen.Model.load(path)
    with pytest.raises(ValueError, match=r"partial rotary embeddings \(rope.dimension_count = 8 of head_dim 4\)"):
        kvgen.Model.load(write_llama_gguf(hf, tmp_path / "h.gguf", heads=8))
    with pytest.raises(ValueError, match="head_count = 3 is not a positive multiple of head_count_kv = 2"):
        kvgen.Model.load(write_llama_gguf(hf, tmp_path / "h3.gguf", heads=3))
