"""The quantized-weight kernels (kvgen/quant/*) against an independent float64 reference.

Weights are made by gguf-py's quantizer from random floats where gguf-py quantizes the type
(the 32-weight block types, F16, BF16, MXFP4); for the K-quants (Q4_K, Q5_K, Q6_K) and the
IQ4 types (IQ4_NL, IQ4_XS), which gguf-py only dequantizes, they are random valid blocks
(random bytes, random finite fp16 scales).
Either way gguf-py's dequantizer expands them, so the reference shares no code with kvgen.
Every type x every CPU path this CPU runs x both arithmetic modes (int8 only where the type
has it: not F16 / BF16) x ragged shapes (rows not a multiple of 16, several block counts,
1..19 activation rows: a whole 16-row AVX-512 tile and a remainder) is compared against the
float64 product, within these bounds (u = 2**-24, the float32 unit roundoff):

* exact mode (float activations): each weight is the file's value exactly (d * q is exact
  in float32 and the kernels round d * q + m once, as gguf-py does; K-quants: (d sc) q and
  dmin m are exact, one rounding; F16 / BF16 convert exactly), and each output is a chain
  of K float32 FMAs (F16 / BF16: up to 4 chains of K/4, then 3 additions), so
  |y - y64| <= (K + 2) u sum_k |w_k x_k|.
* int8 mode, against the float64 product with the activations quantized as the kernel
  quantizes them (x^ = d q, d = max|x_b| / 127, q = round(x / d), simulated below in
  float32 exactly as the C++ does it): the integer dots are exact, and each of the
  2 K/32 scaled terms (d_w d_x) dot_b and min_w s_b adds a few roundings, so
  |y - y64(x^)| <= (2 K/32 + 4) u sum_k (|w_k| + 2 |min_k|) |x^_k|, where min_k is the
  block's minimum (m, or -8 d / -16 d / -128 d for Q4_0 / Q5_0 / Q8_0; Q4_K / Q5_K: the
  sub-block's dmin m_j; the lookup-table types IQ4_NL, IQ4_XS, MXFP4: 0, their signed
  values are inside the dots) and |w - min| bounds the scaled quant. Q6_K keeps its -32 offset
  inside the integer dots (two per 32-block, one per 16-weight scale, each bounded by
  sum |w x^| over its 16 weights), so min_k = 0 there and the same count holds.
  This is tight enough to catch any layout mistake.
* int8 mode against the float64 product with x itself: add the activation quantization
  error, at most d_x / 2 per element (round to nearest), i.e. sum_b (d_x,b / 2) sum_{k in b} |w_k|.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import numpy as np
import pytest
from activation_modes import needs_bf16
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize
from llama_models import random_iq_blocks, random_k_quant
from sandbox import Sandbox

from kvgen import _core
from kvgen.loaders.quantize import to_core

BLOCK_TYPES = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]
K_TYPES = ["Q4_K", "Q5_K", "Q6_K"]
DENSE_TYPES = ["F16", "BF16"]
LOOKUP_TYPES = ["IQ4_NL", "IQ4_XS", "MXFP4"]  # 4-bit indices into 16 values
IQ_TYPES = ["IQ4_NL", "IQ4_XS"]  # random blocks (gguf-py cannot quantize them)
# Types the loader decodes into the core's index blocks (kvgen.loaders.index_types), here one
# with a min per 16 (Q2_K: I4S16M) and a ternary grid with delta (IQ1_M: I4S16); random
# blocks. Their kernels are the index family's (the other such types differ only in the
# decoding, which tests/loaders/test_index_types.py checks for every type).
DECODED_TYPES = ["Q2_K", "IQ1_M"]
TYPES = BLOCK_TYPES + K_TYPES + DENSE_TYPES + LOOKUP_TYPES + DECODED_TYPES
INT8_TYPES = BLOCK_TYPES + K_TYPES + LOOKUP_TYPES + DECODED_TYPES
# (weights, bytes) of one GGUF block, as the GGUF spec gives them
BLOCK = {"Q8_0": (32, 34), "Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24),
         "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210), "F16": (1, 2), "BF16": (1, 2),
         "IQ4_NL": (32, 18), "IQ4_XS": (256, 136), "MXFP4": (32, 17), "Q2_K": (256, 84), "IQ1_M": (256, 56)}
SUPER_TYPES = K_TYPES + ["IQ4_XS"] + DECODED_TYPES  # 256-weight super-blocks
# Bytes of a 16-row index tile (kernel_abi.h: 16 values, 16 float32 units, 16 x 16 int8 subs,
# I4S16M as many for its mins, 8 x 256 B of 4-bit indices) and of the core block the loader
# makes (16 values, a unit, 16 subs, (a min unit, 16 min subs,) 128 B of indices).
INDEX_TILE_BYTES = {"I4S16": 2384, "I4S16M": 2704}
CORE_BLOCK_BYTES = {"I4S16": 164, "I4S16M": 184}
# Bytes of one packed 16-row K-quant tile: 16 file blocks plus the decoded sub-block scales
# (kernel_abi.h: Q4_K 64 B of fp16 d / dmin + 256 B of 8-bit sc / m + 8 x 256 B of nibbles).
K_TILE_BYTES = {"Q4_K": 2368, "Q5_K": 2880, "Q6_K": 3360}
# IQ4_XS: 32 B of fp16 d + 128 B of int8 sub-block scales + 8 x 256 B of nibbles (file: 2176 B).
K_TILE_BYTES["IQ4_XS"] = 2208
# The minimum of a block without one, as a multiple of d (w = d * q, q = u + offset).
MIN_OFFSET = {"Q8_0": -128.0, "Q4_0": -8.0, "Q5_0": -16.0}
PATHS = _core._quant_supported_paths()
ROWS = [1, 15, 16, 17, 33, 100]
COLS = {"block": [32, 64, 96, 576, 1536], "k": [256, 512, 768], "dense": [1, 7, 32, 100, 576]}
MAX_M = 19  # AVX-512 tiles take up to 16 activation rows, AVX2's 4
U = 2.0**-24


def cols_for(qtype: str) -> list[int]:
    return COLS["k" if qtype in SUPER_TYPES else "dense" if qtype in DENSE_TYPES else "block"]


def random_k_blocks(qtype: str, rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """Valid random K-quant blocks (rows, cols / 256 * bytes): every byte random but the fp16
    scales, which get finite values of either sign and per-row magnitudes."""
    blocks = cols // 256
    raw = rng.integers(0, 256, (rows, blocks, BLOCK[qtype][1]), dtype=np.uint8)
    magnitude = rng.uniform(0.0005, 0.02, (rows, 1, 1))
    scales = (magnitude * rng.uniform(0.5, 1.5, (rows, blocks, 2)) * rng.choice([-1, 1], (rows, blocks, 2)))
    scales = scales.astype(np.float16).view(np.uint8)  # (rows, blocks, 4)
    if qtype == "Q6_K":
        raw[:, :, 208:210] = scales[:, :, :2]  # d last
    else:
        raw[:, :, 0:4] = scales  # d, dmin first
    return raw.reshape(rows, -1)


def k_minimums(qtype: str, raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """|dmin m_j| per weight (rows, cols) of Q4_K / Q5_K (bytes 8-11 of the 12 packed scale
    bytes hold m_4..7's low 4 bits, bytes 4-7 m_0..3 and m_4..7's top 2 bits); 0 for Q6_K."""
    if qtype == "Q6_K":
        return np.zeros((rows, cols))
    blocks = raw.reshape(rows * cols // 256, BLOCK[qtype][1])
    dmin = blocks[:, 2:4].copy().view(np.float16).astype(np.float64)  # (n, 1)
    s = blocks[:, 4:16].astype(np.int64)
    m = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], axis=1)  # (n, 8)
    return np.repeat(np.abs(dmin * m).reshape(rows, cols // 32), 32, axis=1)


class Case:
    """One weight matrix: raw file bytes, float64 weights, per-weight |minimum|, packed."""

    def __init__(self, qtype: str, rows: int, cols: int, seed: int):
        rng = np.random.default_rng(seed)
        gtype = GGMLQuantizationType[qtype]
        if qtype in K_TYPES:
            self.raw = random_k_blocks(qtype, rows, cols, rng).reshape(-1)
        elif qtype in IQ_TYPES:  # per-row magnitudes: weights up to about 0.1 .. 3
            magnitude = 1e-3 if qtype == "IQ4_NL" else 3e-5
            self.raw = random_iq_blocks((rows, cols), qtype, seed, magnitude * rng.uniform(1, 20)).reshape(-1)
        elif qtype == "Q2_K":  # d, dmin = 1e-3: weights up to 0.045, mins down to -0.015
            self.raw = random_k_quant((rows, cols), qtype, seed).reshape(-1)
        elif qtype in DECODED_TYPES:  # IQ1_M: weights up to about 0.1 .. 1
            self.raw = random_iq_blocks((rows, cols), qtype, seed, 3e-3 * rng.uniform(1, 10)).reshape(-1)
        else:
            # rows of different scales and offsets, so d and m vary (m matters for Q4_1 / Q5_1)
            scale, offset = rng.uniform(0.02, 2.0, (rows, 1)), rng.uniform(-0.5, 0.5, (rows, 1))
            w = rng.standard_normal((rows, cols)) * scale + offset
            self.raw = np.ascontiguousarray(quantize(w.astype(np.float32), gtype)).reshape(-1).view(np.uint8)
        self.w64 = dequantize(self.raw.reshape(rows, -1), gtype).astype(np.float64)
        self.abs_min = self.minimums(qtype, rows, cols)
        self.core_type, self.core_raw = qtype, self.raw  # what the core packs
        if qtype in DECODED_TYPES:
            core = to_core(qtype, self.raw.reshape(rows, -1), (rows, cols))
            self.core_type, self.core_raw = core.type, core.data
        self.packed = _core._quant_pack(self.core_raw, self.core_type, rows, cols)

    def minimums(self, qtype: str, rows: int, cols: int) -> np.ndarray:
        if qtype in K_TYPES:
            return k_minimums(qtype, self.raw, rows, cols)
        if qtype == "Q2_K":  # |dmin m_s| per 16 weights: m_s the high nibble of scale byte s
            blocks = self.raw.reshape(rows * cols // 256, 84)
            dmin = blocks[:, 82:84].copy().view(np.float16).astype(np.float64)
            return np.repeat(np.abs(dmin * (blocks[:, :16] >> 4)).reshape(rows, cols // 16), 16, axis=1)
        if qtype in DECODED_TYPES:
            return np.zeros((rows, cols))
        if qtype in DENSE_TYPES + LOOKUP_TYPES:
            return np.zeros((rows, cols))
        blocks = self.raw.reshape(rows * cols // 32, BLOCK[qtype][1])
        d = blocks[:, 0:2].copy().view(np.float16).astype(np.float64).reshape(rows, cols // 32)
        if qtype in MIN_OFFSET:
            mins = MIN_OFFSET[qtype] * d
        else:
            mins = blocks[:, 2:4].copy().view(np.float16).astype(np.float64).reshape(rows, cols // 32)
        return np.repeat(np.abs(mins), 32, axis=1)  # (rows, cols)


@functools.lru_cache(maxsize=None)
def case(qtype: str, rows: int, cols: int) -> Case:
    return Case(qtype, rows, cols, seed=TYPES.index(qtype) * 1_000_003 + rows * 7919 + cols)


def activations(cols: int, seed: int = 7) -> np.ndarray:
    """(MAX_M, cols) float32 with blocks of very different magnitudes and some exact zeros."""
    rng = np.random.default_rng(seed + cols)
    blocks = -(-cols // 32)
    scale = np.repeat(rng.uniform(0.01, 3.0, (MAX_M, blocks)), 32, axis=1)[:, :cols]
    x = rng.standard_normal((MAX_M, cols)) * scale
    x[0, :32] = 0.0  # an all-zero block: d = 0
    return x.astype(np.float32)


def quantize_like_kernel(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x^ (float64) and d (per block, repeated per element), with the C++'s float32 steps."""
    m, k = x.shape
    xb = x.reshape(m, k // 32, 32)
    d = (np.abs(xb).max(axis=2, keepdims=True) / np.float32(127)).astype(np.float32)
    inv = np.where(d != 0, np.float32(1) / np.where(d != 0, d, 1), np.float32(0)).astype(np.float32)
    v = (xb * inv).astype(np.float64)  # a float32 product, exactly representable
    q = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), -127, 127)  # round half away from zero
    return (q * d).reshape(m, k), np.broadcast_to(d, xb.shape).reshape(m, k).astype(np.float64)


