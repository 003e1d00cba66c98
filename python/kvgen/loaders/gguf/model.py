"""Reading GGUF model files: the file's keys and tensors, typed and checked, for the family
module that translates them (kvgen.families: the loaders never know a family).

The file is parsed and validated by kvgen.loaders.gguf.file (memory-mapped; every count, length
and offset checked against the file before use). ``open_gguf`` gives a ``GGUFContents``: typed
reads of the metadata (``get``, ``size``, ``flags``) with errors naming the file and the key,
and reads of tensors by their GGUF names, each checked for its type and its shape before its
bytes are read. Quantized matrices stay quantized: the raw blocks of the types kvgen's core
computes on (kvgen.loaders.quantize.PACKED_TYPES) go to the core as they are, and are repacked
there; the others (Q2_K, Q3_K, IQ3 / IQ2 / IQ1, TQ1_0, TQ2_0) are decoded at load into core
blocks of the same values (kvgen.loaders.index_types). Float32 matrices are
used in place (F16/BF16 ones are repacked in C++ like the quantized ones); vectors (norms,
biases) are read as float32 copies, so that the file's map closes once the model is built. Any
other tensor type is refused by name. ``unpermute`` reverses llama.cpp's rotary permutation of
q/k rows (its "norm" rope layout), for the families whose converter applies it.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import numpy as np

from kvgen.loaders.gguf.file import GGUF_MAGIC, GGUFFile, GGUFTensor, read_gguf_file
from kvgen.loaders.gguf.metadata import read_float, read_int, read_string
from kvgen.loaders.quantize import DECODED_TYPES, QuantizedTensor, check_finite_scales, to_core

SUPPORTED_TENSOR_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
                          "Q6_K", "IQ4_NL", "IQ4_XS", "MXFP4", "IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ2_S",
                          "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0")


def is_gguf(path: Path) -> bool:
    """Whether ``path`` is a file that starts with the GGUF magic."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == GGUF_MAGIC
    except OSError:
        return False


def open_gguf(path: Path, overrides: Optional[dict[str, Any]] = None) -> "GGUFContents":
    """The keys and tensors of a GGUF file; ValueError naming the problem for a malformed one.
    ``overrides``: metadata values read instead of the file's (as llama.cpp's --override-kv)."""
    return GGUFContents(read_gguf_file(path), path, overrides)


