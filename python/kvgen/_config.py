"""GenerationConfig's Python face, read from the schema (generation_config_fields.def): the typed
keyword signature that ``inspect.signature`` and editors show, the check that names the kvgen field
for another tool's name or a misspelling, per-call overrides, and the conversions from a kvgen dict
and from Hugging Face generation configs.

Everything here is derived from ``GenerationConfig._schema()``, so a field added to the schema
appears in the signature, the suggestions, the overrides and the conversions without an edit here.
"""

from __future__ import annotations

import contextvars
import difflib
import inspect
import json
import os
import warnings
from typing import Any, Iterable, Mapping

from kvgen._core import _SAMPLING_FIELDS, GenerationConfig

#: Names other tools use (OpenAI, vLLM, llama.cpp / llama-cpp-python, Ollama, transformers'
#: older names) for a kvgen field or option, with what kvgen calls it.
OTHER_TOOLS_NAMES = {
    "max_tokens": "max_new_tokens",
    "max_completion_tokens": "max_new_tokens",
    "num_predict": "max_new_tokens",
    "n_predict": "max_new_tokens",
    "min_tokens": "min_new_tokens",
    "repeat_penalty": "repetition_penalty",
    "stop": "stop_strings",
    "n": "num_return_sequences",
    "best_of": "num_beams",
    "use_beam_search": "num_beams",
    "top_n": "top_k",
    "typical": "typical_p",
    "random_seed": "seed",
    "no_repeat_ngram": "no_repeat_ngram_size",
    "stop_token_ids": "eos_token_id",
}

_FIELDS = GenerationConfig.fields()
_FIELD_SET = frozenset(_FIELDS)


def _parameter(name: str, annotation: str, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def config_signature() -> inspect.Signature:
    """``GenerationConfig(*, field=default, ...)``: every field, keyword-only, with its stub
    annotation and default, in the schema's order."""
    return inspect.Signature([_parameter(name, annotation, default)
                              for name, annotation, _nullable, default, _doc in GenerationConfig._schema()])


def unknown_name_hint(name: str, known: Iterable[str] = _FIELDS) -> str:
    """What to write instead of ``name``: kvgen's name for another tool's, or close spellings."""
    known = list(known)
    if name in OTHER_TOOLS_NAMES and OTHER_TOOLS_NAMES[name] in known:
        return f"kvgen calls it {OTHER_TOOLS_NAMES[name]!r}"
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.7)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return "see GenerationConfig.fields() for the supported ones"


def check_field_names(names: Iterable[str], known: Iterable[str] = _FIELDS) -> None:
    """Raises TypeError naming every name that is not in ``known`` (default: the config
    fields), each with what kvgen calls it or the close spellings."""
    known = list(known)
    unknown = [name for name in names if name not in known]
    if unknown:
        hints = "; ".join(f"{name!r}: {unknown_name_hint(name, known)}" for name in unknown)
        raise TypeError(f"unknown GenerationConfig field(s): {hints}")


# True while a config is rebuilt from one that was already checked (unpickling, overrides):
# the sampling-field warning is given once per config, by the call that set the fields.
_rebuilding: contextvars.ContextVar[bool] = contextvars.ContextVar("kvgen_config_rebuilding", default=False)


def _quiet_config(fields: Mapping[str, Any]) -> GenerationConfig:
    token = _rebuilding.set(True)
    try:
        return GenerationConfig(**fields)
    finally:
        _rebuilding.reset(token)


def with_overrides(config: GenerationConfig, overrides: Mapping[str, Any]) -> GenerationConfig:
    """A new, validated config: ``config`` with the fields of ``overrides`` set. A sampling
    field among ``overrides`` without ``do_sample=True`` warns, as in the constructor."""
    if not overrides:
        return config
    check_field_names(overrides)
    merged = _quiet_config({**config.to_dict(), **overrides})
    warn_sampling_without_do_sample(merged, overrides, stacklevel=3)
    return merged


