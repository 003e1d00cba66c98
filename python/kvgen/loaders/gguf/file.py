"""A validating reader for the GGUF container: header, key-value metadata, tensor-info table.

kvgen reads GGUF files with this module instead of ``gguf.GGUFReader``: that reader trusts
the counts and lengths in the file, so one changed byte can send it past the end of the
file, where it loops and allocates without bound. Here every count, length, type and
offset is checked against the bytes that remain in the file before it is used, and a
malformed file raises ``ValueError`` naming the file, the byte offset and the problem.

The file is memory-mapped; nothing is copied. Numeric arrays in the metadata are NumPy
views over the map, string arrays are decoded only when asked for, and each tensor's
data is a uint8 view over its bytes (dequantize it with ``gguf.quants.dequantize``).

Format (little-endian; gguf's ``docs/gguf.md``): magic ``GGUF``, uint32 version (2 or 3),
uint64 tensor count, uint64 key-value count; the key-value pairs (a string key, a uint32
value type, the value); the tensor infos (a string name, uint32 n_dims, n_dims uint64
dimensions fastest first, uint32 ggml type, uint64 offset into the data section); then,
padded to ``general.alignment`` (default 32), the data section. Strings are a uint64 byte
length and UTF-8 bytes; arrays a uint32 element type, a uint64 count and the elements.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType

__all__ = ["GGUFField", "GGUFFile", "GGUFStrings", "GGUFTensor", "read_gguf_file"]

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_TENSOR_DIMS = 4          # GGML_MAX_DIMS
MAX_ARRAY_DEPTH = 2          # an array of arrays at most; nothing kvgen reads nests deeper

_HEADER = struct.Struct("<4sIQQ")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

# Fixed-size value types: struct format and NumPy dtype.
_SCALARS: dict[int, tuple[struct.Struct, np.dtype]] = {
    GGUFValueType.UINT8: (struct.Struct("<B"), np.dtype("<u1")),
    GGUFValueType.INT8: (struct.Struct("<b"), np.dtype("<i1")),
    GGUFValueType.UINT16: (struct.Struct("<H"), np.dtype("<u2")),
    GGUFValueType.INT16: (struct.Struct("<h"), np.dtype("<i2")),
    GGUFValueType.UINT32: (struct.Struct("<I"), np.dtype("<u4")),
    GGUFValueType.INT32: (struct.Struct("<i"), np.dtype("<i4")),
    GGUFValueType.FLOAT32: (struct.Struct("<f"), np.dtype("<f4")),
    GGUFValueType.BOOL: (struct.Struct("<B"), np.dtype("<u1")),
    GGUFValueType.UINT64: (struct.Struct("<Q"), np.dtype("<u8")),
    GGUFValueType.INT64: (struct.Struct("<q"), np.dtype("<i8")),
    GGUFValueType.FLOAT64: (struct.Struct("<d"), np.dtype("<f8")),
}
# The fewest bytes one element of each type takes: bounds an array's count by the bytes left.
_MIN_SIZE = {**{t: s.size for t, (s, _) in _SCALARS.items()}, GGUFValueType.STRING: 8, GGUFValueType.ARRAY: 12}
_MIN_KV_BYTES = 8 + 4 + 1            # empty key, value type, a one-byte value
_MIN_TENSOR_INFO_BYTES = 8 + 4 + 8 + 4 + 8   # empty name, n_dims, one dimension, type, offset


class GGUFStrings:
    """An array of strings in the metadata, kept as byte ranges of the file until decoded."""

    def __init__(self, buffer: memoryview, starts: list[int], ends: list[int]):
        self._buffer, self._starts, self._ends = buffer, starts, ends

    def __len__(self) -> int:
        return len(self._starts)

    def decode(self) -> list[str]:
        """The strings; UnicodeDecodeError for bytes that are not UTF-8."""
        buffer = self._buffer
        return [str(buffer[s:e], "utf-8") for s, e in zip(self._starts, self._ends)]


@dataclass(frozen=True)
class GGUFField:
    """One metadata key-value pair.

    ``value`` is a Python int, float or bool for scalars, ``bytes`` for a string (decoded by
    the caller, which can name the key in an error), a read-only NumPy view for an array of
    numbers (bools as uint8), ``GGUFStrings`` for an array of strings, and ``None`` for an
    array of arrays (validated, not exposed)."""

    key: str
    type: GGUFValueType
    item_type: Optional[GGUFValueType]   # the element type of an array, else None
    value: Any
    offset: int                          # byte offset of the key in the file


@dataclass(frozen=True)
class GGUFTensor:
    """One entry of the tensor-info table with its data.

    ``shape`` is in GGUF order (fastest-varying dimension first); ``data`` is a read-only
    uint8 view of the tensor's bytes shaped (reversed(shape[1:])..., bytes per row), the
    layout ``gguf.quants.dequantize`` takes."""

    name: str
    shape: tuple[int, ...]
    tensor_type: GGMLQuantizationType
    offset: int                          # absolute byte offset of the data in the file
    nbytes: int
    data: np.ndarray


@dataclass(frozen=True)
class GGUFFile:
    """A parsed, validated GGUF file (see ``read_gguf_file``)."""

    path: Path
    version: int
    fields: dict[str, GGUFField]
    tensors: list[GGUFTensor]
    alignment: int
    data_offset: int                     # where the data section starts


def read_gguf_file(path: Union[str, Path]) -> GGUFFile:
    """Parses and validates the GGUF file at ``path``, memory-mapped.

    Checks, before anything is allocated from them: the magic and version; every string
    length and array count against the bytes left in the file; value and element types;
    array nesting (at most ``MAX_ARRAY_DEPTH``); unique keys and tensor names; each tensor's
    n_dims (1 to 4), dimensions (positive, the first a multiple of its type's block size),
    ggml type (one gguf knows), and data range (aligned to ``general.alignment``, inside the
    file, not overlapping another tensor). Raises ``ValueError`` naming the file, the byte
    offset and what is wrong; ``FileNotFoundError``/``OSError`` when the file cannot be opened.
    """
    path = Path(path)
    size = path.stat().st_size
    if size < _HEADER.size:
        raise ValueError(f"{path}: not a readable GGUF file: {size} bytes is too short for a GGUF header "
                         f"({_HEADER.size} bytes)")
    mapped = np.memmap(path, dtype=np.uint8, mode="r")
    return _Parser(path, mapped).parse()


class _Parser:
    """Walks the file with a cursor; every read is bounds-checked first."""

    def __init__(self, path: Path, mapped: np.ndarray):
        self.path = path
        self.mapped = mapped.view(np.ndarray)  # plain views over the map (the map stays open through .base)
        self.buffer = memoryview(mapped)
        self.size = len(mapped)
        self.pos = 0
        self.context = "the header"

    # --- errors and primitives -------------------------------------------------------------

    def fail(self, problem: str, at: Optional[int] = None) -> ValueError:
        at = self.pos if at is None else at
        return ValueError(f"{self.path}: not a readable GGUF file: in {self.context}, at byte {at}: {problem} "
                          f"(the file has {self.size} bytes; is it truncated or corrupt?)")

    def need(self, count: int, what: str) -> None:
        if count > self.size - self.pos:
            raise self.fail(f"{what} needs {count} bytes, only {self.size - self.pos} remain")

    def unpack(self, fmt: struct.Struct, what: str) -> Any:
        self.need(fmt.size, what)
        value = fmt.unpack_from(self.buffer, self.pos)[0]
        self.pos += fmt.size
        return value

    def count(self, what: str, item_bytes: int) -> int:
        """A uint64 count of items that take at least ``item_bytes`` each, checked against
        the bytes left."""
        at = self.pos
        n = self.unpack(_U64, what)
        if n * item_bytes > self.size - self.pos:
            raise self.fail(f"{what} {n} does not fit in the {self.size - self.pos} bytes left "
                            f"(at least {item_bytes} bytes each)", at)
        return n

    def string_bytes(self, what: str) -> memoryview:
        at = self.pos
        n = self.unpack(_U64, f"the length of {what}")
        if n > self.size - self.pos:
            raise self.fail(f"{what} has length {n}, past the end of the file", at)
        raw = self.buffer[self.pos:self.pos + n]
        self.pos += n
        return raw

    def text(self, what: str) -> str:
        at = self.pos
        raw = self.string_bytes(what)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as e:
            raise self.fail(f"{what} is not valid UTF-8 ({e.reason})", at) from None

    def value_type(self, what: str) -> GGUFValueType:
        at = self.pos
        code = self.unpack(_U32, what)
        if code not in _MIN_SIZE:
            raise self.fail(f"{what} {code} is not a GGUF value type (0 to {len(GGUFValueType) - 1})", at)
        return GGUFValueType(code)

    # --- the three sections ----------------------------------------------------------------

    def parse(self) -> GGUFFile:
        magic, version, tensor_count, kv_count = _HEADER.unpack_from(self.buffer, 0)
        if magic != GGUF_MAGIC:
            raise self.fail(f"the magic is {magic!r}, not {GGUF_MAGIC!r}", 0)
        if version not in SUPPORTED_VERSIONS:
            swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
            detail = " (a big-endian file, which kvgen does not read)" if swapped in SUPPORTED_VERSIONS else ""
            raise self.fail(f"GGUF version {version}{detail}; kvgen reads versions 2 and 3", 4)
        self.pos = _HEADER.size
        for count, least, what in ((kv_count, _MIN_KV_BYTES, "the key-value count"),
                                   (tensor_count, _MIN_TENSOR_INFO_BYTES, "the tensor count")):
            if count * least > self.size - self.pos:
                raise self.fail(f"{what} {count} does not fit in the {self.size - self.pos} bytes left "
                                f"(at least {least} bytes each)", 8 if "tensor" in what else 16)
        fields = self.fields(kv_count)
        infos = self.tensor_infos(tensor_count)
        alignment = self.alignment(fields.get("general.alignment"))
        data_offset = -(-self.pos // alignment) * alignment
        self.context = "the tensor data"
        if infos and data_offset > self.size:
            raise self.fail(f"the data section would start at byte {data_offset}, past the end of the file")
        tensors = self.tensors(infos, data_offset, alignment)
        return GGUFFile(self.path, version, fields, tensors, alignment, data_offset)

    def fields(self, count: int) -> dict[str, GGUFField]:
        fields: dict[str, GGUFField] = {}
        for index in range(count):
            at = self.pos
            self.context = f"key-value pair {index}"
            key = self.text("the key")
            self.context = f"key-value pair {index} ({key!r})"
            if key in fields:
                raise self.fail(f"the key {key!r} appears twice", at)
            kind = self.value_type("the value type")
            item_type = None
            if kind == GGUFValueType.ARRAY:
                item_type, value = self.array(depth=1)
            else:
                value = self.scalar(kind)
            fields[key] = GGUFField(key, kind, item_type, value, at)
        return fields

    def scalar(self, kind: GGUFValueType) -> Any:
        if kind == GGUFValueType.STRING:
            return bytes(self.string_bytes("the string"))
        fmt, _ = _SCALARS[kind]
        at = self.pos
        value = self.unpack(fmt, f"a {kind.name} value")
        if kind == GGUFValueType.BOOL:
            if value > 1:
                raise self.fail(f"the bool value is {value}, not 0 or 1", at)
            return bool(value)
        return value

    def array(self, depth: int) -> tuple[GGUFValueType, Any]:
        if depth > MAX_ARRAY_DEPTH:
            raise self.fail(f"arrays nested more than {MAX_ARRAY_DEPTH} deep")
        item_type = self.value_type("the array element type")
        n = self.count("the array count", _MIN_SIZE[item_type])
        if item_type == GGUFValueType.STRING:
            return item_type, self.strings(n)
        if item_type == GGUFValueType.ARRAY:
            for _ in range(n):
                self.array(depth + 1)
            return item_type, None
        _, dtype = _SCALARS[item_type]
        values = self.mapped[self.pos:self.pos + n * dtype.itemsize].view(dtype)
        if item_type == GGUFValueType.BOOL and n and values.max() > 1:
            raise self.fail("a bool array holds a value other than 0 or 1")
        self.pos += n * dtype.itemsize
        return item_type, values

    def strings(self, n: int) -> GGUFStrings:
        """String byte ranges in one tight loop (no per-string objects until decoded)."""
        buffer, size, pos = self.buffer, self.size, self.pos
        unpack = _U64.unpack_from
        starts, ends = [0] * n, [0] * n
        for i in range(n):
            if pos + 8 > size:
                self.pos = pos
                raise self.fail(f"string {i} of {n}: its length runs past the end of the file")
            length = unpack(buffer, pos)[0]
            pos += 8
            if length > size - pos:
                raise self.fail(f"string {i} of {n} has length {length}, past the end of the file", pos - 8)
            starts[i] = pos
            pos += length
            ends[i] = pos
        self.pos = pos
        return GGUFStrings(buffer, starts, ends)

    def tensor_infos(self, count: int) -> list[tuple[str, tuple[int, ...], GGMLQuantizationType, int, int]]:
        infos, names = [], set()
        for index in range(count):
            at = self.pos
            self.context = f"tensor info {index}"
            name = self.text("the tensor name")
            self.context = f"tensor info {index} ({name!r})"
            if name in names:
                raise self.fail(f"the tensor name {name!r} appears twice", at)
            names.add(name)
            n_dims = self.unpack(_U32, "n_dims")
            if not 1 <= n_dims <= MAX_TENSOR_DIMS:
                raise self.fail(f"n_dims = {n_dims}; allowed: 1 to {MAX_TENSOR_DIMS}", self.pos - 4)
            self.need(8 * n_dims, "the dimensions")
            shape = struct.unpack_from(f"<{n_dims}Q", self.buffer, self.pos)
            if min(shape) < 1:
                raise self.fail(f"the dimensions {list(shape)} are not all positive")
            self.pos += 8 * n_dims
            type_at = self.pos
            code = self.unpack(_U32, "the tensor type")
            if code not in GGML_QUANT_SIZES:
                raise self.fail(f"the tensor type {code} is not a ggml type", type_at)
            offset = self.unpack(_U64, "the data offset")
            infos.append((name, tuple(shape), GGMLQuantizationType(code), offset, at))
        return infos

    def alignment(self, field: Optional[GGUFField]) -> int:
        if field is None:
            return DEFAULT_ALIGNMENT
        self.context = "general.alignment"
        value = field.value
        if field.type not in (GGUFValueType.UINT32, GGUFValueType.UINT64, GGUFValueType.INT32) or not (
                value >= 8 and value & (value - 1) == 0):
            raise self.fail(f"general.alignment = {value!r} ({field.type.name}) is not a power of two of at "
                            "least 8", field.offset)
        return value

    def tensors(self, infos: list, data_offset: int, alignment: int) -> list[GGUFTensor]:
        tensors = []
        for name, shape, qtype, offset, at in infos:
            self.context = f"tensor info for {name!r}"
            block, type_bytes = GGML_QUANT_SIZES[qtype]
            if shape[0] % block:
                raise self.fail(f"the first dimension {shape[0]} of a {qtype.name} tensor is not a multiple of "
                                f"its block size {block}", at)
            row_bytes = shape[0] // block * type_bytes
            rows = 1
            for d in shape[1:]:
                rows *= d
            nbytes = rows * row_bytes
            start = data_offset + offset
            if offset % alignment:
                raise self.fail(f"the data offset {offset} is not a multiple of general.alignment = {alignment}", at)
            if nbytes > self.size - start:  # Python integers: the products cannot wrap
                raise self.fail(f"the data ({list(shape)} {qtype.name}, {nbytes} bytes from byte {start}) runs past "
                                "the end of the file", at)
            data = self.mapped[start:start + nbytes].reshape(*reversed(shape[1:]), row_bytes)
            tensors.append(GGUFTensor(name, shape, qtype, start, nbytes, data))
        self.check_no_overlap(tensors)
        return tensors

    def check_no_overlap(self, tensors: list[GGUFTensor]) -> None:
        ordered = sorted(tensors, key=lambda t: t.offset)
        for before, after in zip(ordered, ordered[1:]):
            if after.offset < before.offset + before.nbytes:
                self.context = "the tensor data"
                raise self.fail(f"tensors {before.name!r} and {after.name!r} overlap", after.offset)
