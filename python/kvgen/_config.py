"""GenerationConfig conversions: from a kvgen dict, and from Hugging Face configs."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Mapping

from kvgen._config_fields import check_field_names
from kvgen._core import GenerationConfig

# Hugging Face keys that describe the file, not the generation.
_HF_METADATA = {"transformers_version", "_from_model_config", "_commit_hash", "_original_object_hash"}

# Hugging Face fields kvgen does not implement, with the value that means "off": a
# field at that value (or None / False / empty) changes nothing and is not reported.
_HF_OFF_VALUES: dict[str, Any] = {
    "use_cache": True,
    "num_beam_groups": 1,
    "diversity_penalty": 0.0,
    "encoder_repetition_penalty": 1.0,
    "encoder_no_repeat_ngram_size": 0,
    "guidance_scale": 1.0,
    "num_assistant_tokens": 20,
    "num_assistant_tokens_schedule": "constant",
    "assistant_confidence_threshold": 0.4,
    "assistant_lookbehind": 10,
    "target_lookbehind": 10,
    "max_matching_ngram_size": 2,
}

# The schema's field names, and those whose Python value may be None: for the others None
# in a Hugging Face config means "HF default" (cpp/include/kvgen/generation_config_fields.def).
_FIELDS = frozenset(GenerationConfig.fields())
_NULLABLE = frozenset(name for name, _annotation, nullable, _default, _doc in GenerationConfig._schema() if nullable)


def from_dict(values: Mapping[str, Any]) -> GenerationConfig:
    """Builds a GenerationConfig from a dict of kvgen fields (as ``to_dict()`` writes).

    Raises TypeError naming any key that is not a kvgen field.
    """
    check_field_names(values)
    return GenerationConfig(**values)


def _is_off(name: str, value: Any) -> bool:
    if value is None or value is False or (hasattr(value, "__len__") and len(value) == 0):
        return True
    return name in _HF_OFF_VALUES and value == _HF_OFF_VALUES[name]


def from_hf(source: Any, strict: bool = False) -> GenerationConfig:
    """Builds a GenerationConfig from a Hugging Face generation config.

    ``source`` is a ``transformers.GenerationConfig``, a dict, a path to a
    ``generation_config.json`` or a model directory holding one. Fields kvgen supports
    are taken (None means "HF default"); fields it does not support but that are set
    to something other than "off" are reported: a ``UserWarning`` naming them, or a
    ``ValueError`` when ``strict=True``.
    """
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            path = os.path.join(path, "generation_config.json")
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    elif isinstance(source, Mapping):
        values = dict(source)
    elif hasattr(source, "to_dict"):
        values = source.to_dict()
    else:
        raise TypeError(
            "from_hf expects a transformers.GenerationConfig, a dict or a path to generation_config.json, "
            f"got {type(source).__name__}"
        )

    kwargs: dict[str, Any] = {}
    unsupported: dict[str, Any] = {}
    for name, value in values.items():
        if name in _HF_METADATA:
            continue
        if name in _FIELDS:
            if value is None and name not in _NULLABLE:
                continue
            kwargs[name] = value
        elif not _is_off(name, value):
            unsupported[name] = value
    if unsupported:
        listing = ", ".join(f"{k}={v!r}" for k, v in sorted(unsupported.items()))
        message = f"kvgen does not support these Hugging Face generation fields: {listing}"
        if strict:
            raise ValueError(f"{message} (refused because strict=True)")
        warnings.warn(f"{message}; they are ignored", UserWarning, stacklevel=2)
    return GenerationConfig(**kwargs)
