"""MXFP4 checkpoints (``quantization_config.quant_method == "mxfp4"``, GPT-OSS): their blocks as
the core's MXFP4 blocks, bit for bit.

A Hugging Face MXFP4 checkpoint stores a matrix (..., out, in) as two uint8 tensors:
``<name>_blocks`` (..., out, in / 32, 16), the E2M1 codes of each 32-value block two a byte
(value 2b in the low nibble of byte b, value 2b + 1 in the high one), and ``<name>_scales``
(..., out, in / 32), each block's E8M0 exponent e (the block's values are code x 2^(e - 127):
transformers' ``convert_moe_packed_tensors``). GGUF's MXFP4 block (llama.cpp's ``block_mxfp4``,
17 bytes) holds the same exponent byte, then the codes with value j in the low nibble of byte j
and value j + 16 in its high nibble (its values are doubled and its scale halved: the same
numbers). ``mxfp4_blocks`` moves the nibbles into that order; nothing is rounded or expanded.
"""

from __future__ import annotations

import numpy as np

from kvgen.loaders.quantize import QuantizedTensor, check_finite_scales

BLOCK = 32  # values per MXFP4 block


def mxfp4_blocks(blocks: np.ndarray, scales: np.ndarray, name: str) -> QuantizedTensor:
    """The matrices of an MXFP4 checkpoint's ``<name>_blocks`` and ``<name>_scales`` (see the
    module docstring) as one MXFP4 QuantizedTensor of shape (..., out, in), in GGUF's block
    layout. ValueError naming the tensor for parts of other types or shapes, or a block scale
    whose values overflow float32."""
    blocks, scales = np.asarray(blocks), np.asarray(scales)
    if blocks.dtype != np.uint8 or scales.dtype != np.uint8:
        raise ValueError(f"MXFP4 tensor {name!r}: _blocks and _scales must be uint8 (got {blocks.dtype}, "
                         f"{scales.dtype})")
    if blocks.ndim < 3 or blocks.shape[-1] != BLOCK // 2 or scales.shape != blocks.shape[:-1]:
        raise ValueError(f"MXFP4 tensor {name!r}: _blocks {blocks.shape} must be (..., out, in / 32, 16) and "
                         f"_scales {scales.shape} (..., out, in / 32)")
    codes = np.stack((blocks & 0x0F, blocks >> 4), axis=-1).reshape(*blocks.shape[:-1], BLOCK)  # in value order
    packed = codes[..., :BLOCK // 2] | (codes[..., BLOCK // 2:] << 4)
    gguf_blocks = np.concatenate((scales[..., None], packed), axis=-1)  # (..., out, in / 32, 17)
    if not check_finite_scales("MXFP4", gguf_blocks.reshape(-1)):
        raise ValueError(f"MXFP4 tensor {name!r} holds values that are not finite (a block scale overflows float32)")
    shape = (*blocks.shape[:-2], blocks.shape[-2] * BLOCK)
    return QuantizedTensor("MXFP4", np.ascontiguousarray(gguf_blocks).reshape(-1), shape)
