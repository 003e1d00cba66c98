"""Granite 4.0's hybrid (kvgen.families.granite4) against transformers' GraniteMoeHybridForCausalLM:
Mamba-2 layers (a convolution window and a state-space matrix per sequence) beside attention
layers, with experts plus a shared MLP and with the shared MLP alone, with and without rotary
embeddings, Granite's multipliers; from float32 and bfloat16 directories and from llama.cpp's
converter (which reads layer_types as the published checkpoints spell them, mamba / attention).
The state is checked through the engine's features against transformers or a fresh run: beam
search, n > 1 sampling, batches of different lengths, prompts longer than a prefill chunk, the
prefix cache and prompt-lookup speculation (through state snapshots)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import transformers
from family_check import PAD, check_family, logits
from family_models import VOCAB
from hybrid_checks import (
    check_batch_of_configs_equals_one_by_one,
    check_beams_return_two,
    check_prefix_cache_resumes_from_snapshots,
    check_prompt_over_chunks,
    check_rows_share_the_prompts_state,
)

import kvgen
from kvgen import _core
from kvgen.families import granite4

# Mamba-2, attention, Mamba-2, Mamba-2: a Mamba-2 layer after an attention layer; 8 Mamba heads of
# 16 in 2 groups of B and C (d_state 16); 2 of 4 experts beside a shared MLP of another width;
# multipliers far from 1 (attention_multiplier 0.5, not 1 / sqrt(16)); no rotary embedding, as
# Granite 4.0 ships.
SETTINGS = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=32, shared_intermediate_size=48,
                num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                layer_types=["mamba", "attention", "mamba", "mamba"], mamba_n_heads=8, mamba_n_groups=2,
                mamba_d_state=16, mamba_d_head=16, mamba_d_conv=4, mamba_expand=2, num_local_experts=4,
                num_experts_per_tok=2, embedding_multiplier=6.0, residual_multiplier=0.5, attention_multiplier=0.5,
                logits_scaling=2.0, position_embedding_type=None, mamba_chunk_size=16, initializer_range=0.3,
                rms_norm_eps=1e-5,
                tie_word_embeddings=False, pad_token_id=None, bos_token_id=1, eos_token_id=2)
# Llama.cpp's converter finds the attention layers by these names only.
CONVERTER_LAYER_TYPES = {"layer_types": SETTINGS["layer_types"]}


def random_granite4(seed: int = 0, **overrides) -> transformers.GraniteMoeHybridForCausalLM:
    """A random Granite 4 hybrid whose norms (the Mamba-2 gated one too), biases, decays, time-step
    biases and D skips are random too (transformers starts them at fixed values)."""
    torch.manual_seed(seed)
    config = transformers.GraniteMoeHybridConfig(**{**SETTINGS, **overrides})
    model = transformers.GraniteMoeHybridForCausalLM(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif name.endswith(("bias", "dt_bias")):
                p.copy_(0.3 * torch.randn_like(p))
            elif name.endswith(("A_log", ".D")):
                p.add_(0.5 * torch.randn_like(p))
    return model


@pytest.fixture(scope="module")
def hf():
    return random_granite4()


@pytest.fixture(scope="module")
def checked(hf, tmp_path_factory, smollm2_file):
    """The float32, bfloat16 and GGUF models with experts, each checked against transformers."""
    assert [type(layer.mamba).__name__ for layer in hf.model.layers].count("NoneType") == 1
    return check_family("granite4", hf, tmp_path_factory.mktemp("granite4"), smollm2_file,
                        converter_config=CONVERTER_LAYER_TYPES)


@pytest.fixture(scope="module")
def model(checked):
    return checked["f32"]


def test_granite4_with_experts_equals_transformers(checked, hf, capsys):
    from kvgen.cli import main

    gguf = checked["gguf"]
    assert gguf.capabilities.recurrent_state and not gguf.capabilities.speculation_refused
    assert gguf.tokenizer is not None and gguf.encode("The mill") == checked["f32"].encode("The mill")
    assert main(["info", str(gguf.path)]) == 0  # kvgen info names the state and what it rules out
    out = capsys.readouterr().out
    assert "GraniteMoeHybridForCausalLM" in out and "computed by kvgen's granitehybrid model" in out
    assert ("a recurrent state per slot (cached prefixes resume from snapshots of it, rejected drafts from per-token "
            "checkpoints)") in out
    assert "speculative decoding: yes" in out
    # the state per Mamba-2 layer: a window of d_conv - 1 inputs of x | B | C, and (heads, head_dim, d_state)
    c = hf.config
    channels = c.mamba_n_heads * c.mamba_d_head + 2 * c.mamba_n_groups * c.mamba_d_state
    per_layer = channels * (c.mamba_d_conv - 1) + c.mamba_n_heads * c.mamba_d_head * c.mamba_d_state
    assert f"recurrent state per sequence: {3 * per_layer * 4} bytes" in out


def test_granite4_without_experts_with_rotary_equals_transformers(tmp_path, smollm2_file):
    """The shared MLP alone (num_local_experts 0) and rotary attention from the directories; the
    GGUF file computes without the rotary embedding, as llama.cpp does for every hybrid
    (its converter writes rope.scaling.finetuned false), which transformers computes with the
    same weights and no rotary embedding."""
    hf = random_granite4(seed=1, num_local_experts=0, position_embedding_type="rope", tie_word_embeddings=True,
                         layer_types=["attention", "mamba", "mamba", "attention"])
    unrotated = copy.deepcopy(hf)
    unrotated.model.rotary_emb = None
    ids = np.random.default_rng(2).integers(0, VOCAB, (1, 12))
    assert np.abs(logits(hf, ids) - logits(unrotated, ids)).max() > 1e-2  # the rotary embedding binds
    models = check_family("granite4", hf, tmp_path, smollm2_file, gguf_reference=unrotated,
                          converter_config={"layer_types": ["attention", "mamba", "mamba", "attention"]})
    assert models["gguf"].config["num_local_experts"] == 0  # llama.cpp's dense file: ffn_gate, not _shexp


def test_a_single_group_norm_written_without_its_leading_dimension_loads(tmp_path, smollm2_file):
    """Granite 4.0's published models have one group of B and C, so the converter writes the
    Mamba-2 norm as (1, inner); llama.cpp's quantizer (ggml's n_dims) writes it as (inner,), and
    every tensor with a leading 1 likewise. Such a file equals transformers as the converter's does."""
    import gguf
    from gguf_fuzz import rewrite

    hf = random_granite4(seed=3, mamba_n_groups=1, num_local_experts=0)
    models = check_family("granite4", hf, tmp_path, smollm2_file, converter_config=CONVERTER_LAYER_TYPES)
    inner = SETTINGS["mamba_expand"] * SETTINGS["hidden_size"]
    written = rewrite(models["gguf"].path, tmp_path / "quantizer-shapes.gguf", {}, drop_leading_ones=True)
    shapes = {t.name: tuple(reversed(t.shape.tolist())) for t in gguf.GGUFReader(str(written)).tensors}
    assert shapes["blk.0.ssm_norm.weight"] == (inner,)
    ids = np.random.default_rng(6).integers(0, VOCAB, (2, 14))
    np.testing.assert_allclose(kvgen.Model.load(written, exact=True).forward(ids), logits(hf, ids), atol=2e-4,
                               rtol=1e-4)


