"""The engine: every generation with a built-in model runs here, continuously batched.

The engine owns a pool of KV-cache slots (``_core._ModelSlots``). ``kvgen serve`` and
``generate_batch`` submit requests to its scheduler thread; ``generate``, ``stream`` and
``chat`` add one request and call ``step()`` in their own thread (no hand-off per token),
so the same loop drives them all. Each request has its own step generator (its own config:
temperature, penalties, seed, stop rules, constraint) whose rows are a contiguous range of
slots, so its step reads ``logits[first:first + rows]`` in place. Every iteration of the loop:

1. takes new and cancelled requests; a finished or cancelled request gives its slots back;
2. admits waiting requests, first come first served, while their rows fit in free slots;
3. runs one forward pass over every running row's last token plus prompt chunks of
   requests still prefilling, first come first served: at most PREFILL_BUDGET prompt tokens
   per pass, and up to SOLO_PREFILL_CHUNKS chunks of a one-prompt request (a request of
   several prompts feeds one chunk of each). Requests that arrive together prefill in a few
   large passes, so a running row waits a few times rather than once per chunk of every
   newcomer, and the first of them get their first token first;
4. steps each request whose logits are ready and reports the new tokens.

Prefix cache (``prefix_cache=True``, as llama.cpp's slots reuse their prompt): a free slot
keeps the prompt chunks it last computed, and a new one-row request whose prompt starts with
the same tokens goes to the free slot that shares the longest prefix with it, keeping those
positions (``truncate``) and prefilling only the rest; otherwise it takes the free slot used
least recently. Only positions of an earlier prompt's whole chunks are reused, never generated
tokens, and the rest of a chunk whose first positions are reused is computed as the fresh
prefill's whole chunk (``in_blocks``: the chunk's attention products with the cached positions'
rows padded, since their rounding depends on their row count), so every position holds what a
fresh prefill computes: outputs are bit-identical. A chunk is reused in part only where the
new prompt holds it whole (a shorter last piece has products of another shape), and only
on models without sliding windows or LongRoPE; otherwise whole chunks only.

Prompts are cut into chunks at fixed offsets from their start (0, C, 2C, ...), here only,
and the model computes each row from its own tokens and cache only (the quantized kernels
keep one accumulator per row), so greedy and seeded outputs do not depend on what else is
in the batch: tests/generation/test_engine.py checks the logits bit for bit.

A model with LongRoPE (Phi-3) computes a row with its long rotary factors once the row's
sequence is longer than the original context, from the first position on, as transformers'
Phi-3 does: a prompt longer than that is fed in one piece, a row whose generation reaches
it is computed again from its first token, and such rows run in a forward pass of their own
(the core picks the factors per pass, from its largest position).

A request that speculates (GenerationConfig.prompt_lookup_num_tokens, or a draft model:
kvgen.generation.speculation) feeds each running row its next token and the row's drafts as
one chunk; the slot cache returns the logits of all their positions, the request's step
generator verifies them (``verify``: the same tokens as plain decoding, greedy or sampled)
and the slot is rolled back by the rejected drafts without copying.

A request with a constraint (json_schema, regex, grammar or choices) is compiled against
the model's tokenizer when it is submitted (ValueError naming the problem); its step fills
the rows' next masks in the mask worker (kvgen.generation.constraints), which overlaps the next
batched forward pass.
"""

from __future__ import annotations

import queue
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from kvgen import _core
from kvgen._core import GenerationConfig, StepResult
from kvgen.families.capabilities import Capabilities
from kvgen.generation.drafters import CostModel, DraftModel
from kvgen.generation.request_setup import RequestSetup
from kvgen.generation.results import GenerationResult, _result
from kvgen.generation.speculation import DEFAULT_ASSISTANT_TOKENS, MAX_DRAFT_TOKENS, Speculation, wants_speculation
from kvgen.generation.step import StepGenerator

