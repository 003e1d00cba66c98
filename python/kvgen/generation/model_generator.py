"""Generation with a built-in model: ``kvgen.Generator(model, config)`` returns a
ModelGenerator, which runs each call as one request of the engine (kvgen.generation.engine),
stepped in the caller's thread, and handles text (encoding, UTF-8-safe streaming, chat
templates, stop strings) and timing in Python."""

from __future__ import annotations

import time
from typing import Any, Iterator, Mapping, Optional, Sequence, Union, cast, overload

import numpy as np
import numpy.typing as npt

from kvgen._config import from_hf
from kvgen._core import GenerationConfig
from kvgen._model import Model
from kvgen.generation.batch_run import run_batch
from kvgen.generation.constraints import Constraint
from kvgen.generation.detokenize import IncrementalText, StopStringFilter, cut_at_stop
from kvgen.generation.engine import Engine
from kvgen.generation.engine_pool import EnginePool
from kvgen.generation.request import Request
from kvgen.generation.request_setup import RequestSetup, TextOptions, set_up_request
from kvgen.generation.results import GenerationResult, GenerationStats, TextPiece, _result

__all__ = ["ConfigLike", "Messages", "ModelGenerator", "TextOptions"]

#: What ``Generator(model, config)`` takes as config: a kvgen GenerationConfig, or a
#: ``transformers.GenerationConfig`` / dict of Hugging Face fields (converted with from_hf).
ConfigLike = Union[GenerationConfig, Mapping[str, Any], Any]
#: One conversation: {"role": ..., "content": ...} dicts, ending with the user's turn.
Messages = Sequence[dict[str, Any]]


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
    Each call is one request of the engine (the one ``generate_batch`` and ``kvgen serve``
    use), stepped in the caller's thread: the prompts are prefilled in chunks of 32 tokens
    (a chunk of every prompt per forward pass), then each step feeds one token per row
    against the KV cache; the GIL is released during forward passes, and Ctrl-C stops
    between tokens: an interrupted ``generate()`` keeps what it generated in ``last_result``
    (finish reason ``"interrupted"``) and re-raises. ``last_stats`` times the last generation.

    A constraint (``config.json_schema``, ``regex``, ``grammar`` or ``choices``) is compiled
    against the model's tokenizer here (ValueError when invalid); during generation the next
    token's mask is computed in a worker thread while the forward pass runs.

    Speculative decoding (the same tokens, fewer forward passes where the text is
    predictable): ``prompt_lookup_num_tokens=k`` drafts up to k tokens per step from the
    prompt and the text so far; ``assistant_model=`` (here or per call, transformers' name)
    drafts with a smaller kvgen Model of the same vocabulary. ``last_stats`` then counts the
    drafted and accepted tokens. Not with beam search.

    Prefix cache (``prefix_cache=True``, the default): the generator keeps one engine across
    calls (kvgen.generation.engine_pool), with the engine's prefix cache, so a one-sequence call
    whose prompt starts with an earlier call's prompt (the next turn of a ``chat``, a shared
    system prompt) reuses that prompt's cached positions and
    prefills only the rest; the outputs are bit-identical to ``prefix_cache=False`` (a fresh
    engine per call). The kept engine has 2 slots (the two prompts used last stay cached) of
    at least 4096 positions (the model's context when shorter), taking memory only once used;
    it is built again, empty, when a one-sequence call needs more positions. A call of
    several rows (beams, ``num_return_sequences``, several prompts) or with an
    ``assistant_model`` runs in an engine of its own, leaving the cache as it is. ``last_stats.cached_tokens`` counts
    the prompt tokens the last call found in the cache. A call made while another call of the
    same generator is still running (another thread, or a stream not yet exhausted) runs in an
    engine of its own, without the cache; an interrupted call (Ctrl-C) drops the cache.
    """

    def __init__(self, model: Model, config: ConfigLike = None, *, output_raw_logprobs: bool = False,
                 skip_special_tokens: bool = True, include_stop_str_in_output: bool = True,
                 assistant_model: Optional[Model] = None, prefix_cache: bool = True) -> None:
        self.model = model
        self._engines = EnginePool(model, prefix_cache)  # the engine kept across calls (prefix_cache)
        self.assistant_model = assistant_model
        self.config = _as_config(config)
        self.output_raw_logprobs = output_raw_logprobs
        self.text_options = TextOptions(skip_special_tokens, include_stop_str_in_output)
        self.last_result: Optional[GenerationResult] = None
        self.last_stats = GenerationStats()
        self.kv_cache_bytes = 0
        self._constraints: dict[tuple, Constraint] = {}  # the latest compiled constraint
        self._setup({})  # an invalid constraint raises here

    # --- settings ---------------------------------------------------------------------------

    @property
    def prefix_cache(self) -> bool:
        """Whether calls reuse the kept engine's cached prompts (see the class docstring)."""
        return self._engines.prefix_cache

    @prefix_cache.setter
    def prefix_cache(self, value: bool) -> None:
        self._engines.prefix_cache = bool(value)

    def _setup(self, overrides: Mapping[str, Any], end_of_turn: bool = False) -> RequestSetup:
        """The request set-up of one call: the generator's config and text options with ``overrides``."""
        return set_up_request(self.model, self.config, overrides, self.text_options, end_of_turn=end_of_turn,
                              constraints=self._constraints, assistant_model=self.assistant_model)

    def _prompts(self, prompts: Any) -> tuple[list[list[int]], bool, bool]:
        """(token lists, given as text, a single prompt)."""
        if isinstance(prompts, str):
            return [self.model.encode(prompts)], True, True
        prompts = list(prompts)
        if prompts and all(isinstance(p, str) for p in prompts):
            return [self.model.encode(p) for p in prompts], True, False
        return [[int(t) for t in p] for p in prompts], False, False

    # --- the request --------------------------------------------------------------------------

    def _start(self, ids: list[list[int]], setup: RequestSetup,
               sequence_ids: Optional[Sequence[int]] = None) -> tuple[Engine, Request]:
        """The request of ``ids`` in an engine (EnginePool.acquire), stepped until it has its
        first tokens; the caller ends with ``self._engines.release``."""
        self.last_stats = GenerationStats(prompt_tokens=sum(len(p) for p in ids))
        start = time.perf_counter()
        request = Request(ids, setup.token_selector(self.model, self.output_raw_logprobs), self.model.context_length,
                          sequence_ids=sequence_ids, assistant_model=setup.assistant_model)
        engine = self._engines.acquire(request)
        self.kv_cache_bytes = self.model.kv_cache_bytes(request.rows, request.positions)
        try:
            hits = engine.prefix_cache_hits
            engine.add(request)
            while request.next_tokens is None and not request.done():
                engine.step()  # a prompt chunk per step: Ctrl-C stops between them
            self.last_stats.cached_tokens = engine.prefix_cache_hits - hits
        except KeyboardInterrupt:
            self._engines.release(engine, request, clean=False)
            self._finish(request, setup, interrupted=True)
            raise
        except BaseException:
            self._engines.release(engine, request, clean=False)
            raise
        try:
            self._raise_error(request)
        except BaseException:
            self._engines.release(engine, request, clean=True)
            raise
        self.last_stats.prefill_seconds = time.perf_counter() - start
        return engine, request

    def _advance(self, engine: Engine, request: Request) -> None:
        start = time.perf_counter()
        engine.step()
        self._raise_error(request)
        self.last_stats.decode_seconds += time.perf_counter() - start
        self.last_stats.decode_steps += 1

    @staticmethod
    def _raise_error(request: Request) -> None:
        if request.error is not None:
            raise request.error

    def _text(self, tokens: npt.NDArray[np.int64], finish_reason: Optional[str], setup: RequestSetup) -> str:
        text = self.model.decode(tokens, setup.text.skip_special_tokens)
        stops = setup.config.stop_strings
        if finish_reason == "stop" and stops and not setup.text.include_stop_str_in_output:
            cut = cut_at_stop(text, stops)
            text = text if cut is None else text[:cut]
        return text

    def _with_texts(self, result: GenerationResult, setup: RequestSetup) -> GenerationResult:
        if self.model.tokenizer is not None:
            result.texts = [[self._text(s, r, setup) for s, r in zip(per, reasons)]
                            for per, reasons in zip(result.sequences, result.finish_reasons)]
        return result

    def _finish(self, request: Request, setup: RequestSetup, interrupted: bool = False) -> GenerationResult:
        result = request.result
        if result is None or interrupted:
            result = _result(request.selector._hypotheses(), strip_prompt=True)
        if interrupted:  # rows still running when Ctrl-C came have no finish reason of their own
            result.finish_reasons = [[r or "interrupted" for r in per] for per in result.finish_reasons]
        self._with_texts(result, setup)
        self.last_stats.new_tokens = sum(len(per[0]) for per in result.sequences)
        self.last_stats.decode_tokens = max((len(per[0]) - 1 for per in result.sequences), default=0)
        generator = request.selector
        self.last_stats.drafted_tokens = int(generator.drafted_tokens.sum())
        self.last_stats.accepted_tokens = int(generator.accepted_tokens.sum())
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
        return self._generate(ids, as_text, single, self._setup(overrides), sequence_ids)

    def _generate(self, ids: list[list[int]], as_text: bool, single: bool, setup: RequestSetup,
                  sequence_ids: Optional[Sequence[int]] = None) -> Union[str, list[str], GenerationResult]:
        engine, request = self._start(ids, setup, sequence_ids)
        clean = False
        try:
            while not request.done():
                self._advance(engine, request)
            clean = True
        except KeyboardInterrupt:
            self._finish(request, setup, interrupted=True)
            raise
        finally:
            self._engines.release(engine, request, clean)
        result = self._finish(request, setup)
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
        setups = [set_up_request(self.model, _as_config(c), None, self.text_options,
                                 assistant_model=self.assistant_model) for c in given]
        results = run_batch(self.model, ids, setups, max_batch=max_batch, progress=progress)
        for result, setup in zip(results, setups):
            self._with_texts(result, setup)
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
        setup = self._setup(overrides)
        config = setup.config
        if as_text and (len(ids) != 1 or config.num_beams > 1 or config.num_return_sequences > 1):
            raise ValueError("text streaming takes one str prompt and one sequence (num_beams=1, "
                             "num_return_sequences=1)")
        return self._stream(ids, as_text, setup, sequence_ids)

    def _stream(self, ids: list[list[int]], as_text: bool, setup: RequestSetup,
                sequence_ids: Optional[Sequence[int]] = None) -> Iterator[Any]:
        engine, request = self._start(ids, setup, sequence_ids)
        stops = setup.config.stop_strings
        trim = as_text and not setup.text.include_stop_str_in_output
        stop_filter = StopStringFilter(stops) if trim and stops else None
        clean = False  # the engine is between steps (at a yield, or the request done)
        try:
            for piece in self._pieces(engine, request, ids, as_text, setup.text):
                clean = True
                if stop_filter is None:
                    yield piece
                elif text := stop_filter.feed(piece):
                    yield text
                clean = False
            clean = True
        except KeyboardInterrupt:
            self._finish(request, setup, interrupted=True)
            raise
        finally:  # a stream closed early cancels its request
            self._engines.release(engine, request, clean)
        if stop_filter is not None and (rest := stop_filter.flush()):
            yield rest
        self._finish(request, setup)

    def _pieces(self, engine: Engine, request: Request, ids: list[list[int]], as_text: bool,
                options: TextOptions) -> Iterator[Any]:
        """Steps the request to its end, yielding each step's new text (or tokens)."""
        generator = request.selector
        skip_special = options.skip_special_tokens
        text = IncrementalText(lambda tokens: self.model.decode(tokens, skip_special))
        read = 0  # generated tokens already in a piece
        seen = [len(p) for p in ids for _ in range(generator.rows // len(ids))]  # per row, tokens yielded
        pending: list[tuple[Any, ...]] = []  # each token's (logprob, top ids, top log-probs) since the last piece
        while True:
            if as_text:
                generated = generator.sequences[0][len(ids[0]):]
                pending += self._token_scores(generator, len(generated) - read - len(pending))
                piece = text.update(generated, final=request.done())
                if piece:
                    yield TextPiece.of(piece, generated[read:], pending)
                    pending, read = [], len(generated)
            elif request.speculation is None:
                yield generator.next_tokens
            else:  # a verified step may bring several tokens per row: one array per position
                yield from self._new_tokens(generator, seen)
            if request.done():
                break
            self._advance(engine, request)

    @staticmethod
    def _token_scores(generator: Any, new: int) -> list[tuple[Any, ...]]:
        """Row 0's last ``new`` tokens' (logprob, top ids, top log-probs): one token comes from
        the last step; a verified step's several (accepted drafts and the correction) from
        the row's hypothesis."""
        if new <= 0:
            return []
        if new == 1:
            logprobs, top_ids, top_lps, *_ = generator._last_step()
            return [(logprobs[0], None if top_ids is None else top_ids[0], None if top_lps is None else top_lps[0])]
        h = generator._hypotheses()[0][0]
        count = len(h["logprobs"])
        return [(h["logprobs"][i], None if h["top_ids"] is None else h["top_ids"][i],
                 None if h["top_logprobs"] is None else h["top_logprobs"][i]) for i in range(count - new, count)]

    @staticmethod
    def _new_tokens(generator: Any, seen: list[int]) -> Iterator[npt.NDArray[np.int64]]:
        """Each row's tokens since the last call, as int64 [rows] arrays position by position
        (a row with fewer new tokens gets the pad token, as a finished row does)."""
        sequences = generator.sequences
        new = [s[k:] for s, k in zip(sequences, seen)]
        pad, eos = generator.config.pad_token_id, generator.config.eos_token_id
        if pad is None:
            pad = (eos[0] if eos else 0) if isinstance(eos, list) else (eos if eos is not None else 0)
        for i in range(max((len(n) for n in new), default=0)):
            yield np.array([int(n[i]) if i < len(n) else pad for n in new], dtype=np.int64)
        for r, s in enumerate(sequences):
            seen[r] = len(s)

    # --- chat -------------------------------------------------------------------------------

    def _chat_prompt(self, messages: Messages, overrides: Mapping[str, Any]) -> tuple[list[list[int]], RequestSetup]:
        special = bool(overrides.get("special_tokens_in_content", False))  # see Model.encode_chat
        overrides = {k: v for k, v in overrides.items() if k != "special_tokens_in_content"}
        ids = [self.model.encode_chat(messages, add_generation_prompt=True, special_tokens_in_content=special)]
        return ids, self._setup(overrides, end_of_turn=True)

    def chat(self, messages: Messages, **overrides: Any) -> str:
        """The model's reply to a conversation (a list of {"role", "content"} dicts, ending
        with the user's turn), special tokens left out; ``last_result`` has the details.
        ``overrides``: config fields and text options for this call. Special-token text in a
        message's content is encoded as plain text (no forged turns) unless
        ``special_tokens_in_content=True`` (see Model.encode_chat)."""
        ids, setup = self._chat_prompt(messages, overrides)
        return cast(str, self._generate(ids, True, True, setup))  # text: chat needs the tokenizer

    def chat_stream(self, messages: Messages, **overrides: Any) -> Iterator[str]:
        """Yields the pieces of the reply ``chat(messages)`` returns, as they are generated.
        Bad messages or settings raise here, before the first piece."""
        ids, setup = self._chat_prompt(messages, overrides)
        if setup.config.num_beams > 1 or setup.config.num_return_sequences > 1:
            raise ValueError("chat_stream generates one sequence (num_beams=1, num_return_sequences=1)")
        return self._stream(ids, True, setup)

    def __repr__(self) -> str:
        return f"Generator({self.model!r}, {self.config!r})"
