"""Typed reads of a Hugging Face config dict's values, for the family modules: a wrong type is a
TypeError, a value out of range a ValueError, each naming the key. Sizes and limits are then
checked by the C++ ``ModelConfig.validate()``."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

INT64 = (-2**63, 2**63 - 1)


def describe(value: Any) -> str:
    """A value and its type, cut short, for error messages."""
    return f"{repr(value)[:60]} ({type(value).__name__})"


def present(config: dict, key: str) -> bool:
    """Whether the config sets ``key`` (a null value counts as absent)."""
    return config.get(key) is not None


def integer(config: dict, key: str) -> int:
    """config[key]: a Python int (bool, float and str are refused) that fits in 64 bits."""
    if not present(config, key):
        raise ValueError(f"model config has no '{key}'")
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"model config: {key} must be an integer, got {describe(value)}")
    if not INT64[0] <= value <= INT64[1]:
        raise ValueError(f"model config: {key} = {str(value)[:40]} does not fit in 64 bits")
    return value


def integer_or(config: dict, key: str, fallback: int) -> int:
    """config[key], or fallback when it is absent or None."""
    return integer(config, key) if present(config, key) else fallback


def positive(config: dict, key: str) -> int:
    """config[key], at least 1 (a head count that later divides a width)."""
    value = integer(config, key)
    if value < 1:
        raise ValueError(f"model config: {key} = {value} must be positive")
    return value


def epsilon(config: dict, key: str) -> Optional[float]:
    """config[key] as a finite, non-negative float32 value; None when absent."""
    if not present(config, key):
        return None
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"model config: {key} must be a number, got {describe(value)}")
    try:
        with np.errstate(over="ignore"):
            single = float(np.float32(value))
    except OverflowError:  # an int beyond float64
        single = math.inf
    if not math.isfinite(single) or single < 0:
        raise ValueError(f"model config: {key} = {value!r} must be a finite, non-negative float32")
    return single


def number(config: dict, key: str) -> Optional[float]:
    """config[key] as a finite float32 value; None when absent."""
    if not present(config, key):
        return None
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"model config: {key} = {value!r:.60} must be a finite number")
    with np.errstate(over="ignore"):
        single = float(np.float32(value))
    if not math.isfinite(single):
        raise ValueError(f"model config: {key} = {value!r:.60} does not fit in float32")
    return single


def boolean(config: dict, key: str) -> Optional[bool]:
    """config[key], True or False; None when absent."""
    if not present(config, key):
        return None
    value = config[key]
    if not isinstance(value, bool):
        raise TypeError(f"model config: {key} must be true or false, got {describe(value)}")
    return value


def checked_window(value: Any) -> int:
    """A config's ``sliding_window`` when it is a positive integer (ValueError otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"model config: sliding_window = {value!r:.40} must be a positive integer")
    return value


def layer_windows(types: Any, layers: int, window: int) -> list[int]:
    """Per layer, ``window`` where ``types`` (a config's ``layer_types``) names it
    "sliding_attention", 0 where it names "full_attention"; ValueError for any other list."""
    if not isinstance(types, list) or len(types) != layers or not set(types) <= {"sliding_attention",
                                                                                "full_attention"}:
        raise ValueError(f"model config: layer_types must name 'sliding_attention' or 'full_attention' for each of "
                         f"the {layers} layers, got {types!r:.80}")
    return [window if t == "sliding_attention" else 0 for t in types]


def given(**options: Any) -> dict:
    """The options a config sets: the rest keep the C++ structs' defaults."""
    return {name: value for name, value in options.items() if value is not None}
