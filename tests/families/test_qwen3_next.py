"""Qwen3-Next (kvgen.families.qwen3_next) against transformers' Qwen3NextForCausalLM: the DeltaNet's
projections fused per key head (in_proj_qkvz, in_proj_ba: reordered at load into the core's
Qwen3.5 layout), gated attention, a mixture of experts with a gated shared expert in the sparse
layers and a dense MLP in an mlp_only_layers one; from float32 and bfloat16 directories and
llama.cpp's converter's file; the recurrent state through beam search, n > 1 and batches."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
import transformers
from family_check import check_family
from family_models import VOCAB, save_family_model
from hybrid_checks import (
    check_batch_equals_one_by_one,
    check_beams,
    check_positions,
    check_rows_share_the_prompts_state,
    quantized_with_routers,
    randomize,
)

import kvgen

# 2 Gated DeltaNet layers (2 key heads of 3 value heads each, in the fused rows per key head),
# 2 gated attention layers; 4 experts of 32 (2 per token) and a shared expert of 64 in every layer
# (llama.cpp's converter maps no dense MLP of qwen3next: the mlp_only_layers test is the
# directory's alone). Weights of 0.2, as Qwen3.5-MoE's test explains.
SETTINGS = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
                num_key_value_heads=2, head_dim=32, max_position_embeddings=256, initializer_range=0.2,
                rms_norm_eps=1e-5, linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16,
                linear_num_key_heads=2, linear_num_value_heads=6, num_experts=4, num_experts_per_tok=2,
                moe_intermediate_size=32, shared_expert_intermediate_size=64,
                norm_topk_prob=True,
                layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
                rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.5),
                tie_word_embeddings=False, pad_token_id=None, bos_token_id=1, eos_token_id=2)


def random_qwen3_next(seed: int = 0, **overrides) -> transformers.Qwen3NextForCausalLM:
    """A random Qwen3-Next whose norms, decays and time-step biases are random too."""
    torch.manual_seed(seed)
    return randomize(transformers.Qwen3NextForCausalLM(transformers.Qwen3NextConfig(**{**SETTINGS, **overrides})))


@pytest.fixture(scope="module")
def hf():
    return random_qwen3_next()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("qwen3_next")


@pytest.fixture(scope="module")
def checked(hf, root, smollm2_file):
    """The float32, bfloat16 and GGUF (llama.cpp's converter, --no-mtp) models, each checked
    against transformers (check_family)."""
    return check_family("qwen3_next", hf, root, smollm2_file, converter_options=["--no-mtp"])


@pytest.fixture(scope="module")
def model(checked):
    return checked["f32"]


def test_directories_and_llama_cpps_file_give_transformers_logits_and_greedy_tokens(hf, checked):
    assert all(m.family == "qwen3_next" and m.capabilities.recurrent_state for m in checked.values())
    check_positions(checked["f32"], hf, lengths=(70,), what="f32")
    check_positions(checked["gguf"], hf, lengths=(70,), what="gguf")


def test_dense_layers_and_unnormalised_routing_weights(root, checked):
    """Layer 2 in mlp_only_layers (a SwiGLU MLP of intermediate_size), and norm_topk_prob =
    false: the chosen experts' softmax probabilities as they are."""
    hf = random_qwen3_next(seed=1, norm_topk_prob=False, mlp_only_layers=[2])
    assert isinstance(hf.model.layers[2].mlp, transformers.models.qwen3_next.modeling_qwen3_next.Qwen3NextMLP)
    path = save_family_model(hf, root / "dense-layer", root / "tokenizer")
    check_positions(kvgen.Model.load(path, exact=True), hf, lengths=(11, 40), what="mlp_only_layers, norm_topk_prob")


def test_a_sparse_layer_pattern_that_does_not_match_the_tensors_names_the_layer(root, checked):
    path = root / "pattern"
    shutil.copytree(root / "f32", path)
    config = json.loads((path / "config.json").read_text())
    config["mlp_only_layers"] = [1, 2]
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="layer 1: decoder_sparse_step and mlp_only_layers make its MLP dense"):
        kvgen.Model.load(path)


@pytest.mark.parametrize("key,value", [("mlp_only_layers", "2"), ("decoder_sparse_step", 0),
                                       ("shared_expert_intermediate_size", -64), ("norm_topk_prob", "yes"),
                                       ("num_experts_per_tok", 9)])
def test_hostile_settings_are_errors_naming_them(root, checked, key, value):
    path = root / f"hostile-{key}"
    path.mkdir()
    for f in (root / "f32").iterdir():  # the weights and tokenizer linked, the config rewritten
        (path / f.name).symlink_to(f)
    (path / "config.json").unlink()
    config = json.loads((root / "f32" / "config.json").read_text())
    config[key] = value
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises((ValueError, TypeError), match=key):
        kvgen.Model.load(path)


def test_beam_search_takes_each_parents_state(hf, model):
    check_beams(model, hf)


def test_n_rows_share_the_prompts_state(model):
    check_rows_share_the_prompts_state(model)


def test_a_batch_of_different_lengths_equals_one_by_one(checked, root, monkeypatch):
    check_batch_equals_one_by_one(quantized_with_routers(root / "f32", monkeypatch), VOCAB)
