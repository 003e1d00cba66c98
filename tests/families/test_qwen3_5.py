"""Qwen3.5 (kvgen.families.qwen3_5) against transformers' Qwen3_5ForCausalLM: a hybrid of Gated
DeltaNet layers (a recurrent state per sequence) and gated full-attention layers, from float32
and bfloat16 directories and from a Qwen3_5ForConditionalGeneration directory (the text model
under text_config, beside a vision tower); and the recurrent state through the engine's
features: beam search, n > 1, batches of prompts of different lengths and the prefix cache
(speculation's rollback and the prefix cache's snapshots: tests/generation/test_recurrent_state_reuse.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers
from family_check import PAD
from family_models import VOCAB, reference, save_family_model
from hf_models import assert_generate_equals_hf
from hybrid_checks import (
    check_batch_equals_one_by_one,
    check_beams,
    check_positions,
    check_prefix_cache_equals_fresh_run,
    check_rows_share_the_prompts_state,
    conditional_generation,
    randomize,
)
from llama_cpp_convert import _DRIVER, converter, save_smollm2_tokenizer

import kvgen
from kvgen.families import family_named

# 2 of the 4 layers Gated DeltaNet (2 key heads, 4 value heads), 2 gated attention (head_dim 128
# with Qwen3.5's partial rotary 0.25: 32 rotary dimensions, as wide as the rope sections cover:
# 2 x (6 + 5 + 5)).
TEXT = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
            num_key_value_heads=2, head_dim=128, max_position_embeddings=256, initializer_range=0.3,
            rms_norm_eps=1e-5, linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16,
            linear_num_key_heads=2, linear_num_value_heads=4,
            layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
            rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.25,
                                 mrope_section=[6, 5, 5], mrope_interleaved=True),
            tie_word_embeddings=False, pad_token_id=None, bos_token_id=1, eos_token_id=2)


def random_qwen3_5(seed: int = 0) -> transformers.Qwen3_5ForCausalLM:
    """A random Qwen3_5ForCausalLM whose norms (including the DeltaNet's gated one), decays and
    time-step biases are random too, so that each shows in the logits."""
    torch.manual_seed(seed)
    return randomize(transformers.Qwen3_5ForCausalLM(transformers.Qwen3_5TextConfig(**TEXT)))


@pytest.fixture(scope="module")
def hf():
    return random_qwen3_5()


@pytest.fixture(scope="module")
def directories(hf, tmp_path_factory, smollm2_file):
    root = tmp_path_factory.mktemp("qwen3_5")
    tokenizer = root / "tokenizer"
    save_smollm2_tokenizer(tokenizer, smollm2_file)
    return {"f32": save_family_model(hf, root / "f32", tokenizer),
            "bf16": save_family_model(hf, root / "bf16", tokenizer, torch.bfloat16),
            "tokenizer": tokenizer, "root": root}


@pytest.fixture(scope="module")
def model(directories):
    return kvgen.Model.load(directories["f32"], exact=True)


@pytest.fixture(scope="module")
def quantized(directories):
    """Q8_0 at load: each row of every product is computed on its own (float32 weights go through
    BLAS, whose rows depend on the rows beside them in the last bits, in every family)."""
    return kvgen.Model.load(directories["f32"], dtype="q8_0")


def test_directories_give_transformers_logits_and_greedy_tokens(hf, directories, model):
    assert family_named("qwen3_5").transformers_class == type(hf).__name__
    assert model.family == "qwen3_5" and model.capabilities.recurrent_state
    check_positions(model, hf, what="f32")
    bf16 = kvgen.Model.load(directories["bf16"], exact=True)
    check_positions(bf16, reference(type(hf), directories["bf16"]), lengths=(11,), what="bf16")
    assert_generate_equals_hf(model, hf, [[5, 9, 13, 4, 3], [7, 8]], PAD, max_new_tokens=12, do_sample=False)


def test_text_positions_make_the_rope_sections_ordinary_rotary_positions(hf, model):
    """transformers rotates by three position ids (temporal, height, width) split over the
    rope sections; for text all three are the token's position, which kvgen's ordinary
    rotary table computes. Positions that differ between the sections change transformers'
    logits, so the equality above depends on the sections reducing to one position."""
    ids = torch.as_tensor(np.random.default_rng(2).integers(0, VOCAB, (1, 9)))
    text = torch.arange(9)[None]
    with torch.inference_mode():
        same = hf(ids, position_ids=text.expand(3, 1, 9)).logits.numpy()
        apart = hf(ids, position_ids=torch.stack([text, text * 2, text + 5])).logits.numpy()
    np.testing.assert_allclose(model.forward(ids.numpy()), same, atol=2e-4, rtol=1e-4)
    assert np.abs(apart - same).max() > 1e-2


def test_a_conditional_generation_directory_loads_its_text_model(hf, directories):
    """The published layout: Qwen3_5ForConditionalGeneration, the text model's config under
    text_config and its tensors under model.language_model., beside a vision tower."""
    whole = conditional_generation(hf, transformers.Qwen3_5Config, transformers.Qwen3_5ForConditionalGeneration)
    path = save_family_model(whole, directories["root"] / "conditional", directories["tokenizer"])
    # a vision tensor that kvgen would refuse to read (int32): the vision tower stays unread
    from safetensors.numpy import load_file, save_file

    tensors = load_file(path / "model.safetensors")
    save_file({**tensors, "model.visual.unread": np.zeros(3, np.int32)}, path / "model.safetensors",
              metadata={"format": "pt"})
    loaded = kvgen.Model.load(path, exact=True)
    assert loaded.family == "qwen3_5"
    check_positions(loaded, whole, lengths=(11,), what="ConditionalGeneration")


def test_beam_search_takes_each_parents_state(hf, model):
    check_beams(model, hf)


def test_n_rows_share_the_prompts_state(model):
    check_rows_share_the_prompts_state(model)


def test_a_batch_of_different_lengths_equals_one_by_one(quantized):
    check_batch_equals_one_by_one(quantized, VOCAB)


def test_the_prefix_cache_equals_a_fresh_run(quantized):
    """A second prompt sharing the first's prefix, in a generator that keeps its slots: it
    shares 30 positions, before the first's one state snapshot (at 32), so it is computed
    from its first token."""
    model = quantized
    rng = np.random.default_rng(4)
    first = rng.integers(0, VOCAB, 40).tolist()
    second = first[:30] + rng.integers(0, VOCAB, 15).tolist()
    check_prefix_cache_equals_fresh_run(model, first, second)


def test_a_layer_pattern_that_does_not_match_the_tensors_names_the_layer(hf, directories):
    import json
    import shutil

    path = directories["root"] / "swapped"
    shutil.copytree(directories["f32"], path)
    config = json.loads((path / "config.json").read_text())
    config["layer_types"] = ["linear_attention", "linear_attention", "linear_attention", "full_attention"]
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="layer 1: the layer pattern makes it a linear-attention layer"):
        kvgen.Model.load(path)
    config["layer_types"] = TEXT["layer_types"]
    config["linear_num_key_heads"] = 3  # 4 value heads: not a multiple
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="linear_num_value_heads = 4 is not a multiple"):
        kvgen.Model.load(path)


def test_llama_cpps_file_gives_transformers_logits_tokenizer_and_template(hf, directories):
    """llama.cpp's converter (with --no-mtp: the random model has no multi-token-prediction
    head) writes -exp(A_log), the (1 + w) norms as 1 + w and the value heads tiled over the key
    heads; kvgen reads them back to transformers' logits, with the directory's tokenizer and
    chat template."""
    import subprocess
    import sys

    out = directories["root"] / "f32.gguf"
    driver = _DRIVER.replace('"--outtype", outtype]', '"--outtype", outtype, "--no-mtp"]')
    assert driver != _DRIVER
    done = subprocess.run([sys.executable, "-c", driver, str(converter()), str(directories["f32"]), str(out), "f32"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    gguf = kvgen.Model.load(out, exact=True)
    assert gguf.family == "qwen3_5"
    check_positions(gguf, hf, lengths=(11, 40), what="gguf")
    assert_generate_equals_hf(gguf, hf, [[5, 9, 13, 4, 3], [7, 8]], PAD, max_new_tokens=8, do_sample=False)
    directory = kvgen.Model.load(directories["f32"])
    text = "Once upon a time"
    assert gguf.tokenizer.encode(text).ids == directory.tokenizer.encode(text).ids
    messages = [{"role": "user", "content": "Hi"}]
    assert gguf.apply_chat_template(messages) == directory.apply_chat_template(messages)


def test_dtype_quantizes_every_projection_of_the_deltanet(hf):
    """Model.load(directory, dtype=...) quantizes the DeltaNet's in_proj_* matrices too (their
    names do not end in _proj.weight): no product runs on float32 weights beside quantized ones."""
    from kvgen.families import qwen3_5
    from kvgen.loaders.quantize import QuantizedTensor

    arrays = {k: v.detach().numpy() for k, v in hf.state_dict().items()}
    quantized = qwen3_5.FAMILY.checkpoint_arrays(hf.config.to_dict(), arrays, "q8_0")
    for name in ("in_proj_a", "in_proj_b", "in_proj_qkv", "in_proj_z", "out_proj"):
        assert isinstance(quantized[f"model.layers.0.linear_attn.{name}.weight"], QuantizedTensor), name
    assert quantized["model.layers.0.linear_attn.conv1d.weight"].shape == (2 * 2 * 16 + 4 * 16, 4)
