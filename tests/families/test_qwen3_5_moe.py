"""Qwen3.5-MoE (kvgen.families.qwen3_5_moe) against transformers' Qwen3_5MoeForCausalLM: Qwen3.5's
hybrid of Gated DeltaNet and gated attention layers with a softmax top-k mixture of experts and
a sigmoid-gated shared expert in every layer, from float32 and bfloat16 directories, from the
published Qwen3_5MoeForConditionalGeneration layout (fused 3-D expert tensors under
model.language_model., beside a vision tower) and from llama.cpp's converter's file; the
recurrent state through beam search, n > 1 and batches."""

from __future__ import annotations

import numpy as np
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
    conditional_generation,
    quantized_with_routers,
    randomize,
)

import kvgen
from kvgen.families import family_named

# 2 of the 4 layers Gated DeltaNet (2 key heads, 4 value heads), 2 gated attention (head_dim 128
# with the partial rotary 0.25: 32 rotary dimensions, as wide as the rope sections cover, which
# llama.cpp asserts); 4 experts of 32, 2 per token, and a shared expert of 64 in every layer. Weights
# of 0.2 (not 0.3): with the experts and the shared expert added up, 0.3's activations grow
# until float32 rounding (torch's and kvgen's alike) reaches 3e-4 in some logits.
TEXT = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
            head_dim=128, max_position_embeddings=256, initializer_range=0.2, rms_norm_eps=1e-5,
            linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
            linear_num_value_heads=4, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
            shared_expert_intermediate_size=64,
            layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
            rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.25,
                                 mrope_section=[6, 5, 5], mrope_interleaved=True),
            tie_word_embeddings=False, pad_token_id=None, bos_token_id=1, eos_token_id=2)


@pytest.fixture(scope="module")
def hf():
    torch.manual_seed(0)
    return randomize(transformers.Qwen3_5MoeForCausalLM(transformers.Qwen3_5MoeTextConfig(**TEXT)))


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("qwen3_5_moe")


@pytest.fixture(scope="module")
def checked(hf, root, smollm2_file):
    """The float32, bfloat16 and GGUF (llama.cpp's converter, --no-mtp) models, each checked
    against transformers (check_family)."""
    return check_family("qwen3_5_moe", hf, root, smollm2_file, converter_options=["--no-mtp"])


@pytest.fixture(scope="module")
def model(checked):
    return checked["f32"]


def test_directories_and_llama_cpps_file_give_transformers_logits_and_greedy_tokens(hf, checked):
    assert family_named("qwen3_5_moe").transformers_class == type(hf).__name__
    assert all(m.family == "qwen3_5_moe" and m.capabilities.recurrent_state for m in checked.values())
    check_positions(checked["f32"], hf, lengths=(70,), what="f32")
    check_positions(checked["gguf"], hf, lengths=(70,), what="gguf")


def published_layout(whole: transformers.PreTrainedModel, path) -> None:
    """The directory's per-expert tensors as the published checkpoints store them: one
    mlp.experts.gate_up_proj (experts, 2 x moe_intermediate_size, hidden) and one
    mlp.experts.down_proj (experts, hidden, moe_intermediate_size) per layer."""
    from safetensors.numpy import load_file, save_file

    tensors = load_file(path / "model.safetensors")
    out = {k: v for k, v in tensors.items() if ".mlp.experts." not in k}
    E = TEXT["num_experts"]
    for layer in range(TEXT["num_hidden_layers"]):
        p = f"model.language_model.layers.{layer}.mlp.experts."
        out[p + "gate_up_proj"] = np.stack([np.concatenate([tensors[f"{p}{e}.gate_proj.weight"],
                                                            tensors[f"{p}{e}.up_proj.weight"]]) for e in range(E)])
        out[p + "down_proj"] = np.stack([tensors[f"{p}{e}.down_proj.weight"] for e in range(E)])
    out["model.visual.unread"] = np.zeros(3, np.int32)  # a vision tensor kvgen would refuse to read
    assert len(out) < len(tensors)
    (path / "model.safetensors").unlink()
    save_file(out, path / "model.safetensors", metadata={"format": "pt"})


def test_the_published_conditional_generation_layout_loads_its_text_model(hf, root, checked):
    """Qwen3_5MoeForConditionalGeneration: text_config, the text model under
    model.language_model., fused 3-D experts, a vision tower left unread; quantized at load,
    the logits of the per-expert directory quantized, bit for bit."""
    whole = conditional_generation(hf, transformers.Qwen3_5MoeConfig, transformers.Qwen3_5MoeForConditionalGeneration)
    path = save_family_model(whole, root / "conditional", root / "tokenizer")
    published_layout(whole, path)
    loaded = kvgen.Model.load(path, exact=True)
    assert loaded.family == "qwen3_5_moe"
    check_positions(loaded, whole, lengths=(11,), what="ConditionalGeneration")
    ids = np.random.default_rng(2).integers(0, VOCAB, (1, 9))
    np.testing.assert_array_equal(kvgen.Model.load(path, dtype="q8_0").forward(ids),
                                  kvgen.Model.load(root / "f32", dtype="q8_0").forward(ids))


def test_dtype_quantizes_every_expert_of_either_layout(hf, root, checked):
    """The experts fused (as transformers holds them, hf.state_dict()) and one matrix per expert
    (as it saves them) quantize to the same Q8_0 blocks per expert."""
    from safetensors.numpy import load_file

    from kvgen.families import qwen3_5_moe
    from kvgen.loaders.quantize import QuantizedTensor

    config = hf.config.to_dict()
    fused = {k: v.detach().numpy() for k, v in hf.state_dict().items()}
    assert fused["model.layers.1.mlp.experts.gate_up_proj"].shape == (4, 64, 64)
    per_expert = qwen3_5_moe.FAMILY.checkpoint_arrays(config, load_file(root / "f32" / "model.safetensors"), "q8_0")
    unfused = qwen3_5_moe.FAMILY.checkpoint_arrays(config, fused, "q8_0")
    p = "model.layers.1.mlp."
    for e in range(4):
        for proj in ("gate_proj", "up_proj", "down_proj"):
            name = f"{p}experts.{e}.{proj}.weight"
            assert isinstance(per_expert[name], QuantizedTensor) and isinstance(unfused[name], QuantizedTensor)
            np.testing.assert_array_equal(per_expert[name].data, unfused[name].data)
    for name in ("shared_expert.gate_proj", "shared_expert.up_proj", "shared_expert.down_proj"):
        assert isinstance(per_expert[f"{p}{name}.weight"], QuantizedTensor), name


def test_beam_search_takes_each_parents_state(hf, model):
    check_beams(model, hf)


def test_n_rows_share_the_prompts_state(model):
    check_rows_share_the_prompts_state(model)


def test_a_batch_of_different_lengths_equals_one_by_one(checked, root, monkeypatch):
    check_batch_equals_one_by_one(quantized_with_routers(root / "f32", monkeypatch), VOCAB)
