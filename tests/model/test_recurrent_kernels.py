"""The recurrent mixers' C++ kernels and the state cache against transformers.

Gated DeltaNet (Qwen3-Next, Qwen3.5) and LFM2's short convolution: kvgen's causal conv1d,
gates, delta rule (recurrent and chunked), gated RMSNorm and short convolution are
compared with transformers' own functions and modules (modeling_qwen3_next,
modeling_qwen3_5, modeling_lfm2) on random inputs of several shapes: outputs and final
states. A prefill followed by decode steps equals one long prefill, and the state
cache's operations (reorder, copy_row, snapshot / restore) continue a sequence exactly as
a fresh run over the whole sequence does.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers.models.lfm2 import modeling_lfm2
from transformers.models.lfm2.configuration_lfm2 import Lfm2Config
from transformers.models.qwen3_5 import modeling_qwen3_5
from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5TextConfig
from transformers.models.qwen3_next import modeling_qwen3_next as qnext
from transformers.models.qwen3_next.configuration_qwen3_next import Qwen3NextConfig

import kvgen
from kvgen import _core

ATOL = 2e-5
RTOL = 1e-4


def close(actual: np.ndarray, expected, atol: float = ATOL) -> None:
    expected = expected.detach().numpy() if isinstance(expected, torch.Tensor) else expected
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=atol)


def rand(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def t(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(x.copy())


# ---- causal conv1d ----


@pytest.mark.parametrize(("tokens", "channels", "kernel"), [(1, 5, 4), (3, 7, 4), (9, 300, 4), (6, 4, 2), (40, 700, 4)])
def test_causal_conv1d_matches_transformers_update_and_window(tokens, channels, kernel):
    rng = np.random.default_rng(tokens * 100 + channels)
    x, weight = rand(rng, tokens, channels), rand(rng, channels, kernel)
    window = rand(rng, channels, kernel - 1)
    state = t(window)  # transformers' conv state: (batch, channels, kernel - 1), updated in place
    expected = qnext.causal_conv1d_update(t(x).T[None], state[None], t(weight), None, "silu")
    out = _core._causal_conv1d(x, weight, None, window, silu=True)
    close(out, expected[0].T)
    close(window, state)


def test_causal_conv1d_prefill_from_zero_matches_causal_conv1d_fn_with_bias():
    rng = np.random.default_rng(1)
    x, weight, bias = rand(rng, 11, 6), rand(rng, 6, 3), rand(rng, 6)
    window = np.zeros((6, 2), np.float32)
    expected = qnext.causal_conv1d_fn(t(x).T[None], t(weight), t(bias), activation=None)
    close(_core._causal_conv1d(x, weight, bias, window, silu=False), expected[0].T)
    close(window, x[-2:].T)


def test_causal_conv1d_checks_shapes_and_dtypes():
    x, weight = np.zeros((2, 4), np.float32), np.zeros((4, 3), np.float32)
    with pytest.raises(ValueError, match=r"window has shape \(4, 3\), expected \(4, 2\)"):
        _core._causal_conv1d(x, weight, None, np.zeros((4, 3), np.float32), silu=True)
    with pytest.raises(TypeError, match="x must be a C-contiguous float32 array"):
        _core._causal_conv1d(x.astype(np.float64), weight, None, np.zeros((4, 2), np.float32), silu=True)
    frozen = np.zeros((4, 2), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="window must be writable"):
        _core._causal_conv1d(x, weight, None, frozen, silu=True)


# ---- the delta rule ----


def delta_inputs(rng, tokens, key_heads, value_heads, key_dim, value_dim):
    q, k = rand(rng, tokens, key_heads, key_dim), rand(rng, tokens, key_heads, key_dim)
    v = rand(rng, tokens, value_heads, value_dim)
    g = -np.abs(rand(rng, tokens, value_heads, scale=0.3))  # log decay, <= 0
    beta = (1 / (1 + np.exp(-rand(rng, tokens, value_heads)))).astype(np.float32)
    state = rand(rng, value_heads, key_dim, value_dim, scale=0.5)
    return q, k, v, g, beta, state


def torch_rule(fn, q, k, v, g, beta, state, l2norm=True, **kw):
    out, final = fn(t(q)[None], t(k)[None], t(v)[None], g=t(g)[None], beta=t(beta)[None], initial_state=t(state)[None],
                    output_final_state=True, use_qk_l2norm_in_kernel=l2norm, **kw)
    return out[0], final[0]


SHAPES = [  # tokens, key_heads, value_heads, key_dim, value_dim
    (1, 2, 4, 8, 6),
    (5, 2, 4, 8, 6),
    (9, 1, 1, 4, 4),
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("l2norm", [True, False])
def test_recurrent_rule_matches_transformers(shape, l2norm):
    q, k, v, g, beta, state = delta_inputs(np.random.default_rng(sum(shape)), *shape)
    expected_out, expected_state = torch_rule(qnext.torch_recurrent_gated_delta_rule, q, k, v, g, beta, state, l2norm)
    out = _core._gated_delta_rule(q, k, v, g, beta, state, chunked=False, use_qk_l2norm=l2norm)
    close(out, expected_out)
    close(state, expected_state)


def test_recurrent_rule_after_a_larger_call_and_under_other_thread_counts():
    """The rule keeps its buffers from call to call: a call after a larger one, and one after the
    thread count changed, still equals transformers'."""
    large, small = (7, 4, 16, 128, 128), (1, 2, 4, 8, 6)  # large: heads enough work for every thread
    before = kvgen.get_num_threads()
    try:
        for threads in (2, 1, 3):
            kvgen.set_num_threads(threads)
            for shape in (large, small):
                q, k, v, g, beta, state = delta_inputs(np.random.default_rng(threads + sum(shape)), *shape)
                expected_out, expected_state = torch_rule(qnext.torch_recurrent_gated_delta_rule, q, k, v, g, beta,
                                                          state)
                out = _core._gated_delta_rule(q, k, v, g, beta, state, chunked=False, use_qk_l2norm=True)
                close(out, expected_out)
                close(state, expected_state)
    finally:
        kvgen.set_num_threads(before)