def test_biases_and_the_default_layer_pattern(tmp_path):
    """In-projection, out-projection and attention biases, no convolution bias; layer_types as
    transformers 5 writes them (linear_attention / full_attention)."""
    hf = random_granite4(seed=3, mamba_proj_bias=True, attention_bias=True, mamba_conv_bias=False,
                         layer_types=["mamba", "mamba", "attention"], num_hidden_layers=3, mamba_n_groups=1)
    assert hf.model.layers[0].mamba.in_proj.bias is not None and hf.model.layers[0].mamba.conv1d.bias is None
    hf.save_pretrained(tmp_path)
    model = kvgen.Model.load(tmp_path, exact=True)
    ids = np.random.default_rng(2).integers(0, VOCAB, (2, 40))
    np.testing.assert_allclose(model.forward(ids), logits(hf, ids), atol=2e-4, rtol=1e-4)


def test_beam_search_equals_transformers(model, hf):
    check_beams_return_two(model, hf)


def test_prompts_longer_than_a_prefill_chunk_equal_transformers(model, hf):
    check_prompt_over_chunks(model, hf, VOCAB)


def test_decode_steps_continue_the_state_at_every_position(model, hf):
    """Every cached decode step, the Mamba-2 state carried from step to step, gives the logits of
    transformers' full recomputation."""
    from hf_models import assert_cached_decode_matches_hf

    assert_cached_decode_matches_hf(model, hf, 16, PAD)


def _sequences(result) -> list[list[int]]:
    return [s.tolist() for per in result.sequences for s in per]


def test_n_samples_equal_separate_requests(model):
    check_rows_share_the_prompts_state(model)


def test_a_batch_of_different_lengths_equals_one_by_one(model):
    check_batch_of_configs_equals_one_by_one(model)


def test_the_prefix_cache_resumes_from_state_snapshots_and_equals_a_fresh_run(model):
    check_prefix_cache_resumes_from_snapshots(model, VOCAB)


def test_prompt_lookup_speculation_gives_plain_greedy_tokens(model):
    generator = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=12, pad_token_id=PAD))
    prompt = [5, 9, 13, 5, 9, 13, 5, 9, 13, 5, 9]
    plain = generator.generate([prompt])
    drafted = generator.generate([prompt], prompt_lookup_num_tokens=3)
    assert _sequences(drafted) == _sequences(plain)


# ---- the translation and hostile files ----

