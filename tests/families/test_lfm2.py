"""LFM2 (kvgen.families.lfm2) against Lfm2ForCausalLM: gated short convolutions, whose window is
a recurrent state per sequence, beside attention layers with q/k norms; the adjusted SwiGLU
width; the final embedding_norm. The state is checked through every engine feature against
transformers or a fresh run: beam search, n > 1 sampling, batches of different lengths, prompts
longer than a prefill chunk, and the prefix cache (resumed from state snapshots; speculation's
rollback is tested with the prefix cache's in tests/generation/test_recurrent_state_reuse.py)."""

from __future__ import annotations

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
from kvgen.families import lfm2

# conv, attention, conv, attention: both kinds, a convolution after an attention layer; the
# feed-forward width adjusted to int(1.3 * int(2 * 144 / 3)) = 124, rounded up to 128
SETTINGS = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=144, block_ffn_dim_multiplier=1.3,
                block_multiple_of=32, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                layer_types=["conv", "full_attention", "conv", "full_attention"], max_position_embeddings=512,
                initializer_range=0.3, norm_eps=1e-5, pad_token_id=None, bos_token_id=1, eos_token_id=2)


def random_lfm2(seed: int = 0, **overrides) -> transformers.Lfm2ForCausalLM:
    """A random LFM2 with random norms and biases (transformers starts them at 1 and 0)."""
    torch.manual_seed(seed)
    model = transformers.Lfm2ForCausalLM(transformers.Lfm2Config(**{**SETTINGS, **overrides})).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.3 * torch.randn_like(p))
    return model


@pytest.fixture(scope="module")
def hf():
    return random_lfm2()


@pytest.fixture(scope="module")
def checked(hf, tmp_path_factory, smollm2_file):
    """The float32, bfloat16 and GGUF models, each checked against transformers (check_family)."""
    assert hf.model.layers[0].feed_forward.w1.out_features == 128
    return check_family("lfm2", hf, tmp_path_factory.mktemp("lfm2"), smollm2_file)


@pytest.fixture(scope="module")
def model(checked):
    return checked["f32"]


def test_lfm2_equals_transformers(checked, hf, capsys):
    from kvgen.cli import main

    gguf = checked["gguf"]
    assert gguf.capabilities.recurrent_state and gguf.capabilities.speculation_refused is None
    assert gguf.tokenizer is not None and gguf.encode("The mill") == checked["f32"].encode("The mill")
    assert main(["info", str(gguf.path)]) == 0  # kvgen info names the state and what it does
    out = capsys.readouterr().out
    assert "Lfm2ForCausalLM" in out and "computed by kvgen's lfm2 model" in out
    assert ("a recurrent state per slot (cached prefixes resume from snapshots of it, rejected drafts from per-token "
            "checkpoints)") in out
    assert "speculative decoding: yes" in out
    # the state: a window of L_cache - 1 inputs of every channel per convolution layer, in float32
    c = hf.config
    conv_layers = c.layer_types.count("conv")
    assert f"recurrent state per sequence: {conv_layers * c.hidden_size * (c.conv_L_cache - 1) * 4} bytes" in out


def test_a_convolution_with_biases_and_the_attention_layers_by_index(tmp_path):
    hf = random_lfm2(seed=1, conv_bias=True, conv_L_cache=4, layer_types=None, full_attn_idxs=[2],
                     num_hidden_layers=3, tie_word_embeddings=False)
    assert [layer.is_attention_layer for layer in hf.model.layers] == [False, False, True]
    hf.save_pretrained(tmp_path)
    model = kvgen.Model.load(tmp_path, exact=True)
    ids = np.random.default_rng(2).integers(0, VOCAB, (2, 40))
    np.testing.assert_allclose(model.forward(ids), logits(hf, ids), atol=2e-4, rtol=1e-4)


def test_beam_search_equals_transformers(model, hf):
    check_beams_return_two(model, hf)


def test_prompts_longer_than_a_prefill_chunk_equal_transformers(model, hf):
    check_prompt_over_chunks(model, hf, VOCAB)


def test_n_samples_equal_separate_requests(model):
    check_rows_share_the_prompts_state(model)


def test_a_batch_of_different_lengths_equals_one_by_one(model):
    check_batch_of_configs_equals_one_by_one(model)


def test_the_prefix_cache_resumes_from_a_snapshot_and_equals_a_fresh_run(model):
    check_prefix_cache_resumes_from_snapshots(model, VOCAB)


def test_decode_steps_continue_the_state_at_every_position(model, hf):
    """Every cached decode step, a convolution window carried from step to step, gives the
    logits of transformers' full recomputation."""
    from hf_models import assert_cached_decode_matches_hf

    assert_cached_decode_matches_hf(model, hf, 16, PAD)


# ---- the translation and hostile files ----

