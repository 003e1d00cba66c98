"""Generation with a built-in model: ``kvgen.Generator(model, config)`` returns a
ModelGenerator, which runs the prefill / decode loop in C++ and handles text (encoding,
UTF-8-safe streaming, chat templates) and timing in Python."""

from __future__ import annotations

import copy
import time
from typing import Iterator, Optional, Sequence

from kvgen import _core
from kvgen._core import GenerationConfig
from kvgen._detokenize import IncrementalText
from kvgen._engine import run_batch
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
    """

    def __init__(self, model, config: GenerationConfig, *, output_raw_logprobs: bool = False,
                 skip_special_tokens: bool = False):
        self.model, self.config, self.output_raw_logprobs = model, config, output_raw_logprobs
        self.skip_special_tokens = skip_special_tokens
        self.last_result: Optional[GenerationResult] = None
        self.last_stats = GenerationStats()
        self.kv_cache_bytes = 0

    def _prompts(self, prompts) -> tuple[list[list[int]], bool, bool]:
        """(token lists, given as text, a single prompt)."""
        if isinstance(prompts, str):
            return [self.model.encode(prompts)], True, True
        prompts = list(prompts)
        if prompts and all(isinstance(p, str) for p in prompts):
            return [self.model.encode(p) for p in prompts], True, False
        return [[int(t) for t in p] for p in prompts], False, False

    def _effective_config(self, extra_eos: Sequence[Optional[int]] = (),
                          config: Optional[GenerationConfig] = None) -> GenerationConfig:
        """The config (default: the generator's), with the model's EOS id when it names none
        (as transformers falls back to the model's generation config), plus ``extra_eos``."""
        config = self.config if config is None else config
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

    def _session(self, ids: list[list[int]], config: GenerationConfig,
                 sequence_ids: Optional[Sequence[int]] = None) -> "_core._ModelDecodeLoop":
        strings = self.model.token_strings() if config.stop_strings else None
        session = _core._ModelDecodeLoop(self.model._core, config, token_strings=strings,
                                         output_raw_logprobs=self.output_raw_logprobs)
        self.last_stats = GenerationStats(prompt_tokens=sum(len(p) for p in ids))
        start = time.perf_counter()
        session.start(ids, sequence_ids=sequence_ids)
        self.last_stats.prefill_seconds = time.perf_counter() - start
        self.kv_cache_bytes = session.kv_cache_bytes
        return session

    def _advance(self, session) -> None:
        start = time.perf_counter()
        session.advance()
        self.last_stats.decode_seconds += time.perf_counter() - start
        self.last_stats.decode_steps += 1

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

    def generate_batch(self, prompts: Sequence, configs: Optional[Sequence[GenerationConfig]] = None, *,
                       max_batch: int = 8, progress: bool = False) -> list:
        """Generates for many prompts (str or token-id lists), each with its own config
        (default: the generator's), through one continuously batched model: at most
        ``max_batch`` rows decode together, and a finished prompt's rows go to the next one.
        Returns, in input order, what ``generate(prompt)`` returns for each; ``progress``
        shows a tqdm bar. Each prompt gets the same tokens as its own ``generate`` call."""
        ids, as_text, _ = self._prompts(prompts)
        configs = [self.config] * len(ids) if configs is None else list(configs)
        if len(configs) != len(ids):
            raise ValueError(f"got {len(configs)} configs for {len(ids)} prompts")
        results = run_batch(self.model, ids, [self._effective_config(config=c) for c in configs],
                            max_batch=max_batch, progress=progress)
        for result in results:
            if self.model.tokenizer is not None:
                result.texts = [[self.model.decode(s, self.skip_special_tokens) for s in per]
                                for per in result.sequences]
        self.last_result = None
        return [r.texts[0][0] for r in results] if as_text else results  # type: ignore[index]

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
        text = IncrementalText(lambda tokens: self.model.decode(tokens, skip_special))
        while True:
            if as_text:
                piece = text.update(session.sequences[0][len(ids[0]):], final=session.is_done())
                if piece:
                    yield piece
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
