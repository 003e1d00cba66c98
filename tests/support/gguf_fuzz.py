"""Mutations of small GGUF files for tests/loaders/test_fuzz_gguf.py, and the case the sandbox runs.

The layout of a valid seed file (where each key, value type, string length, array count and
tensor-info field sits) comes from ``gguf.GGUFReader``, which is trustworthy on files
``gguf.GGUFWriter`` wrote, so the structured mutations do not depend on kvgen's own parser.
This module imports no torch: the sandbox's worker imports it under its memory limit.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np


def load_and_run(path: str) -> str:
    """The sandboxed case: load the file and, when it loads, run it for two tokens."""
    import kvgen

    model = kvgen.Model.load(path)
    ids = [0, min(1, model.vocab_size - 1)]
    model.forward(np.array([ids], dtype=np.int64))
    out = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=2)).generate([ids])
    if model.tokenizer is not None:
        model.decode(model.encode("Hello world"))
    return f"loaded ({type(out).__name__})"


# --- layout of a valid file ----------------------------------------------------------------------

@dataclass
class Layout:
    """Byte offsets of a GGUF file's fields (from gguf.GGUFReader on a valid file)."""

    size: int
    data_offset: int
    value_types: list[int] = field(default_factory=list)      # u32: a key's value type
    string_lengths: list[int] = field(default_factory=list)   # u64: keys, string values, array strings
    array_counts: list[int] = field(default_factory=list)     # u64
    array_item_types: list[int] = field(default_factory=list)  # u32
    n_dims: list[int] = field(default_factory=list)           # u32
    dims: list[int] = field(default_factory=list)             # u64
    tensor_types: list[int] = field(default_factory=list)     # u32
    tensor_offsets: list[int] = field(default_factory=list)   # u64


def _part_offsets(reader_field) -> list[int]:
    offsets, at = [], reader_field.offset
    for part in reader_field.parts:
        offsets.append(at)
        at += part.nbytes
    return offsets


def layout_of(path: Path) -> Layout:
    import gguf

    reader = gguf.GGUFReader(str(path))
    out = Layout(size=path.stat().st_size, data_offset=reader.data_offset)
    for key, f in reader.fields.items():
        if key.startswith("GGUF."):  # the reader's pseudo-fields for the header
            continue
        at = _part_offsets(f)
        out.string_lengths.append(at[0])
        out.value_types.append(at[2])
        if f.types[0] == gguf.GGUFValueType.STRING:
            out.string_lengths.append(at[3])
        elif f.types[0] == gguf.GGUFValueType.ARRAY:
            out.array_item_types.append(at[3])
            out.array_counts.append(at[4])
            if f.types[1] == gguf.GGUFValueType.STRING:
                out.string_lengths.extend(at[5:5 + 2 * 16:2])  # the first few element lengths
    for t in reader.tensors:
        at = _part_offsets(t.field)
        out.string_lengths.append(at[0])
        out.n_dims.append(at[2])
        out.dims.extend(at[3] + 8 * i for i in range(len(t.shape)))
        out.tensor_types.append(at[4])
        out.tensor_offsets.append(at[5])
    return out


# --- mutations -----------------------------------------------------------------------------------

EDGE_U64 = [0, 1, 2, 3, 7, 31, 32, 255, 2**16, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**62, 2**63, 2**64 - 1]
EDGE_U32 = [0, 1, 2, 3, 4, 5, 12, 13, 14, 40, 255, 2**31, 2**32 - 1]


def _u64(rng: random.Random, data: bytearray, at: int) -> int:
    old = struct.unpack_from("<Q", data, at)[0]
    choices = EDGE_U64 + [old + 1, max(old - 1, 0), old * 2, len(data), len(data) - at]
    return rng.choice(choices) % 2**64


def _put(data: bytearray, fmt: str, at: int, value: int) -> None:
    struct.pack_into(fmt, data, at, value)


def flip_bytes(rng: random.Random, data: bytearray, lay: Layout) -> str:
    """A few random bytes, mostly in the header, metadata and tensor table."""
    end = lay.data_offset if rng.random() < 0.8 else len(data)
    spots = [rng.randrange(end) for _ in range(rng.choice([1, 1, 2, 4, 8]))]
    for at in spots:
        data[at] = rng.randrange(256)
    return f"bytes at {spots} changed"


def truncate(rng: random.Random, data: bytearray, lay: Layout) -> str:
    end = lay.data_offset if rng.random() < 0.5 else len(data)
    cut = rng.randrange(end)
    del data[cut:]
    return f"truncated to {cut} bytes"