@pytest.mark.parametrize(("shape", "chunk"), [
    ((1, 2, 4, 8, 6), 64), ((70, 2, 4, 8, 6), 64), ((130, 1, 2, 16, 8), 64), ((37, 2, 2, 8, 8), 16),
])
def test_chunked_rule_matches_transformers_chunked_and_recurrent(shape, chunk):
    q, k, v, g, beta, state = delta_inputs(np.random.default_rng(shape[0]), *shape)
    expected_out, expected_state = torch_rule(qnext.torch_chunk_gated_delta_rule, q, k, v, g, beta, state,
                                              chunk_size=chunk)
    recurrent_state = state.copy()
    out = _core._gated_delta_rule(q, k, v, g, beta, state, chunked=True, chunk_size=chunk)
    close(out, expected_out)
    close(state, expected_state)
    # the chunked form equals the step-by-step form
    recurrent = _core._gated_delta_rule(q, k, v, g, beta, recurrent_state, chunked=False)
    close(out, recurrent)
    close(state, recurrent_state)


def test_qwen3_5_functions_are_the_same_rule():
    q, k, v, g, beta, state = delta_inputs(np.random.default_rng(7), 20, 2, 4, 8, 6)
    expected_out, expected_state = torch_rule(modeling_qwen3_5.torch_chunk_gated_delta_rule, q, k, v, g, beta, state,
                                              chunk_size=8)
    out = _core._gated_delta_rule(q, k, v, g, beta, state, chunked=True, chunk_size=8)
    close(out, expected_out)
    close(state, expected_state)