def test_the_layer_pattern_and_the_feed_forward_width_follow_transformers():
    for settings in (dict(layer_types=["conv", "full_attention"]), dict(full_attn_idxs=[1]), dict()):
        config = transformers.Lfm2Config(num_hidden_layers=2, **settings)
        assert lfm2.layer_is_conv(config.to_dict(), 2) == [t == "conv" for t in config.layer_types]
    for settings in (dict(), dict(block_auto_adjust_ff_dim=False),
                     dict(block_ffn_dim_multiplier=1.3, block_multiple_of=32, intermediate_size=144), None):
        config = transformers.Lfm2Config(hidden_size=64, **(settings or {}))
        if settings is None:  # Lfm2MLP keeps 2/3 unrounded without a multiplier (the config class's type refuses it)
            object.__setattr__(config, "block_ffn_dim_multiplier", None)
        assert lfm2.feed_forward_width(config.to_dict()) == transformers.models.lfm2.modeling_lfm2.Lfm2MLP(
            config).w1.out_features
    # LiquidAI's own config.json names the width block_ff_dim, which Lfm2Config takes over intermediate_size
    liquid = dict(block_ff_dim=300, intermediate_size=100, block_multiple_of=32)
    assert lfm2.feed_forward_width(liquid) == transformers.models.lfm2.modeling_lfm2.Lfm2MLP(
        transformers.Lfm2Config(hidden_size=64, **liquid)).w1.out_features == 224


@pytest.mark.parametrize("change, message", [
    (dict(layer_types=["conv", "mamba", "conv", "conv"]), "layer_types must name 'conv' or 'full_attention'"),
    (dict(layer_types=["conv"]), "layer_types must name .* each of the 4 layers"),
    (dict(layer_types=None, full_attn_idxs=[7]), "full_attn_idxs names layer 7, outside the 4 layers"),
    (dict(conv_L_cache=0), "conv_L_cache = 0 must be positive"),
    (dict(block_ffn_dim_multiplier=float("inf")), "block_ffn_dim_multiplier"),
])
def test_hostile_configs_are_errors_naming_the_key(change, message):
    base = transformers.Lfm2Config(**SETTINGS).to_dict()
    with pytest.raises(ValueError, match=message):
        lfm2.FAMILY.sizes({**base, **change})


def test_a_layer_pattern_that_does_not_match_the_tensors_names_the_layer(hf):
    config = hf.config.to_dict()
    arrays = {name: t.detach().numpy().copy() for name, t in hf.state_dict().items()}
    swapped = {**config, "layer_types": ["conv", "conv", "conv", "full_attention"]}
    with pytest.raises(ValueError, match="LFM2 layer 1: the config makes it a convolution but the file has "
                                         "model.layers.1.self_attn.q_proj.weight"):
        lfm2.FAMILY.build_core(swapped, arrays)
    sizes = lfm2.FAMILY.sizes(config)
    shapes = [(32, 3, 0, 0, 0) if s[0] else s for s in sizes.recurrent_layers]
    wrong = _core._ModelConfig(architecture="lfm2", vocab_size=sizes.vocab_size, context_length=sizes.context_length,
                               hidden=64, layers=4, heads=4, kv_heads=2, head_dim=16, intermediate=128,
                               recurrent_layers=shapes)
    with pytest.raises(ValueError, match="LFM2 layer 0: the convolution has 32 channels, hidden_size is 64"):
        _core._Model.lfm2(wrong, lfm2.FAMILY.options(config, sizes), arrays)
    narrow = {name: (w[:, :, :2].copy() if name.endswith("conv.conv.weight") else w) for name, w in arrays.items()}
    with pytest.raises(ValueError, match="model.layers.0.conv.conv.weight"):
        lfm2.FAMILY.build_core(config, narrow)


def test_quantized_matrices_compute_as_their_dequantized_weights(checked, hf):
    """A directory loaded with dtype="q8_0" (every projection of both layer kinds, the MLP and
    the embeddings quantized) computes, in exact mode, transformers' logits over the same
    matrices rounded through Q8_0."""
    import copy

    import gguf

    model = kvgen.Model.load(checked["f32"].path, dtype="q8_0", exact=True)
    rounded = copy.deepcopy(hf)
    q8 = gguf.GGMLQuantizationType.Q8_0
    with torch.no_grad():
        for name, p in rounded.named_parameters():
            if p.dim() == 2 and name.endswith(lfm2._MATRICES):
                blocks = gguf.quants.quantize(p.numpy(), q8)
                p.copy_(torch.from_numpy(gguf.quants.dequantize(blocks, q8).reshape(p.shape)))
    assert model.weight_bytes < checked["f32"].weight_bytes / 3
    ids = np.random.default_rng(5).integers(0, VOCAB, (1, 24))
    np.testing.assert_allclose(model.forward(ids), logits(rounded, ids), atol=2e-4, rtol=1e-4)


def test_a_gguf_whose_layer_pattern_does_not_match_its_tensors_names_the_layer(checked, tmp_path):
    import struct

    data = bytearray(checked["gguf"].path.read_bytes())
    key = b"lfm2.attention.head_count_kv"
    at = data.index(key) + len(key)  # then the value: type, item type, count, items (GGUF's layout)
    kind, item, count = struct.unpack_from("<IIQ", data, at)
    assert (kind, count) == (9, 4) and item in (4, 5)  # an array of 4 (u)int32
    fmt = "<4I" if item == 4 else "<4i"
    assert struct.unpack_from(fmt, data, at + 16) == (0, 2, 0, 2)
    struct.pack_into(fmt, data, at + 16, 2, 2, 0, 2)  # layer 0, a convolution, said to attend with 2 kv heads
    path = tmp_path / "swapped.gguf"
    path.write_bytes(data)
    with pytest.raises(ValueError, match="layer 0 is an attention layer by lfm2.attention.head_count_kv but the file "
                                         "has blk.0.shortconv"):
        kvgen.Model.load(path)
