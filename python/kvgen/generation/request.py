"""An engine request (Request: one or more prompts with their step generator, and where they
are in the engine) and what each of its steps reports (StepUpdate)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from kvgen._embedding import Pooler
from kvgen.generation.prompt_scores import PromptScorer, TokenScore
from kvgen.generation.results import GenerationResult
from kvgen.generation.speculation import DEFAULT_ASSISTANT_TOKENS, Speculation, wants_speculation
from kvgen.generation.step import TokenSelector


@dataclass
class StepUpdate:
    """What one step of a request produced, per row of the request."""

    tokens: list[Optional[int]]             # the token each row got this step; None for rows done before it
    logprobs: Optional[list[Optional[float]]]  # its log-probability (processed distribution), when asked for
    finish_reasons: list[Optional[str]]     # "eos", "stop", "length", "cancelled", or None while the row runs
    done: bool                              # every row has finished
    # with config.top_logprobs = n and logprobs asked for: per row, its n most likely
    # (token id, log-probability) pairs, most likely first; None for rows done before the step
    top_logprobs: Optional[list[Optional[list[tuple[int, float]]]]] = None
    # the error the request failed with (its last update: done, no tokens); None otherwise
    error: Optional[BaseException] = None


class Request:
    """A generation run by an Engine: one or more prompts (token ids) with one step generator
    (``setup.token_selector``: a fresh one per request). ``wait()`` for its GenerationResult,
    ``cancel()`` to stop it (its slots are freed at the next step). ``sequence_ids`` key the
    prompts' random draws (see kvgen.Generator).

    ``score_prompt=n``: the prompts are scored as they are prefilled (``wait_scores()``: per
    prompt, each token's log-probability, rank and ``n`` most likely tokens; see
    kvgen.generation.prompt_scores); ``generate=False``: the request ends there, generating
    nothing (its one update: done, finish reason "length").

    An embedding request (``Request.embedding``) has no step generator: its prompts' hidden
    states are pooled as they are prefilled (``wait_embeddings()``), and it ends there."""

    def __init__(self, prompts: Sequence[Sequence[int]], generator: TokenSelector, context: int, *,
                 sequence_ids: Optional[Sequence[int]] = None, logprobs: bool = False,
                 on_update: Optional[Callable[[StepUpdate], None]] = None, assistant_model: Any = None,
                 score_prompt: Optional[int] = None, generate: bool = True):
        self._start(prompts, on_update)
        self.selector = generator
        self._check_context([len(p) for p in prompts], context)  # before the generator's limits, which name none
        # checks the config and the prompts, in the caller's thread
        self.selector.append_tokens(prompts, sequence_ids=sequence_ids)
        self.prompts = [np.asarray(p, dtype=np.int64) for p in prompts]
        self.rows = self.selector.rows
        self.rows_per_prompt = self.rows // len(self.prompts)
        self.beams = self.selector.num_beams > 1
        # the last token generated is never fed back, so prompt + new tokens fit in the slot
        self.positions = max(p.size + max(self.selector.max_new_tokens(p.size), 0) for p in self.prompts)
        self.logprobs = logprobs
        self.running = [True] * self.rows
        # speculative decoding: the draft model (built by the engine), this request's state
        self.assistant_model = assistant_model
        self.speculates = wants_speculation(generator.config, assistant_model)
        self.speculation: Optional[Speculation] = None
        #: the longest draft this request may feed
        self.speculation_tokens = (generator.config.prompt_lookup_num_tokens or DEFAULT_ASSISTANT_TOKENS
                                   if self.speculates else 0)
        self.verifying: list[int] = []  # draft lengths fed with this step's chunks ([] for a plain step)
        self.drafts: list[list[int]] = []  # the drafts fed with this step's chunks, per row
        # prompt scoring: the alternatives asked for (None: not scored), a scorer per prompt
        if score_prompt is not None and score_prompt < 0:
            raise ValueError(f"score_prompt must be >= 0 (the alternatives per position), got {score_prompt}")
        self.score_top = score_prompt
        self.scorers = [PromptScorer(p, score_prompt) for p in self.prompts] if score_prompt is not None else []
        self.generates = generate
        if not generate and score_prompt is None:
            raise ValueError("a request that generates nothing scores its prompt: pass score_prompt")

    def _start(self, prompts: Sequence[Sequence[int]], on_update: Optional[Callable[[StepUpdate], None]]) -> None:
        """What every request holds besides its prompts: where the engine is with them."""
        if not prompts or min(len(p) for p in prompts) == 0:
            raise ValueError("a prompt must hold at least one token id")
        self.on_update = on_update
        self.first_slot: Optional[int] = None
        self.fed = 0                              # prompt positions fed (the same offset for every prompt)
        self.longest = max(len(p) for p in prompts)
        self.next_tokens: Optional[np.ndarray] = None
        self.result: Optional[GenerationResult] = None
        self.error: Optional[BaseException] = None
        self.cancelled = False
        self._done = threading.Event()
        self._scored = threading.Event()
        self._wake: Callable[[], None] = lambda: None
        self.poolers: list[Pooler] = []           # an embedding request's, one per prompt

    @classmethod
    def embedding(cls, prompts: Sequence[Sequence[int]], pooling: str, hidden_size: int, context: int, *,
                  on_update: Optional[Callable[[StepUpdate], None]] = None) -> "Request":
        """A request that pools its prompts' final hidden states (kvgen._embedding: ``pooling``
        "last", "mean" or "cls"; ``hidden_size``: the model's) as they are prefilled, then ends
        (its one update: done, finish reason "length"); no step generator, one row per prompt.
        ValueError when a prompt is longer than ``context``."""
        self = cls.__new__(cls)
        self._start(prompts, on_update)
        self.prompts = [np.asarray(p, dtype=np.int64) for p in prompts]
        self._check_context_of_embeddings(context)
        self.selector = None  # type: ignore[assignment]
        self.rows, self.rows_per_prompt, self.beams = len(self.prompts), 1, False
        self.positions = self.longest
        self.logprobs = False
        self.running = [True] * self.rows
        self.assistant_model, self.speculates, self.speculation, self.speculation_tokens = None, False, None, 0
        self.verifying, self.drafts = [], []
        self.score_top, self.scorers = None, []
        self.generates = False
        self.poolers = [Pooler(pooling, p.size, hidden_size) for p in self.prompts]
        return self

    def check_context(self, context: int) -> None:
        """ValueError when a prompt plus its new tokens does not fit ``context`` positions."""
        if self.selector is None:  # an embedding request: its prompts alone
            self._check_context_of_embeddings(context)
            return
        self._check_context([p.size for p in self.prompts], context)

    def _check_context_of_embeddings(self, context: int) -> None:
        longest = max(p.size for p in self.prompts)
        if longest > context:
            raise ValueError(f"context overflow: the text has {longest} tokens, beyond the {context} positions "
                             "available")

    def _check_context(self, lengths: Sequence[int], context: int) -> None:
        for length in lengths:
            new = max(self.selector.max_new_tokens(length), 0)
            if length > context or new > context - length:
                raise ValueError(f"context overflow: the prompt has {length} tokens and may generate {new} more, "
                                 f"beyond the {context} positions available; shorten the prompt or lower "
                                 "max_new_tokens")

    @property
    def prefilling(self) -> bool:
        """Whether prompt tokens are still to be fed (the prefill runs in chunks)."""
        return self.fed < self.longest

    @property
    def prompt_scores(self) -> Optional[list[list[TokenScore]]]:
        """Per prompt, its tokens' scores once every prompt is scored; None before (or when not asked for)."""
        if not self.scorers or not all(s.complete for s in self.scorers):
            return None
        return [s.scores for s in self.scorers]

    def wait_scores(self, timeout: Optional[float] = None) -> Optional[list[list[TokenScore]]]:
        """Blocks until the prompts are scored (their prefill), or the request ends without
        (cancelled: None; the error it failed with is raised)."""
        if not self._scored.wait(timeout):
            raise TimeoutError("the prompt is still being scored")
        if self.error is not None:
            raise self.error
        return self.prompt_scores

    def add_scores(self, prompt: int, start: int, logits: np.ndarray) -> None:
        """(The engine) the logits of every position of a chunk of prompt ``prompt`` from ``start``."""
        self.scorers[prompt].add(start, logits)
        if all(s.complete for s in self.scorers):
            self._scored.set()

    def add_hidden(self, prompt: int, start: int, hidden: np.ndarray) -> None:
        """(The engine) the final hidden states of a chunk of prompt ``prompt`` from ``start``."""
        self.poolers[prompt].add(start, hidden)

    def wait_embeddings(self, timeout: Optional[float] = None) -> Optional[np.ndarray]:
        """Blocks until the request is done; an embedding request's pooled vectors (float32
        [prompts, hidden], not normalised); None when it was cancelled first (the error it failed
        with is raised)."""
        if not self._done.wait(timeout):
            raise TimeoutError("the request is still running")
        if self.error is not None:
            raise self.error
        return self.embeddings

    @property
    def embeddings(self) -> Optional[np.ndarray]:
        """An embedding request's pooled vectors (float32 [prompts, hidden], not normalised) once
        every prompt is pooled (before the request is marked done); None before."""
        if not self.poolers or not all(p.complete for p in self.poolers):
            return None
        return np.stack([p.vector() for p in self.poolers])

    def mark_done(self) -> None:
        """(The engine) the request has ended: whoever waits for it wakes."""
        self._scored.set()
        self._done.set()

    def cancel(self) -> None:
        """Stops the request; its slots are freed before the next step. Safe from any thread."""
        self.cancelled = True
        self._wake()

    def done(self) -> bool:
        """True once the request has finished, failed or been cancelled."""
        return self._done.is_set()

    def wait(self, timeout: Optional[float] = None) -> GenerationResult:
        """Blocks until the request is done; its result (the error it failed with is raised)."""
        if not self._done.wait(timeout):
            raise TimeoutError("the request is still running")
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