def test_prefill_then_decode_equals_one_long_prefill():
    q, k, v, g, beta, state = delta_inputs(np.random.default_rng(3), 75, 2, 4, 8, 6)
    whole_state = state.copy()
    whole = _core._gated_delta_rule(q, k, v, g, beta, whole_state, chunked=True)
    parts = [_core._gated_delta_rule(q[:70], k[:70], v[:70], g[:70], beta[:70], state, chunked=True)]
    for i in range(70, 75):
        s = slice(i, i + 1)
        parts.append(_core._gated_delta_rule(q[s], k[s], v[s], g[s], beta[s], state, chunked=False))
    close(np.concatenate(parts), whole)
    close(state, whole_state)


def test_delta_rule_checks_shapes():
    q, k, v, g, beta, state = delta_inputs(np.random.default_rng(0), 3, 2, 3, 4, 4)
    with pytest.raises(ValueError, match="value_heads = 3 is not a multiple of key_heads = 2"):
        _core._gated_delta_rule(q, k, v, g, beta, state, chunked=False)
    q, k, v, g, beta, state = delta_inputs(np.random.default_rng(0), 3, 2, 4, 4, 4)
    with pytest.raises(ValueError, match=r"state has shape \(4, 4, 5\), expected \(4, 4, 4\)"):
        _core._gated_delta_rule(q, k, v, g, beta, np.zeros((4, 4, 5), np.float32), chunked=False)
    with pytest.raises(ValueError, match=r"beta has shape \(2, 4\), expected \(3, 4\)"):
        _core._gated_delta_rule(q, k, v, g, beta[:2].copy(), state, chunked=True)
    with pytest.raises(ValueError, match="chunk_size = 0"):
        _core._gated_delta_rule(q, k, v, g, beta, state, chunked=True, chunk_size=0)


# ---- the whole Gated DeltaNet mixer (projections by torch, the rest by kvgen) ----


def qwen3_next_mixer():
    config = Qwen3NextConfig(hidden_size=32, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
                             linear_value_head_dim=6, linear_conv_kernel_dim=4, num_hidden_layers=1,
                             layer_types=["linear_attention"], rms_norm_eps=1e-6)
    return qnext.Qwen3NextGatedDeltaNet(config, 0)


def qwen3_5_mixer():
    config = Qwen3_5TextConfig(hidden_size=32, linear_num_key_heads=2, linear_num_value_heads=4,
                               linear_key_head_dim=8, linear_value_head_dim=6, linear_conv_kernel_dim=4,
                               num_hidden_layers=1, layer_types=["linear_attention"], rms_norm_eps=1e-6)
    return modeling_qwen3_5.Qwen3_5GatedDeltaNet(config, 0)


def randomized(mixer):
    torch.manual_seed(0)
    with torch.no_grad():
        for p in mixer.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
        mixer.norm.weight.add_(1.0)
    return mixer.eval()


def projections(mixer, hidden: np.ndarray):
    """(mixed_qkv, z, b, a) of the mixer's input projections, in the layout its conv reads."""
    h = t(hidden)[None]
    with torch.no_grad():
        if hasattr(mixer, "in_proj_qkvz"):  # Qwen3-Next: q, k, v, z interleaved per key head
            query, key, value, z, b, a = mixer.fix_query_key_value_ordering(mixer.in_proj_qkvz(h), mixer.in_proj_ba(h))
            mixed = torch.cat([x.reshape(1, x.shape[1], -1) for x in (query, key, value)], dim=-1)
        else:  # Qwen3.5: separate projections
            mixed, z, b, a = mixer.in_proj_qkv(h), mixer.in_proj_z(h), mixer.in_proj_b(h), mixer.in_proj_a(h)
    return tuple(np.ascontiguousarray(x[0].reshape(x.shape[1], -1).numpy()) for x in (mixed, z, b, a))