#: Prompts are fed in chunks of this many tokens from their start (a pass carries whole chunks,
#: a short last piece, or the rest of a chunk after a cached prefix).
PREFILL_CHUNK = _core._PREFILL_CHUNK
# A one-prompt request feeds up to this many whole chunks per pass (room in PREFILL_BUDGET): fewer passes
# (each streams the weights and runs its LM head) and larger products and attention blocks.
# A 512-token prefill takes 20% less CPU time than in 32-token passes (SmolLM2 Q8_0, 1 thread).
SOLO_PREFILL_CHUNKS = 4
# Prompt tokens per forward pass at most, beside the running rows' tokens (a request of several
# prompts may go over it in a pass of its own). One pass of 8 chunks costs about what 8 passes of
# one chunk do (the products are bound by their arithmetic at 32 rows already), but the running
# rows wait once, not 8 times: a burst of 8 requests no longer sets the inter-token p99.
PREFILL_BUDGET = 8 * PREFILL_CHUNK
# Chunks of at most this many tokens (decode steps, verification, a short last piece of a prompt)
# are attended token by token, longer ones with matrix products in query blocks that end at
# multiples of PREFILL_CHUNK.
TOKEN_BY_TOKEN_ATTENTION = _core._TOKEN_BY_TOKEN_ATTENTION


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
    (``setup.step_generator``: a fresh one per request). ``wait()`` for its GenerationResult,
    ``cancel()`` to stop it (its slots are freed at the next step). ``sequence_ids`` key the
    prompts' random draws (see kvgen.Generator)."""

    def __init__(self, prompts: Sequence[Sequence[int]], generator: StepGenerator, context: int, *,
                 sequence_ids: Optional[Sequence[int]] = None, logprobs: bool = False,
                 on_update: Optional[Callable[[StepUpdate], None]] = None, assistant_model: Any = None):
        lengths = [len(p) for p in prompts]
        if not lengths or min(lengths) == 0:
            raise ValueError("a prompt must hold at least one token id")
        self.generator = generator
        self._check_context(lengths, context)  # before the generator's own limits, which name no context
        # checks the config and the prompts, in the caller's thread
        self.generator.append_tokens(prompts, sequence_ids=sequence_ids)
        self.prompts = [np.asarray(p, dtype=np.int64) for p in prompts]
        self.rows = self.generator.rows
        self.rows_per_prompt = self.rows // len(self.prompts)
        self.beams = self.generator.num_beams > 1
        # the last token generated is never fed back, so prompt + new tokens fit in the slot
        self.positions = max(p.size + max(self.generator.max_new_tokens(p.size), 0) for p in self.prompts)
        self.logprobs = logprobs
        self.on_update = on_update
        self.first_slot: Optional[int] = None
        self.fed = 0                              # prompt positions fed (the same offset for every prompt)
        self.longest = max(p.size for p in self.prompts)
        self.next_tokens: Optional[np.ndarray] = None
        self.running = [True] * self.rows
        self.result: Optional[GenerationResult] = None
        self.error: Optional[BaseException] = None
        self.cancelled = False
        self._done = threading.Event()
        self._wake: Callable[[], None] = lambda: None
        # speculative decoding: the draft model (built by the engine), this request's state
        self.assistant_model = assistant_model
        self.speculates = wants_speculation(generator.config, assistant_model)
        self.speculation: Optional[Speculation] = None
        #: the longest draft this request may feed
        self.speculation_tokens = (generator.config.prompt_lookup_num_tokens or DEFAULT_ASSISTANT_TOKENS
                                   if self.speculates else 0)
        self.verifying: list[int] = []  # draft lengths fed with this step's chunks ([] for a plain step)
        self.drafts: list[list[int]] = []  # the drafts fed with this step's chunks, per row

    def check_context(self, context: int) -> None:
        """ValueError when a prompt plus its new tokens does not fit ``context`` positions."""
        self._check_context([p.size for p in self.prompts], context)

    def _check_context(self, lengths: Sequence[int], context: int) -> None:
        for length in lengths:
            new = max(self.generator.max_new_tokens(length), 0)
            if length > context or new > context - length:
                raise ValueError(f"context overflow: the prompt has {length} tokens and may generate {new} more, "
                                 f"beyond the {context} positions available; shorten the prompt or lower "
                                 "max_new_tokens")

    @property
    def prefilling(self) -> bool:
        """Whether prompt tokens are still to be fed (the prefill runs in chunks)."""
        return self.fed < self.longest

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


# Per model, what a draft token costs in a forward pass, learnt over its engines (a
# generate() call makes an engine of its own).
_COST_MODELS: "weakref.WeakKeyDictionary[Any, CostModel]" = weakref.WeakKeyDictionary()


