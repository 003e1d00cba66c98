"""Malformed, truncated, unsupported or inconsistent GGUF files: a clear ValueError or
FileNotFoundError naming the problem, never a crash."""

from __future__ import annotations

import struct

import gguf
import gguf_fuzz
import numpy as np
import pytest
from gguf_models import smollm2_path
from llama_models import random_llama, write_llama_gguf

import kvgen
from kvgen.loaders.gguf.file import GGUFStrings, read_gguf_file

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
    # an NVFP4 tensor: 36-byte blocks of 64 values
    extra = {"blk.0.attn_q.weight": np.zeros((32, 36), dtype=np.uint8)}
    path = write_llama_gguf(hf, tmp_path / "k.gguf", skip=["blk.0.attn_q.weight"], extra=extra)
    with pytest.raises(ValueError, match="'blk.0.attn_q.weight' has type NVFP4, which kvgen does not read"):
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
    with pytest.raises(ValueError, match=r"rope.dimension_count = 8 of head_dim 4 is not supported for llama"):
        kvgen.Model.load(write_llama_gguf(hf, tmp_path / "h.gguf", heads=8))
    with pytest.raises(ValueError, match="head_count = 3 is not a positive multiple of head_count_kv = 2"):
        kvgen.Model.load(write_llama_gguf(hf, tmp_path / "h3.gguf", heads=3))


# --- the container checks of kvgen.loaders.gguf.file ------------------------------------------------------

def _patched(good, tmp_path, edits, name="bad.gguf"):
    """``good`` with ``edits`` [(struct format, byte offset, value)] applied."""
    data = bytearray(good.read_bytes())
    for fmt, at, value in edits:
        struct.pack_into(fmt, data, at, value)
    path = tmp_path / name
    path.write_bytes(bytes(data))
    return path


@pytest.fixture(scope="module")
def layout(good):
    return gguf_fuzz.layout_of(good)


def test_reader_agrees_with_gguf_py_on_valid_files(good):
    """Fields, tensor shapes, types and data of the validating reader against gguf.GGUFReader."""
    for path in (good, smollm2_path()):
        ours, theirs = read_gguf_file(path), gguf.GGUFReader(str(path))
        keys = [k for k in theirs.fields if not k.startswith("GGUF.")]
        assert list(ours.fields) == keys
        for key in keys:
            f, value = theirs.fields[key], ours.fields[key].value
            expected = f.contents()
            if isinstance(value, GGUFStrings):
                value = value.decode()
            elif isinstance(value, bytes):
                value = value.decode()
            elif isinstance(value, np.ndarray):
                value = value.tolist()
                expected = [float(x) if isinstance(x, float) else x for x in expected]
            assert value == expected, key
        assert [(t.name, t.shape, t.tensor_type, t.nbytes) for t in ours.tensors] == [
            (t.name, tuple(int(d) for d in t.shape), t.tensor_type, int(t.n_bytes)) for t in theirs.tensors]
        for a, b in zip(ours.tensors[:20], theirs.tensors[:20]):
            assert a.data.tobytes() == np.asarray(b.data).tobytes()


def test_f32_tensors_are_views_over_the_file(good):
    from kvgen.families import read_gguf

    model = read_gguf(good)
    embed = model.arrays["model.embed_tokens.weight"]
    assert isinstance(embed.base, np.ndarray) and not embed.flags.owndata and not embed.flags.writeable


@pytest.mark.parametrize("what, edit, match", [
    ("version 1", ("<I", 4, 1), "GGUF version 1; kvgen reads versions 2 and 3"),
    ("big-endian", (">I", 4, 3), "a big-endian file"),
    ("kv count", ("<Q", 16, 2**40), "the key-value count 1099511627776 does not fit"),
    ("tensor count", ("<Q", 8, 2**64 - 1), "the tensor count 18446744073709551615 does not fit"),
])
def test_header_checks(good, tmp_path, what, edit, match):
    with pytest.raises(ValueError, match=match):
        kvgen.Model.load(_patched(good, tmp_path, [edit]))


def test_metadata_checks(tmp_path):
    from gguf_models import write_tokenizer_gguf

    good = write_tokenizer_gguf(tmp_path / "arrays.gguf", metadata={"test.words": ["a", "b"]})
    layout = gguf_fuzz.layout_of(good)
    cases = [
        (("<I", layout.value_types[0], 13), "13 is not a GGUF value type"),
        (("<Q", layout.string_lengths[0], 2**63), "has length 9223372036854775808, past the end of the file"),
        (("<Q", layout.array_counts[0], 2**61), "the array count 2305843009213693952 does not fit"),
        (("<I", layout.array_item_types[0], 9), "the array count 1516123455488 does not fit"),  # string -> array
    ]
    for (fmt, at, value), match in cases:
        with pytest.raises(ValueError, match=match):
            kvgen.Model.load(_patched(good, tmp_path, [(fmt, at, value)]))


def test_array_nesting_is_bounded(tmp_path):
    key = struct.pack("<Q", 1) + b"k"
    nested = struct.pack("<IIQ", 9, 9, 1) + struct.pack("<IQ", 9, 1) * 2 + struct.pack("<IQ", 0, 0)  # 4 deep
    path = tmp_path / "nested.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + key + nested + bytes(64))
    with pytest.raises(ValueError, match="arrays nested more than 2 deep"):
        kvgen.Model.load(path)


def test_tensor_table_checks(good, layout, tmp_path):
    first_dim, offset = layout.dims[0], layout.tensor_offsets[1]
    cases = [
        ([("<I", layout.n_dims[0], 5)], "n_dims = 5; allowed: 1 to 4"),
        ([("<Q", first_dim, 0)], r"the dimensions \[0, .*\] are not all positive"),
        ([("<Q", first_dim, 2**63)], "runs past the end of the file"),
        ([("<I", layout.tensor_types[0], 99)], "the tensor type 99 is not a ggml type"),
        ([("<I", layout.tensor_types[0], 12)], "is not a multiple of its block size 256"),  # Q4_K
        ([("<Q", offset, 4)], "the data offset 4 is not a multiple of general.alignment = 32"),
        ([("<Q", offset, 0)], "overlap"),
    ]
    for edits, match in cases:
        with pytest.raises(ValueError, match=match):
            kvgen.Model.load(_patched(good, tmp_path, edits))


def test_config_sizes_must_be_positive(hf, tmp_path):
    from gguf_fuzz import rewrite

    good = write_llama_gguf(hf, tmp_path / "g.gguf")
    for key, kind, value, match in [("llama.block_count", "INT32", -1, "block_count = -1 is not a positive size"),
                                    ("llama.embedding_length", "UINT32", 0, "embedding_length = 0 is not a positive"),
                                    ("llama.attention.layer_norm_rms_epsilon", "FLOAT32", float("nan"),
                                     "layer_norm_rms_epsilon = nan is not a finite number")]:
        with pytest.raises(ValueError, match=match):
            kvgen.Model.load(rewrite(good, tmp_path / "c.gguf", {key: (kind, value)}))