def test_the_layer_pattern_reads_both_spellings_as_transformers():
    for types in (["mamba", "attention", "mamba"], ["linear_attention", "full_attention", "full_attention"], None):
        config = transformers.GraniteMoeHybridConfig(num_hidden_layers=3, layer_types=types)
        expected = [t == "linear_attention" for t in config.layer_types]
        assert granite4.layer_is_mamba({"layer_types": types}, 3) == expected


@pytest.mark.parametrize("change, message", [
    (dict(layer_types=["mamba", "conv", "mamba", "mamba"]), r"layer_types\[1\] = 'conv' is not one of"),
    (dict(layer_types=["mamba"]), "layer_types must list 4 layer kinds"),
    (dict(mamba_d_head=8), "mamba_d_head x mamba_n_heads = 8 x 8 differs from mamba_expand x hidden_size = 128"),
    (dict(mamba_n_groups=3), "mamba_n_heads = 8 is not a multiple of mamba_n_groups = 3"),
    (dict(mamba_d_state=0), "mamba_d_state = 0 must be positive"),
    (dict(time_step_limit=[0.0, 5.0]), "time_step_limit"),
    (dict(position_embedding_type="alibi"), "position_embedding_type = 'alibi' is not supported"),
])
def test_hostile_configs_are_errors_naming_the_key(change, message):
    base = transformers.GraniteMoeHybridConfig(**SETTINGS).to_dict()
    config = {**base, **change}
    with pytest.raises(ValueError, match=message):
        granite4.FAMILY.check_config(config)
        granite4.FAMILY.sizes(config)


def test_a_state_size_that_does_not_match_its_heads_names_the_layer(hf):
    config = hf.config.to_dict()
    arrays = {name: t.detach().numpy().copy() for name, t in hf.state_dict().items()}
    sizes = granite4.FAMILY.sizes(config)
    assert sizes.recurrent_layers[0] == (8 * 16 + 2 * 2 * 16, 4, 8, 16, 16)
    for wrong, message in (((8 * 16 + 2 * 16, 4, 8, 16, 16), "Granite 4 layer 0: its state of 160 convolution "
                                                             "channels does not match heads x head_dim"),
                           ((144, 4, 5, 16, 16), "Granite 4 layer 0: mamba_n_heads = 5 is not a positive multiple "
                                                 "of mamba_n_groups = 2"),
                           # 4 heads of 32: the same channels, not the heads in_proj and A_log have
                           ((192, 4, 4, 32, 16), "model.layers.0.mamba.in_proj.weight")):
        shapes = [wrong if s[0] else s for s in sizes.recurrent_layers]
        bad = _core._ModelConfig(architecture="granitehybrid", vocab_size=VOCAB, context_length=512, hidden=64,
                                 layers=4, heads=4, kv_heads=2, head_dim=16, intermediate=48, experts=4,
                                 experts_per_token=2, expert_intermediate=32, recurrent_layers=shapes)
        with pytest.raises(ValueError, match=message):
            _core._Model.granite_hybrid(bad, granite4.FAMILY.options(config, sizes),
                                        granite4.FAMILY.checkpoint_arrays(config, arrays, None))


def test_a_layer_pattern_that_does_not_match_the_tensors_names_the_layer(hf):
    config = hf.config.to_dict()
    arrays = {name: t.detach().numpy().copy() for name, t in hf.state_dict().items()}
    swapped = {**config, "layer_types": ["mamba", "mamba", "mamba", "attention"]}
    with pytest.raises(ValueError, match="Granite 4 layer 1: the layer pattern makes it a Mamba-2 layer but the file "
                                         "has model.layers.1.self_attn.q_proj.weight"):
        granite4.FAMILY.build_core(swapped, arrays)
    narrow = {name: (w[:, :, :2].copy() if name.endswith("conv1d.weight") else w) for name, w in arrays.items()}
    with pytest.raises(ValueError, match="model.layers.0.mamba.conv1d.weight"):
        granite4.FAMILY.build_core(config, narrow)


def test_a_gguf_whose_layer_pattern_does_not_match_its_tensors_names_the_layer(checked, tmp_path):
    import struct

    data = bytearray(checked["gguf"].path.read_bytes())
    key = b"granitehybrid.attention.head_count_kv"
    at = data.index(key) + len(key)  # then the value: type, item type, count, items (GGUF's layout)
    kind, item, count = struct.unpack_from("<IIQ", data, at)
    assert (kind, count) == (9, 4) and item in (4, 5)  # an array of 4 (u)int32
    fmt = "<4I" if item == 4 else "<4i"
    assert struct.unpack_from(fmt, data, at + 16) == (0, 2, 0, 0)
    struct.pack_into(fmt, data, at + 16, 2, 2, 0, 0)  # layer 0, a Mamba-2 layer, said to attend with 2 kv heads
    path = tmp_path / "swapped.gguf"
    path.write_bytes(data)
    with pytest.raises(ValueError, match="layer 0 is an attention layer by granitehybrid.attention.head_count_kv but "
                                         "the file has blk.0.ssm_in.weight"):
        kvgen.Model.load(path)
