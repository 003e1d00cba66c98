"""GGUF types whose weights are small integers times a scale: decoded at load into the core's
index types, so that the core computes on the file's values bit for bit.

Q2_K, Q3_K, the grid i-quants (IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M) and the
ternary types (TQ1_0, TQ2_0) all store, per 256-weight block, weights ``w = scale * q (+ min)`` with
``q`` a small integer (a grid value with its sign, a 2-bit quant, a ternary digit) and a scale
(and Q2_K's minimum) per 16 or 32 weights that is the block's fp16 ``d`` times a small
integer (and a power of two). Each decoder below gives that as a float32 *unit* per block
(``d`` times the power of two) and an integer *sub* per 16 weights, and ``q``; ``unit * sub``
is exactly the scale ``gguf.quants.dequantize`` computes (every product is exact in float32),
so ``(unit * sub) * q (+ min)`` is gguf's value bit for bit (Q2_K's ``+ min`` is gguf's one
rounding). The IQ1 types' ``grid + delta`` (delta = +-1/8) becomes ``q = 8 * grid +- 1`` with
the unit divided by 8, an exact change.

A tensor's ``q`` take at most 16 values (a type's signed grid values, 8 grid +- 1, the
2- and 3-bit quants, the trits), so ``to_core`` stores each ``q`` as a 4-bit index into the
tensor's table of them: the core's ``I4S16`` blocks (table, unit, 16 int8 subs, 128 bytes of
indices: 4.66 bits a weight once repacked) or ``I4S16M`` (Q2_K: and a min unit and 16 min
subs, 5.28 bits), against the file's 1.6-3.4 bits.

The grids and sign tables are not copied here: they are read from the ``gguf`` package
(``gguf.quants.<TYPE>.grid`` after ``init_grid()``: float32 of shape (1, 1, entries, 8 or 4)
holding the grid's integer values; ``gguf.quants.IQ2_XXS.ksigns``: 128 bytes, each the 8 sign
bits of 8 weights; ``gguf.quants.IQ1_S.delta``: 0.125), and checked to be integers when first
used.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

# GGUF type -> the core type its blocks become
CORE_TYPES = {"Q2_K": "I4S16M", "Q3_K": "I4S16", "IQ3_XXS": "I4S16", "IQ3_S": "I4S16", "IQ2_XXS": "I4S16",
              "IQ2_XS": "I4S16", "IQ2_S": "I4S16", "IQ1_S": "I4S16", "IQ1_M": "I4S16", "TQ1_0": "I4S16",
              "TQ2_0": "I4S16"}
TABLE = 16  # values a tensor's q may take: one 4-bit index each
QK = 256  # weights per block of every type here


@lru_cache(maxsize=None)
def grid(qtype: str) -> np.ndarray:
    """gguf's grid of an i-quant type as int8, shape (entries, 8 or 4)."""
    import gguf

    cls = getattr(gguf.quants, qtype)
    cls.init_grid()
    values = np.asarray(cls.grid, dtype=np.float32).reshape(cls.grid_shape)
    as_int = values.astype(np.int8)
    if not np.array_equal(as_int.astype(np.float32), values):
        raise RuntimeError(f"gguf's {qtype} grid holds values that are not small integers")
    return as_int


@lru_cache(maxsize=None)
def sign_table() -> np.ndarray:
    """gguf's 128 sign bytes of IQ2_XXS / IQ2_XS / IQ3_XXS as (128, 8) int8 of +-1."""
    import gguf

    bits = np.frombuffer(gguf.quants.IQ2_XXS.ksigns, dtype=np.uint8).reshape(128, 1) >> np.arange(8, dtype=np.uint8)
    return np.where(bits & 1, -1, 1).astype(np.int8)


@lru_cache(maxsize=None)
def _byte_signs() -> np.ndarray:
    """(256, 8) int8: for each byte, -1 where bit i is set, else 1 (IQ2_S / IQ3_S's sign bits)."""
    bits = np.arange(256, dtype=np.uint8).reshape(256, 1) >> np.arange(8, dtype=np.uint8)
    return np.where(bits & 1, -1, 1).astype(np.int8)


