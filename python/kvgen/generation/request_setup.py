"""The request set-up: what every entry point (``generate``, ``stream``, ``chat``,
``generate_batch``, ``kvgen serve``) turns a model, a config, per-call overrides and text
options into before the engine runs a request: the config with the model's EOS and
end-of-turn rules, the text options, the compiled constraint, and the step generator with
the token texts when its processors need them (the core says when: ``needs_token_texts``)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any, Mapping, MutableMapping, Optional, Sequence, Union

from kvgen._config import check_field_names, with_overrides
from kvgen._core import GenerationConfig
from kvgen.generation.constraints import Constraint, constraint_field
from kvgen.generation.step import TokenSelector


@dataclass(frozen=True)
class TextOptions:
    """How generated tokens become the returned text; set per generator, overridable per call.

    ``skip_special_tokens`` (default True, as transformers' text-generation pipeline):
    special tokens such as ``<|im_end|>`` are left out of the text. ``include_stop_str_in_output``
    (vLLM's name; default True, transformers' behaviour): a text that ended at one of
    ``config.stop_strings`` keeps the stop string; False cuts the text before it, as OpenAI,
    vLLM and llama-cpp-python do (tokens and ``last_result.sequences`` keep every token).
    """

    skip_special_tokens: bool = True
    include_stop_str_in_output: bool = True


TEXT_OPTIONS = tuple(TextOptions.__dataclass_fields__)

#: Compiled constraints kept by their caller (a ModelGenerator), keyed by the constraint
#: fields and the EOS ids, so that calls with the same constraint compile it once.
ConstraintCache = MutableMapping[tuple, Constraint]


def _as_list(ids: Union[int, Sequence[int], None]) -> list[int]:
    if ids is None:
        return []
    return [int(ids)] if isinstance(ids, int) else [int(i) for i in ids]


def with_model_eos(model: Any, config: GenerationConfig, extra_eos: Sequence[Optional[int]] = ()) -> GenerationConfig:
    """``config``, with the model's EOS ids when it names none (as transformers falls back to
    the model's generation config), plus ``extra_eos`` (an end-of-turn token)."""
    given = _as_list(config.eos_token_id)
    ids = list(given)
    if config.eos_token_id is None:
        ids = [i for i in _as_list(model.eos_token_id) if 0 <= i < model.vocab_size]
    ids += [i for i in extra_eos if i is not None and i not in ids]
    if ids == given:
        return config
    config = copy.copy(config)
    config.eos_token_id = ids[0] if len(ids) == 1 else ids
    return config


@dataclass(frozen=True)
class RequestSetup:
    """What the engine needs to run a request: ``config`` (its EOS ids final), ``text`` (how
    tokens become text), ``constraint`` (compiled against the model's tokenizer, or None)."""

    config: GenerationConfig
    text: TextOptions = TextOptions()
    constraint: Optional[Constraint] = None
    #: a draft model (a kvgen Model sharing the vocabulary) for speculative decoding, or None
    assistant_model: Any = None

    def token_selector(self, model: Any, output_raw_logprobs: bool = False) -> TokenSelector:
        """A fresh step generator for one request of this set-up, with the model's token texts
        when the config's processors need them (stop strings, DRY's sequence breakers)."""
        generator = TokenSelector(self.config, tokenizer=model, constraint=self.constraint,
                                  output_raw_logprobs=output_raw_logprobs)
        if generator.needs_token_texts:
            generator.set_token_strings(model.token_strings())
        return generator


def set_up_request(model: Any, config: GenerationConfig, overrides: Optional[Mapping[str, Any]] = None,
                   text: TextOptions = TextOptions(), *, end_of_turn: bool = False,
                   constraints: Optional[ConstraintCache] = None, assistant_model: Any = None) -> RequestSetup:
    """The set-up of one request: ``config`` with ``overrides`` (config fields and text
    options; TypeError naming an unknown one), the model's EOS when the config names none,
    the model's end-of-turn token too with ``end_of_turn``, and the constraint compiled
    (ValueError when invalid; kept in ``constraints`` when given); ``assistant_model`` (or an
    ``assistant_model`` override): the draft model of speculative decoding."""
    overrides = dict(overrides or {})
    assistant_model = overrides.pop("assistant_model", assistant_model)
    check_field_names(overrides, [*GenerationConfig.fields(), *TEXT_OPTIONS, "assistant_model"])
    options = {k: v for k, v in overrides.items() if k in TEXT_OPTIONS}
    fields = {k: v for k, v in overrides.items() if k not in TEXT_OPTIONS}
    config = with_model_eos(model, with_overrides(config, fields), [model.end_of_turn_token_id] if end_of_turn else [])
    return RequestSetup(config, replace(text, **options), compile_constraint(model, config, constraints),
                        assistant_model)


def compile_constraint(model: Any, config: GenerationConfig,
                       constraints: Optional[ConstraintCache] = None) -> Optional[Constraint]:
    """The config's constraint compiled against the model's tokenizer (None without one)."""
    if constraint_field(config) is None:
        return None
    choices = tuple(config.choices) if config.choices is not None else None
    key = (config.json_schema, config.regex, config.grammar, choices, tuple(_as_list(config.eos_token_id)))
    constraint = constraints.get(key) if constraints is not None else None
    if constraint is None:
        constraint = Constraint(config, model)
        constraint.check_vocab(model.vocab_size)
        if constraints is not None:
            constraints.clear()  # the latest one only
            constraints[key] = constraint
    return constraint
