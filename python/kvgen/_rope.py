"""Rotary inverse frequencies as transformers' rope init functions compute them.

kvgen's C++ Llama takes the ``head_dim / 2`` inverse frequencies with any scaling
already applied, so every scaling type lives here, in NumPy float32 as transformers
computes it in torch float32. Supported: ``default``, ``linear`` and ``llama3``; other
types (``dynamic``, ``yarn``, ``longrope``, ...) are refused by name.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

SUPPORTED_ROPE_TYPES = ("default", "linear", "llama3")


def rope_parameters(config: dict) -> dict:
    """The rope settings of a Hugging Face config dict: ``rope_parameters`` (transformers
    5) or the older ``rope_theta`` + ``rope_scaling`` keys, as one dict with ``rope_type``
    and ``rope_theta``."""
    params: dict[str, Any] = dict(config.get("rope_parameters") or {})
    legacy = config.get("rope_scaling") or {}
    for key, value in legacy.items():
        params.setdefault(key, value)
    if "type" in params and "rope_type" not in params:
        params["rope_type"] = params.pop("type")
    params.setdefault("rope_type", "default")
    params.setdefault("rope_theta", config.get("rope_theta", 10000.0))
    return params


def inv_freq(head_dim: int, params: dict, max_position_embeddings: Optional[int] = None) -> np.ndarray:
    """(head_dim / 2) float32 inverse frequencies for ``params`` (see rope_parameters)."""
    rope_type = params.get("rope_type", "default")
    if rope_type not in SUPPORTED_ROPE_TYPES:
        raise ValueError(f"rope scaling type {rope_type!r} is not supported (supported: "
                         f"{', '.join(SUPPORTED_ROPE_TYPES)})")
    if head_dim < 2 or head_dim % 2:
        raise ValueError(f"head_dim = {head_dim} must be even for rotary embeddings")
    base = np.float32(params.get("rope_theta", 10000.0))
    if not base > 0:
        raise ValueError(f"rope_theta = {params.get('rope_theta')} must be positive")
    exponents = np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / np.float32(head_dim)
    freq = np.float32(1.0) / (base ** exponents)
    if rope_type == "linear":
        freq = freq / np.float32(_positive(params, "factor"))
    elif rope_type == "llama3":
        freq = _llama3(freq, params)
    return np.ascontiguousarray(freq, dtype=np.float32)


def _positive(params: dict, key: str) -> float:
    value = params.get(key)
    if value is None or not float(value) > 0:
        raise ValueError(f"rope scaling {params.get('rope_type')!r} needs a positive {key!r} (got {value!r})")
    return float(value)


def _llama3(freq: np.ndarray, params: dict) -> np.ndarray:
    """Llama 3.1's scaling: long wavelengths divided by factor, short ones kept, a smooth
    blend between (transformers' _compute_llama3_parameters)."""
    factor = _positive(params, "factor")
    low = _positive(params, "low_freq_factor")
    high = _positive(params, "high_freq_factor")
    old_context = _positive(params, "original_max_position_embeddings")
    if high <= low:
        raise ValueError(f"rope scaling 'llama3': high_freq_factor ({high}) must exceed low_freq_factor ({low})")
    low_wavelen, high_wavelen = old_context / low, old_context / high
    wavelen = np.float32(2 * math.pi) / freq
    scaled = np.where(wavelen > low_wavelen, freq / np.float32(factor), freq).astype(np.float32)
    smooth = ((old_context / wavelen - low) / (high - low)).astype(np.float32)
    smoothed = ((1 - smooth) * scaled / np.float32(factor) + smooth * scaled).astype(np.float32)
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, scaled).astype(np.float32)