def iq1_delta() -> np.float32:
    """gguf's IQ1 delta (1/8: ``8 * (grid + delta)`` is an integer)."""
    import gguf

    delta = np.float32(gguf.quants.IQ1_S.delta)
    if delta * 8 != 1 or np.float32(gguf.quants.IQ1_M.delta) != delta:
        raise RuntimeError(f"gguf's IQ1 delta is {delta}, not 1/8")
    return delta


def _half(b: np.ndarray) -> np.ndarray:
    """fp16 bytes (n, 2) as float32 (n, 1)."""
    return np.ascontiguousarray(b).view(np.float16).astype(np.float32)


def _bits(b: np.ndarray, shifts, mask: int) -> np.ndarray:
    """(n, k) integers -> (n, k * len(shifts)): each value's fields at ``shifts``, fastest."""
    s = np.asarray(shifts, dtype=b.dtype)
    return ((b[..., None] >> s) & mask).reshape(b.shape[0], -1)


def _per16(sub32: np.ndarray) -> np.ndarray:
    return np.repeat(sub32, 2, axis=1)


def _odd(ls: np.ndarray) -> np.ndarray:
    """2 ls + 1: the grid types' sub-scale (0.5 + ls) doubled."""
    return 2 * ls.astype(np.int16) + 1


# Each decoder: (unit (n, 1) float32, sub (n, 16) int, q (n, 256) int8, min unit or None,
# min sub or None); scale_s = unit * sub_s and min_s = min_unit * min_sub_s, as gguf has them.

def _q2_k(blocks):
    n = len(blocks)
    sc, qs, d, dmin = blocks[:, :16], blocks[:, 16:80], _half(blocks[:, 80:82]), _half(blocks[:, 82:84])
    q = (qs.reshape(n, 2, 1, 32) >> np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)) & 3
    # gguf: d * (sc & 0xF), -(dmin * (sc >> 4))
    return d, sc & 0xF, q.reshape(n, QK).astype(np.int8), -dmin, sc >> 4


def _q3_k(blocks):
    n = len(blocks)
    hmask, qs, sc, d = blocks[:, :32], blocks[:, 32:96], blocks[:, 96:108], _half(blocks[:, 108:110])
    low = _bits(sc[:, :8], [0, 4], 0xF)  # sub-blocks 0..7 from low nibbles, 8..15 from high ones
    low = low.reshape(n, 8, 2).transpose(0, 2, 1).reshape(n, 16)
    high = _bits(sc[:, 8:], [0, 2, 4, 6], 3).reshape(n, 4, 4).transpose(0, 2, 1).reshape(n, 16)
    ql = (qs.reshape(n, 2, 1, 32) >> np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)) & 3
    qh = (hmask.reshape(n, 1, 1, 32) >> np.arange(8, dtype=np.uint8).reshape(1, 1, 8, 1)) & 1
    q = ql.reshape(n, QK).astype(np.int8) - 4 * (1 - qh.reshape(n, QK).astype(np.int8))  # -4..3
    # gguf: d * (sc - 32) per 16, sc 6-bit
    return d, (low | (high << 4)).astype(np.int16) - 32, q, None, None


def _iq2_xxs(blocks):
    n = len(blocks)
    d = _half(blocks[:, :2])
    aux = np.ascontiguousarray(blocks[:, 2:]).view(np.uint32).reshape(n, 8, 2)
    signs = sign_table()[_bits(aux[..., 1], [0, 7, 14, 21], 0x7F)]  # (n, 32, 8)
    idx = np.ascontiguousarray(aux[..., 0]).view(np.uint8).reshape(n, 32)
    # gguf: d * (0.5 + ls) * 0.25 per 32
    return d * np.float32(0.125), _per16(_odd(aux[..., 1] >> 28)), (grid("IQ2_XXS")[idx] * signs).reshape(n, QK), \
        None, None


def _iq2_xs(blocks):
    n = len(blocks)
    d = _half(blocks[:, :2])
    qs = np.ascontiguousarray(blocks[:, 2:66]).view(np.uint16)
    signs = sign_table()[qs >> 9]
    # gguf: d * (0.5 + ls) * 0.25 per 16
    return d * np.float32(0.125), _odd(_bits(blocks[:, 66:74], [0, 4], 0xF)), \
        (grid("IQ2_XS")[qs & 511] * signs).reshape(n, QK), None, None


