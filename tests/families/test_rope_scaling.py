"""YaRN and dynamic NTK rope scaling (kvgen.loaders.rope) against transformers: the frequencies and
the cos/sin attention factor of its rope init functions, and the logits of models that use them,
from a directory and through llama.cpp's converter (which stores YaRN as rope.scaling.* keys)."""

from __future__ import annotations

import numpy as np
import pytest
import transformers
from family_check import check_family, logits
from family_models import random_family_model

import kvgen
from kvgen.families import read_gguf
from kvgen.loaders.rope import rotary

ORIGINAL = 16  # the original context: every test sequence of 40 positions passes it
YARN = dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=ORIGINAL, beta_fast=8.0, beta_slow=2.0,
            attention_factor=1.25)
LLAMA = dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5, initializer_range=0.3,
             pad_token_id=None, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)


def random_llama(rope: dict, **settings) -> transformers.LlamaForCausalLM:
    transformers.set_seed(0)
    config = transformers.LlamaConfig(**{**LLAMA, **settings}, rope_parameters={"rope_theta": 10000.0, **rope})
    return transformers.LlamaForCausalLM(config).eval()


@pytest.mark.parametrize("rope", [
    dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=64),
    dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=64, beta_fast=8, beta_slow=2, truncate=False),
    dict(rope_type="yarn", factor=16.0, original_max_position_embeddings=4096, mscale=1.0, mscale_all_dim=0.707),
    dict(rope_type="yarn", factor=2.5, original_max_position_embeddings=100, attention_factor=1.3),
    dict(rope_type="yarn", factor=None, original_max_position_embeddings=128),
    dict(rope_type="yarn", factor=3.0),  # the original context defaults to max_position_embeddings
    dict(rope_type="dynamic", factor=2.0),
    dict(rope_type="dynamic", factor=1.7),
])
@pytest.mark.parametrize("context", [512, 300])
def test_frequencies_and_attention_factor_match_transformers(rope, context):
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = transformers.LlamaConfig(hidden_size=128, num_attention_heads=2, max_position_embeddings=context,
                                      rope_theta=50000.0, rope_scaling=dict(rope))
    reference = LlamaRotaryEmbedding(config)
    ours = rotary(config.to_dict(), 64)
    # float32 powers round differently in NumPy and in torch's vector kernels (see test_llama.py)
    np.testing.assert_allclose(ours.inv_freq, reference.inv_freq.numpy(), rtol=4 * 2.0**-23, atol=0)
    assert ours.attention_factor == reference.attention_scaling


@pytest.mark.parametrize("rope", [
    YARN,
    dict(rope_type="yarn", factor=8.0, original_max_position_embeddings=ORIGINAL, mscale=1.2, mscale_all_dim=0.8,
         truncate=False),
    dict(rope_type="yarn", factor=2.0, original_max_position_embeddings=ORIGINAL),  # 0.1 ln(factor) + 1
])
def test_a_yarn_llama_directory_equals_transformers_past_the_original_context(tmp_path, rope):
    hf = random_llama(rope)
    hf.save_pretrained(tmp_path)
    model = kvgen.Model.load(tmp_path, exact=True)
    ids = np.random.default_rng(0).integers(0, LLAMA["vocab_size"], (2, 48))
    np.testing.assert_allclose(model.forward(ids), logits(hf, ids), atol=2e-4, rtol=1e-4)
    # the scaling shows: the same weights without it compute other logits past the original context
    plain = random_llama({"rope_type": "default"})
    assert not np.allclose(logits(plain, ids), logits(hf, ids), atol=1e-2)


def test_a_yarn_qwen3_equals_transformers_from_a_directory_and_from_llama_cpps_file(tmp_path, smollm2_file):
    hf = random_family_model("qwen3", rope_parameters={"rope_theta": 1000000.0, **YARN})
    assert hf.config.rope_parameters["rope_type"] == "yarn"
    models = check_family("qwen3", hf, tmp_path, smollm2_file)
    # llama.cpp's converter keeps each setting as a rope.scaling.* key
    params = read_gguf(models["gguf"].path).config["rope_parameters"]
    assert {k: params[k] for k in YARN} == YARN


def test_dynamic_ntk_equals_transformers_within_the_context_and_stops_there(tmp_path):
    # transformers changes the frequencies only for a sequence longer than max_position_embeddings
    # (every position, with a base that grows with the length); within it, those it starts with
    hf = random_llama({"rope_type": "dynamic", "factor": 3.0}, max_position_embeddings=48)
    hf.save_pretrained(tmp_path)
    model = kvgen.Model.load(tmp_path, exact=True)
    ids = np.random.default_rng(0).integers(0, LLAMA["vocab_size"], (2, 48))
    np.testing.assert_allclose(model.forward(ids), logits(hf, ids), atol=2e-4, rtol=1e-4)
    assert model.context_length == 48
    # past it (transformers keeps the grown frequencies for later calls: compared in this order)
    longer = np.random.default_rng(1).integers(0, LLAMA["vocab_size"], (1, 60))
    within = logits(hf, longer[:, :48])
    assert not np.allclose(logits(hf, longer)[:, :48], within, atol=1e-3)
    with pytest.raises(ValueError, match="context"):
        model.forward(longer)
    generator = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=20))
    with pytest.raises(ValueError, match="context overflow"):
        generator.generate([list(range(3, 33))])


@pytest.mark.parametrize("rope, message", [
    (dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=0), "original_max_position_embeddings"),
    (dict(rope_type="yarn", factor=-1.0, original_max_position_embeddings=16), "'factor'"),
    (dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=16, beta_fast=-3.0), "beta_fast"),
    (dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=16, beta_slow="1"), "beta_slow"),
    (dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=16, attention_factor=0.0),
     "attention_factor"),
    (dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=16, truncate="yes"), "truncate"),
    (dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=16, mscale=float("nan"),
          mscale_all_dim=1.0), "mscale"),
    (dict(rope_type="yarn", factor=1e300, original_max_position_embeddings=16), "'factor'"),
    (dict(rope_type="dynamic"), "'factor'"),
    (dict(rope_type="dynamic", factor=1e30), "finite"),
])
def test_hostile_scaling_settings_are_errors_naming_them(rope, message):
    config = dict(LLAMA, rope_parameters={"rope_theta": 10000.0, **rope})
    with pytest.raises(ValueError, match=message):
        rotary(config, 16)

