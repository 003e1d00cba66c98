"""Generation with a built-in model: ``kvgen.Generator(model, config)`` returns a
ModelGenerator, which runs the prefill / decode loop in C++ and handles text (encoding,
UTF-8-safe streaming, chat templates) and timing in Python."""

from __future__ import annotations

import copy
import time
from typing import Iterator, Optional, Sequence

from kvgen import _core
from kvgen._constraints import Constraint, RowMatchers, constraint_field
from kvgen._core import GenerationConfig
from kvgen._results import GenerationResult, GenerationStats, _result


def _as_list(ids) -> list[int]:
    if ids is None:
        return []
    return [int(ids)] if isinstance(ids, int) else [int(i) for i in ids]


class ModelGenerator:
    """Generation with a built-in model: ``kvgen.Generator(model, config)``.

    ``generate(prompts)``: prompts are a str, a list of str (needs the model's
    tokenizer), or token-id lists. Returns the text (str, or a list for a list of str,
    the best sequence of each) or, for token ids, a GenerationResult; ``last_result``
    always holds the full GenerationResult (with ``texts`` when there is a tokenizer).
    ``stream(prompt)`` yields text pieces as they are generated (never splitting a UTF-8
    character) for a str prompt, each step's tokens for token ids. ``chat(messages)`` and
    ``chat_stream(messages)`` format a conversation with the model's chat template and
    answer it, stopping at the template's end-of-turn token.

    ``generate(prompts, sequence_ids=[...])`` and ``stream(prompt, sequence_ids=[...])`` key
    each prompt's random draws (default: its position 0, 1, 2, ...): a prompt with the same
    seed and id samples the same tokens in any batch (see kvgen.Generator).

    As in transformers, the model's EOS id is used when ``config.eos_token_id`` is None.
    The prompts are prefilled in one batched pass and each step feeds one token per row
    against the KV cache; the GIL is released during forward passes, and Ctrl-C stops
    between tokens. ``last_stats`` times the last generation.

    A constraint (``config.json_schema``, ``regex``, ``grammar`` or ``choices``) is compiled
    against the model's tokenizer here (ValueError when invalid); during generation the next
    token's mask is computed in a worker thread while the forward pass runs.
    """

    def __init__(self, model, config: GenerationConfig, *, output_raw_logprobs: bool = False,
                 skip_special_tokens: bool = False):
        self.model, self.config, self.output_raw_logprobs = model, config, output_raw_logprobs
        self.skip_special_tokens = skip_special_tokens
        self.last_result: Optional[GenerationResult] = None
        self.last_stats = GenerationStats()
        self.kv_cache_bytes = 0
        self._constraint: Optional[Constraint] = None
        self._matchers: Optional[RowMatchers] = None
        if constraint_field(config) is not None:
            self._constraint_for(self._effective_config())

    def _prompts(self, prompts) -> tuple[list[list[int]], bool, bool]:
        """(token lists, given as text, a single prompt)."""
        if isinstance(prompts, str):
            return [self.model.encode(prompts)], True, True
        prompts = list(prompts)
        if prompts and all(isinstance(p, str) for p in prompts):
            return [self.model.encode(p) for p in prompts], True, False
        return [[int(t) for t in p] for p in prompts], False, False

    def _effective_config(self, extra_eos: Sequence[Optional[int]] = ()) -> GenerationConfig:
        """The config, with the model's EOS id when it names none (as transformers falls
        back to the model's generation config), plus ``extra_eos``."""
        config = self.config
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
                 sequence_ids: Optional[Sequence[int]] = None) -> "_core._ModelDecodeLoop":
        strings = self.model.token_strings() if config.stop_strings else None
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
            self._follow_constraint(session, [True] * session.rows)
        return session

    def _advance(self, session) -> None:
        start = time.perf_counter()
        if self._matchers is None:
            session.advance()
        else:
            running = [True] * session.rows if session.num_beams > 1 else [r is None for r in session.finish_reasons]
            self._matchers.fill_in_background()  # the next masks, while the forward pass runs (GIL released)
            session.forward()
            session.step(allowed_tokens=self._matchers.wait())
            self._follow_constraint(session, running)
        self.last_stats.decode_seconds += time.perf_counter() - start
        self.last_stats.decode_steps += 1

    def _follow_constraint(self, session, running: list[bool]) -> None:
        """Feeds the step's tokens to the rows' matchers; rows whose grammar is complete
        finish with the reason 'stop'."""
        for r in self._matchers.advance(session.next_tokens, running, session.beam_indices):
            session._stop_row(r)

    def _finish(self, session, skip_special: bool) -> GenerationResult:
        result = _result(session._hypotheses(), strip_prompt=True)
        if self.model.tokenizer is not None:
            result.texts = [[self.model.decode(s, skip_special) for s in per] for per in result.sequences]
        self.last_stats.new_tokens = sum(len(per[0]) for per in result.sequences)
        self.last_result = result
        return result

    def generate(self, prompts, sequence_ids: Optional[Sequence[int]] = None):
        """Generates for ``prompts``; see the class docstring for what it returns.
        ``sequence_ids``: one int per prompt, keys its random draws."""
        ids, as_text, single = self._prompts(prompts)
        return self._generate(ids, as_text, single, self._effective_config(), self.skip_special_tokens, sequence_ids)

    def _generate(self, ids, as_text: bool, single: bool, config: GenerationConfig, skip_special: bool,
                  sequence_ids: Optional[Sequence[int]] = None):
        session = self._session(ids, config, sequence_ids)
        while not session.is_done():
            self._advance(session)
        result = self._finish(session, skip_special)
        if not as_text:
            return result
        best = [per[0] for per in result.texts]
        return best[0] if single else best

    def stream(self, prompt, sequence_ids: Optional[Sequence[int]] = None) -> Iterator:
        """Yields text pieces for a str prompt (one prompt, one sequence); for token ids, the
        int64 [rows] array of each step's tokens. ``sequence_ids``: one int per prompt, keys
        its random draws."""
        ids, as_text, _ = self._prompts(prompt)
        if as_text and (len(ids) != 1 or self.config.num_beams > 1 or self.config.num_return_sequences > 1):
            raise ValueError("text streaming takes one str prompt and one sequence (num_beams=1, "
                             "num_return_sequences=1)")
        return self._stream(ids, as_text, self._effective_config(), self.skip_special_tokens, sequence_ids)

    def _stream(self, ids, as_text: bool, config: GenerationConfig, skip_special: bool,
                sequence_ids: Optional[Sequence[int]] = None) -> Iterator:
        session = self._session(ids, config, sequence_ids)
        # Incremental detokenisation: each step decodes only the tokens since the last piece
        # (read), with those of the piece before as context (prefix), so a step costs the same
        # at any length and decoders that strip a leading space treat both decodes alike.
        prefix = read = 0
        while True:
            if as_text:
                generated = session.sequences[0][len(ids[0]):]
                before = self.model.decode(generated[prefix:read], skip_special)
                text = self.model.decode(generated[prefix:], skip_special)
                # wait for whole UTF-8 characters, except at the end (invalid bytes stay U+FFFD)
                if (session.is_done() or not text.endswith("\ufffd")) and len(text) > len(before):
                    yield text[len(before):]
                    prefix, read = read, len(generated)
            else:
                yield session.next_tokens
            if session.is_done():
                break
            self._advance(session)
        self._finish(session, skip_special)

    def _chat_prompt(self, messages) -> tuple[list[list[int]], GenerationConfig]:
        text = self.model.apply_chat_template(messages, add_generation_prompt=True)
        ids = [self.model.encode(text, add_special_tokens=False)]
        return ids, self._effective_config([self.model.end_of_turn_token_id])

    def chat(self, messages: Sequence[dict]) -> str:
        """The model's reply to a conversation (a list of {"role", "content"} dicts, ending
        with the user's turn), special tokens left out; ``last_result`` has the details."""
        ids, config = self._chat_prompt(messages)
        return self._generate(ids, True, True, config, skip_special=True)

    def chat_stream(self, messages: Sequence[dict]) -> Iterator[str]:
        """Yields the pieces of the reply ``chat(messages)`` returns, as they are generated.
        Bad messages or settings raise here, before the first piece."""
        if self.config.num_beams > 1 or self.config.num_return_sequences > 1:
            raise ValueError("chat_stream generates one sequence (num_beams=1, num_return_sequences=1)")
        ids, config = self._chat_prompt(messages)
        return self._stream(ids, True, config, skip_special=True)

    def __repr__(self) -> str:
        return f"Generator({self.model!r}, {self.config!r})"