def kvgen_mixer(mixer, hidden: np.ndarray, window: np.ndarray, state: np.ndarray, chunked: bool) -> np.ndarray:
    """The mixer's output for `hidden` (tokens, hidden_size): the projections by torch, the
    convolution, gates, delta rule and gated norm by kvgen (window and state updated)."""
    mixed, z, b, a = projections(mixer, hidden)
    tokens, hk, hv, dk, dv = len(hidden), mixer.num_k_heads, mixer.num_v_heads, mixer.head_k_dim, mixer.head_v_dim
    conv_weight = np.ascontiguousarray(mixer.conv1d.weight.detach()[:, 0].numpy())
    mixed = _core._causal_conv1d(mixed, conv_weight, None, window, silu=True)
    q = np.ascontiguousarray(mixed[:, :hk * dk].reshape(tokens, hk, dk))
    k = np.ascontiguousarray(mixed[:, hk * dk:2 * hk * dk].reshape(tokens, hk, dk))
    v = np.ascontiguousarray(mixed[:, 2 * hk * dk:].reshape(tokens, hv, dv))
    g, beta = _core._gated_delta_gates(a, b, mixer.A_log.detach().numpy(), mixer.dt_bias.detach().numpy())
    out = _core._gated_delta_rule(q, k, v, g, beta, state, chunked=chunked)
    normed = _core._gated_rms_norm(out.reshape(-1, dv), z.reshape(-1, dv), mixer.norm.weight.detach().numpy(),
                                   mixer.norm.variance_epsilon)
    with torch.no_grad():
        return mixer.out_proj(t(normed.reshape(tokens, hv * dv))).numpy()


