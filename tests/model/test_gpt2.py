"""The built-in GPT-2 against transformers' GPT2LMHeadModel on the same weights."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
import transformers
from hf_models import assert_cached_decode_matches_hf, assert_generate_equals_hf
from safetensors.numpy import load_file, save_file

import kvgen

PAD = 2
SHAPES = [
    dict(vocab_size=301, n_positions=64, n_embd=48, n_layer=2, n_head=4),
    dict(vocab_size=97, n_positions=40, n_embd=64, n_layer=3, n_head=8, scale_attn_by_inverse_layer_idx=True),
    dict(vocab_size=1000, n_positions=128, n_embd=32, n_layer=1, n_head=1, activation_function="gelu"),
]


def build(tmp_path_factory, shape, seed=0):
    torch.manual_seed(seed)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(initializer_range=0.3, **shape)).eval()
    directory = tmp_path_factory.mktemp("gpt2")
    model.save_pretrained(directory)
    return model, directory


@pytest.fixture(scope="module", params=SHAPES, ids=lambda s: f"v{s['vocab_size']}-h{s['n_head']}-l{s['n_layer']}")
def pair(request, tmp_path_factory):
    model, directory = build(tmp_path_factory, request.param)
    return model, kvgen.Model.load(directory)


def hf_logits(model, ids):
    with torch.inference_mode():
        return model(torch.as_tensor(ids)).logits.numpy()


def test_prefill_logits_match_up_to_the_full_context(pair):
    hf, kv = pair
    rng = np.random.default_rng(0)
    for length in (1, 7, hf.config.n_positions):
        ids = rng.integers(0, hf.config.vocab_size, (2, length))
        np.testing.assert_allclose(kv.forward(ids), hf_logits(hf, ids), atol=1e-4, rtol=1e-4)


def test_cached_decode_logits_match_a_full_recomputation(pair):
    hf, kv = pair
    assert_cached_decode_matches_hf(kv, hf, hf.config.n_positions, PAD)


@pytest.mark.parametrize(
    "settings",
    [
        dict(do_sample=False),
        dict(do_sample=False, repetition_penalty=1.3),
        dict(num_beams=3, num_return_sequences=2),
        dict(num_beams=4, num_return_sequences=4, length_penalty=2.0, early_stopping=True),
        dict(num_beams=2, early_stopping="never", length_penalty=0.5),
    ],
    ids=["greedy", "greedy_penalty", "beam3", "beam4_lp2_early", "beam2_never"],
)
def test_generate_equals_hf_generate(pair, settings):
    hf, kv = pair
    prompts = [[5, 9, 13, 4, 3], [7, 8], [11, 12, 13]]
    assert_generate_equals_hf(kv, hf, prompts, PAD, max_new_tokens=12, eos_token_id=[29, 45], **settings)


def test_kv_cache_is_sized_once_and_reported(pair):
    hf, kv = pair
    gen = kvgen.Generator(kv, kvgen.GenerationConfig(max_new_tokens=5, num_beams=2))
    gen.generate([[1, 2, 3]])
    c = hf.config
    assert gen.kv_cache_bytes == 2 * c.n_layer * 2 * (3 + 5) * c.n_embd * 4 == kv.kv_cache_bytes(2, 8)


def test_context_overflow_raises_before_any_work(pair):
    hf, kv = pair
    n = hf.config.n_positions
    with pytest.raises(ValueError, match="context overflow"):
        kvgen.Generator(kv, kvgen.GenerationConfig(max_new_tokens=5)).generate([[1] * (n - 2)])
    with pytest.raises(ValueError, match="context overflow"):
        kv.forward(np.ones((1, n + 1), dtype=np.int64))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        kv.forward([[1, hf.config.vocab_size]])


# ---- bad files -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def good_dir(tmp_path_factory):
    return build(tmp_path_factory, SHAPES[0])[1]


def copy_of(good_dir, tmp_path):
    target = tmp_path / "model"
    shutil.copytree(good_dir, target)
    return target


def edit_config(directory, **changes):
    path = directory / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))


def edit_tensors(directory, fn):
    path = directory / "model.safetensors"
    tensors = load_file(str(path))
    fn(tensors)
    save_file(tensors, str(path))


def test_missing_files(tmp_path, good_dir):
    with pytest.raises(FileNotFoundError, match="no such file or directory"):
        kvgen.Model.load(tmp_path / "nope")
    d = copy_of(good_dir, tmp_path)
    (d / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        kvgen.Model.load(d)
    (d / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="config.json"):
        kvgen.Model.load(d)


def test_unsupported_configurations(tmp_path, good_dir):
    d = copy_of(good_dir, tmp_path)
    edit_config(d, model_type="bert")
    with pytest.raises(ValueError, match="model_type='bert' is not supported"):
        kvgen.Model.load(d)
    edit_config(d, model_type="gpt2", activation_function="relu")
    with pytest.raises(ValueError, match="activation_function='relu'"):
        kvgen.Model.load(d)
    edit_config(d, activation_function="gelu_new", add_cross_attention=True)
    with pytest.raises(ValueError, match="add_cross_attention"):
        kvgen.Model.load(d)
    edit_config(d, add_cross_attention=False, n_embd=64)
    with pytest.raises(ValueError,
                       match=r"tensor 'transformer.wte.weight' has shape \(301, 48\), expected \(301, 64\)"):
        kvgen.Model.load(d)


def test_bad_tensors(tmp_path, good_dir):
    d = copy_of(good_dir, tmp_path)
    edit_tensors(d, lambda t: t.pop("transformer.h.1.mlp.c_fc.bias"))
    with pytest.raises(ValueError, match="no tensor 'h.1.mlp.c_fc.bias'"):
        kvgen.Model.load(d)
    d = copy_of(good_dir, tmp_path / "b")
    edit_tensors(d, lambda t: t.update({"transformer.ln_f.weight": t["transformer.ln_f.weight"].astype(np.float64)}))
    with pytest.raises(TypeError, match="'transformer.ln_f.weight' has dtype float64"):
        kvgen.Model.load(d)


def test_truncated_file(tmp_path, good_dir):
    d = copy_of(good_dir, tmp_path)
    path = d / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        kvgen.Model.load(d)
    path.write_bytes(b"\x00\x01")
    with pytest.raises(ValueError, match="truncated or corrupt"):
        kvgen.Model.load(d)
