"""Typed reading of GGUF key-value metadata (``GGUFFile.fields`` of kvgen.loaders.gguf.file), with a
ValueError naming the key when a value has the wrong type or is not valid UTF-8.

Each ``read_*`` returns ``None`` when the key is absent."""

from __future__ import annotations

from typing import Optional

import numpy as np
from gguf.constants import GGUFValueType as _T

from kvgen.loaders.gguf.file import GGUFField, GGUFFile

INTEGER_TYPES = {_T.UINT8, _T.INT8, _T.UINT16, _T.INT16, _T.UINT32, _T.INT32, _T.UINT64, _T.INT64}
FLOAT_TYPES = {_T.FLOAT32, _T.FLOAT64}


def _field(file: GGUFFile, key: str) -> Optional[GGUFField]:
    return file.fields.get(key)


def _utf8_error(key: str, error: UnicodeDecodeError) -> ValueError:
    return ValueError(f"GGUF metadata {key}: a string that is not valid UTF-8 ({error})")


def read_string(file: GGUFFile, key: str) -> Optional[str]:
    field = _field(file, key)
    if field is None:
        return None
    if field.type != _T.STRING:
        raise ValueError(f"GGUF metadata {key} should be a string")
    try:
        return field.value.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _utf8_error(key, error) from None


def read_scalar(file: GGUFFile, key: str, kinds: set[int], what: str):
    field = _field(file, key)
    if field is None:
        return None
    if field.type not in kinds:
        raise ValueError(f"GGUF metadata {key} should be {what}")
    return field.value


def read_int(file: GGUFFile, key: str) -> Optional[int]:
    value = read_scalar(file, key, INTEGER_TYPES, "an integer")
    return None if value is None else int(value)


def read_bool(file: GGUFFile, key: str) -> Optional[bool]:
    value = read_scalar(file, key, {_T.BOOL} | INTEGER_TYPES, "a bool")
    return None if value is None else bool(value)


def read_float(file: GGUFFile, key: str) -> Optional[float]:
    value = read_scalar(file, key, INTEGER_TYPES | FLOAT_TYPES, "a number")
    return None if value is None else float(value)


def read_string_array(file: GGUFFile, key: str) -> Optional[list[str]]:
    field = _field(file, key)
    if field is None:
        return None
    if field.type != _T.ARRAY or field.item_type != _T.STRING:
        raise ValueError(f"GGUF metadata {key} should be an array of strings")
    try:
        return field.value.decode()
    except UnicodeDecodeError as error:
        raise _utf8_error(key, error) from None


def read_number_array(file: GGUFFile, key: str, kinds: set[int], what: str) -> Optional[np.ndarray]:
    """A read-only NumPy view of the array's elements in the file (bools as uint8)."""
    field = _field(file, key)
    if field is None:
        return None
    if field.type != _T.ARRAY or field.item_type not in kinds:
        raise ValueError(f"GGUF metadata {key} should be an array of {what}")
    return field.value