def reference_mixer(mixer, hidden: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return mixer(t(hidden)[None])[0].numpy()


def mixer_state(mixer):
    conv_dim, kernel = mixer.conv_dim, mixer.conv_kernel_size
    return (np.zeros((conv_dim, kernel - 1), np.float32),
            np.zeros((mixer.num_v_heads, mixer.head_k_dim, mixer.head_v_dim), np.float32))


@pytest.mark.parametrize("make", [qwen3_next_mixer, qwen3_5_mixer], ids=["qwen3_next", "qwen3_5"])
def test_gated_delta_net_mixer_prefill_and_decode_match_transformers(make):
    mixer = randomized(make())
    hidden = rand(np.random.default_rng(5), 12, 32)
    expected = reference_mixer(mixer, hidden)  # one pass over every token, no cache
    window, state = mixer_state(mixer)
    prefill = kvgen_mixer(mixer, hidden[:9], window, state, chunked=True)
    decode = [kvgen_mixer(mixer, hidden[i:i + 1], window, state, chunked=False) for i in range(9, 12)]
    close(np.concatenate([prefill, *decode]), expected, atol=1e-4)


def test_gated_rms_norm_matches_transformers():
    rng = np.random.default_rng(2)
    x, z, weight = rand(rng, 7, 6), rand(rng, 7, 6), rand(rng, 6)
    norm = qnext.Qwen3NextRMSNormGated(6, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(t(weight))
        expected = norm(t(x), t(z))
    close(_core._gated_rms_norm(x, z, weight, 1e-6), expected)


def test_gates_match_transformers_formula():
    rng = np.random.default_rng(4)
    a, b = rand(rng, 5, 3, scale=8.0), rand(rng, 5, 3)  # a + dt_bias crosses softplus's threshold of 20
    a[0, 0] = 30.0
    a_log, dt_bias = rand(rng, 3), rand(rng, 3)
    g, beta = _core._gated_delta_gates(a, b, a_log, dt_bias)
    # the lines of Qwen3NextGatedDeltaNet.forward
    close(g, -t(a_log).float().exp() * torch.nn.functional.softplus(t(a).float() + t(dt_bias)))
    close(beta, t(b).sigmoid())


# ---- LFM2's short convolution ----


def lfm2_short_conv(bias: bool):
    config = Lfm2Config(hidden_size=16, conv_L_cache=3, conv_bias=bias, num_hidden_layers=1,
                        layer_types=["conv"])
    conv = modeling_lfm2.Lfm2ShortConv(config, 0)
    torch.manual_seed(1)
    with torch.no_grad():
        for p in conv.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    return conv.eval()


def kvgen_short_conv(conv, hidden: np.ndarray, window: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        bcx = conv.in_proj(t(hidden)).numpy()
        weight = np.ascontiguousarray(conv.conv.weight[:, 0].numpy())
        bias = conv.conv.bias.numpy() if conv.conv.bias is not None else None
        y = _core._short_conv(bcx, weight, bias, window)
        return conv.out_proj(t(y)).numpy()


@pytest.mark.parametrize("bias", [False, True])
def test_short_conv_prefill_and_decode_match_transformers(bias):
    conv = lfm2_short_conv(bias)
    hidden = rand(np.random.default_rng(6), 8, 16)
    with torch.no_grad():
        expected = conv(t(hidden)[None])[0].numpy()
    window = np.zeros((16, 2), np.float32)
    prefill = kvgen_short_conv(conv, hidden[:1], window)  # a prompt shorter than the window
    decode = [kvgen_short_conv(conv, hidden[i:i + 1], window) for i in range(1, 4)]
    rest = kvgen_short_conv(conv, hidden[4:], window)  # a chunk after decoding
    close(np.concatenate([prefill, *decode, rest]), expected)
    # the window holds the last two values of B * x
    with torch.no_grad():
        b_gate, _, x = conv.in_proj(t(hidden)).chunk(3, dim=-1)
    close(window, (b_gate * x)[-2:].T)


# ---- the state cache ----

HIDDEN_TOKENS = 14


def cache_for(mixer, conv, rows: int, snapshots: int = 0):
    layers = [(mixer.conv_dim, mixer.conv_kernel_size, mixer.num_v_heads, mixer.head_k_dim, mixer.head_v_dim),
              (16, 3, 0, 0, 0)]
    return _core._StateCache(layers, rows, snapshots)


def step(cache, row: int, mixer, conv, hidden: np.ndarray, hidden_conv: np.ndarray, chunked: bool):
    """Runs both layers for row `row`, their states read and written in the cache."""
    out = kvgen_mixer(mixer, hidden, cache.conv(0, row), cache.recurrent(0, row), chunked)
    return out, kvgen_short_conv(conv, hidden_conv, cache.conv(1, row))


def fresh(mixer, conv, hidden, hidden_conv):
    """Both layers over a whole sequence from a zero state: the reference continuation."""
    return reference_mixer(mixer, hidden), kvgen_short_conv(conv, hidden_conv, np.zeros((16, 2), np.float32))


@pytest.fixture(scope="module")
def layers_and_inputs():
    mixer, conv = randomized(qwen3_5_mixer()), lfm2_short_conv(True)
    rng = np.random.default_rng(8)
    # (row or branch, tokens, width): branch 0 the prompt then one continuation, 1-2 others
    return mixer, conv, rand(rng, 3, HIDDEN_TOKENS, 32), rand(rng, 3, HIDDEN_TOKENS, 16)


def check_continuation(cache, row, branch, layers_and_inputs, prompt=8):
    """Decodes tokens prompt.. of `branch` on `row` and compares with a fresh run over the
    prompt (branch 0's) followed by those tokens."""
    mixer, conv, hidden, hidden_conv = layers_and_inputs
    seq = np.concatenate([hidden[0, :prompt], hidden[branch, prompt:]])
    seq_conv = np.concatenate([hidden_conv[0, :prompt], hidden_conv[branch, prompt:]])
    expected = fresh(mixer, conv, seq, seq_conv)
    for i in range(prompt, HIDDEN_TOKENS):
        out, out_conv = step(cache, row, mixer, conv, seq[i:i + 1], seq_conv[i:i + 1], chunked=False)
        close(out, expected[0][i:i + 1], atol=1e-4)
        close(out_conv, expected[1][i:i + 1])


def prefill(cache, row, layers_and_inputs, prompt=8):
    mixer, conv, hidden, hidden_conv = layers_and_inputs
    step(cache, row, mixer, conv, hidden[0, :prompt], hidden_conv[0, :prompt], chunked=True)


def test_state_cache_copy_row_shares_the_prompt_state(layers_and_inputs):
    mixer, conv = layers_and_inputs[:2]
    cache = cache_for(mixer, conv, rows=3)
    prefill(cache, 0, layers_and_inputs)
    cache.copy_row(0, 1)
    cache.copy_row(0, 2)
    for row, branch in [(0, 0), (1, 1), (2, 2)]:
        check_continuation(cache, row, branch, layers_and_inputs)


def test_state_cache_reorder_gives_each_beam_its_parent_state(layers_and_inputs):
    mixer, conv, hidden, hidden_conv = layers_and_inputs
    cache = cache_for(mixer, conv, rows=3)
    prefill(cache, 1, layers_and_inputs)  # the prompt on row 1; rows 0 and 2 hold junk
    step(cache, 0, mixer, conv, hidden[2, :5], hidden_conv[2, :5], chunked=True)
    cache.reorder(np.array([1, 1, 1]))
    for row in range(3):
        check_continuation(cache, row, row, layers_and_inputs)
    with pytest.raises(ValueError, match=r"parent = 3 is outside the state cache's rows \[0, 3\)"):
        cache.reorder(np.array([0, 3, 1]))


def test_state_cache_snapshot_restores_a_rejected_draft(layers_and_inputs):
    mixer, conv, hidden, hidden_conv = layers_and_inputs
    cache = cache_for(mixer, conv, rows=2, snapshots=1)
    prefill(cache, 0, layers_and_inputs)
    cache.snapshot(0, 0)
    # a draft of 3 tokens of branch 1, verified in one chunk, then rejected
    step(cache, 0, mixer, conv, hidden[1, 8:11], hidden_conv[1, 8:11], chunked=True)
    cache.restore(0, 0)
    check_continuation(cache, 0, 2, layers_and_inputs)
    cache.restore(0, 1)  # a prefix-cache hit: the snapshot starts another row
    check_continuation(cache, 1, 1, layers_and_inputs)


def test_state_cache_reset_starts_from_zero(layers_and_inputs):
    mixer, conv = layers_and_inputs[:2]
    cache = cache_for(mixer, conv, rows=1)
    prefill(cache, 0, layers_and_inputs)
    cache.reset(0)
    prefill(cache, 0, layers_and_inputs)
    check_continuation(cache, 0, 1, layers_and_inputs)


def test_state_cache_views_and_sizes(layers_and_inputs):
    mixer, conv = layers_and_inputs[:2]
    cache = cache_for(mixer, conv, rows=2, snapshots=3)
    assert cache.conv(0, 1).shape == (mixer.conv_dim, 3)
    assert cache.recurrent(0, 1).shape == (4, 8, 6)
    assert cache.recurrent(1, 0).shape == (0, 0, 0)
    per_row = mixer.conv_dim * 3 + 4 * 8 * 6 + 16 * 2
    assert cache.bytes == (2 + 3) * per_row * 4 == _core._StateCache.bytes_for(
        [(mixer.conv_dim, 4, 4, 8, 6), (16, 3, 0, 0, 0)], 2, 3)
    with pytest.raises(ValueError, match=r"layer 2 is outside the state cache's layers \[0, 2\)"):
        cache.conv(2, 0)
    with pytest.raises(ValueError, match="heads = 5000 is above kvgen's limit"):
        _core._StateCache([(8, 4, 5000, 1, 1)], 1)
    with pytest.raises(ValueError, match="above kvgen's limit"):
        _core._StateCache([(8, 4, 4096, 1 << 20, 1 << 20)], 1)
