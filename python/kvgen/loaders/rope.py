"""Rotary inverse frequencies as transformers' rope init functions compute them.

kvgen's C++ Llama takes the ``rotary_dim / 2`` inverse frequencies with any scaling
already applied, so every scaling type lives here, in NumPy float32 as transformers
computes it in torch float32. Supported: ``default``, ``linear``, ``llama3``, ``yarn`` (its
frequencies and a cos/sin attention factor), ``dynamic`` (NTK scaling by the sequence's length:
within ``max_position_embeddings``, kvgen's context, the frequencies transformers starts with) and
``longrope`` (Phi-3: a short and a long set of frequencies and a cos/sin factor, see ``rotary``);
other types are refused by name. docs/guide/rope-scaling.md says what each computes.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import numpy as np

SUPPORTED_ROPE_TYPES = ("default", "linear", "llama3", "yarn", "dynamic", "longrope")


def rope_parameters(config: dict) -> dict:
    """The rope settings of a Hugging Face config dict: ``rope_parameters`` (transformers
    5) or the older ``rope_theta`` + ``rope_scaling`` keys, as one dict with ``rope_type``
    and ``rope_theta``. ValueError naming the key when one is not a dict (or null)."""
    params: dict[str, Any] = dict(_dict_or_empty(config, "rope_parameters"))
    for key, value in _dict_or_empty(config, "rope_scaling").items():
        params.setdefault(key, value)
    if "type" in params and "rope_type" not in params:
        params["rope_type"] = params.pop("type")
    params.setdefault("rope_type", "default")
    params.setdefault("rope_theta", config.get("rope_theta", 10000.0))
    return params


def _dict_or_empty(config: dict, key: str) -> dict:
    value = config.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"model config: {key} must be an object (a dict) or null, got {value!r:.60}")
    return value


def inv_freq(head_dim: int, params: dict, max_position_embeddings: Optional[int] = None) -> np.ndarray:
    """(head_dim / 2) float32 inverse frequencies for ``params`` (see rope_parameters).
    ``max_position_embeddings``: the model's context, which ``dynamic`` scales from and a
    ``yarn`` without ``factor`` divides by its original context."""
    rope_type = params.get("rope_type", "default")
    if rope_type == "longrope":
        return _longrope(head_dim, params, "short_factor")
    if not isinstance(rope_type, str) or rope_type not in SUPPORTED_ROPE_TYPES:
        raise ValueError(f"rope scaling type {rope_type!r:.60} is not supported (supported: "
                         f"{', '.join(SUPPORTED_ROPE_TYPES)})")
    if head_dim < 2 or head_dim % 2:
        raise ValueError(f"head_dim = {head_dim} must be even for rotary embeddings")
    params = {**params, "rope_type": rope_type}
    if rope_type == "yarn":
        return yarn(head_dim, params, max_position_embeddings)[0]
    base = np.float32(_positive(params, "rope_theta", "rope_theta"))
    if rope_type == "dynamic":
        base = np.float32(_dynamic_base(head_dim, params, max_position_embeddings))
    exponents = np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / np.float32(head_dim)
    # Extreme (but finite) settings may overflow or underflow float32 on the way; the
    # result is checked instead of warning at every step.
    with np.errstate(all="ignore"):
        freq = np.float32(1.0) / (base ** exponents)
        if rope_type == "linear":
            freq = freq / np.float32(_positive(params, "factor"))
        elif rope_type == "llama3":
            freq = _llama3(freq, params)
    return _finite(freq, params)


def _finite(freq: np.ndarray, params: dict) -> np.ndarray:
    if not np.all(np.isfinite(freq)):
        raise ValueError(f"rope parameters {params!r:.200} give inverse frequencies that are not finite "
                         "float32 numbers")
    return np.ascontiguousarray(freq, dtype=np.float32)


def _context(params: dict, context: Optional[int]) -> int:
    """The model's context (max_position_embeddings), which a scaling type reads."""
    if isinstance(context, bool) or not isinstance(context, int) or context < 1:
        raise ValueError(f"rope scaling {params.get('rope_type')!r}: max_position_embeddings = {context!r:.40} must be "
                         "a positive integer")
    return context


