"""The loader's decoding of Q2_K, Q3_K, the IQ3 / IQ2 / IQ1 grids, TQ1_0 and TQ2_0 into the
core's blocks (kvgen.loaders.index_types), against the gguf package's own dequantization:
bit for bit on random bytes (every grid index, sign, sub-block scale and fp16 scale pattern,
NaN, inf and subnormal scales included) and on chosen edge scales, decoded in NumPy and
repacked and read back by the core."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import dequantize
from llama_models import random_iq_blocks, random_k_quant

from kvgen import _core
from kvgen.loaders import index_types
from kvgen.loaders.quantize import DECODED_TYPES, to_core

TYPES = ["Q2_K", "Q3_K", "IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0"]
# The grids as llama.cpp's formats define them: entries x weights per entry, and the values
GRIDS = {"IQ2_XXS": (256, 8, {8, 25, 43}), "IQ2_XS": (512, 8, {8, 25, 43}), "IQ2_S": (1024, 8, {8, 25, 43}),
         "IQ3_XXS": (256, 4, {4, 12, 20, 28, 36, 44, 52, 62}), "IQ3_S": (512, 4, set(range(1, 16, 2))),
         "IQ1_S": (2048, 8, {-1, 0, 1}), "IQ1_M": (2048, 8, {-1, 0, 1})}
# fp16 scales at the edges: the largest, the smallest subnormal, zeros of both signs, negative
EDGE_SCALES = np.array([65504.0, -65504.0, 2.0**-24, -(2.0**-24), 0.0, -0.0, 6.1e-5, -1.0], dtype=np.float16)


def as_bits(a: np.ndarray) -> np.ndarray:
    """float32 bits, every NaN as one pattern (gguf's NaNs and ours may differ in payload)."""
    bits = a.view(np.uint32).copy()
    bits[np.isnan(a)] = 0x7FC00000
    return bits


def decoded_values(qtype: str, raw: np.ndarray) -> np.ndarray:
    """scale * q (+ min) in float32 from the decoder (each scale and min its unit times its
    integer sub)."""
    scale, q, mins = index_types.decode(qtype, raw)
    with np.errstate(all="ignore"):
        w = np.repeat(scale, 16, axis=1) * q.astype(np.float32)
        return w if mins is None else w + np.repeat(mins, 16, axis=1)


def test_every_type_kvgen_reads_is_decoded_or_packed():
    assert set(DECODED_TYPES) == set(TYPES)


@pytest.mark.parametrize("qtype", TYPES)
def test_random_bytes_decode_as_gguf_bit_for_bit(qtype):
    size = index_types.block_bytes(qtype)
    raw = np.random.default_rng(TYPES.index(qtype)).integers(0, 256, (4096, size), dtype=np.uint8)
    with np.errstate(all="ignore"):
        expected = dequantize(raw, GGMLQuantizationType[qtype])
    assert np.isnan(expected).any() and np.isfinite(expected).mean() > 0.9  # NaN / inf scales among them
    np.testing.assert_array_equal(as_bits(decoded_values(qtype, raw)), as_bits(expected))


def random_finite_blocks(qtype: str, blocks: int, seed: int) -> np.ndarray:
    """(blocks, bytes) random valid blocks with every scale in EDGE_SCALES, cycled."""
    if qtype in ("Q2_K", "Q3_K"):
        raw = random_k_quant((blocks, 256), qtype, seed)
        for offset in (80, 82) if qtype == "Q2_K" else (108,):
            raw[:, offset:offset + 2] = np.resize(EDGE_SCALES, blocks)[:, None].view(np.uint8)
        return raw
    raw = random_iq_blocks((blocks, 256), qtype, seed, 1.0)
    d = np.resize(EDGE_SCALES, blocks)  # replaces the scale random_iq_blocks wrote
    bits = d.view(np.uint16)
    if qtype == "IQ1_M":
        words = raw[:, 48:56].copy().view(np.uint16)
        for i in range(4):
            words[:, i] = (words[:, i] & 0x0FFF) | (((bits >> (4 * i)) & 0xF) << 12)
        raw[:, 48:56] = words.view(np.uint8)
    else:
        at = {"TQ1_0": 52, "TQ2_0": 64}.get(qtype, 0)
        raw[:, at:at + 2] = d[:, None].view(np.uint8)
    return raw


@pytest.mark.parametrize("qtype", TYPES)
def test_the_core_reads_back_ggufs_values_with_edge_scales(qtype):
    rows = 64
    raw = random_finite_blocks(qtype, rows * 2, seed=11).reshape(rows, -1)  # 2 blocks a row
    expected = dequantize(raw, GGMLQuantizationType[qtype])
    assert (expected == 0).any() and np.abs(expected).max() >= 8000 and np.isfinite(expected).all()
    w = to_core(qtype, raw, (rows, 512))
    assert w.type == index_types.CORE_TYPES[qtype]
    packed = _core._quant_pack(w.data, w.type, rows, 512)
    np.testing.assert_array_equal(packed.dequantize_rows(np.arange(rows)).view(np.uint32), expected.view(np.uint32))
    # in memory: 4.66 bits a weight (Q2_K, with its mins: 5.28)
    bits = {"I4S16": 4.66, "I4S16M": 5.28}[w.type]
    assert packed.nbytes * 8 / (rows * 512) == pytest.approx(bits, abs=0.01)


@pytest.mark.parametrize("qtype", TYPES)
def test_a_scale_that_is_not_finite_is_refused(qtype):
    raw = random_finite_blocks(qtype, 4, seed=3)
    at = {"Q2_K": 80, "Q3_K": 108, "TQ1_0": 52, "TQ2_0": 64}.get(qtype, 0)
    if qtype == "IQ1_M":  # d = 0x7C00 (inf): nibbles 0, 0, C, 7 at the top of the four words
        words = raw[:, 48:56].copy().view(np.uint16)
        words[0, :] = (words[0, :] & 0x0FFF) | (np.array([0, 0, 0xC, 0x7], np.uint16) << 12)
        raw[:, 48:56] = words.view(np.uint8)
    else:
        raw[0, at:at + 2] = np.array([np.inf], np.float16).view(np.uint8)
    with pytest.raises(ValueError, match="a block scale is nan or inf"):
        to_core(qtype, raw, (4, 256))


@pytest.mark.parametrize("qtype", sorted(GRIDS))
def test_grids_are_read_from_gguf_with_their_defined_shape_and_values(qtype):
    entries, width, values = GRIDS[qtype]
    grid = index_types.grid(qtype)
    assert grid.shape == (entries, width) and grid.dtype == np.int8
    assert set(np.unique(grid).tolist()) == values
    assert len(np.unique(grid, axis=0)) == entries  # no two entries alike


def test_sign_table_has_an_even_number_of_minus_signs_per_entry():
    """IQ2_XXS / IQ2_XS / IQ3_XXS's 128 sign patterns: 7 stored bits, the 8th sign making the
    count of minus signs even (llama.cpp's format definition)."""
    signs = index_types.sign_table()
    assert signs.shape == (128, 8)
    assert np.all((signs[:, :7] < 0) == ((np.arange(128)[:, None] >> np.arange(7)) & 1).astype(bool))
    assert np.all((signs < 0).sum(axis=1) % 2 == 0)


def test_a_stacked_tensor_of_experts_is_decoded_whole(tmp_path):
    """A 3-D tensor (experts, out, in) of a decoded type, as MoE files store their experts:
    GGUFContents.stacked hands the core one tensor of core blocks, each expert's rows its own,
    whose values are gguf's (read back through the loader's float conversion and the core)."""
    import gguf

    from kvgen.loaders.gguf.model import open_gguf
    from kvgen.loaders.quantize import to_float32

    experts, out, cols = 3, 32, 512
    raw = random_iq_blocks((experts * out, cols), "IQ2_S", 5, 1e-3)
    writer = gguf.GGUFWriter(str(tmp_path / "e.gguf"), "llama")
    writer.add_tensor("blk.0.ffn_up_exps.weight", raw.reshape(experts, out, -1), raw_dtype=GGMLQuantizationType.IQ2_S)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    w = open_gguf(tmp_path / "e.gguf").stacked("blk.0.ffn_up_exps.weight", (experts, out, cols))
    assert w.type == "I4S16" and w.shape == (experts, out, cols)
    expected = dequantize(raw, GGMLQuantizationType.IQ2_S).reshape(experts, out, cols)
    np.testing.assert_array_equal(to_float32(w).view(np.uint32), expected.view(np.uint32))
    packed = _core._quant_pack(w.data, w.type, experts * out, cols)
    np.testing.assert_array_equal(packed.dequantize_rows(np.arange(out, 2 * out)).view(np.uint32),
                                  expected[1].view(np.uint32))


@pytest.mark.parametrize("qtype", TYPES)
def test_a_types_values_are_the_ones_its_blocks_decode_into(qtype):
    """index_types.values: the format's possible q (at most 16: one 4-bit index each), which
    random blocks of the type fill out exactly."""
    raw = random_finite_blocks(qtype, 2048, seed=5)
    _, q, _ = index_types.decode(qtype, raw)
    assert len(index_types.values(qtype)) <= 16
    np.testing.assert_array_equal(np.unique(q), index_types.values(qtype))
