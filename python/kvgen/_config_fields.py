"""GenerationConfig's keyword face, read from the schema (generation_config_fields.def): the
typed keyword signature that ``inspect.signature`` and editors show, the check that names the
kvgen field for another tool's name or a misspelling, and per-call overrides of a config.

Everything here is derived from ``GenerationConfig._schema()``, so a field added to the schema
appears in the signature, the suggestions and the overrides without an edit here.
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any, Iterable, Mapping

from kvgen._core import GenerationConfig

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


def with_overrides(config: GenerationConfig, overrides: Mapping[str, Any]) -> GenerationConfig:
    """A new, validated config: ``config`` with the fields of ``overrides`` set."""
    if not overrides:
        return config
    check_field_names(overrides)
    return GenerationConfig(**{**config.to_dict(), **overrides})


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

    signature = config_signature()
    __init__.__doc__ = ("Builds a config from keyword arguments (the fields, Hugging Face names) and validates it; "
                        "an unknown name is a TypeError that says what kvgen calls it.")
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    __init__.__signature__ = signature.replace(  # type: ignore[attr-defined]
        return_annotation=None, parameters=[self_parameter, *signature.parameters.values()])
    GenerationConfig.__init__ = __init__  # type: ignore[method-assign]
    GenerationConfig.__signature__ = signature  # type: ignore[attr-defined]