def _iq2_s(blocks):
    n = len(blocks)
    d = _half(blocks[:, :2])
    qs, sign_bits, qh, sc = blocks[:, 2:34], blocks[:, 34:66], blocks[:, 66:74], blocks[:, 74:82]
    signs = _byte_signs()[sign_bits]  # (n, 32, 8)
    idx = qs.astype(np.uint16) | (_bits(qh, [0, 2, 4, 6], 3).astype(np.uint16) << 8)
    # gguf: d * (0.5 + ls) * 0.25 per 16
    return d * np.float32(0.125), _odd(_bits(sc, [0, 4], 0xF)), (grid("IQ2_S")[idx] * signs).reshape(n, QK), \
        None, None


def _iq3_xxs(blocks):
    n = len(blocks)
    d = _half(blocks[:, :2])
    qs = blocks[:, 2:66]
    aux = np.ascontiguousarray(blocks[:, 66:98]).view(np.uint32)
    signs = sign_table()[_bits(aux, [0, 7, 14, 21], 0x7F)]  # (n, 32, 8)
    # gguf: d * (0.5 + ls) * 0.5 per 32
    return d * np.float32(0.25), _per16(_odd(aux >> 28)), \
        (grid("IQ3_XXS")[qs].reshape(n, 32, 8) * signs).reshape(n, QK), None, None


def _iq3_s(blocks):
    n = len(blocks)
    d = _half(blocks[:, :2])
    qs, qh, sign_bits, sc = blocks[:, 2:66], blocks[:, 66:74], blocks[:, 74:106], blocks[:, 106:110]
    signs = _byte_signs()[sign_bits].reshape(n, QK)
    idx = qs.astype(np.uint16) | (_bits(qh, range(8), 1).astype(np.uint16) << 8)
    # gguf: d * (1 + 2 ls) per 32
    return d, _per16(_odd(_bits(sc, [0, 4], 0xF))), grid("IQ3_S")[idx].reshape(n, QK) * signs, None, None


def _iq1(qtype: str, idx: np.ndarray, minus: np.ndarray, n: int) -> np.ndarray:
    """8 * (grid + delta): grid rows ``idx`` (n, 32) of 8 weights, delta = -1/8 where ``minus``."""
    iq1_delta()
    eight = grid(qtype)[idx] * np.int8(8)
    return (eight + np.where(minus, -1, 1).astype(np.int8)[..., None]).reshape(n, QK)


def _iq1_s(blocks):
    n = len(blocks)
    d = _half(blocks[:, :2])
    qs = blocks[:, 2:34]
    qh = np.ascontiguousarray(blocks[:, 34:50]).view(np.uint16)  # (n, 8): one per 32 weights
    idx = qs.astype(np.uint16) | (_bits(qh, [0, 3, 6, 9], 7) << 8)
    minus = np.repeat((qh & 0x8000) != 0, 4, axis=1)  # per 8 weights
    # gguf: d * (2 x + 1) per 32, times (grid + delta) = (8 grid +- 1) / 8
    return d * np.float32(0.125), _per16(_odd((qh >> 12) & 7)), _iq1("IQ1_S", idx, minus, n), None, None


def _iq1_m(blocks):
    n = len(blocks)
    qs, qh = blocks[:, :32], blocks[:, 32:48]
    sc = np.ascontiguousarray(blocks[:, 48:56]).view(np.uint16)  # (n, 4)
    top = (sc & np.uint16(0xF000)) >> np.array([12, 8, 4, 0], dtype=np.uint16)
    d = (top[:, 0] | top[:, 1] | top[:, 2] | top[:, 3]).view(np.float16).astype(np.float32).reshape(n, 1)
    nibbles = _bits(qh, [0, 4], 0xF)  # (n, 32): per 8 weights
    idx = qs.astype(np.uint16) | ((nibbles & 7).astype(np.uint16) << 8)
    # gguf: d * (2 x + 1) per 16, times (grid + delta) = (8 grid +- 1) / 8
    return d * np.float32(0.125), _odd(_bits(sc, [0, 3, 6, 9], 7)), _iq1("IQ1_M", idx, (nibbles & 8) != 0, n), \
        None, None


