"""Typed reading of GGUF key-value metadata (``gguf.GGUFReader.fields``), with a
ValueError naming the key when a value has the wrong type or is not valid UTF-8."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

# gguf.GGUFValueType
_UINT8, _INT8, _UINT16, _INT16, _UINT32, _INT32, _FLOAT32, _BOOL, _STRING, _ARRAY, _UINT64, _INT64, _FLOAT64 = range(13)
INTEGER_TYPES = {_UINT8, _INT8, _UINT16, _INT16, _UINT32, _INT32, _UINT64, _INT64}
FLOAT_TYPES = {_FLOAT32, _FLOAT64}


def _field(reader: Any, key: str) -> Any:
    return reader.fields.get(key)


def _types(field: Any) -> list[int]:
    return [int(t) for t in field.types]


def _decode(raw: Any, key: str) -> str:
    try:
        return raw.tobytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"GGUF metadata {key}: a string that is not valid UTF-8 ({error})") from None


def read_string(reader: Any, key: str) -> Optional[str]:
    field = _field(reader, key)
    if field is None:
        return None
    if _types(field) != [_STRING]:
        raise ValueError(f"GGUF metadata {key} should be a string")
    return _decode(field.parts[field.data[0]], key)


def read_scalar(reader: Any, key: str, kinds: set[int], what: str) -> Any:
    field = _field(reader, key)
    if field is None:
        return None
    types = _types(field)
    if len(types) != 1 or types[0] not in kinds:
        raise ValueError(f"GGUF metadata {key} should be {what}")
    return field.parts[field.data[0]][0].item()


def read_int(reader: Any, key: str) -> Optional[int]:
    value = read_scalar(reader, key, INTEGER_TYPES, "an integer")
    return None if value is None else int(value)


def read_bool(reader: Any, key: str) -> Optional[bool]:
    value = read_scalar(reader, key, {_BOOL} | INTEGER_TYPES, "a bool")
    return None if value is None else bool(value)


def read_string_array(reader: Any, key: str) -> Optional[list[str]]:
    field = _field(reader, key)
    if field is None:
        return None
    if _types(field) != [_ARRAY, _STRING]:
        raise ValueError(f"GGUF metadata {key} should be an array of strings")
    parts = field.parts
    try:
        return [parts[i].tobytes().decode("utf-8") for i in field.data]
    except UnicodeDecodeError as error:
        raise ValueError(f"GGUF metadata {key}: a string that is not valid UTF-8 ({error})") from None


def read_number_array(reader: Any, key: str, kinds: set[int], what: str) -> Optional[np.ndarray]:
    field = _field(reader, key)
    if field is None:
        return None
    types = _types(field)
    if len(types) != 2 or types[0] != _ARRAY or types[1] not in kinds:
        raise ValueError(f"GGUF metadata {key} should be an array of {what}")
    if len(field.data) == 0:
        return np.zeros(0)
    parts = field.parts
    return np.concatenate([parts[i] for i in field.data])


def read_float(reader: Any, key: str) -> Optional[float]:
    value = read_scalar(reader, key, INTEGER_TYPES | FLOAT_TYPES, "a number")
    return None if value is None else float(value)