def _dynamic_base(dim: int, params: dict, context: Optional[int]) -> float:
    """Dynamic NTK scaling's rotary base for a sequence within the model's context
    (transformers' _compute_dynamic_ntk_parameters at seq_len = max_position_embeddings, in
    Python floats as it computes it): the base transformers starts with and keeps for every
    call whose positions stay within the context. Past the context transformers computes
    every position again with a base that grows with the sequence's length; kvgen's context
    ends there (docs/guide/rope-scaling.md)."""
    if dim < 4:
        raise ValueError(f"rope scaling 'dynamic': the rotary dimension {dim} must be at least 4")
    base = _positive(params, "rope_theta", "rope_theta")
    factor = _positive(params, "factor")
    context = _context(params, context)
    seq_len = context
    with np.errstate(all="ignore"):
        try:
            return base * ((factor * seq_len / context) - (factor - 1)) ** (dim / (dim - 2))
        except (OverflowError, ZeroDivisionError):
            raise ValueError(f"rope scaling 'dynamic': factor = {factor!r} gives no finite rotary base") from None


def _extension(params: dict, context: Optional[int]) -> tuple[int, float]:
    """(original_max_position_embeddings, factor) of a scaling that extends the context it was
    trained on (YaRN, LongRoPE): a factor left out is the context's growth over the original one,
    as transformers computes it. ValueError naming a key of another type or out of range."""
    original = params.get("original_max_position_embeddings")
    if isinstance(original, bool) or not isinstance(original, int) or original < 1:
        raise ValueError(f"rope scaling {params.get('rope_type')!r}: original_max_position_embeddings = "
                         f"{original!r:.40} must be a positive integer")
    factor = params.get("factor")
    if factor is None:
        factor = _context(params, context) / original
    return original, _positive({**params, "factor": factor}, "factor")