def check(out: np.ndarray, ref: np.ndarray, bound: np.ndarray, what: str) -> None:
    err = np.abs(out.astype(np.float64) - ref)
    bad = ~(err <= bound)
    assert not bad.any(), (
        f"{what}: {bad.sum()} outputs off; worst error {err.max():.3g} "
        f"(bound there {bound.flat[np.argmax(err - bound)]:.3g}) "
        f"at {np.unravel_index(np.argmax(err - bound), err.shape)}"
    )


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("qtype", TYPES)
def test_exact_mode_matches_float64(qtype, path):
    for cols in cols_for(qtype):
        x = activations(cols)
        x64 = x.astype(np.float64)
        for rows in ROWS:
            c = case(qtype, rows, cols)
            ref = x64 @ c.w64.T
            bound = (cols + 2) * U * (np.abs(x64) @ np.abs(c.w64).T) + 1e-30
            for m in range(1, MAX_M + 1):
                out = c.packed.matmul(x[:m], exact=True, path=path)
                check(out, ref[:m], bound[:m], f"{qtype} {path} exact N={rows} K={cols} M={m}")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("qtype", INT8_TYPES)
def test_int8_mode_matches_float64(qtype, path):
    for cols in cols_for(qtype):
        x = activations(cols)
        xq, dx = quantize_like_kernel(x)
        # the simulated quantization is within d / 2 (plus the float32 rounding of x / d)
        assert np.all(np.abs(xq - x) <= dx * (0.5 + 1e-5))
        for rows in ROWS:
            c = case(qtype, rows, cols)
            ref_q = xq @ c.w64.T
            arith = (2 * cols // 32 + 4) * U * (np.abs(xq) @ (np.abs(c.w64) + 2 * c.abs_min).T) + 1e-30
            ref = x.astype(np.float64) @ c.w64.T
            quant_err = (dx * (0.5 + 1e-5)) @ np.abs(c.w64).T
            for m in range(1, MAX_M + 1):
                out = c.packed.matmul(x[:m], exact=False, path=path)
                what = f"{qtype} {path} int8 N={rows} K={cols} M={m}"
                check(out, ref_q[:m], arith[:m], what + " vs quantized x")
                check(out, ref[:m], arith[:m] + quant_err[:m], what + " vs x")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("qtype", INT8_TYPES)
def test_two_level_int8_mode_matches_float64(qtype, path):
    """Two-level activations (the models' default): x ~ d1 q1 + d2 q2, the second level
    quantizing the first one's rounding error (|x - d1 q1| <= d1 / 2) with d2 = d1 / 256
    (|q2| <= 128, clamped to 127); the AVX-512 kernel adds the levels' dots per block as
    integers (d1 (256 dot1 + dot2)), the other paths multiply both levels' rows and add the
    halves. Against the float64 product with x itself: each element is within 1.5 d1 / 256
    (half a step of d2, or a whole one where the clamp bites, with margin for the float32
    rounding of the residual), and the arithmetic adds the int8 bound's roundings for both
    levels."""
    for cols in cols_for(qtype):
        x = activations(cols)
        _, dx = quantize_like_kernel(x)
        step = dx / 256
        for rows in ROWS:
            c = case(qtype, rows, cols)
            ref = x.astype(np.float64) @ c.w64.T
            arith = (4 * cols // 32 + 8) * U * (np.abs(x.astype(np.float64)) @ (np.abs(c.w64) + 2 * c.abs_min).T)
            bound = arith + (1.5 * step) @ np.abs(c.w64).T + 1e-30
            for m in (1, 2, 3, 8, 9, MAX_M):
                out = c.packed.matmul(x[:m], path=path, two_level=True)
                check(out, ref[:m], bound[:m], f"{qtype} {path} int8x2 N={rows} K={cols} M={m}")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("qtype", INT8_TYPES)
def test_two_level_rows_are_the_one_row_products_bit_for_bit(qtype, path):
    """A product of M rows (a verify pass, a batch) gives each row exactly what that row alone
    gives (a decode step), whatever kernel the row count picks: speculative decoding keeps
    greedy output identical only if verified logits are the decoded ones bit for bit."""
    cols = cols_for(qtype)[-1]
    x = activations(cols)
    c = case(qtype, 33, cols)
    alone = np.concatenate([c.packed.matmul(x[i:i + 1], path=path, two_level=True) for i in range(MAX_M)])
    for m in range(2, MAX_M + 1):
        out = c.packed.matmul(x[:m], path=path, two_level=True)
        np.testing.assert_array_equal(out.view(np.uint32), alone[:m].view(np.uint32), err_msg=f"M={m}")


needs_amx = pytest.mark.skipif("amx" not in PATHS, reason=f"no amx CPU path here: {_core._amx_unavailable_reason()}")


@needs_amx
@pytest.mark.parametrize("qtype", BLOCK_TYPES + K_TYPES + LOOKUP_TYPES)
def test_amx_tiles_give_the_vnni_products_bit_for_bit(qtype):
    """The amx path multiplies 16 rows or more (Q6_K, Q8_0: 16, then 32 or more) on AMX-INT8 tiles (the lookup
    types: their values + 128 looked up into the B tiles, as VNNI's vpshufb does): the levels' dots
    exact in int32 and each row folded as the avx512 path's VNNI kernels fold it, so every row
    of every row count (pairs of 8-row passes, a lone pass, a last pass of a few rows) is the
    avx512 path's bit for bit, NaN and infinite rows included, on a ragged last group and on
    a range of groups. The tiles' product count shows they ran (and that fewer rows do not)."""
    cols = cols_for(qtype)[-1]
    c = case(qtype, 33, cols)
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((70, cols)) * np.repeat(rng.uniform(0.01, 3.0, (70, cols // 32)), 32, axis=1))
    x = x.astype(np.float32)
    x[3, 40] = np.nan
    x[20, 7] = np.inf
    x[33, :32] = 0.0
    least = 32 if qtype in ("Q6_K", "Q8_0") else 16
    for m in (2, 8, 15, 16, 17, 23, 24, 31, 32, 33, 40, 47, 64, 70):
        before = _core._quant_amx_tile_products()
        tiles = c.packed.matmul(x[:m], path="amx", two_level=True)
        # every type takes the tiles at 16 rows (one pair of passes); Q6_K and Q8_0 not again before 32
        assert (_core._quant_amx_tile_products() > before) == (m >= least or m == 16), f"M={m}"
        vnni = c.packed.matmul(x[:m], path="avx512", two_level=True)
        np.testing.assert_array_equal(tiles.view(np.uint32), vnni.view(np.uint32), err_msg=f"{qtype} M={m}")
    part = c.packed.matmul(x[:40], path="amx", two_level=True, groups=(1, 3))
    np.testing.assert_array_equal(part[:, 16:].view(np.uint32), tiles[:40, 16:].view(np.uint32))
    assert np.isnan(part[:, :16]).all()


@needs_amx
def test_amx_tiles_can_be_switched_off_for_a_benchmark():
    c = case("Q4_K", 17, 256)
    x = activations(256)[:16]
    on = c.packed.matmul(x, path="amx", two_level=True)
    _core._quant_set_amx_tiles(False)
    try:
        before = _core._quant_amx_tile_products()
        off = c.packed.matmul(x, path="amx", two_level=True)
        assert _core._quant_amx_tile_products() == before
    finally:
        _core._quant_set_amx_tiles(True)
    np.testing.assert_array_equal(on.view(np.uint32), off.view(np.uint32))


@pytest.mark.skipif("amx" in PATHS, reason="this process has the amx path")
def test_amx_switch_says_why_the_path_is_missing():
    with pytest.raises(ValueError, match="the amx path is unavailable: "):
        _core._quant_set_amx_tiles(False)


def to_bf16(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (nearest, ties to even; no NaN here), as float64."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return rounded.view(np.float32).astype(np.float64)


# The paths with bf16 kernels: avx512 (vdpbf16ps) and amx (AMX-BF16 tiles where the CPU has them).
BF16_PATHS = [p for p in PATHS if not _core._bf16_unavailable_reason(p)]


@needs_bf16
@pytest.mark.parametrize("path", BF16_PATHS)
@pytest.mark.parametrize("qtype", INT8_TYPES)
def test_bf16_mode_matches_float64_of_the_rounded_operands(qtype, path):
    """activations="bf16": each weight is the file's value (gguf-py's dequantization) rounded to
    bfloat16, each activation too, and each output sums its row's K exact products in float32:
    on avx512 in two chains of K/2 (even and odd pairs, each vdpbf16ps step adding two), then
    added; on amx's tiles in one chain of K. So |y - y64| <= (chain + 2) u sum_k |w_k x_k| against
    the float64 product of the rounded operands. A weight decoded wrong, a pair out of order or a
    rounding other than nearest-even moves an output by a whole term's 2**-8, far beyond that."""
    for cols in cols_for(qtype):
        x = activations(cols)
        xb = to_bf16(x)
        chain = cols if path == "amx" else cols // 2
        for rows in ROWS:
            c = case(qtype, rows, cols)
            wb = to_bf16(c.w64.astype(np.float32))
            ref = xb @ wb.T
            bound = (chain + 2) * U * (np.abs(xb) @ np.abs(wb).T) + 1e-30
            for m in (1, 2, 5, 12, 13, 16, MAX_M):
                out = c.packed.matmul(x[:m], bf16=True, path=path)
                check(out, ref[:m], bound[:m], f"{qtype} {path} bf16 N={rows} K={cols} M={m}")


@needs_bf16
@pytest.mark.parametrize("path", BF16_PATHS)
@pytest.mark.parametrize("qtype", INT8_TYPES)
def test_bf16_rows_are_the_one_row_products_bit_for_bit(qtype, path):
    """As for two levels: a row's bf16 product is the same bits alone, in a pass of any
    number of rows (avx512: a tile of 12 and the remainders; amx: 16-row tiles two at a time,
    a last tile padded), and over any range of groups (amx: two groups at a time, or one)."""
    cols = cols_for(qtype)[-1]
    x = np.concatenate([activations(cols), activations(cols, seed=8)])  # 38 rows: two tiles and a part
    c = case(qtype, 65, cols)
    alone = np.concatenate([c.packed.matmul(x[i:i + 1], bf16=True, path=path) for i in range(len(x))])
    for m in list(range(2, MAX_M + 1)) + [32, 33, len(x)]:
        out = c.packed.matmul(x[:m], bf16=True, path=path)
        np.testing.assert_array_equal(out.view(np.uint32), alone[:m].view(np.uint32), err_msg=f"M={m}")
    for groups in ((1, 3), (1, 4), (3, 5)):
        part = c.packed.matmul(x, bf16=True, path=path, groups=groups)
        lo, hi = 16 * groups[0], min(16 * groups[1], 65)
        np.testing.assert_array_equal(part[:, lo:hi].view(np.uint32), alone[:, lo:hi].view(np.uint32))
        assert np.isnan(part[:, :lo]).all() and np.isnan(part[:, hi:]).all()


@needs_bf16
@pytest.mark.skipif("amx" not in BF16_PATHS, reason="no amx path with bf16 kernels here")
@pytest.mark.parametrize("qtype", ["Q4_0", "Q8_0", "Q4_K", "Q6_K", "IQ4_XS"])
def test_bf16_tiles_and_vectors_agree_within_their_chains(qtype):
    """The amx path's AMX-BF16 tiles and the avx512 path's vdpbf16ps sum the same exact products
    in other orders (one chain, two): they agree within the sum of both chains' bounds, and where
    the activations hold NaN or infinity both give NaN / non-finite rows."""
    cols = cols_for(qtype)[-1]
    x = activations(cols)[:17].copy()
    x[4, 9] = np.nan
    x[5, 2] = np.inf
    c = case(qtype, 33, cols)
    tiles = c.packed.matmul(x, bf16=True, path="amx")
    vectors = c.packed.matmul(x, bf16=True, path="avx512")
    xb, wb = to_bf16(np.nan_to_num(x, posinf=0.0)), to_bf16(c.w64.astype(np.float32))
    bound = (cols + cols // 2 + 4) * U * (np.abs(xb) @ np.abs(wb).T) + 1e-30
    finite = [i for i in range(len(x)) if i not in (4, 5)]
    assert np.all(np.abs(tiles[finite] - vectors[finite]) <= bound[finite])
    assert np.isnan(tiles[4]).all() and np.isnan(vectors[4]).all()
    assert not np.isfinite(tiles[5]).any() and not np.isfinite(vectors[5]).any()


def test_bf16_mode_is_refused_where_it_cannot_run():
    """The portable and AVX2 paths have no bf16 kernels: a clear ValueError, never a crash."""
    c = case("Q4_0", 17, 64)
    assert "avx512 CPU path" in _core._bf16_unavailable_reason("portable")
    with pytest.raises(ValueError, match="bf16 activations need the avx512 CPU path"):
        c.packed.matmul(activations(64)[:2], bf16=True, path="portable")
    with pytest.raises(ValueError, match="two kinds of activations"):
        c.packed.matmul(activations(64)[:2], bf16=True, exact=True)
    dense = case("F16", 17, 32)
    with pytest.raises(ValueError, match="no int8-activation kernel"):  # F16 / BF16 weights meet float activations
        dense.packed.matmul(activations(32)[:2], bf16=True)


@pytest.mark.parametrize("qtype", TYPES)
def test_packed_size_is_about_the_files(qtype):
    weights, block_bytes = BLOCK[qtype]
    for rows in ROWS:
        for cols in cols_for(qtype):
            c = case(qtype, rows, cols)
            row_bytes = cols // weights * block_bytes
            assert c.raw.nbytes == rows * row_bytes
            padded_rows = -(-rows // 16) * 16
            if qtype in DECODED_TYPES:  # the core's index blocks: 4.66 bits a weight (5.28 with mins)
                assert c.packed.nbytes == padded_rows // 16 * cols // 256 * INDEX_TILE_BYTES[c.core_type]
                assert c.packed.nbytes * 8 <= (5.3 if c.core_type == "I4S16M" else 4.7) * padded_rows * cols
            elif qtype in SUPER_TYPES:  # the decoded scales: under 3% more than the file's blocks
                assert c.packed.nbytes == padded_rows // 16 * cols // 256 * K_TILE_BYTES[qtype]
                assert c.packed.nbytes <= 1.03 * padded_rows * row_bytes
            else:  # the file's bytes plus the last group's padding
                assert c.packed.nbytes == padded_rows * row_bytes
                assert c.packed.nbytes - c.raw.nbytes < 16 * row_bytes


@pytest.mark.parametrize("qtype", TYPES)
def test_raw_size_is_checked_with_the_types_block_size(qtype):
    """block_weights and block_bytes (quant_type.h), as the GGUF spec gives them."""
    cols = cols_for(qtype)[-1]
    c = case(qtype, 17, cols)
    core = c.core_type
    weights, size = (256, CORE_BLOCK_BYTES[core]) if qtype in DECODED_TYPES else BLOCK[qtype]
    needed = 17 * cols // weights * size
    with pytest.raises(ValueError, match=f"{core} matrix \\[17, {cols}\\] needs {needed} bytes, got {needed - 1}"):
        _core._quant_pack(c.core_raw[:-1], core, 17, cols)


@pytest.mark.parametrize("qtype", TYPES)
def test_dequantize_rows_is_the_files_values(qtype):
    cols = cols_for(qtype)[1]
    c = case(qtype, 33, cols)
    ids = np.array([32, 0, 17, 5, 32])  # the last (padded) group, repeats, any order
    out = c.packed.dequantize_rows(ids)
    expected = dequantize(c.raw.reshape(33, -1)[ids], GGMLQuantizationType[qtype])  # float32, gguf-py's own
    np.testing.assert_array_equal(out.view(np.uint32), expected.view(np.uint32))  # bit for bit
    with pytest.raises(ValueError, match="out of range"):
        c.packed.dequantize_rows(np.array([33]))
    # a table read in place (Gemma 4's per-layer embeddings): the same rows from the file's blocks
    in_place = _core._row_table_rows(c.core_raw, c.core_type, 33, cols, ids)
    np.testing.assert_array_equal(in_place.view(np.uint32), expected.view(np.uint32))
    with pytest.raises(ValueError, match="out of range"):
        _core._row_table_rows(c.core_raw, c.core_type, 33, cols, [-1])
    with pytest.raises(ValueError, match="needs .* bytes"):
        _core._row_table_rows(c.core_raw[:-1], c.core_type, 33, cols, [0])


def test_a_float32_row_table_reads_its_rows():
    table = np.random.default_rng(0).standard_normal((5, 48)).astype(np.float32)
    np.testing.assert_array_equal(_core._row_table_rows(table.view(np.uint8).reshape(-1), "F32", 5, 48, [4, 0]),
                                  table[[4, 0]])


def test_mxfp4_dequantizes_every_exponent_and_code_as_gguf():
    """Every E8M0 exponent (0, 1: float32 subnormal scales; 253 and up: some values overflow to
    inf, as gguf-py's do) with every E2M1 code, in both nibbles, bit for bit."""
    e = np.repeat(np.arange(256, dtype=np.uint8), 16)  # a row per (exponent, code)
    codes = np.tile(np.arange(16, dtype=np.uint8), 256)
    qs = np.repeat((codes | ((15 - codes) << 4))[:, None], 16, axis=1)  # low nibble code, high 15 - code
    raw = np.ascontiguousarray(np.concatenate([e[:, None], qs], axis=1))  # (4096, 17): one block per row
    packed = _core._quant_pack(raw.reshape(-1), "MXFP4", 4096, 32)
    with np.errstate(over="ignore"):
        expected = dequantize(raw, GGMLQuantizationType.MXFP4)
    assert np.isinf(expected).any() and (expected[:32] != 0).any() and np.all(expected[:32] < 1e-37)
    np.testing.assert_array_equal(packed.dequantize_rows(np.arange(4096)).view(np.uint32), expected.view(np.uint32))


def test_mxfp4_kernels_read_small_and_subnormal_scales():
    """MXFP4's E8M0 scales as every path's int8 kernels decode them (AVX-512 in SIMD code):
    exponents 0 and 1 (float32 subnormal scales), 2, and ordinary ones, each row its own;
    every path's product within float32 rounding of the float64 product of the same
    quantized activations (NaN-free, no row all zero)."""
    rows, cols = 24, 64
    exponents = np.array([0, 1, 2, 3, 100, 120, 127, 128, 129, 130, 140, 60] * 2, dtype=np.uint8)
    rng = np.random.default_rng(5)
    raw = np.concatenate([np.repeat(exponents[:, None], cols // 32, axis=1)[..., None],
                          rng.integers(0, 256, (rows, cols // 32, 16), dtype=np.uint8)], axis=2)
    raw = np.ascontiguousarray(raw.reshape(rows, -1))
    w64 = dequantize(raw, GGMLQuantizationType.MXFP4).astype(np.float64)
    packed = _core._quant_pack(raw.reshape(-1), "MXFP4", rows, cols)
    x = activations(cols)[:3]
    xq, _ = quantize_like_kernel(x)
    scale = np.abs(xq) @ np.abs(w64).T
    for path in PATHS:
        for two_level in (False, True):
            out = packed.matmul(x, path=path, two_level=two_level).astype(np.float64)
            ref = xq @ w64.T if not two_level else x.astype(np.float64) @ w64.T
            tolerance = (1e-5 if not two_level else 2e-4) * scale + 1e-300
            assert np.all(np.abs(out - ref) <= tolerance), (path, two_level)


@pytest.mark.parametrize("qtype", IQ_TYPES)
def test_iq4_grid_is_ggufs(qtype):
    """Each of the 16 indices in both nibbles, with d = 1 (IQ4_XS: every 6-bit sub-block scale
    too), reads back as gguf-py's grid value, bit for bit."""
    weights, size = BLOCK[qtype]
    rows = 64
    raw = np.zeros((rows, size), np.uint8)
    raw[:, 0:2] = np.frombuffer(np.float16(1).tobytes(), np.uint8)
    qs = raw[:, 8:] if qtype == "IQ4_XS" else raw[:, 2:]
    qs[:] = (np.arange(qs.size) % 16 | ((np.arange(qs.size) * 7 + 3) % 16) << 4).reshape(qs.shape).astype(np.uint8)
    if qtype == "IQ4_XS":  # ls_j = row + j (mod 64): 6 bits as 4 low (bytes 4-7) and 2 high (uint16 at 2)
        ls = (np.arange(rows)[:, None] + np.arange(8)[None, :]) % 64
        raw[:, 4:8] = (ls[:, 0::2] & 15) | ((ls[:, 1::2] & 15) << 4)
        high = ((ls >> 4) << (2 * np.arange(8))).sum(axis=1).astype(np.uint16)
        raw[:, 2:4] = high[:, None].view(np.uint8)
    packed = _core._quant_pack(raw.reshape(-1), qtype, rows, weights)
    expected = dequantize(raw, GGMLQuantizationType[qtype])
    assert len(np.unique(expected)) > 16 if qtype == "IQ4_XS" else len(np.unique(expected)) == 16
    np.testing.assert_array_equal(packed.dequantize_rows(np.arange(rows)).view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("qtype", ["Q4_1", "Q4_K", "Q6_K", "IQ4_XS"])
def test_a_matrix_repacked_on_several_threads_is_the_files(qtype):
    """A matrix of several MB is repacked by several threads (one per MB, up to the cores),
    each a range of 16-row groups: every row reads back as gguf-py's values."""
    rows, cols = 4099, 1024  # a ragged last group
    c = case(qtype, rows, cols)
    ids = np.arange(rows)
    expected = dequantize(c.raw.reshape(rows, -1), GGMLQuantizationType[qtype])
    np.testing.assert_array_equal(c.packed.dequantize_rows(ids).view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("qtype, cols, exact", [("Q4_1", 64, True), ("Q4_1", 64, False), ("Q6_K", 256, True),
                                                ("Q6_K", 256, False), ("BF16", 64, True)])  # dense: no int8 mode
def test_group_range_writes_only_its_rows(qtype, cols, exact, path):
    c = case(qtype, 33, cols)
    x = activations(cols)[:3]
    full = c.packed.matmul(x, exact=exact, path=path)
    part = c.packed.matmul(x, exact=exact, path=path, groups=(1, 3))
    np.testing.assert_array_equal(part[:, 16:], full[:, 16:])
    assert np.isnan(part[:, :16]).all()
    empty = c.packed.matmul(x, exact=exact, path=path, groups=(2, 2))
    assert np.isnan(empty).all()


@pytest.mark.parametrize("path", PATHS)
def test_quantized_activations_are_shared_by_products(path):
    x = activations(256)[:5]
    acts = _core._QuantActivations(8, 256)
    acts.quantize(x)
    for qtype in ("Q8_0", "Q4_1", "Q4_K", "Q6_K"):  # several products on one quantized input
        c = case(qtype, 17, 256)
        np.testing.assert_array_equal(c.packed.matmul_quantized(acts, path=path), c.packed.matmul(x, path=path))
    with pytest.raises(ValueError, match="max_rows"):
        acts.quantize(activations(256)[:9])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("qtype, exact", [(q, e) for q in ("Q5_1", "Q4_K", "Q6_K", "F16") for e in (True, False)
                                          if e or q not in DENSE_TYPES])  # dense: no int8 mode
def test_non_finite_activations_give_nan_rows(qtype, exact, path):
    c = case(qtype, 17, 256)
    x = activations(256)[:3].copy()
    x[1, 40] = np.nan
    x[2, 3] = np.inf
    out = c.packed.matmul(x, exact=exact, path=path)
    assert np.isfinite(out[0]).all()
    assert np.isnan(out[1]).all()
    assert not np.isfinite(out[2]).any()


def test_zero_activation_rows():
    c = case("Q8_0", 16, 32)
    for exact in (True, False):
        assert c.packed.matmul(np.zeros((0, 32), np.float32), exact=exact).shape == (0, 16)


def test_bad_arguments_raise():
    raw = case("Q4_0", 16, 64).raw
    with pytest.raises(ValueError, match="multiple of 32"):
        _core._quant_pack(raw, "Q4_0", 32, 32 + 16)
    with pytest.raises(ValueError, match="needs 576 bytes, got 575"):
        _core._quant_pack(raw[:-1], "Q4_0", 16, 64)
    with pytest.raises(ValueError, match="is not one of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, F16, BF16"):
        _core._quant_pack(raw, "Q3_K", 16, 64)
    with pytest.raises(ValueError, match="rows = 0"):
        _core._quant_pack(raw, "Q4_0", 0, 64)
    with pytest.raises(TypeError):
        _core._quant_pack(raw.view(np.int8), "Q4_0", 16, 64)
    w = _core._quant_pack(raw, "q4_0", 16, 64)
    with pytest.raises(ValueError, match=r"shape \(M, 64\)"):
        w.matmul(np.zeros((2, 32), np.float32))
    with pytest.raises(TypeError, match="float32"):
        w.matmul(np.zeros((2, 64)))
    with pytest.raises(ValueError, match="not within"):
        w.matmul(np.zeros((2, 64), np.float32), groups=(0, 2))
    with pytest.raises(ValueError, match="is not one of amx, avx512, avx2, portable"):
        w.matmul(np.zeros((2, 64), np.float32), path="sse9")


@pytest.mark.parametrize("qtype", K_TYPES + ["IQ4_XS"])
def test_k_quants_need_cols_a_multiple_of_256(qtype):
    raw = case(qtype, 2, 512).raw
    family = "IQ4_XS" if qtype == "IQ4_XS" else "K-quant"
    for cols in (128, 384, 576):  # a multiple of 32 is not enough
        with pytest.raises(ValueError, match=f"{qtype} matrix: cols = {cols} must be a positive multiple of 256 "
                                             rf"\(the {family} super-block size\)"):
            _core._quant_pack(raw, qtype, 2, cols)
    assert _core._quant_pack(raw, qtype.lower(), 2, 512).type == qtype


@pytest.mark.parametrize("qtype", DECODED_TYPES)
def test_index_types_need_cols_a_multiple_of_256(qtype):
    c = case(qtype, 2, 512)
    for cols in (128, 384, 576):
        with pytest.raises(ValueError, match=f"{c.core_type} matrix: cols = {cols} must be a positive multiple of "
                                             r"256 \(the block size\)"):
            _core._quant_pack(c.core_raw, c.core_type, 2, cols)
    assert _core._quant_pack(c.core_raw, c.core_type.lower(), 2, 512).type == c.core_type


@pytest.mark.parametrize("qtype", DECODED_TYPES)
def test_an_index_matrix_has_one_table(qtype):
    """A tile holds one table of values for its 16 rows: core blocks whose tables differ
    (not what the loader makes: it gives a tensor one table) are refused, not misread."""
    c = case(qtype, 32, 512)
    blocks = c.core_raw.reshape(64, CORE_BLOCK_BYTES[c.core_type]).copy()
    blocks[37, 3] ^= 1  # one value of one block's table
    with pytest.raises(ValueError, match=f"{c.core_type} matrix: its blocks hold different value tables"):
        _core._quant_pack(blocks.reshape(-1), c.core_type, 32, 512)


@pytest.mark.parametrize("qtype", DECODED_TYPES)
def test_index_types_avx2_and_portable_agree(qtype):
    """The two paths this CPU runs for the index types give the same products up to float32
    summation order (each is also checked against float64 above)."""
    if "avx2" not in PATHS:
        pytest.skip("this CPU runs the portable path only")
    c = case(qtype, 33, 768)
    x = activations(768)
    for kwargs in ({"exact": True}, {"exact": False}, {"two_level": True}):
        avx2 = c.packed.matmul(x, path="avx2", **kwargs)
        portable = c.packed.matmul(x, path="portable", **kwargs)
        np.testing.assert_allclose(avx2, portable, rtol=1e-5, atol=1e-5 * np.abs(portable).max(), err_msg=str(kwargs))


@pytest.mark.parametrize("qtype", DENSE_TYPES)
def test_dense_types_have_no_int8_mode(qtype):
    c = case(qtype, 17, 7)  # any width: a dense "block" is one weight
    with pytest.raises(ValueError, match=f"{qtype} weights have no int8-activation kernel; use matmul_float"):
        c.packed.matmul(activations(7)[:2], exact=False)
    acts = _core._QuantActivations(2, 32)
    acts.quantize(activations(32)[:2])
    with pytest.raises(ValueError, match="no int8-activation kernel"):
        case(qtype, 17, 32).packed.matmul_quantized(acts)


def pack_forged_size(qtype: str, rows: int, cols: int):
    """A header-sized lie: rows x cols far beyond the bytes given."""
    return _core._quant_pack(np.zeros(BLOCK[qtype][1], np.uint8), qtype, rows, cols)


@pytest.mark.parametrize("qtype, rows, cols", [("Q4_0", 2**31, 32), ("Q4_0", 1, 2**21), ("Q4_0", 2**30, 2**20),
                                               ("Q4_0", 1 << 62, 32), ("Q6_K", 2**30, 2**20), ("F16", 1 << 62, 1)])
def test_forged_sizes_are_refused_before_allocating(qtype, rows, cols):
    with Sandbox() as box:
        outcome = box.run(pack_forged_size, qtype, rows, cols)
    assert outcome.status == "raised" and outcome.error_type == "ValueError", outcome.describe()


def test_choose_path_on_made_up_cpus():
    assert _core._quant_choose_path(None, ["avx2", "portable"]) == "avx2"
    assert _core._quant_choose_path("", ["portable"]) == "portable"
    assert _core._quant_choose_path("portable", ["avx512", "avx2", "portable"]) == "portable"
    with pytest.raises(ValueError, match="lacks"):
        _core._quant_choose_path("avx512", ["avx2", "portable"])
    with pytest.raises(ValueError, match="lacks"):
        _core._quant_choose_path("avx2", ["portable"])
    with pytest.raises(ValueError, match="not one of"):
        _core._quant_choose_path("AVX2", ["avx2", "portable"])


def test_default_path_is_the_best_this_cpu_runs():
    assert PATHS[-1] == "portable"
    if "KVGEN_CPU_PATH" not in os.environ:
        assert _core._quant_cpu_path() == PATHS[0]


def cpu_path_in_subprocess(value: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, KVGEN_CPU_PATH=value)
    code = "from kvgen import _core; print(_core._quant_cpu_path())"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_environment_variable_forces_a_path():
    for path in PATHS:
        run = cpu_path_in_subprocess(path)
        assert run.returncode == 0 and run.stdout.strip() == path, run.stderr
    run = cpu_path_in_subprocess("neon")
    assert run.returncode != 0
    assert "ValueError: KVGEN_CPU_PATH: CPU path 'neon' is not one of amx, avx512, avx2, portable" in run.stderr