def _cost_model(model: Any) -> CostModel:
    try:
        return _COST_MODELS.setdefault(model, CostModel())
    except TypeError:  # an object without weak references: learnt per engine
        return CostModel()


class Engine:
    """Runs requests through ``model`` with continuous batching (see the module docstring).

    ``slots``: rows decoded together at most (a request takes ``num_return_sequences`` or
    ``num_beams`` of them per prompt). ``context``: positions per slot (default: the model's);
    the cache is allocated untouched, so only the positions used take memory.

    Two ways to drive it, never both: ``submit`` starts the scheduler thread, which steps
    while requests run; ``add`` queues a request and ``step()`` runs one iteration of the same
    loop in the caller's thread.
    """

    def __init__(self, model, slots: int = 8, context: Optional[int] = None, *, prefix_cache: bool = False,
                 max_draft_tokens: int = MAX_DRAFT_TOKENS):
        self.model = model
        self.prefix_cache = prefix_cache
        # what the model allows (kvgen.families.capabilities): a prefix ending inside a chunk,
        # rows computed again past a position, speculation
        self.capabilities: Capabilities = model.capabilities
        # per slot: the prompt whose whole chunks it holds from position 0 and how many of its
        # positions are valid (None: nothing reusable), and when it was last taken
        self._slot_prompts: list[Optional[tuple[np.ndarray, int]]] = [None] * slots
        self._slot_used = [0] * slots
        self._admitted = 0
        self.prefix_cache_queries = 0  # prompt tokens of the requests admitted (one-row ones, with the cache on)
        self.prefix_cache_hits = 0     # of those, the tokens found in a slot
        context = context or model.context_length
        self._slots = _core._ModelSlots(model._core, slots, context,
                                        verify_positions=min(context, max(max_draft_tokens, 0) + 1))
        self._logits = self._slots.logits  # (slots, vocab) view, valid as long as _slots
        self._cost = _cost_model(model)  # what a draft token costs in a forward pass (adaptive draft length)
        self._drafters: dict[int, DraftModel] = {}  # id(draft model) -> its slots beside these
        self._free = [True] * slots
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()  # new requests, and None to wake the loop
        self._waiting: list[Request] = []
        self._active: list[Request] = []
        self._closed = False
        self._thread: Optional[threading.Thread] = None
        self._stepped = False  # stepped by its caller (step()): no thread may start
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
    def closed(self) -> bool:
        """Whether close() was called (submit then raises RuntimeError)."""
        return self._closed

    @property
    def kv_cache_bytes(self) -> int:
        """Bytes the KV cache spans."""
        return self._slots.kv_cache_bytes

    @property
    def active_rows(self) -> int:
        """Slots in use (read without a lock: a snapshot)."""
        return self.slots - sum(self._free)

    def submit(self, prompt: Sequence[int], setup: Union[RequestSetup, GenerationConfig], *, logprobs: bool = False,
               on_update: Optional[Callable[[StepUpdate], None]] = None) -> Request:
        """Queues a generation of ``prompt`` (token ids) with ``setup`` (kvgen.generation.request_setup;
        a bare GenerationConfig is taken as it is: its EOS ids already set, the engine adds
        nothing) and runs it in the scheduler thread. ``on_update(StepUpdate)`` is called from
        the scheduler thread after each step; it must be quick and must not raise. Bad
        settings, an invalid constraint and a prompt over the context raise ValueError here."""
        if not isinstance(setup, RequestSetup):
            setup = RequestSetup(setup)
        request = Request([prompt], setup.step_generator(self.model), self.context, logprobs=logprobs,
                          on_update=on_update, assistant_model=setup.assistant_model)
        request._wake = lambda: self._inbox.put(None)
        with self._lock:
            if self._closed:
                raise RuntimeError("the engine is closed")
            if self._stepped:
                raise RuntimeError("this engine is stepped by its caller (add / step): it runs no thread")
            self.add(request)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="kvgen-engine", daemon=True)
                self._thread.start()
        return request

    def add(self, request: Request) -> Request:
        """Queues ``request`` for the next step (ValueError when it does not fit the slots or
        their context); with no scheduler thread, the caller runs ``step()``."""
        request.check_context(self.context)
        if request.speculates:
            self.capabilities.check_speculation("speculative decoding (prompt_lookup_num_tokens, assistant_model)")
        if request.rows > self.slots:
            raise ValueError(f"the request needs {request.rows} rows (num_return_sequences / num_beams per prompt), "
                             f"more than the engine's {self.slots} slots")
        self._inbox.put(request)
        return request

    def step(self) -> None:
        """One iteration of the scheduler loop in the caller's thread: takes queued and
        cancelled requests, admits what fits, runs one forward pass and steps the requests
        whose logits are ready. For an engine without a scheduler thread (see ``add``)."""
        if self._thread is not None:
            raise RuntimeError("the engine's scheduler thread steps it: step() is for an engine that runs no thread")
        self._stepped = True
        if not self._inbox.empty():
            self._take_inbox(block=False)
        self._drop_cancelled()
        self._admit()
        if self._active:
            self._step()

    def generate(self, prompts: Sequence[Sequence[int]], setups: Sequence[Union[RequestSetup, GenerationConfig]],
                 on_done: Optional[Callable[[int], None]] = None) -> list[GenerationResult]:
        """Runs every prompt with its set-up (see ``submit``), all queued at once, ``slots`` rows
        at a time, and returns the results in input order; ``on_done(i)`` as prompt i finishes (from the
        scheduler thread). Ctrl-C cancels them all."""
        finished: queue.SimpleQueue = queue.SimpleQueue()

        def listener(i: int) -> Callable[[StepUpdate], None]:
            return lambda update: finished.put(i) if update.done else None

        requests = [self.submit(p, c, on_update=listener(i)) for i, (p, c) in enumerate(zip(prompts, setups))]
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
                self._finish(r, error=error)

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
            reuse = 0
            if self.prefix_cache and r.rows == 1:
                first, reuse = self._prefix_slot(r.prompts[0])
                try:
                    self._slots.truncate(first, reuse)
                except ValueError:  # a sliding-window ring that wrapped: nothing to keep
                    self.prefix_cache_hits -= reuse
                    reuse = 0
            self._admitted += 1
            for s in range(first, first + r.rows):
                self._free[s] = False
                self._slot_used[s] = self._admitted
                self._slot_prompts[s] = None
                if not reuse:
                    self._slots.reset(s)
            r.fed = reuse
            r.first_slot = first
            if r.speculates:
                self._start_speculation(r)
            self._active.append(r)

    def _prefix_slot(self, prompt: np.ndarray) -> tuple[int, int]:
        """(free slot, positions to keep) for a one-row request: the slot holding the longest
        prefix of ``prompt`` that may be kept (at least one token is left to feed; see the
        module docstring), else the free slot used least recently (0 kept)."""
        best, keep = None, 0
        for s, free in enumerate(self._free):
            held = self._slot_prompts[s]
            if not free or held is None or prompt.size < 2:
                continue
            cached, valid = held
            n = min(prompt.size - 1, valid)
            differ = np.flatnonzero(cached[:n] != prompt[:n])
            common = int(differ[0]) if differ.size else n
            whole = common // PREFILL_CHUNK * PREFILL_CHUNK
            if not (self.capabilities.partial_prefix_reuse and whole + PREFILL_CHUNK <= min(valid, prompt.size)):
                common = whole  # the chunk is kept whole or not at all
            if common > keep:
                best, keep = s, common
        self.prefix_cache_queries += prompt.size
        self.prefix_cache_hits += keep
        if best is None:
            best = min((s for s, free in enumerate(self._free) if free), key=self._slot_used.__getitem__)
        return best, keep

    def _remember(self, r: Request) -> None:
        """After a one-row request: its slot holds its prompt's whole chunks (those fed)."""
        if self.prefix_cache and r.rows == 1 and r.first_slot is not None and r.error is None:
            prompt = r.prompts[0]
            valid = min(r.fed, prompt.size) // PREFILL_CHUNK * PREFILL_CHUNK
            if valid:
                self._slot_prompts[r.first_slot] = (prompt, valid)

    def _find_free(self, rows: int) -> Optional[int]:
        run = 0
        for s, free in enumerate(self._free):
            run = run + 1 if free else 0
            if run == rows:
                return s - rows + 1
        return None

    def _step(self) -> None:
        chunks, ready = [], []
        long_chunks: list = []  # LongRoPE rows past the original context: a pass of their own
        switch = self.capabilities.recompute_past
        verify: list[int] = []  # slots whose chunks return the logits of every position
        in_blocks: list[int] = []  # slots fed the rest of a chunk whose first positions are cached
        budget = PREFILL_BUDGET
        decode_rows = extra = 0
        self._draft_seconds = 0.0
        self._pass_cost = self._cost
        for r in self._active:
            first = r.first_slot
            assert first is not None
            if r.prefilling and switch and r.longest > switch:
                # a prompt past LongRoPE's switch is computed with the long factors throughout: in one piece
                if budget < PREFILL_BUDGET:
                    continue  # the pass already carries other prompt tokens
                budget = 0
                for i, p in enumerate(r.prompts):
                    (long_chunks if p.size > switch else chunks).append((first + i * r.rows_per_prompt, p))
                r.fed = r.longest
                ready.append(r)
                continue
            if r.prefilling:
                # the next chunk of every prompt of the request, at offsets fixed by the prompts alone
                # up to the next chunk boundary: a whole chunk, or the rest of one after a cached prefix
                # (one-row requests; in_blocks), then more whole chunks where the pass has room
                rest = r.fed % PREFILL_CHUNK > 0
                take = PREFILL_CHUNK - r.fed % PREFILL_CHUNK
                if len(r.prompts) == 1:
                    take += PREFILL_CHUNK * (max(1, min(SOLO_PREFILL_CHUNKS, budget // PREFILL_CHUNK)) - 1)
                    # a last piece short enough to be attended token by token gets a pass of its own, as
                    # it does one chunk per pass: the prompt's logits do not depend on the pass sizes
                    left = r.longest - r.fed
                    tail = r.longest % PREFILL_CHUNK
                    if left <= take and left > tail and 0 < tail <= TOKEN_BY_TOKEN_ATTENTION:
                        take = left - tail
                pieces = [(first + i * r.rows_per_prompt, p[r.fed:r.fed + take])
                          for i, p in enumerate(r.prompts) if p.size > r.fed]
                size = sum(piece.size for _, piece in pieces)
                if size > budget and budget < PREFILL_BUDGET:
                    continue  # the pass already carries other prompt tokens
                budget -= size
                chunks += pieces
                if rest:
                    in_blocks.append(first)
                r.fed += take
                if not r.prefilling:
                    ready.append(r)
                continue
            assert r.next_tokens is not None
            sequences = None
            drafts = self._drafts(r) if r.speculation is not None else None
            r.verifying = []
            if drafts is not None:
                r.drafts, r.verifying = drafts, [len(d) for d in drafts]
            for k in range(r.rows):
                if not r.running[k]:
                    continue
                slot = first + k
                cached = self._slots.length(slot) if switch else 0
                if switch and cached == switch:
                    # the row crosses LongRoPE's switch: computed again, with the long factors (transformers'
                    # Phi-3 drops its cache here); its cached positions had the short ones
                    sequences = r.generator.sequences if sequences is None else sequences
                    if sequences[k].size != cached + 1:
                        raise RuntimeError(f"slot {slot} caches {cached} positions for {sequences[k].size} tokens")
                    self._slots.reset(slot)
                    long_chunks.append((slot, sequences[k]))
                elif drafts is not None:
                    chunks.append((slot, np.array([int(r.next_tokens[k]), *drafts[k]], dtype=np.int64)))
                    verify.append(slot)
                    extra += len(drafts[k])
                else:
                    (long_chunks if switch and cached > switch else chunks).append((slot, r.next_tokens[k:k + 1]))
            decode_rows += sum(r.running)
            ready.append(r)
        try:
            start = time.perf_counter()
            if chunks or not long_chunks:
                self._slots.forward(chunks, verify, in_blocks)
            if long_chunks:
                self._slots.forward(long_chunks)
            if budget == PREFILL_BUDGET and not long_chunks:  # a decode-only pass times what draft tokens cost
                self._pass_cost.observe(time.perf_counter() - start + self._draft_seconds, decode_rows, extra)
        except Exception as e:  # the model checks every chunk first, so nothing was computed
            for r in ready:
                self._retire(r, error=e)
            return
        for r in ready:
            self._advance(r)

    def _advance(self, r: Request) -> None:
        first = r.first_slot
        assert first is not None
        if r.next_tokens is None:  # prefill done: the other rows of a prompt start from its first row's cache
            for b in range(len(r.prompts)):
                for k in range(1, r.rows_per_prompt):
                    self._slots.copy_row(first + b * r.rows_per_prompt, first + b * r.rows_per_prompt + k)
        if r.verifying:
            self._advance_verified(r)
            return
        was_running = r.running
        try:
            step = r.generator.step(self._logits[first:first + r.rows])
            if r.beams and step.beam_indices is not None and not step.done:
                self._slots.reorder(first, step.beam_indices.tolist())
        except Exception as e:
            self._retire(r, error=e)
            return
        r.next_tokens = step.tokens
        if r.speculation is not None:
            r.speculation.after_step(step.tokens, was_running)
        if r.beams:
            r.running = [not step.done] * r.rows
            reasons = [None] * r.rows if not step.done else r.generator.finish_reasons
        else:
            reasons = r.generator.finish_reasons
            r.running = [reason is None for reason in reasons]
        if r.on_update is not None:
            tokens = [int(t) if was else None for t, was in zip(step.tokens, was_running)]
            logprobs, top = self._step_logprobs(r, step, tokens)
            self._notify(r, StepUpdate(tokens, logprobs, reasons, step.done, top))
        if step.done:
            self._retire(r)

    # ---- speculative decoding ----

    def _start_speculation(self, r: Request) -> None:
        assistant = None
        if r.assistant_model is not None:
            assistant = self._drafters.get(id(r.assistant_model))
            if assistant is None:
                assistant = DraftModel(r.assistant_model, self.model, self.slots, self.context)
                self._drafters[id(r.assistant_model)] = assistant
            assert r.first_slot is not None
            for s in range(r.first_slot, r.first_slot + r.rows):
                assistant.reset(s)
        r.speculation = Speculation(r.generator.config, r.prompts, r.rows_per_prompt, assistant)
        if assistant is not None:  # the draft model's prefill, with the request's
            assistant.catch_up({r.first_slot + k: tokens for k, tokens in enumerate(r.speculation.tokens)})

    def _drafts(self, r: Request) -> Optional[list[list[int]]]:
        """Each row's drafts for this step, or None when no row drafts (a plain step)."""
        spec, first = r.speculation, r.first_slot
        assert spec is not None and first is not None
        limit = min(self._slots.verify_positions - 1, self._slots.max_rollback)
        room = []
        for k in range(r.rows):
            prompt = r.prompts[k // r.rows_per_prompt]
            generated = len(spec.tokens[k]) - prompt.size  # the next token included
            left = r.generator.max_new_tokens(prompt.size) - generated  # new tokens still to come
            # the chunk is the next token and the drafts: all within the slot
            room.append(max(0, min(limit, left, self.context - self._slots.length(first + k) - 1)))
        start = time.perf_counter()
        cost = self._cost if spec.assistant is None else spec.assistant.cost
        drafts = spec.drafts(first, r.running, room, cost.beta)
        self._draft_seconds += time.perf_counter() - start
        if spec.assistant is not None:
            self._pass_cost = spec.assistant.cost  # the pass times the draft model's drafting
        return drafts if any(drafts) else None

    def _advance_verified(self, r: Request) -> None:
        """Verifies the drafts the request's rows were fed with (see the module docstring)."""
        first, spec = r.first_slot, r.speculation
        assert first is not None and spec is not None
        lengths = np.asarray(r.verifying, dtype=np.int64)
        r.verifying = []
        logits = self._slots.verify_logits[first:first + r.rows]  # (rows, width, vocab), in place
        drafts = np.zeros((r.rows, logits.shape[1] - 1), dtype=np.int64)  # (rows, k), padded
        for k, d in enumerate(r.drafts):
            drafts[k, :len(d)] = d
        was_running = r.running
        try:
            # under a constraint, the step generator masks each draft position along the drafts
            result = r.generator.verify(logits, drafts, lengths)
            for k in range(r.rows):
                if was_running[k] and result.rollback[k]:
                    slot = first + k
                    self._slots.truncate(slot, self._slots.length(slot) - int(result.rollback[k]))
        except Exception as e:
            self._retire(r, error=e)
            return
        emitted = [[int(t) for t in e] for e in result.emitted]
        spec.after_verify(emitted, result.accepted, lengths, was_running, first)
        r.next_tokens = result.tokens
        reasons = r.generator.finish_reasons
        r.running = [reason is None for reason in reasons]
        done = r.generator.is_done()  # a row whose grammar completed stopped after the verdict
        if r.on_update is not None:
            lps = [[float(x) for x in lp] for lp in result.emitted_logprobs] if r.logprobs else None
            tops = self._emitted_top_logprobs(r, emitted) if r.logprobs else None
            count = max((len(e) for e in emitted), default=0)
            for i in range(count):
                tokens = [e[i] if i < len(e) else None for e in emitted]
                last = [i == len(e) - 1 for e in emitted]
                self._notify(r, StepUpdate(
                    tokens, [lp[i] if i < len(lp) else None for lp in lps] if lps is not None else None,
                    [reason if is_last else None for reason, is_last in zip(reasons, last)],
                    done and i == count - 1,
                    [top[i] if i < len(top) else None for top in tops] if tops is not None else None))
        if done:
            self._retire(r)

    @staticmethod
    def _emitted_top_logprobs(r: Request, emitted: list[list[int]]) -> Optional[list[list[list[tuple[int, float]]]]]:
        """Per row, the top-n (id, log-prob) pairs of each token the verify step emitted (its
        last ones in the row's hypothesis); None when the config asks for none."""
        if not r.generator.config.top_logprobs:
            return None
        rows = [h for per in r.generator._hypotheses() for h in per]
        tops = []
        for h, e in zip(rows, emitted):
            ids, lps, count = h["top_ids"], h["top_logprobs"], len(h["logprobs"])
            if ids is None or lps is None or not e:
                tops.append([])
                continue
            tops.append([list(zip(ids[i].tolist(), lps[i].tolist())) for i in range(count - len(e), count)])
        return tops

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
        if error is None:
            self._remember(r)
        self._finish(r, cancelled=cancelled, error=error)

    def _finish(self, r: Request, *, cancelled: bool = False, error: Optional[BaseException] = None) -> None:
        if error is None:
            try:
                r.result = _result(r.generator._hypotheses(), strip_prompt=True)
            except Exception as e:  # noqa: BLE001 - the request fails, its listener is told
                error = e
        if error is None:
            if cancelled:
                r.result.finish_reasons = [[f or "cancelled" for f in per] for per in r.result.finish_reasons]
        r.error = error
        if error is not None:  # every request gets its answer: the listener learns of the failure
            self._notify(r, StepUpdate([None] * r.rows, None, [None] * r.rows, True, error=error))
        elif cancelled and r.on_update is not None:
            self._notify(r, StepUpdate([None] * r.rows, None, ["cancelled"] * r.rows, True))
        # The listener is told nothing more. Dropping it breaks the cycle of a listener that
        # holds its request (the server's Completion): refcounting then frees the request and
        # its step generator (vocabulary-sized buffers, constraint matchers and their
        # llguidance thread pool) when its owner lets go, not at a rare full collection.
        r.on_update = None
        r._done.set()


def run_batch(model, prompts: Sequence[Sequence[int]], setups: Sequence[RequestSetup], *, max_batch: int = 8,
              progress: bool = False) -> list[GenerationResult]:
    """Generates for every prompt with its set-up through an Engine of ``max_batch`` slots,
    sized to the longest prompt plus its new tokens; results in input order."""
    if max_batch < 1:
        raise ValueError(f"max_batch must be >= 1, got {max_batch}")
    if not prompts:
        return []
    need = max(len(p) + max(_core._Generator(s.config).max_new_tokens(len(p)), 0) for p, s in zip(prompts, setups))
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
            return engine.generate(prompts, setups, on_done=(lambda _: bar.update(1)) if bar else None)
    finally:
        if bar is not None:
            bar.close()


def one_request(model, prompts: Sequence[Sequence[int]], setup: RequestSetup, *,
                sequence_ids: Optional[Sequence[int]] = None,
                output_raw_logprobs: bool = False) -> tuple[Engine, Request]:
    """An engine sized for one request of ``prompts`` (all its rows in slots, the cache as long
    as its longest prompt plus new tokens), with the request added: the caller runs
    ``engine.step()`` until ``request.done()``. Bad settings and a context overflow raise here."""
    request = Request(prompts, setup.step_generator(model, output_raw_logprobs), model.context_length,
                      sequence_ids=sequence_ids, assistant_model=setup.assistant_model)
    draft = request.speculation_tokens if request.speculates else 0
    engine = Engine(model, slots=request.rows, context=max(1, request.positions), max_draft_tokens=draft)
    engine.add(request)
    return engine, request
