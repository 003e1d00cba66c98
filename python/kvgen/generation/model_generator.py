"""Generation with a built-in model: ``kvgen.Generator(model, config)`` returns a
ModelGenerator, which runs the prefill / decode loop in C++ and handles text (encoding,
UTF-8-safe streaming, chat templates, stop strings) and timing in Python."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from typing import Any, Iterator, Mapping, Optional, Sequence, Union, cast, overload

import numpy as np
import numpy.typing as npt

from kvgen import _core
from kvgen._config import check_field_names, from_hf, with_overrides
from kvgen._core import GenerationConfig
from kvgen._model import Model
from kvgen.generation.constraints import Constraint, RowMatchers, constraint_field
from kvgen.generation.detokenize import IncrementalText, StopStringFilter, cut_at_stop
from kvgen.generation.engine import run_batch
from kvgen.generation.results import GenerationResult, GenerationStats, TextPiece, _result


def _dry_needs_texts(config: GenerationConfig) -> bool:
    """DRY is on with sequence breakers, which are matched on the token texts."""
    return config.dry_multiplier != 0 and config.dry_penalty_last_n != 0 and bool(config.dry_sequence_breakers)

#: What ``Generator(model, config)`` takes as config: a kvgen GenerationConfig, or a
#: ``transformers.GenerationConfig`` / dict of Hugging Face fields (converted with from_hf).
ConfigLike = Union[GenerationConfig, Mapping[str, Any], Any]
#: One conversation: {"role": ..., "content": ...} dicts, ending with the user's turn.
Messages = Sequence[dict[str, Any]]


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


_TEXT_OPTIONS = tuple(TextOptions.__dataclass_fields__)


def _as_list(ids: Union[int, Sequence[int], None]) -> list[int]:
    if ids is None:
        return []
    return [int(ids)] if isinstance(ids, int) else [int(i) for i in ids]


def _as_config(config: ConfigLike) -> GenerationConfig:
    if config is None:
        return GenerationConfig()
    if isinstance(config, GenerationConfig):
        return config
    return from_hf(config)


class ModelGenerator:
    """Generation with a built-in model: ``kvgen.Generator(model, config)``.

    ``config`` is a GenerationConfig, or a ``transformers.GenerationConfig`` or dict of
    Hugging Face fields (converted with ``GenerationConfig.from_hf``); None is the defaults.

    ``generate(prompts)``: prompts are a str, a list of str (needs the model's
    tokenizer), or token-id lists. Returns the text (str, or a list for a list of str,
    the best sequence of each) or, for token ids, a GenerationResult; ``last_result``
    always holds the full GenerationResult (with ``texts`` when there is a tokenizer).
    ``stream(prompt)`` yields text pieces as they are generated (never splitting a UTF-8
    character) for a str prompt (TextPiece: a str with token_ids, logprobs and
    top_logprobs), each step's tokens for token ids. ``chat(messages)`` and
    ``chat_stream(messages)`` format a conversation with the model's chat template and
    answer it, stopping at the template's end-of-turn token.

    Per call: every method takes config fields as keywords over the generator's config,
    ``generate("Hi", max_new_tokens=5, seed=1)``, and the TextOptions
    (``skip_special_tokens``, ``include_stop_str_in_output``).

    ``generate(prompts, sequence_ids=[...])`` and ``stream(prompt, sequence_ids=[...])`` key
    each prompt's random draws (default: its position 0, 1, 2, ...): a prompt with the same
    seed and id samples the same tokens in any batch (see kvgen.Generator).

    As in transformers, the model's EOS id is used when ``config.eos_token_id`` is None.
    The prompts are prefilled in one batched pass and each step feeds one token per row
    against the KV cache; the GIL is released during forward passes, and Ctrl-C stops
    between tokens: an interrupted ``generate()`` keeps what it generated in ``last_result``
    (finish reason ``"interrupted"``) and re-raises. ``last_stats`` times the last generation.

    A constraint (``config.json_schema``, ``regex``, ``grammar`` or ``choices``) is compiled
    against the model's tokenizer here (ValueError when invalid); during generation the next
    token's mask is computed in a worker thread while the forward pass runs.
    """

    def __init__(self, model: Model, config: ConfigLike = None, *, output_raw_logprobs: bool = False,
                 skip_special_tokens: bool = True, include_stop_str_in_output: bool = True) -> None:
        self.model = model
        self.config = _as_config(config)
        self.output_raw_logprobs = output_raw_logprobs
        self.text_options = TextOptions(skip_special_tokens, include_stop_str_in_output)
        self.last_result: Optional[GenerationResult] = None
        self.last_stats = GenerationStats()
        self.kv_cache_bytes = 0
        self._constraint: Optional[Constraint] = None
        self._constraint_key: Any = None
        self._matchers: Optional[RowMatchers] = None
        if constraint_field(self.config) is not None:  # an invalid constraint raises here
            self._constraint_for(self._effective_config(self.config))

    # --- settings ---------------------------------------------------------------------------

    def _settings(self, overrides: Mapping[str, Any],
                  extra_eos: Sequence[Optional[int]] = ()) -> tuple[GenerationConfig, TextOptions]:
        """The config and text options of one call: the generator's, with ``overrides``."""
        check_field_names(overrides, [*GenerationConfig.fields(), *_TEXT_OPTIONS])
        text = {k: v for k, v in overrides.items() if k in _TEXT_OPTIONS}
        fields = {k: v for k, v in overrides.items() if k not in _TEXT_OPTIONS}
        config = with_overrides(self.config, fields)
        return self._effective_config(config, extra_eos), replace(self.text_options, **text)

    def _effective_config(self, config: GenerationConfig, extra_eos: Sequence[Optional[int]] = ()) -> GenerationConfig:
        """``config``, with the model's EOS id when it names none (as transformers falls
        back to the model's generation config), plus ``extra_eos``."""
        given = _as_list(config.eos_token_id)
        ids = list(given)
        if config.eos_token_id is None:
            ids = [i for i in _as_list(self.model.eos_token_id) if 0 <= i < self.model.vocab_size]
        ids += [i for i in extra_eos if i is not None and i not in ids]
        if ids == given:
            return config
        config = copy.copy(config)
        config.eos_token_id = ids[0] if len(ids) == 1 else ids
        return config

    def _prompts(self, prompts: Any) -> tuple[list[list[int]], bool, bool]:
        """(token lists, given as text, a single prompt)."""
        if isinstance(prompts, str):
            return [self.model.encode(prompts)], True, True
        prompts = list(prompts)
        if prompts and all(isinstance(p, str) for p in prompts):
            return [self.model.encode(p) for p in prompts], True, False
        return [[int(t) for t in p] for p in prompts], False, False

    # --- the loop ---------------------------------------------------------------------------

    def _constraint_for(self, config: GenerationConfig) -> Constraint:
        """The config's constraint compiled against the model's tokenizer (kept while the
        constraint and the EOS ids stay the same)."""
        key = (config.json_schema, config.regex, config.grammar, config.choices, config.eos_token_id)
        if self._constraint is None or self._constraint_key != key:
            constraint = Constraint(config, self.model)
            constraint.check_vocab(self.model.vocab_size)
            self._constraint, self._constraint_key = constraint, key
        return self._constraint

    def _session(self, ids: list[list[int]], config: GenerationConfig,
                 sequence_ids: Optional[Sequence[int]] = None) -> _core._ModelDecodeLoop:
        strings = self.model.token_strings() if config.stop_strings or _dry_needs_texts(config) else None
        session = _core._ModelDecodeLoop(self.model._core, config, token_strings=strings,
                                         output_raw_logprobs=self.output_raw_logprobs)
        self.last_stats = GenerationStats(prompt_tokens=sum(len(p) for p in ids))
        self._matchers = None
        allowed = None
        if constraint_field(config) is not None:
            rows = len(ids) * (config.num_beams if config.num_beams > 1 else config.num_return_sequences)
            self._matchers = self._constraint_for(config).rows(rows)
            self._matchers.fill()
            allowed = self._matchers.allowed
        start = time.perf_counter()
        session.start(ids, sequence_ids=sequence_ids, allowed_tokens=allowed)
        self.last_stats.prefill_seconds = time.perf_counter() - start
        self.kv_cache_bytes = session.kv_cache_bytes
        if self._matchers is not None:
            self._matchers.follow(session, session.next_tokens, session.beam_indices, [True] * session.rows)
        return session

    def _advance(self, session: _core._ModelDecodeLoop) -> None:
        start = time.perf_counter()
        if self._matchers is None:
            session.advance()
        else:
            running = RowMatchers.running(session)
            self._matchers.fill_in_background()  # the next masks, while the forward pass runs (GIL released)
            session.forward()
            session.step(allowed_tokens=self._matchers.wait())
            self._matchers.follow(session, session.next_tokens, session.beam_indices, running)
        self.last_stats.decode_seconds += time.perf_counter() - start
        self.last_stats.decode_steps += 1

    def _text(self, tokens: npt.NDArray[np.int64], finish_reason: Optional[str], config: GenerationConfig,
              options: TextOptions) -> str:
        text = self.model.decode(tokens, options.skip_special_tokens)
        if finish_reason == "stop" and config.stop_strings and not options.include_stop_str_in_output:
            cut = cut_at_stop(text, config.stop_strings)
            text = text if cut is None else text[:cut]
        return text

    def _finish(self, session: _core._ModelDecodeLoop, config: GenerationConfig, options: TextOptions,
                interrupted: bool = False) -> GenerationResult:
        result = _result(session._hypotheses(), strip_prompt=True)
        if interrupted:  # rows still running when Ctrl-C came have no finish reason of their own
            result.finish_reasons = [[r or "interrupted" for r in per] for per in result.finish_reasons]
        if self.model.tokenizer is not None:
            result.texts = [[self._text(s, r, config, options) for s, r in zip(per, reasons)]
                            for per, reasons in zip(result.sequences, result.finish_reasons)]
        self.last_stats.new_tokens = sum(len(per[0]) for per in result.sequences)
        self.last_result = result
        return result

    # --- generate ---------------------------------------------------------------------------

    @overload
    def generate(self, prompts: str, sequence_ids: Optional[Sequence[int]] = None, **overrides: Any) -> str: ...
    @overload
    def generate(self, prompts: list[str], sequence_ids: Optional[Sequence[int]] = None,
                 **overrides: Any) -> list[str]: ...
    @overload
    def generate(self, prompts: Sequence[Sequence[int]], sequence_ids: Optional[Sequence[int]] = None,
                 **overrides: Any) -> GenerationResult: ...

    def generate(self, prompts: Any, sequence_ids: Optional[Sequence[int]] = None,
                 **overrides: Any) -> Union[str, list[str], GenerationResult]:
        """Generates for ``prompts``; see the class docstring for what it returns.
        ``sequence_ids``: one int per prompt, keys its random draws. ``overrides``: config
        fields and text options for this call."""
        ids, as_text, single = self._prompts(prompts)
        config, options = self._settings(overrides)
        return self._generate(ids, as_text, single, config, options, sequence_ids)

    def _generate(self, ids: list[list[int]], as_text: bool, single: bool, config: GenerationConfig,
                  options: TextOptions,
                  sequence_ids: Optional[Sequence[int]] = None) -> Union[str, list[str], GenerationResult]:
        session = self._session(ids, config, sequence_ids)
        try:
            while not session.is_done():
                self._advance(session)
        except KeyboardInterrupt:
            self._finish(session, config, options, interrupted=True)
            raise
        result = self._finish(session, config, options)
        if not as_text or result.texts is None:
            return result
        best = [per[0] for per in result.texts]
        return best[0] if single else best

    def generate_batch(self, prompts: Sequence[Any], configs: Optional[Sequence[ConfigLike]] = None, *,
                       max_batch: int = 8, progress: bool = False) -> list[Any]:
        """Generates for many prompts (str or token-id lists), each with its own config
        (default: the generator's), through one continuously batched model: at most
        ``max_batch`` rows decode together, and a finished prompt's rows go to the next one.
        Returns, in input order, what ``generate(prompt)`` returns for each; ``progress``
        shows a tqdm bar. Each prompt gets the same tokens as its own ``generate`` call."""
        ids, as_text, _ = self._prompts(prompts)
        given = [self.config] * len(ids) if configs is None else list(configs)
        if len(given) != len(ids):
            raise ValueError(f"got {len(given)} configs for {len(ids)} prompts")
        per_prompt = [self._effective_config(_as_config(c)) for c in given]
        results = run_batch(self.model, ids, per_prompt, max_batch=max_batch, progress=progress)
        for result, config in zip(results, per_prompt):
            if self.model.tokenizer is not None:
                result.texts = [[self._text(s, r, config, self.text_options) for s, r in zip(per, reasons)]
                                for per, reasons in zip(result.sequences, result.finish_reasons)]
        self.last_result = None
        return [r.texts[0][0] for r in results] if as_text else results  # type: ignore[index]

    # --- stream -----------------------------------------------------------------------------

    @overload
    def stream(self, prompt: str, sequence_ids: Optional[Sequence[int]] = None,
               **overrides: Any) -> Iterator[str]: ...
    @overload
    def stream(self, prompt: Sequence[Sequence[int]], sequence_ids: Optional[Sequence[int]] = None,
               **overrides: Any) -> Iterator[npt.NDArray[np.int64]]: ...

    def stream(self, prompt: Any, sequence_ids: Optional[Sequence[int]] = None,
               **overrides: Any) -> Union[Iterator[str], Iterator[npt.NDArray[np.int64]]]:
        """Yields text pieces for a str prompt (one prompt, one sequence); for token ids, the
        int64 [rows] array of each step's tokens. ``sequence_ids``: one int per prompt, keys
        its random draws. ``overrides``: config fields and text options for this call."""
        ids, as_text, _ = self._prompts(prompt)
        config, options = self._settings(overrides)
        if as_text and (len(ids) != 1 or config.num_beams > 1 or config.num_return_sequences > 1):
            raise ValueError("text streaming takes one str prompt and one sequence (num_beams=1, "
                             "num_return_sequences=1)")
        return self._stream(ids, as_text, config, options, sequence_ids)

    def _stream(self, ids: list[list[int]], as_text: bool, config: GenerationConfig, options: TextOptions,
                sequence_ids: Optional[Sequence[int]] = None) -> Iterator[Any]:
        session = self._session(ids, config, sequence_ids)
        trim = as_text and not options.include_stop_str_in_output
        stop_filter = StopStringFilter(config.stop_strings) if trim and config.stop_strings else None
        try:
            for piece in self._pieces(session, ids, as_text, options):
                if stop_filter is None:
                    yield piece
                elif text := stop_filter.feed(piece):
                    yield text
        except KeyboardInterrupt:
            self._finish(session, config, options, interrupted=True)
            raise
        if stop_filter is not None and (rest := stop_filter.flush()):
            yield rest
        self._finish(session, config, options)

    def _pieces(self, session: _core._ModelDecodeLoop, ids: list[list[int]], as_text: bool,
                options: TextOptions) -> Iterator[Any]:
        """Steps ``session`` to the end, yielding each step's new text (or tokens)."""
        skip_special = options.skip_special_tokens
        text = IncrementalText(lambda tokens: self.model.decode(tokens, skip_special))
        read = 0  # generated tokens already in a piece
        pending: list[tuple[Any, ...]] = []  # each step's (logprobs, top ids, ...) since the last piece
        while True:
            if as_text:
                generated = session.sequences[0][len(ids[0]):]
                pending.append(session._last_step())
                piece = text.update(generated, final=session.is_done())
                if piece:
                    yield TextPiece.of(piece, generated[read:], pending)
                    pending, read = [], len(generated)
            else:
                yield session.next_tokens
            if session.is_done():
                break
            self._advance(session)

    # --- chat -------------------------------------------------------------------------------

    def _chat_prompt(self, messages: Messages,
                     overrides: Mapping[str, Any]) -> tuple[list[list[int]], GenerationConfig, TextOptions]:
        text = self.model.apply_chat_template(messages, add_generation_prompt=True)
        ids = [self.model.encode(text, add_special_tokens=False)]
        config, options = self._settings(overrides, [self.model.end_of_turn_token_id])
        return ids, config, options

    def chat(self, messages: Messages, **overrides: Any) -> str:
        """The model's reply to a conversation (a list of {"role", "content"} dicts, ending
        with the user's turn), special tokens left out; ``last_result`` has the details.
        ``overrides``: config fields and text options for this call."""
        ids, config, options = self._chat_prompt(messages, overrides)
        return cast(str, self._generate(ids, True, True, config, options))  # text: chat needs the tokenizer

    def chat_stream(self, messages: Messages, **overrides: Any) -> Iterator[str]:
        """Yields the pieces of the reply ``chat(messages)`` returns, as they are generated.
        Bad messages or settings raise here, before the first piece."""
        ids, config, options = self._chat_prompt(messages, overrides)
        if config.num_beams > 1 or config.num_return_sequences > 1:
            raise ValueError("chat_stream generates one sequence (num_beams=1, num_return_sequences=1)")
        return self._stream(ids, True, config, options)

    def __repr__(self) -> str:
        return f"Generator({self.model!r}, {self.config!r})"