def _tq1_0(blocks):
    n = len(blocks)
    qs, qh, d = blocks[:, :48], blocks[:, 48:52], _half(blocks[:, 52:54])
    pow3 = np.array([1, 3, 9, 27, 81], dtype=np.uint8).reshape(1, 1, 5, 1)
    q0 = (qs[:, :32].reshape(n, -1, 1, 32) * pow3).reshape(n, -1)  # uint8: wraps as the format wants
    q1 = (qs[:, 32:].reshape(n, -1, 1, 16) * pow3).reshape(n, -1)
    q2 = (qh.reshape(n, -1, 1, 4) * pow3[:, :, :4]).reshape(n, -1)
    trits = np.concatenate([q0, q1, q2], axis=-1)
    q = ((trits.astype(np.uint16) * 3) >> 8).astype(np.int8) - np.int8(1)
    return d, np.ones((n, 16), np.int8), q, None, None


def _tq2_0(blocks):
    n = len(blocks)
    qs, d = blocks[:, :64], _half(blocks[:, 64:66])
    q = (qs.reshape(n, -1, 1, 32) >> np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)) & 3
    return d, np.ones((n, 16), np.int8), q.reshape(n, QK).astype(np.int8) - np.int8(1), None, None


_DECODERS = {"Q2_K": _q2_k, "Q3_K": _q3_k, "IQ2_XXS": _iq2_xxs, "IQ2_XS": _iq2_xs, "IQ2_S": _iq2_s, "IQ3_XXS": _iq3_xxs,
             "IQ3_S": _iq3_s, "IQ1_S": _iq1_s, "IQ1_M": _iq1_m, "TQ1_0": _tq1_0, "TQ2_0": _tq2_0}


def block_bytes(qtype: str) -> int:
    import gguf

    return gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[qtype]][1]


def decode_parts(qtype: str, raw: np.ndarray) -> tuple:
    """The blocks of ``raw`` (uint8, whole blocks of ``qtype``) as (unit (n, 1) float32, sub
    (n, 16) int8, q (n, 256) int8, min unit (n, 1) float32 or None, min sub (n, 16) int8 or
    None): weight 16 s + i of block b is ``(unit[b] * sub[b, s]) * q[b, 16 s + i]
    (+ min_unit[b] * min_sub[b, s])``."""
    blocks = np.ascontiguousarray(raw, dtype=np.uint8).reshape(-1, block_bytes(qtype))
    with np.errstate(all="ignore"):  # a file's nan / inf scales are refused by to_core, not warned about
        unit, sub, q, min_unit, min_sub = _DECODERS[qtype](blocks)
    # every sub fits int8 (at most 31 in magnitude)
    return (_contiguous(unit, np.float32), _contiguous(sub, np.int8), _contiguous(q, np.int8),
            _contiguous(min_unit, np.float32), _contiguous(min_sub, np.int8))


def _contiguous(a, dtype):
    return None if a is None else np.ascontiguousarray(a, dtype=dtype)


def decode(qtype: str, raw: np.ndarray) -> tuple:
    """The blocks of ``raw`` as (scale (n, 16) float32, q (n, 256) int8, min (n, 16) float32 or
    None): weight 16 s + i of block b is ``scale[b, s] * q[b, 16 s + i] (+ min[b, s])``, each
    scale and min the exact product ``unit * sub`` (``decode_parts``)."""
    unit, sub, q, min_unit, min_sub = decode_parts(qtype, raw)
    with np.errstate(all="ignore"):
        scale = unit * sub.astype(np.float32)
        mins = None if min_unit is None else min_unit * min_sub.astype(np.float32)
    return scale, q, mins


@lru_cache(maxsize=None)
def values(qtype: str) -> np.ndarray:
    """The int8 values a ``qtype`` weight's q may take (sorted), from the format's definition:
    the 2- and 3-bit quants, the ternary digits, a grid's values with either sign, IQ1's 8 grid
    +- 1."""
    if qtype == "Q2_K":
        return np.arange(0, 4, dtype=np.int8)
    if qtype == "Q3_K":
        return np.arange(-4, 4, dtype=np.int8)
    if qtype == "TQ1_0":  # trits
        return np.arange(-1, 2, dtype=np.int8)
    if qtype == "TQ2_0":  # 2 bits less 1: the format's 3 (never written by llama.cpp) reads as 2
        return np.arange(-1, 3, dtype=np.int8)
    g = np.unique(grid(qtype)).astype(np.int16)
    if qtype in ("IQ1_S", "IQ1_M"):
        return np.unique(np.concatenate([8 * g - 1, 8 * g + 1])).astype(np.int8)
    return np.unique(np.concatenate([g, -g])).astype(np.int8)


