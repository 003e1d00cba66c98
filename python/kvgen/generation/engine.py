"""Continuous batching: many generation requests through one built-in model.

One scheduler thread owns the model and a pool of KV-cache slots (``_core._ModelSlots``).
Each request has its own generator (its own config: temperature, penalties, seed, stop
rules, constraint) whose rows are a contiguous range of slots, so its step reads
``logits[first:first + rows]`` in place. Every iteration of the loop:

1. takes new and cancelled requests; a finished or cancelled request gives its slots back;
2. admits waiting requests, first come first served, while their rows fit in free slots;
3. runs one forward pass over every running row's last token plus prompt chunks of
   requests still prefilling (at most PREFILL_CHUNK prompt tokens per pass, so a long
   prompt delays the others by at most one chunk);
4. steps each request whose logits are ready and reports the new tokens.

Prompts are cut into chunks at fixed offsets from their start (0, C, 2C, ...), as
``Generator(model, config).generate`` cuts them, and the model computes each row from its
own tokens and cache only (the quantized kernels keep one accumulator per row), so greedy
and seeded outputs do not depend on what else is in the batch and equal those of a
single ``generate`` call: tests/generation/test_engine.py checks the logits bit for bit.

A request with a constraint (json_schema, regex, grammar or choices) is compiled against
the model's tokenizer when it is submitted (ValueError naming the problem); its step fills
the rows' next masks in the mask worker (kvgen.generation.constraints), which overlaps the next
batched forward pass.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from kvgen import _core
from kvgen._core import GenerationConfig, StepResult
from kvgen.generation.results import GenerationResult, _result
from kvgen.generation.step import StepGenerator

#: Prompt tokens per forward pass at most (one chunk of one prompt, or several short ones):
#: the chunk size of ModelDecodeLoop's prefill, so that a prompt is cut the same way there.
PREFILL_CHUNK = _core._PREFILL_CHUNK


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


class Request:
    """A generation submitted to an Engine: ``wait()`` for its GenerationResult, ``cancel()``
    to stop it (its slots are freed at the next step)."""

    def __init__(self, prompt: Sequence[int], config: GenerationConfig, context: int, *, token_strings=None,
                 tokenizer=None, logprobs: bool = False, on_update: Optional[Callable[[StepUpdate], None]] = None):
        self.prompt = np.asarray(prompt, dtype=np.int64)
        if self.prompt.ndim != 1 or self.prompt.size == 0:
            raise ValueError("a prompt must hold at least one token id")
        # a constraint is compiled here (ValueError when invalid), in the caller's thread
        self.generator = StepGenerator(config, token_strings=token_strings, tokenizer=tokenizer)
        self.generator.append_tokens([self.prompt])  # checks the config and the prompt, in the caller's thread
        # the last token generated is never fed back, so prompt + new tokens fit in the slot
        new = max(self.generator.max_new_tokens(self.prompt.size), 0)
        if self.prompt.size > context or new > context - self.prompt.size:
            raise ValueError(f"context overflow: the prompt has {self.prompt.size} tokens and may generate {new} "
                             f"more, beyond the {context} positions available; shorten the prompt or lower "
                             "max_new_tokens")
        self.rows = self.generator.rows
        self.beams = self.generator.num_beams > 1
        self.logprobs = logprobs
        self.on_update = on_update
        self.first_slot: Optional[int] = None
        self.cached = 0                           # prompt tokens in the first row's cache
        self.next_tokens: Optional[np.ndarray] = None
        self.running = [True] * self.rows
        self.result: Optional[GenerationResult] = None
        self.error: Optional[BaseException] = None
        self.cancelled = False
        self._done = threading.Event()
        self._wake: Callable[[], None] = lambda: None

    @property
    def prefilling(self) -> bool:
        """Whether prompt tokens are still to be fed (the prefill runs in chunks)."""
        return self.cached < self.prompt.size

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


class Engine:
    """Runs requests through ``model`` with continuous batching (see the module docstring).

    ``slots``: rows decoded together at most (a request takes ``num_return_sequences`` or
    ``num_beams`` of them). ``context``: positions per slot (default: the model's); the
    cache is allocated untouched, so only the positions used take memory.
    """

    def __init__(self, model, slots: int = 8, context: Optional[int] = None):
        self.model = model
        self._slots = _core._ModelSlots(model._core, slots, context or model.context_length)
        self._logits = self._slots.logits  # (slots, vocab) view, valid as long as _slots
        self._free = [True] * slots
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()  # new requests, and None to wake the loop
        self._waiting: list[Request] = []
        self._active: list[Request] = []
        self._closed = False
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    @property
    def slots(self) -> int:
        """Rows of the KV cache (the most rows that decode together)."""
        return self._slots.slots

    @property
    def context(self) -> int:
        """Positions each slot holds (prompt + generated tokens)."""
        return self._slots.context

    @property
    def active_rows(self) -> int:
        """Slots in use (read without a lock: a snapshot)."""
        return self.slots - sum(self._free)

    def submit(self, prompt: Sequence[int], config: GenerationConfig, *, logprobs: bool = False,
               on_update: Optional[Callable[[StepUpdate], None]] = None) -> Request:
        """Queues a generation of ``prompt`` (token ids) with ``config`` (its EOS ids already
        set: the engine adds nothing). ``on_update(StepUpdate)`` is called from the
        scheduler thread after each step; it must be quick and must not raise. Bad settings,
        an invalid constraint and a prompt over the context raise ValueError here."""
        strings = self.model.token_strings() if config.stop_strings else None
        request = Request(prompt, config, self.context, token_strings=strings, tokenizer=self.model,
                          logprobs=logprobs, on_update=on_update)
        if request.rows > self.slots:
            raise ValueError(f"the request needs {request.rows} rows (num_return_sequences / num_beams), more than "
                             f"the engine's {self.slots} slots")
        request._wake = lambda: self._inbox.put(None)
        with self._lock:
            if self._closed:
                raise RuntimeError("the engine is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="kvgen-engine", daemon=True)
                self._thread.start()
            self._inbox.put(request)
        return request

    def generate(self, prompts: Sequence[Sequence[int]], configs: Sequence[GenerationConfig],
                 on_done: Optional[Callable[[int], None]] = None) -> list[GenerationResult]:
        """Runs every prompt with its config (all queued at once, ``slots`` rows at a time) and
        returns the results in input order; ``on_done(i)`` as prompt i finishes (from the
        scheduler thread). Ctrl-C cancels them all."""
        finished: queue.SimpleQueue = queue.SimpleQueue()

        def listener(i: int) -> Callable[[StepUpdate], None]:
            return lambda update: finished.put(i) if update.done else None

        requests = [self.submit(p, c, on_update=listener(i)) for i, (p, c) in enumerate(zip(prompts, configs))]
        try:
            for _ in requests:
                while True:  # a timeout, so that Ctrl-C reaches this thread
                    try:
                        i = finished.get(timeout=0.1)
                        break
                    except queue.Empty:
                        if any(r.done() and r.error is not None for r in requests):
                            return [r.wait() for r in requests]  # raises the first error
                if on_done is not None:
                    on_done(i)
            return [r.wait() for r in requests]
        finally:
            for r in requests:
                if not r.done():
                    r.cancel()

    def close(self) -> None:
        """Stops the scheduler thread; requests still queued or running are cancelled."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._inbox.put(None)
        if thread is not None:
            thread.join()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- the scheduler thread ----

    def _loop(self) -> None:
        while True:
            self._take_inbox(block=not self._active and not self._waiting)
            if self._closed:
                for r in self._active + self._waiting:
                    self._finish(r, cancelled=True)
                return
            try:
                self._drop_cancelled()
                self._admit()
                if self._active:
                    self._step()
            except Exception as e:  # a bug of the scheduler fails the requests it holds, not the thread
                self._fail_all(e)

    def _fail_all(self, error: BaseException) -> None:
        held, self._active, self._waiting = self._active + self._waiting, [], []
        self._free = [True] * self.slots
        for r in held:
            if not r.done():
                r.error = error
                r._done.set()

    def _take_inbox(self, block: bool) -> None:
        try:
            item = self._inbox.get(block=block)
            while True:
                if item is not None:
                    self._waiting.append(item)
                item = self._inbox.get_nowait()
        except queue.Empty:
            pass

    def _drop_cancelled(self) -> None:
        for r in [r for r in self._waiting if r.cancelled]:
            self._waiting.remove(r)
            self._finish(r, cancelled=True)
        for r in [r for r in self._active if r.cancelled]:
            self._retire(r, cancelled=True)

    def _admit(self) -> None:
        while self._waiting:
            first = self._find_free(self._waiting[0].rows)
            if first is None:
                return  # first come, first served: a large request is not overtaken
            r = self._waiting.pop(0)
            for s in range(first, first + r.rows):
                self._free[s] = False
                self._slots.reset(s)
            r.first_slot = first
            self._active.append(r)

    def _find_free(self, rows: int) -> Optional[int]:
        run = 0
        for s, free in enumerate(self._free):
            run = run + 1 if free else 0
            if run == rows:
                return s - rows + 1
        return None

    def _step(self) -> None:
        chunks, ready = [], []
        budget = PREFILL_CHUNK
        for r in self._active:
            first = r.first_slot
            assert first is not None
            if r.prefilling:
                piece = r.prompt[r.cached:r.cached + PREFILL_CHUNK]  # offsets fixed by the prompt alone
                if piece.size > budget:
                    continue
                budget -= piece.size
                chunks.append((first, piece))
                r.cached += piece.size
                if not r.prefilling:
                    ready.append(r)
                continue
            assert r.next_tokens is not None
            for k in range(r.rows):
                if r.running[k]:
                    chunks.append((first + k, r.next_tokens[k:k + 1]))
            ready.append(r)
        try:
            self._slots.forward(chunks)
        except Exception as e:  # the model checks every chunk first, so nothing was computed
            for r in ready:
                self._retire(r, error=e)
            return
        for r in ready:
            self._advance(r)

    def _advance(self, r: Request) -> None:
        first = r.first_slot
        assert first is not None
        if r.next_tokens is None:  # prefill done: the other rows start from the first row's cache
            for k in range(1, r.rows):
                self._slots.copy_row(first, first + k)
        was_running = r.running
        try:
            step = r.generator.step(self._logits[first:first + r.rows])
            if r.beams and step.beam_indices is not None and not step.done:
                self._slots.reorder(first, step.beam_indices.tolist())
        except Exception as e:
            self._retire(r, error=e)
            return
        r.next_tokens = step.tokens
        reasons = r.generator.finish_reasons
        r.running = [not step.done] * r.rows if r.beams else [reason is None for reason in reasons]
        tokens = [int(t) if was else None for t, was in zip(step.tokens, was_running)]
        logprobs, top = self._step_logprobs(r, step, tokens)
        self._notify(r, StepUpdate(tokens, logprobs, reasons, step.done, top))
        if step.done:
            self._retire(r)

    @staticmethod
    def _step_logprobs(r: Request, step: StepResult, tokens: list[Optional[int]]) -> tuple[
            Optional[list[Optional[float]]], Optional[list[Optional[list[tuple[int, float]]]]]]:
        """Each row's new token's log-probability and its top-n alternatives (when the config
        asks for them), as the result will hold them; (None, None) unless asked for, and
        under beam search (whose rows are hypotheses that the step reorders)."""
        if not r.logprobs or r.beams:
            return None, None
        logprobs = [float(lp) if t is not None else None for lp, t in zip(step.logprobs.tolist(), tokens)]
        if step.top_token_ids is None or step.top_logprobs is None:
            return logprobs, None
        top = [list(zip(ids, lps)) if t is not None else None
               for ids, lps, t in zip(step.top_token_ids.tolist(), step.top_logprobs.tolist(), tokens)]
        return logprobs, top

    def _notify(self, r: Request, update: StepUpdate) -> None:
        if r.on_update is None:
            return
        try:
            r.on_update(update)
        except Exception:  # a listener that fails (a closed connection) stops its request only
            r.cancelled = True

    def _retire(self, r: Request, *, cancelled: bool = False, error: Optional[BaseException] = None) -> None:
        self._active.remove(r)
        first = r.first_slot
        assert first is not None
        for s in range(first, first + r.rows):
            self._free[s] = True
        self._finish(r, cancelled=cancelled, error=error)

    def _finish(self, r: Request, *, cancelled: bool = False, error: Optional[BaseException] = None) -> None:
        if error is None:
            r.result = _result(r.generator._hypotheses(), strip_prompt=True)
            if cancelled:
                r.result.finish_reasons = [[f or "cancelled" for f in per] for per in r.result.finish_reasons]
        r.error = error
        if cancelled and r.on_update is not None and error is None:
            self._notify(r, StepUpdate([None] * r.rows, None, ["cancelled"] * r.rows, True))
        r._done.set()


def run_batch(model, prompts: Sequence[Sequence[int]], configs: Sequence[GenerationConfig], *, max_batch: int = 8,
              progress: bool = False) -> list[GenerationResult]:
    """Generates for every prompt with its config through an Engine of ``max_batch`` slots,
    sized to the longest prompt plus its new tokens; results in input order."""
    if max_batch < 1:
        raise ValueError(f"max_batch must be >= 1, got {max_batch}")
    if not prompts:
        return []
    need = max(len(p) + max(_core._Generator(c).max_new_tokens(len(p)), 0) for p, c in zip(prompts, configs))
    context = max(1, min(need, model.context_length))  # longer requests fail in submit, naming the overflow
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            raise ImportError("progress=True shows a tqdm bar: pip install tqdm") from None
        bar = tqdm(total=len(prompts), unit="prompt")
    try:
        with Engine(model, slots=max_batch, context=context) as engine:
            return engine.generate(prompts, configs, on_done=(lambda _: bar.update(1)) if bar else None)
    finally:
        if bar is not None:
            bar.close()