def header_count(rng: random.Random, data: bytearray, lay: Layout) -> str:
    at = rng.choice([8, 16])
    value = _u64(rng, data, at)
    _put(data, "<Q", at, value)
    return f"{'tensor' if at == 8 else 'kv'} count = {value}"


def _field_u32(offsets_of: Callable[[Layout], list[int]], name: str, values: list[int]):
    def mutate(rng: random.Random, data: bytearray, lay: Layout) -> str:
        if not offsets_of(lay):  # the file has no such field (no arrays in it)
            return flip_bytes(rng, data, lay)
        at = rng.choice(offsets_of(lay))
        value = rng.choice(values + [struct.unpack_from("<I", data, at)[0] + 1])
        _put(data, "<I", at, value % 2**32)
        return f"{name} at {at} = {value}"
    mutate.__name__ = name
    return mutate


def _field_u64(offsets_of: Callable[[Layout], list[int]], name: str):
    def mutate(rng: random.Random, data: bytearray, lay: Layout) -> str:
        if not offsets_of(lay):
            return flip_bytes(rng, data, lay)
        at = rng.choice(offsets_of(lay))
        value = _u64(rng, data, at)
        _put(data, "<Q", at, value)
        return f"{name} at {at} = {value}"
    mutate.__name__ = name
    return mutate


MUTATIONS = [
    flip_bytes, flip_bytes, truncate, header_count,
    _field_u32(lambda lay: lay.value_types, "value type", list(range(14)) + [2**32 - 1]),
    _field_u64(lambda lay: lay.string_lengths, "string length"),
    _field_u64(lambda lay: lay.array_counts, "array count"),
    _field_u32(lambda lay: lay.array_item_types, "array element type", list(range(14)) + [2**32 - 1]),
    _field_u32(lambda lay: lay.n_dims, "n_dims", [0, 1, 2, 3, 4, 5, 2**32 - 1]),
    _field_u64(lambda lay: lay.dims, "tensor dimension"),
    _field_u32(lambda lay: lay.tensor_types, "tensor type", list(range(42)) + [2**32 - 1]),
    _field_u64(lambda lay: lay.tensor_offsets, "tensor data offset"),
]


def mutate(rng: random.Random, data: bytes, lay: Layout) -> tuple[bytes, str]:
    """One to three random mutations of ``data``; returns the bytes and what was done."""
    out = bytearray(data)
    done = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        if len(out) < lay.data_offset:  # truncated already: offsets past the end are gone
            break
        done.append(rng.choice(MUTATIONS)(rng, out, lay))
    return bytes(out), "; ".join(done)


# --- config values, by rewriting the file ------------------------------------------------------

CONFIG_KEYS = ["context_length", "embedding_length", "attention.head_count", "attention.head_count_kv",
               "block_count", "feed_forward_length", "attention.key_length", "rope.dimension_count"]
CONFIG_VALUES = [("UINT32", 0), ("INT32", -1), ("UINT32", 2**31), ("UINT32", 10**8), ("UINT64", 2**62),
                 ("UINT64", 2**64 - 1)]
FLOAT_KEYS = ["attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon", "rope.freq_base"]
FLOAT_VALUES = [float("nan"), float("inf"), -1.0, 0.0, 1e38]


def rewrite(seed: Path, out: Path, overrides: dict[str, tuple[str, object]], add: Callable = None,
            drop_leading_ones: bool = False) -> Path:
    """``seed`` written again with ``overrides`` ({key: (value type name, value)}) set, and
    ``add(writer)`` called to add more metadata. ``drop_leading_ones``: F32 / F16 tensors written
    without the leading 1s of their shape, as llama.cpp's own writer (ggml's n_dims: its
    quantizer) writes them."""
    import gguf

    reader = gguf.GGUFReader(str(seed))
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(str(out), arch)
    for key, f in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture" or key in overrides:
            continue
        sub = gguf.GGUFValueType(f.types[1]) if len(f.types) > 1 else None
        writer.add_key_value(key, f.contents(), gguf.GGUFValueType(f.types[0]), sub)
    for key, (kind, value) in overrides.items():
        writer.add_key_value(key, value, gguf.GGUFValueType[kind])
    if add is not None:
        add(writer)
    for t in reader.tensors:
        plain = t.tensor_type in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16)
        data = np.asarray(t.data)
        while plain and drop_leading_ones and data.ndim > 1 and data.shape[0] == 1:
            data = data[0]
        writer.add_tensor(t.name, data, raw_dtype=None if plain else t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out