def _mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's attention scale of a context ``scale`` times longer (transformers' get_mscale)."""
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def _number_or(params: dict, key: str, fallback: float) -> float:
    """params[key] as a finite number; ``fallback`` where it is absent, null or 0 (transformers'
    ``params.get(key) or fallback``)."""
    value = params.get(key)
    if value is None or value == 0:
        return fallback
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"rope scaling {params.get('rope_type')!r}: {key!r} must be a finite number (got "
                         f"{value!r:.60})")
    return float(value)


def yarn(dim: int, params: dict, context: Optional[int] = None) -> tuple[np.ndarray, float]:
    """YaRN's (dim / 2) float32 inverse frequencies and its cos/sin attention factor, as
    transformers' _compute_yarn_parameters computes them: each frequency blends the original
    (extrapolation) and the one divided by ``factor`` (interpolation) by a linear ramp between
    the dimensions that turn ``beta_fast`` and ``beta_slow`` times over the original context
    (``truncate``: the ramp's ends rounded to whole dimensions); the attention factor is
    ``attention_factor``, or from ``mscale`` / ``mscale_all_dim``, or 0.1 ln(factor) + 1.
    ``context``: max_position_embeddings, for a ``factor`` left out (context / original)."""
    if dim < 2 or dim % 2:
        raise ValueError(f"rotary dimension = {dim} must be even for rotary embeddings")
    base = _positive(params, "rope_theta", "rope_theta")
    if base == 1:
        raise ValueError("rope scaling 'yarn': rope_theta must not be 1")
    original, factor = _extension(params, context)
    attention = params.get("attention_factor")
    if attention is None:
        mscale, mscale_all = (_number_or(params, key, 0.0) for key in ("mscale", "mscale_all_dim"))
        attention = _mscale(factor, mscale) / _mscale(factor, mscale_all) if mscale and mscale_all else \
            _mscale(factor)
    attention = _positive({**params, "attention_factor": attention}, "attention_factor")
    beta_fast, beta_slow = _number_or(params, "beta_fast", 32), _number_or(params, "beta_slow", 1)
    truncate = params.get("truncate", True)
    if truncate is not None and not isinstance(truncate, bool):
        raise ValueError(f"rope scaling 'yarn': 'truncate' must be true or false (got {truncate!r:.40})")

    def correction_dim(rotations: float) -> float:  # the dimension that turns this many times
        if rotations <= 0:
            raise ValueError(f"rope scaling 'yarn': beta_fast and beta_slow must be positive (got {beta_fast}, "
                             f"{beta_slow})")
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"rope scaling 'yarn': parameters {params!r:.200} give no finite correction range")
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # transformers: "Prevent singularity"
    exponents = np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / np.float32(dim)
    with np.errstate(all="ignore"):
        powers = np.float32(base) ** exponents
        extrapolation = np.float32(1.0) / powers
        interpolation = np.float32(1.0) / (np.float32(factor) * powers)
        ramp = np.clip((np.arange(dim // 2, dtype=np.float32) - np.float32(low)) / np.float32(high - low), 0, 1)
        kept = np.float32(1) - ramp.astype(np.float32)  # the share of each extrapolated frequency
        freq = interpolation * (np.float32(1) - kept) + extrapolation * kept
    return _finite(freq, params), attention


def _positive(params: dict, key: str, what: Optional[str] = None) -> float:
    """params[key] as a positive number that is finite in float32 (the precision the
    frequencies are computed in); ValueError naming the key otherwise."""
    value = params.get(key)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        with np.errstate(over="ignore"):
            single = np.float32(value) if abs(value) < 1e300 else np.float32(np.inf)
        ok = bool(np.isfinite(single) and single > 0)
    if not ok:
        where = what or f"rope scaling {params.get('rope_type')!r}: {key!r}"
        raise ValueError(f"{where} must be a positive, finite number (got {value!r:.60})")
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


class Rotary(NamedTuple):
    """The rotary embedding of a model, as the core takes it (kvgen/models/llama.h)."""

    dim: int                         # leading dimensions of a head that rotate
    inv_freq: np.ndarray             # (dim / 2) float32, scaling applied
    inv_freq_long: Optional[np.ndarray] = None  # LongRoPE: used by calls beyond original_context
    original_context: int = 0
    attention_factor: float = 1.0    # multiplies cos and sin


def rotary(config: dict, head_dim: int, partial: bool = False) -> Rotary:
    """The rotary embedding of a Hugging Face config dict with this head_dim. ``partial``:
    the family reads ``partial_rotary_factor`` (Phi-3; in ``rope_parameters`` or at the top
    level), rotating ``int(head_dim * factor)`` dimensions as transformers does."""
    params = rope_parameters(config)
    dim = head_dim
    if partial:
        factor = params.get("partial_rotary_factor", config.get("partial_rotary_factor", 1.0))
        factor = 1.0 if factor is None else factor
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
            raise ValueError(f"model config: partial_rotary_factor = {factor!r:.60} must be in (0, 1]")
        dim = int(head_dim * factor)
    context = config.get("max_position_embeddings")
    if params.get("rope_type") == "yarn":
        params.setdefault("original_max_position_embeddings", context)  # as transformers' standardize_rope_params
        freq, attention = yarn(dim, params, context)
        return Rotary(dim, freq, attention_factor=attention)
    if params.get("rope_type") != "longrope":
        return Rotary(dim, inv_freq(dim, params, context))
    params.setdefault("original_max_position_embeddings", config.get("original_max_position_embeddings"))
    original, factor = _extension(params, context)
    attention = params.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    attention = _positive({"attention_factor": attention, "rope_type": "longrope"}, "attention_factor")
    return Rotary(dim, _longrope(dim, params, "short_factor"), _longrope(dim, params, "long_factor"), original,
                  attention)


def _longrope(dim: int, params: dict, key: str) -> np.ndarray:
    """LongRoPE's frequencies with the ``key`` set of factors: 1 / (factor_i * theta^(2i/dim))
    (transformers' _compute_longrope_parameters)."""
    if dim < 2 or dim % 2:
        raise ValueError(f"rotary dimension = {dim} must be even for rotary embeddings")
    factors = params.get(key)
    if not isinstance(factors, (list, tuple)) or len(factors) != dim // 2 or not all(
            isinstance(f, (int, float)) and not isinstance(f, bool) and math.isfinite(f) and f > 0 for f in factors):
        raise ValueError(f"rope scaling 'longrope': {key} must be {dim // 2} positive numbers, got {factors!r:.80}")
    base = np.float32(_positive(params, "rope_theta", "rope_theta"))
    exponents = np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / np.float32(dim)
    with np.errstate(all="ignore"):
        freq = np.float32(1.0) / (np.asarray(factors, dtype=np.float32) * (base ** exponents))
    if not np.all(np.isfinite(freq)):
        raise ValueError(f"rope scaling 'longrope': {key} gives inverse frequencies that are not finite")
    return np.ascontiguousarray(freq, dtype=np.float32)