class GGUFContents:
    """A GGUF file's metadata and tensors, read on demand with errors naming the file and the
    key or tensor. ``architecture`` is ``general.architecture``, which names the family."""

    def __init__(self, reader: GGUFFile, path: Path, overrides: Optional[dict[str, Any]] = None):
        self.reader, self.path = reader, path
        self.tensors: dict[str, GGUFTensor] = {t.name: t for t in reader.tensors}
        # key -> a value given at load, read instead of the file's (Model.load's sliding_window)
        self.overrides: dict[str, Any] = dict(overrides or {})

    @property
    def architecture(self) -> str:
        return self.get("general.architecture", str)

    def get(self, key: str, kind: type, default: Any = ...) -> Any:
        """Metadata ``key`` as ``kind`` (str, int or float; a float must be finite); ``default``
        when absent, ValueError when absent without one."""
        read = {str: read_string, int: read_int, float: read_float}[kind]
        try:
            value = self.overrides[key] if key in self.overrides else read(self.reader, key)
        except ValueError as e:
            raise ValueError(f"{self.path}: {e}") from None
        if key in self.overrides and not (isinstance(value, kind) and not isinstance(value, bool)):
            raise TypeError(f"{self.path}: the value given for {key} must be a {kind.__name__}, got {value!r:.40}")
        if value is None:
            if default is ...:
                raise ValueError(f"{self.path}: GGUF metadata has no {key!r}")
            return default
        if kind is float and not math.isfinite(value):
            raise ValueError(f"{self.path}: GGUF metadata {key} = {value} is not a finite number")
        return value

    def size(self, key: str, default: Any = ...) -> int:
        """A size (a count or a dimension): an integer of at least 1."""
        value = self.get(key, int, default)
        if value < 1:
            raise ValueError(f"{self.path}: GGUF metadata {key} = {value} is not a positive size")
        return value

    def attention_shape(self, architecture: str) -> tuple[int, int, int, int]:
        """(hidden, heads, kv_heads, head_dim) of a transformer's ``architecture`` keys; ValueError
        when the heads are not a positive multiple of the kv heads."""
        a = architecture + "."
        hidden = self.size(a + "embedding_length")
        heads = self.size(a + "attention.head_count")
        kv_heads = self.size(a + "attention.head_count_kv", heads)
        head_dim = self.size(a + "attention.key_length", max(hidden // heads, 1))
        if heads % kv_heads:
            raise ValueError(f"{self.path}: attention.head_count = {heads} is not a positive multiple of "
                             f"head_count_kv = {kv_heads}")
        return hidden, heads, kv_heads, head_dim

    def embedding_shape(self, hidden: int) -> tuple[int, int]:
        """(vocab, hidden): the shape of ``token_embd.weight``; ValueError when it is not a
        matrix of ``hidden`` columns."""
        shape = self.shape("token_embd.weight")
        if len(shape) != 2 or shape[1] != hidden:
            raise ValueError(f"{self.path}: token_embd.weight has shape {shape}, expected (vocab, {hidden})")
        return shape[0], shape[1]

    def flags(self, key: str, count: int) -> Optional[list[bool]]:
        """Metadata ``key`` when it is an array of ``count`` flags (bools or integers); None
        when it is absent or not an array (a scalar under the same key)."""
        from gguf.constants import GGUFValueType

        from kvgen.loaders.gguf.metadata import INTEGER_TYPES, read_number_array

        stored = self.reader.fields.get(key)
        if stored is None or stored.type != GGUFValueType.ARRAY:
            return None
        try:
            flags = read_number_array(self.reader, key, {GGUFValueType.BOOL} | INTEGER_TYPES, "flags")
        except ValueError as e:
            raise ValueError(f"{self.path}: {e}") from None
        if len(flags) != count:
            raise ValueError(f"{self.path}: {key} has {len(flags)} flags for {count} layers")
        return [bool(f) for f in flags]

    def shape(self, name: str) -> tuple:
        """The logical (row-major, Hugging Face order) shape of tensor ``name``, read or not."""
        return tuple(reversed(self.find(name, None).shape))

    def find(self, name: str, shape: Optional[tuple]) -> GGUFTensor:
        """Tensor ``name``, its type readable and its logical shape ``shape`` (when given)."""
        t = self.tensors.get(name)
        if t is None:
            raise ValueError(f"{self.path}: GGUF tensor {name!r} is missing")
        qtype = t.tensor_type.name
        if qtype not in SUPPORTED_TENSOR_TYPES:
            raise ValueError(f"{self.path}: tensor {name!r} has type {qtype}, which kvgen does not read (supported: "
                             f"{', '.join(SUPPORTED_TENSOR_TYPES)})")
        logical = tuple(reversed(t.shape))  # GGUF lists dimensions fastest first
        if shape is not None and _without_leading_ones(logical) != _without_leading_ones(tuple(shape)):
            # before reading: no work for a wrong tensor
            raise ValueError(f"{self.path}: tensor {name!r} has shape {logical}, expected {tuple(shape)}")
        return t

    def vector(self, name: str, shape: Optional[tuple] = None) -> np.ndarray:
        """The tensor ``name`` as a float32 array in NumPy (row-major, Hugging Face) order: F32
        matrices in place, everything else converted (vectors copied, see the module docstring)."""
        import gguf

        t = self.find(name, shape)
        qtype = t.tensor_type.name
        logical = tuple(shape) if shape is not None else tuple(reversed(t.shape))
        try:
            with np.errstate(all="ignore"):  # overflowing scales are refused below, not warned about
                if qtype == "F32":
                    a = t.data.view(np.float32).reshape(logical)
                    a = a if len(logical) > 1 else a.copy()  # a matrix in place, no copy
                else:
                    a = gguf.quants.dequantize(t.data, t.tensor_type).reshape(logical)
        except ValueError as e:
            raise ValueError(f"{self.path}: tensor {name!r} ({qtype}, shape {logical}) cannot be read ({e})") from None
        if not np.isfinite(a).all():  # no real model has them; they would only make NaN logits
            raise ValueError(f"{self.path}: tensor {name!r} holds values that are not finite (nan or inf)")
        return np.ascontiguousarray(a, dtype=np.float32)

    def matrix(self, name: str, shape: Optional[tuple] = None, permute_heads: int = 0) -> Any:
        """The matrix ``name`` (out, in) for the core: quantized blocks as a QuantizedTensor
        (the file's bytes, no copy unless its rows are permuted), or a float32 array.
        permute_heads > 0: undo llama.cpp's rotary permutation of the rows for that many heads."""
        t = self.find(name, shape)
        qtype = t.tensor_type.name
        if qtype == "F32":
            w = self.vector(name, shape)
            return unpermute(w, permute_heads) if permute_heads else w
        logical = tuple(shape) if shape is not None else tuple(reversed(t.shape))
        raw = t.data.reshape(logical[0], -1)  # one row of blocks per output
        if qtype in DECODED_TYPES:
            raw = unpermute(raw, permute_heads) if permute_heads else raw
            return self._decoded(name, qtype, raw, logical)
        if not check_finite_scales(qtype, raw):
            raise ValueError(f"{self.path}: tensor {name!r} holds values that are not finite (a block scale is nan "
                             "or inf)")
        if permute_heads:  # a reordered copy
            return QuantizedTensor(qtype, unpermute(raw, permute_heads).reshape(-1), logical)
        return QuantizedTensor(qtype, raw.reshape(-1), logical, mapped=True)  # the file's pages, in place

    def stacked(self, name: str, shape: tuple) -> Any:
        """A 3-D tensor (count, out, in) of matrices for the core: quantized blocks as one
        QuantizedTensor (the file's bytes, in place; DECODED_TYPES as core blocks of the same values),
        or a float32 array."""
        t = self.find(name, shape)
        qtype = t.tensor_type.name
        if qtype == "F32":
            return self.vector(name, shape)
        raw = t.data.reshape(shape[0] * shape[1], -1)  # one row of blocks per output of every matrix
        if qtype in DECODED_TYPES:
            return self._decoded(name, qtype, raw, shape)
        if not check_finite_scales(qtype, raw):
            raise ValueError(f"{self.path}: tensor {name!r} holds values that are not finite (a block scale is nan "
                             "or inf)")
        return QuantizedTensor(qtype, raw.reshape(-1), tuple(shape), mapped=True)

    def _decoded(self, name: str, qtype: str, raw: np.ndarray, shape: tuple) -> QuantizedTensor:
        """A tensor of a type decoded at load (quantize.DECODED_TYPES) as core blocks."""
        try:
            return to_core(qtype, raw, shape)
        except ValueError as e:
            raise ValueError(f"{self.path}: tensor {name!r} holds values that are not finite ({e})") from None

    def check_all_used(self, used: set) -> None:
        """ValueError naming the tensors outside ``used``: a file kvgen would half-read."""
        extra = sorted(set(self.tensors) - used)
        if extra:
            raise ValueError(f"{self.path}: unexpected GGUF tensors {extra[:5]} (kvgen does not know what they are "
                             "for)")

    def tokenizer(self) -> Any:
        """The tokenizer the file describes (kvgen.loaders.gguf.tokenizer.GGUFTokenizerInfo),
        None when it has no ``tokenizer.ggml.model``."""
        from kvgen.loaders.gguf.tokenizer import tokenizer_from_gguf

        try:
            return tokenizer_from_gguf(self.reader) if "tokenizer.ggml.model" in self.reader.fields else None
        except ValueError as e:
            raise ValueError(f"{self.path}: {e}") from None

    def description(self) -> dict:
        """The file's name and its tensors' counts by type, for repr and the CLI."""
        types = Counter(t.tensor_type.name for t in self.reader.tensors)
        return {"name": self.get("general.name", str, ""), "tensor_types": dict(types.most_common())}


def _without_leading_ones(shape: tuple) -> tuple:
    """``shape`` without its leading 1s (at least one dimension kept). llama.cpp's own writer
    (ggml's n_dims, as its quantizer writes every tensor) drops the trailing 1s of a tensor's ne,
    the leading 1s of its logical shape, and reads such a tensor as the longer shape (Granite 4's
    Mamba-2 norm of one group: (1, inner) from the converter, (inner,) once quantized)."""
    while len(shape) > 1 and shape[0] == 1:
        shape = shape[1:]
    return shape


def unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """Reverses llama.cpp's rotary permutation of q/k rows (weights or biases): per head,
    rows interleaved as (pair, 2) go back to Hugging Face's (2, half) order."""
    rows = w.shape[0]
    if rows % (2 * heads):
        raise ValueError(f"q/k projection with {rows} rows does not split into {heads} heads of even size")
    return np.ascontiguousarray(
        w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape))
