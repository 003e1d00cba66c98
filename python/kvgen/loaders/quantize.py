"""Quantized weights as kvgen's C++ models take them.

A quantized matrix travels from the loaders to the core as a ``QuantizedTensor``: its GGUF
type name, its raw blocks (uint8, the file's bytes) and its logical shape ``(out, in)``.
The core repacks the blocks once into its interleaved tile layout and computes on them
directly; they are never expanded to float32 as a whole.

- ``PACKED_TYPES``: the types the core computes on (F16 and BF16 with float activations
  only; the lookup-table types IQ4_NL, IQ4_XS and MXFP4 as their 4-bit indices). The other
  GGUF types kvgen reads (Q2_K, Q3_K, the IQ3 / IQ2 / IQ1 grids, TQ1_0, TQ2_0) are decoded at
  load by ``to_core`` into blocks of the same values that the core computes on
  (kvgen.loaders.index_types: 4-bit indices into the tensor's values, a scale per 16
  weights).
- ``quantize_checkpoint``: ``Model.load(directory, dtype="q8_0" | "q4_0")`` quantizes a
  float checkpoint's matrices with gguf-py's quantizers (llama.cpp's arithmetic).
- ``check_finite_scales``: a hostile file's NaN or inf block scale is refused by name,
  as a float tensor's NaN is, without dequantizing the tensor.
- 16-bit checkpoints (float16 / bfloat16 safetensors) travel as ``QuantizedTensor``s of type
  F16 / BF16 over the file's bytes: the core computes on them with the kernels GGUF's F16 /
  BF16 tensors use, or ``quantize_checkpoint`` quantizes them one matrix at a time.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kvgen.loaders.index_types import CORE_TYPES, core_to_float32
from kvgen.loaders.index_types import to_core as decode_to_core

PACKED_TYPES = ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K", "F16", "BF16", "IQ4_NL", "IQ4_XS",
                "MXFP4")
LOAD_DTYPES = ("q8_0", "q4_0")  # Model.load(directory, dtype=...)

# type -> (bytes per block, byte offsets of its fp16 scales / minimums within a block)
_SCALE_OFFSETS = {"Q8_0": (34, (0,)), "Q4_0": (18, (0,)), "Q4_1": (20, (0, 2)), "Q5_0": (22, (0,)),
                  "Q5_1": (24, (0, 2)), "Q2_K": (84, (80, 82)), "Q3_K": (110, (108,)), "Q4_K": (144, (0, 2)),
                  "Q5_K": (176, (0, 2)), "Q6_K": (210, (208,)), "IQ4_NL": (18, (0,)), "IQ4_XS": (136, (0,))}
# The GGUF types the loader decodes into the core's index types
DECODED_TYPES = tuple(CORE_TYPES)
# MXFP4's scale is a power of two 2^(e - 128) (never NaN), but from e = 253 on, 2^(e - 128)
# times its largest value (12) overflows float32: such blocks are dequantized and checked.
_MXFP4_BLOCK_BYTES, _MXFP4_LARGE_EXPONENT = 17, 253


class QuantizedTensor(NamedTuple):
    """A quantized matrix for the core: GGUF type name, raw blocks (uint8), shape (out, in),
    and whether ``data`` are pages of a read-only file mapping (the core then drops them
    from memory once it has repacked them)."""

    type: str
    data: np.ndarray
    shape: tuple
    mapped: bool = False


def tensor_handling(qtype: str) -> str:
    """What kvgen does with the matrices of a file's tensor type (``kvgen info``); vectors
    (norms, biases) of any type are read as float32."""
    if qtype == "F32":
        return "float32, matrices used in place"
    if qtype in ("F16", "BF16"):
        return "kept 16-bit, multiplied by its 16-bit kernels with float32 activations"
    if qtype in PACKED_TYPES:
        return "kept quantized, multiplied by its kernels (int8 or float activations, Model.activations)"
    if qtype in DECODED_TYPES:
        with_min = CORE_TYPES[qtype] == "I4S16M"
        return ("kept quantized as 4-bit indices into the tensor's 16 values with a scale"
                f"{' and min' if with_min else ''} per 16 weights ({5.3 if with_min else 4.7} bits a weight), the "
                "file's values bit for bit, multiplied by their kernels")
    if qtype == "U8":  # a safetensors checkpoint's uint8 tensors (kvgen.loaders.mxfp4)
        return "an MXFP4 checkpoint's codes and exponents, repacked into MXFP4 blocks (kept quantized)"
    return "not read by kvgen"


def check_finite_scales(qtype: str, raw: np.ndarray) -> bool:
    """Whether every fp16 scale (and minimum) of the blocks in ``raw`` is finite."""
    if qtype in ("F16", "BF16"):
        halves = raw.view(np.uint16)
        exponent = np.uint16(0x7C00) if qtype == "F16" else np.uint16(0x7F80)
        return not bool(np.any((halves & exponent) == exponent))
    if qtype == "MXFP4":
        blocks = raw.reshape(-1, _MXFP4_BLOCK_BYTES)
        large = blocks[blocks[:, 0] >= _MXFP4_LARGE_EXPONENT]
        if not len(large):
            return True
        import gguf

        with np.errstate(over="ignore"):
            return bool(np.isfinite(gguf.quants.dequantize(large, gguf.GGMLQuantizationType.MXFP4)).all())
    block_bytes, offsets = _SCALE_OFFSETS[qtype]
    blocks = raw.reshape(-1, block_bytes)
    return all(bool(np.isfinite(blocks[:, o:o + 2].view(np.float16)).all()) for o in offsets)


def to_core(qtype: str, raw: np.ndarray, shape: tuple) -> QuantizedTensor:
    """A tensor of one of DECODED_TYPES ((rows, bytes) blocks) as blocks of a core type holding
    the same values bit for bit; ValueError if a block scale is not finite."""
    core_type, blocks = decode_to_core(qtype, raw.reshape(raw.shape[0], -1))
    return QuantizedTensor(core_type, blocks.reshape(-1), tuple(shape))


def to_float32(w) -> np.ndarray:
    """A float32 array of ``w``: a float array, or an F16 / BF16 QuantizedTensor (one matrix)."""
    if not isinstance(w, QuantizedTensor):
        return np.asarray(w, dtype=np.float32)
    if w.type == "F16":
        return w.data.view(np.float16).astype(np.float32).reshape(w.shape)
    if w.type == "BF16":
        return (w.data.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(w.shape)
    if w.type in ("I4S16", "I4S16M"):
        return core_to_float32(w.type, w.data).reshape(w.shape)
    import gguf

    return gguf.quants.dequantize(w.data, gguf.GGMLQuantizationType[w.type]).reshape(w.shape)


def split_rows(w, rows: list[int], name: str) -> list:
    """``w`` (a float array or a QuantizedTensor, out = sum(rows) first) split by rows into
    views of the same memory; ValueError naming the tensor when the rows do not add up."""
    shape = tuple(w.shape)
    if not shape or shape[0] != sum(rows):
        raise ValueError(f"tensor {name!r} has shape {shape}; its parts need {sum(rows)} rows "
                         f"({' + '.join(map(str, rows))})")
    starts = np.cumsum([0, *rows])
    if not isinstance(w, QuantizedTensor):
        return [w[a:b] for a, b in zip(starts[:-1], starts[1:])]
    blocks = w.data.reshape(shape[0], -1)  # one row of blocks per output
    return [QuantizedTensor(w.type, blocks[a:b].reshape(-1), (int(b - a), *shape[1:]), w.mapped)
            for a, b in zip(starts[:-1], starts[1:])]


def quantize(w: np.ndarray, qtype: str) -> QuantizedTensor:
    """The float matrix ``w`` (out, in) quantized to ``qtype`` by gguf-py."""
    import gguf

    blocks = gguf.quants.quantize(np.ascontiguousarray(w, dtype=np.float32), gguf.GGMLQuantizationType[qtype])
    return QuantizedTensor(qtype, np.ascontiguousarray(blocks).reshape(-1).view(np.uint8), tuple(w.shape))


# Matrices quantized by Model.load(directory, dtype=...): the projections and the token
# embeddings (the LM head when tied), as llama.cpp's converter does; every matrix is
# (out, in) by then (GPT2_CONV1D ones transposed by the loader); position embeddings stay float.
_LLAMA_MATRICES = ("_proj.weight", "embed_tokens.weight", "lm_head.weight")
GPT2_CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
_GPT2_MATRICES = ("wte.weight", "lm_head.weight")


def quantize_checkpoint(arch: str, arrays: dict, dtype: str) -> dict:
    """``arrays`` with its matrices quantized to ``dtype`` ("q8_0" or "q4_0"); ``arch`` is the
    core model ("llama", "gemma" or "gpt2"). 16-bit matrices are converted one at a time;
    quantized ones (an MXFP4 checkpoint's experts) keep their type."""
    if dtype not in LOAD_DTYPES:
        raise ValueError(f"dtype={dtype!r} is not supported (choose one of: {', '.join(LOAD_DTYPES)}, or None "
                         "to keep the checkpoint's float32 weights)")
    qtype = dtype.upper()
    out = {}
    for name, w in arrays.items():
        if isinstance(w, QuantizedTensor) and w.type not in ("F16", "BF16"):  # quantized already (MXFP4 experts)
            out[name] = w
            continue
        if len(w.shape) == 2 and name.endswith(_LLAMA_MATRICES + GPT2_CONV1D + _GPT2_MATRICES):
            cols = w.shape[1]
            if cols % 32:
                raise ValueError(f"dtype={dtype!r}: {name} has rows of {cols} weights, not a multiple of the "
                                 "32-weight quantization block")
        if arch in ("llama", "gemma") and name.endswith(_LLAMA_MATRICES):
            out[name] = quantize(to_float32(w), qtype)
        elif arch == "gpt2" and name.endswith(GPT2_CONV1D + _GPT2_MATRICES):
            out[name] = quantize(to_float32(w), qtype)
        else:
            out[name] = w
    return out