# Fields that only act when sampling (do_sample=True), from the schema (its KVGEN_SAMPLING_FIELD
# lines), each with its default: transformers' GenerationConfig.validate warns for its seven
# (temperature ... eta_cutoff) set to anything but their default (top_k: 50); kvgen adds its
# llama.cpp samplers that the chain skips as well.
_DEFAULTS = {name: default for name, _annotation, _nullable, default, _doc in GenerationConfig._schema()}
SAMPLING_ONLY_FIELDS: dict[str, Any] = {name: _DEFAULTS[name] for name in _SAMPLING_FIELDS}

_GREEDY_WRONG_PARAMETER = (
    "`do_sample` is not set to `True`. However, `{flag_name}` is set to `{flag_value}` -- this flag is "
    "only used in sample-based generation modes. You should set `do_sample=True` or unset `{flag_name}`."
)


def sampling_without_do_sample(config: GenerationConfig, set_names: Iterable[str]) -> dict[str, str]:
    """transformers' rule (``GenerationConfig.validate``): without ``do_sample=True``, each
    sampling-only field among ``set_names`` whose value is not its "off" value, with transformers'
    sentence for it. ``temperature=0`` is kvgen's (and OpenAI's) spelling of greedy, so it is not
    reported: it asks for what it gets."""
    if config.do_sample:
        return {}
    issues = {}
    for name in set_names:
        if name in SAMPLING_ONLY_FIELDS:
            value = getattr(config, name)
            if value is None or value == SAMPLING_ONLY_FIELDS[name] or (name == "temperature" and value == 0.0):
                continue
            issues[name] = _GREEDY_WRONG_PARAMETER.format(flag_name=name, flag_value=value)
    return issues


def warn_sampling_without_do_sample(config: GenerationConfig, set_names: Iterable[str], stacklevel: int) -> None:
    """One ``UserWarning`` per config listing every sampling-only field that greedy decoding
    ignores (transformers logs the same list when its config is built)."""
    issues = sampling_without_do_sample(config, set_names)
    if issues:
        listing = "\n".join(f"- `{name}`: {issue}" for name, issue in issues.items())
        warnings.warn(f"The following generation flags are not valid and may be ignored: {list(issues)}.\n{listing}",
                      UserWarning, stacklevel=stacklevel + 1)


def install() -> None:
    """Gives GenerationConfig its keyword signature and the teaching unknown-field check.

    The binding's constructor takes ``**kwargs`` (the fields are a schema, not C++
    parameters); this wraps it so that names are checked first and ``inspect.signature``
    shows every field.
    """
    core_init = GenerationConfig.__init__

    def __init__(self: GenerationConfig, **fields: Any) -> None:
        check_field_names(fields)
        core_init(self, **fields)
        if not _rebuilding.get():
            warn_sampling_without_do_sample(self, fields, stacklevel=2)

    signature = config_signature()
    __init__.__doc__ = ("Builds a config from keyword arguments (the fields, Hugging Face names) and validates it; "
                        "an unknown name is a TypeError that says what kvgen calls it.")
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    __init__.__signature__ = signature.replace(  # type: ignore[attr-defined]
        return_annotation=None, parameters=[self_parameter, *signature.parameters.values()])
    GenerationConfig.__init__ = __init__  # type: ignore[method-assign]

    core_setstate = GenerationConfig.__setstate__  # type: ignore[attr-defined]  # pybind11 pickle support

    def __setstate__(self: GenerationConfig, state: dict) -> None:
        token = _rebuilding.set(True)
        try:
            core_setstate(self, state)
        finally:
            _rebuilding.reset(token)

    __setstate__.__doc__ = core_setstate.__doc__
    GenerationConfig.__setstate__ = __setstate__  # type: ignore[attr-defined]
    GenerationConfig.__signature__ = signature  # type: ignore[attr-defined]

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
}

# The schema's field names, and those whose Python value may be None: for the others None
# in a Hugging Face config means "HF default" (cpp/include/kvgen/generation_config_fields.def).
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
        if name in _FIELD_SET:
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