def _as_indices(qtype: str, q: np.ndarray) -> tuple:
    """(table: 16 int8, index: q's uint8 positions in it) with table[index] == q. Values within
    16 of each other index by subtraction; the others through a 256-entry lookup."""
    v = values(qtype)
    if len(v) > TABLE:  # no type here has more: a decoder's fault, not the file's
        raise RuntimeError(f"{qtype} has {len(v)} values; the core's table holds {TABLE}")
    low = int(v[0])
    if int(v[-1]) - low < TABLE:
        table = np.arange(low, low + TABLE, dtype=np.int16).astype(np.int8)
        index = (q.view(np.uint8) - np.uint8(low & 0xFF)).astype(np.uint8, copy=False)
    else:
        table = np.zeros(TABLE, np.int8)
        table[:len(v)] = v
        index_of = np.full(256, 255, np.uint8)
        index_of[v.view(np.uint8)] = np.arange(len(v), dtype=np.uint8)
        index = index_of[q.view(np.uint8)]
    if int(index.max(initial=0)) >= TABLE:
        raise RuntimeError(f"{qtype} decoded into a value outside its format's {len(v)}")
    return table, index


def _nibbles(index: np.ndarray) -> np.ndarray:
    """(n, 256) indices 0..15 as (n, 128) bytes: byte 16 j + i holds weight 32 j + i (low nibble)
    and 32 j + 16 + i (high nibble), the nibble order of Q4_0 and IQ4_NL."""
    units = index.reshape(len(index), 8, 2, 16).astype(np.uint8)
    return (units[:, :, 0] | (units[:, :, 1] << 4)).reshape(len(index), 128)


def to_core(qtype: str, raw: np.ndarray) -> tuple:
    """(core type, its blocks as uint8, one row of blocks per row of ``raw``) for ``raw``, a
    (rows, bytes) array of ``qtype`` blocks. ValueError if a scale or minimum is not finite."""
    rows = raw.shape[0]
    unit, sub, q, min_unit, min_sub = decode_parts(qtype, raw)
    if not np.isfinite(unit).all() or (min_unit is not None and not np.isfinite(min_unit).all()):
        raise ValueError("a block scale is nan or inf")
    table, index = _as_indices(qtype, q)
    n = len(q)
    parts = [np.broadcast_to(table.view(np.uint8), (n, TABLE)), unit.view(np.uint8), sub.view(np.uint8)]
    if min_unit is not None:
        parts += [min_unit.view(np.uint8), min_sub.view(np.uint8)]
    parts.append(_nibbles(index))
    return CORE_TYPES[qtype], np.concatenate(parts, axis=1).reshape(rows, -1)


def core_to_float32(core_type: str, data: np.ndarray) -> np.ndarray:
    """The weights of ``I4S16`` / ``I4S16M`` blocks as float32 (flat): the file's values."""
    with_min = core_type == "I4S16M"
    blocks = np.ascontiguousarray(data, dtype=np.uint8).reshape(-1, 184 if with_min else 164)
    n = len(blocks)
    table = blocks[:, :TABLE].view(np.int8)
    unit = np.ascontiguousarray(blocks[:, 16:20]).view(np.float32)
    scale = np.repeat(unit * blocks[:, 20:36].view(np.int8).astype(np.float32), 16, axis=1)
    nibbles = blocks[:, -128:].reshape(n, 8, 1, 16) >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1) & 0xF
    q = np.take_along_axis(table, nibbles.reshape(n, QK).astype(np.intp), axis=1).astype(np.float32)
    w = scale * q
    if with_min:
        min_unit = np.ascontiguousarray(blocks[:, 36:40]).view(np.float32)
        w += np.repeat(min_unit * blocks[:, 40:56].view(np.int8).astype(np.float32), 16, axis=1)
    return w.reshape(-1)
