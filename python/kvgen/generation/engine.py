"""The engine: every generation with a built-in model runs here, continuously batched.

The engine owns a pool of KV-cache slots (``_core._ModelSlots``). ``kvgen serve`` and
``generate_batch`` submit requests to its scheduler thread; ``generate``, ``stream`` and
``chat`` add one request and call ``step()`` in their own thread, so the same loop drives
them all; each builds its engine with ``Engine.sized`` (kvgen.generation.engine_size). A
request (kvgen.generation.request) has its own token selector (its config, seed, stop rules,
constraint) whose rows are a contiguous range of slots, so its step reads
``logits[first:first + rows]`` in place. Every iteration of the loop:

1. takes new and cancelled requests; a finished or cancelled request gives its slots back;
2. admits waiting requests, first come first served, while their rows fit in free slots (a
   one-row request goes to the slot caching the longest prefix of its prompt: prefix_cache);
3. plans one forward pass (pass_plan: every running row's next token, with its drafts when it
   speculates, and prompt chunks within a budget) and runs it; drafts are made and verified
   by speculative_rows, a scored prompt's chunks give their scores (prompt_scores);
4. steps each request whose logits are ready and reports the new tokens (step_updates).

An embedding request (``submit_embedding``) is prefilled like any prompt, its chunks returning
their final hidden states instead of logits, pooled by the request; it ends with its prefill.
It reuses no cached prefix (mean pooling needs every position's hidden state).

A request with a constraint (json_schema, regex, grammar or choices) is compiled against the
model's tokenizer when it is submitted (ValueError naming the problem); its step fills the
rows' next masks in the mask worker (kvgen.generation.constraints), overlapping the next pass.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Optional, Sequence, Union

import numpy as np

from kvgen import _core
from kvgen._core import GenerationConfig
from kvgen.families.capabilities import Capabilities
from kvgen.generation.engine_size import EngineSize
from kvgen.generation.gather import generate_all
from kvgen.generation.pass_plan import PassPlan, plan_pass
from kvgen.generation.prefix_cache import SNAPSHOTS_PER_SLOT, PrefixCache, StateSnapshots, free_run
from kvgen.generation.prompt_scores import check_scoring, score_pieces
from kvgen.generation.request import Request, StepUpdate
from kvgen.generation.request_setup import RequestSetup
from kvgen.generation.results import GenerationResult, _result
from kvgen.generation.speculation import MAX_DRAFT_TOKENS
from kvgen.generation.speculative_rows import SpeculativeRows
from kvgen.generation.step_updates import step_update

__all__ = ["Engine", "Request", "StepUpdate", "one_request", "state_snapshots"]


def state_snapshots(model, slots: int, prefix_cache: bool, draft_tokens: int) -> int:
    """Copies of one slot's recurrent state an engine of a hybrid model keeps (0 for a model
    without one): SNAPSHOTS_PER_SLOT per slot for the prefix cache (kvgen.generation.prefix_cache)
    and, when rows may verify drafts, speculation's per slot (``rollback_snapshots``).
    ``model.kv_cache_bytes(slots, context, snapshots)`` counts them; a snapshot takes memory only
    once written."""
    if not model.capabilities.recurrent_state:
        return 0
    return slots * ((SNAPSHOTS_PER_SLOT if prefix_cache else 0) + rollback_snapshots(model, draft_tokens))


def rollback_snapshots(model, draft_tokens: int) -> int:
    """Speculation's copies of one slot's recurrent state (kvgen.generation.speculative_rows): a
    checkpoint per token of a verification pass, draft_tokens + 1; none without drafts."""
    return draft_tokens + 1 if draft_tokens > 0 else 0


class Engine:
    """Runs requests through ``model`` with continuous batching (see the module docstring).

    ``slots``: rows decoded together at most (a request takes ``num_return_sequences`` or
    ``num_beams`` of them per prompt). ``context``: positions per slot (default: the model's);
    the cache is allocated untouched, so only the positions used take memory.
    ``max_draft_tokens``: the longest draft a row may verify (a scored prompt's chunks are as
    long at most). Entry points build it with ``Engine.sized``.

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
        context = context or model.context_length
        # a hybrid model's state snapshots: the prefix cache's first, then speculation's (one per slot)
        self._slots = _core._ModelSlots(model._core, slots, context,
                                        verify_positions=min(context, max(max_draft_tokens, 0) + 1),
                                        snapshots=state_snapshots(model, slots, prefix_cache, max_draft_tokens))
        self.size = EngineSize(self._slots.slots, self._slots.context, max_draft_tokens, prefix_cache)
        recurrent = self.capabilities.recurrent_state
        prefix_snapshots = StateSnapshots(slots, SNAPSHOTS_PER_SLOT) if recurrent and prefix_cache else None
        self._prefixes = PrefixCache(slots, self.capabilities.partial_prefix_reuse, prefix_snapshots)
        self._logits = self._slots.logits  # (slots, vocab) view, valid as long as _slots
        rollback = None  # the first of speculation's snapshots (rollback_snapshots per slot), None without
        if recurrent and max_draft_tokens > 0:
            rollback = slots * SNAPSHOTS_PER_SLOT if prefix_snapshots is not None else 0
        self._speculative = SpeculativeRows(model, self._slots, rollback,  # drafts and their verdicts
                                            rollback_snapshots(model, max_draft_tokens) if rollback is not None else 1)
        self._free = [True] * slots
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()  # new requests, and None to wake the loop
        self._waiting: list[Request] = []
        self._active: list[Request] = []
        self._closed = False
        self._thread: Optional[threading.Thread] = None
        self._stepped = False  # stepped by its caller (step()): no thread may start
        self._lock = threading.Lock()

    @classmethod
    def sized(cls, model, size: EngineSize) -> "Engine":
        """An engine of ``size`` (kvgen.generation.engine_size: each entry point's rule); the one
        place an engine is constructed."""
        return cls(model, slots=size.slots, context=size.context, prefix_cache=size.prefix_cache,
                   max_draft_tokens=size.draft_tokens)

    @classmethod
    def serving(cls, model, max_batch: int, prefix_cache: bool = True) -> "Engine":
        """The engine of ``kvgen serve`` and ``kvgen batch`` (EngineSize.serving)."""
        return cls.sized(model, EngineSize.serving(model, max_batch, prefix_cache))

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
    def state_snapshots(self) -> int:
        """Copies of one slot's recurrent state the cache keeps (a hybrid model; see state_snapshots)."""
        return self._slots.snapshots

    @property
    def active_rows(self) -> int:
        """Slots in use (read without a lock: a snapshot)."""
        return self.slots - sum(self._free)

    @property
    def prefix_cache_queries(self) -> int:
        """Prompt tokens of the requests admitted (one-row ones, with the prefix cache on)."""
        return self._prefixes.queries

    @property
    def prefix_cache_hits(self) -> int:
        """Of prefix_cache_queries, the tokens found in a slot."""
        return self._prefixes.hits

    def submit(self, prompt: Sequence[int], setup: Union[RequestSetup, GenerationConfig], *, logprobs: bool = False,
               on_update: Optional[Callable[[StepUpdate], None]] = None, score_prompt: Optional[int] = None,
               generate: bool = True) -> Request:
        """Queues a generation of ``prompt`` (token ids) with ``setup`` (kvgen.generation.request_setup;
        a bare GenerationConfig is taken as it is: its EOS ids already set, the engine adds
        nothing) and runs it in the scheduler thread. ``on_update(StepUpdate)`` is called from
        the scheduler thread after each step; it must be quick and must not raise. Bad
        settings, an invalid constraint and a prompt over the context raise ValueError here.
        ``score_prompt`` and ``generate``: prompt scoring (see Request)."""
        setup = setup if isinstance(setup, RequestSetup) else RequestSetup(setup)
        request = Request([prompt], setup.token_selector(self.model), self.context, logprobs=logprobs,
                          on_update=on_update, assistant_model=setup.assistant_model, score_prompt=score_prompt,
                          generate=generate)
        return self._submit(request)

    def submit_embedding(self, prompt: Sequence[int], pooling: str,
                         on_update: Optional[Callable[[StepUpdate], None]] = None) -> Request:
        """Queues an embedding of ``prompt`` (token ids; ``pooling``: kvgen._embedding's "last",
        "mean" or "cls") and runs it in the scheduler thread: ``wait_embeddings()`` gives its
        pooled vector (not normalised). ``on_update`` is told when it ends, as ``submit``'s."""
        request = Request.embedding([prompt], pooling, self.model._core.hidden_size, self.context,
                                    on_update=on_update)
        return self._submit(request)

    def _submit(self, request: Request) -> Request:
        """``add`` from any thread, the scheduler thread started on first use."""
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
        if request.score_top is not None:
            check_scoring(request.longest, self._slots.verify_positions, self.capabilities.recompute_past)
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
        """Runs every prompt with its set-up, all submitted at once; the results in input order
        (kvgen.generation.gather)."""
        return generate_all(self, prompts, setups, on_done)

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
            first = free_run(self._free, self._waiting[0].rows)
            if first is None:
                return  # first come, first served: a large request is not overtaken
            r = self._waiting.pop(0)
            reuse = 0
            if self.prefix_cache and r.rows == 1:
                # a scored or embedded prompt's every position is computed: none reused (a
                # recurrent state resumes from a snapshot: prefix_cache)
                reusable = r.score_top is None and not r.poolers
                first, reuse = self._prefixes.place(r.prompts[0], self._free, self._slots, reusable)
            for s in range(first, first + r.rows):
                self._free[s] = False
                self._prefixes.take(s, reuse)
                if not reuse:
                    self._slots.reset(s)
            r.fed = reuse
            r.first_slot = first
            if r.speculates:
                self._speculative.start(r)
            self._active.append(r)

    def _step(self) -> None:
        self._speculative.new_pass()
        for r in self._active:
            if not r.prefilling and r.speculation is not None:
                self._speculative.set_drafts(r)
        snapshots = self._prefixes.snapshots is not None  # a hybrid's prefix cache: a snapshot at each piece's end
        plan = plan_pass(self._active, scoring_positions=self._slots.verify_positions,
                         recompute_past=self.capabilities.recompute_past, slot_length=self._slots.length,
                         cut_at_last_boundary=snapshots)
        try:
            self._run(plan)
        except Exception as e:  # the model checks every chunk first, so nothing was computed
            for r in plan.requests():
                self._retire(r, error=e)
            return
        for r, fed in plan.fed:
            if snapshots and r.rows == 1:
                self._prefixes.prefilled(r.first_slot, fed, self._slots)
            r.fed = fed
        for r in plan.ready:
            self._advance(r)

    def _run(self, plan: PassPlan) -> None:
        """The plan's forward passes; then the scored chunks' scores and the embedded chunks' hidden states."""
        for c in plan.long_chunks:
            if c.restart:
                self._slots.reset(c.slot)
        width = self.model._core.hidden_size
        # each embedded chunk's hidden states (count, hidden), written by the forward pass
        hidden = {c.slot: np.empty((c.tokens.size, width), dtype=np.float32)
                  for c in plan.chunks + plan.long_chunks if c.hidden}
        # and those of the rows that draft with an MTP head, beside their logits (kvgen.generation.mtp)
        drafters = self._speculative.target_hidden_rows(self._active)
        states = {c.slot: (self._slots.length(c.slot), np.empty((c.tokens.size, width), dtype=np.float32))
                  for c in plan.chunks + plan.long_chunks if c.slot in drafters}
        start = time.perf_counter()
        if plan.chunks or not plan.long_chunks:
            chunks = plan.chunks
            self._slots.forward([(c.slot, c.tokens) for c in chunks], [c.slot for c in chunks if c.all_logits],
                                [c.slot for c in chunks if c.in_blocks],
                                [(c.slot, hidden[c.slot]) for c in chunks if c.hidden],
                                [(c.slot, states[c.slot][1]) for c in chunks if c.slot in states],
                                checkpoints=self._speculative.checkpoints(chunks))
        if plan.long_chunks:
            self._slots.forward([(c.slot, c.tokens) for c in plan.long_chunks],
                                hidden=[(c.slot, hidden[c.slot]) for c in plan.long_chunks if c.hidden],
                                hidden_and_logits=[(c.slot, states[c.slot][1]) for c in plan.long_chunks
                                                   if c.slot in states])
        for slot, (position, rows) in states.items():
            drafters[slot].target_hidden(slot, position, rows)
        if plan.decodes_only:  # a decode-only pass times what draft tokens cost
            self._speculative.observe(time.perf_counter() - start, plan.decode_rows, plan.draft_tokens)
        if plan.scored:
            score_pieces(plan.scored, self._slots.verify_logits, self._logits)
        for piece in plan.embedded:
            piece.request.add_hidden(piece.prompt, piece.start, hidden[piece.slot])

    def _advance(self, r: Request) -> None:
        first = r.first_slot
        assert first is not None
        if not r.generates:  # the prompt was scored or embedded: nothing more to do
            self._notify(r, StepUpdate([None] * r.rows, None, ["length"] * r.rows, True))
            self._retire(r)
            return
        if r.next_tokens is None:  # prefill done: the other rows of a prompt start from its first row's cache
            for b in range(len(r.prompts)):
                for k in range(1, r.rows_per_prompt):
                    self._slots.copy_row(first + b * r.rows_per_prompt, first + b * r.rows_per_prompt + k)
                    self._speculative.copy_row(r, first + b * r.rows_per_prompt, first + b * r.rows_per_prompt + k)
        if r.verifying:  # kvgen.generation.speculative_rows
            try:
                updates, done = self._speculative.verify(r)
            except Exception as e:
                self._retire(r, error=e)
                return
            for update in updates:
                self._notify(r, update)
            if done:
                self._retire(r)
            return
        was_running = r.running
        try:
            step = r.selector.step(self._logits[first:first + r.rows])
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
            reasons = [None] * r.rows if not step.done else r.selector.finish_reasons
        else:
            reasons = r.selector.finish_reasons
            r.running = [reason is None for reason in reasons]
        if r.on_update is not None:
            self._notify(r, step_update(r, step, was_running, reasons))
        if step.done:
            self._retire(r)

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
        if error is None and self.prefix_cache and r.rows == 1:
            self._prefixes.remember(first, r.prompts[0], r.fed)  # its slot holds its prompt's whole chunks
        self._finish(r, cancelled=cancelled, error=error)

    def _finish(self, r: Request, *, cancelled: bool = False, error: Optional[BaseException] = None) -> None:
        if error is None and r.selector is not None:  # an embedding request has no result but its vectors
            try:
                r.result = _result(r.selector._hypotheses(), strip_prompt=True)
            except Exception as e:  # noqa: BLE001 - the request fails, its listener is told
                error = e
        if error is None and r.result is not None:
            if cancelled:
                r.result.finish_reasons = [[f or "cancelled" for f in per] for per in r.result.finish_reasons]
        r.error = error
        if error is not None:  # every request gets its answer: the listener learns of the failure
            self._notify(r, StepUpdate([None] * r.rows, None, [None] * r.rows, True, error=error))
        elif cancelled and r.on_update is not None:
            self._notify(r, StepUpdate([None] * r.rows, None, ["cancelled"] * r.rows, True))
        # The listener is told nothing more. Dropping it breaks the cycle of a listener that
        # holds its request (the server's Completion): refcounting then frees the request and
        # its token selector (vocabulary-sized buffers, constraint matchers and their
        # llguidance thread pool) when its owner lets go, not at a rare full collection.
        r.on_update = None
        r.mark_done()


def one_request(model, prompts: Sequence[Sequence[int]], setup: RequestSetup, *,
                sequence_ids: Optional[Sequence[int]] = None,
                output_raw_logprobs: bool = False) -> tuple[Engine, Request]:
    """An engine sized for one request of ``prompts`` (EngineSize.for_request: all its rows in
    slots, the cache as long as its longest prompt plus new tokens), with the request added: the
    caller runs ``engine.step()`` until ``request.done()``. Bad settings and a context overflow raise here."""
    request = Request(prompts, setup.token_selector(model, output_raw_logprobs), model.context_length,
                      sequence_ids=sequence_ids, assistant_model=setup.assistant_model)
    engine = Engine.sized(model, EngineSize.for_request(request))
    engine.add(request)
    return engine, request
