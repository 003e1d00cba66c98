"""The engine's side of speculative decoding (kvgen.generation.speculation holds a request's
drafting state): each speculating request's drafts for the next pass, sized to the room its
rows have, and the verdict on them after it, with the slots rolled back by the rejected drafts
without copying. The draft models' slots live here, beside the engine's, and a model's cost of
a draft token (drafters.CostModel, which sets the draft lengths) is learnt over its engines.

A hybrid model's recurrent state holds a row's whole past and cannot step back. Every built-in
hybrid (Qwen3.5 / Qwen3-Next, LFM2, Granite 4) writes token checkpoints
(``_core._Model.token_checkpoints``): the verification pass runs a row's recurrent layers token
by token, as decode steps do, and copies its state after each token but the last into the row's
own checkpoints (``k + 1`` slots per slot); a verdict that rejects drafts resumes the row at its
last accepted position from that position's checkpoint (``_ModelSlots.resume``), and nothing is
computed again. So the state and KV rows are those of the accepted tokens alone, as without
drafts, and the verified logits are one-token decoding's."""

from __future__ import annotations

import time
import weakref
from typing import Any, Optional

import numpy as np

from kvgen._mtp_head import MtpHead
from kvgen.generation.drafters import CostModel, DraftModel
from kvgen.generation.mtp import MtpDrafter
from kvgen.generation.request import Request, StepUpdate
from kvgen.generation.speculation import Speculation
from kvgen.generation.step_updates import verified_updates

# Per model, what a draft token costs in a forward pass, learnt over its engines (a
# generate() call makes an engine of its own).
_COST_MODELS: "weakref.WeakKeyDictionary[Any, CostModel]" = weakref.WeakKeyDictionary()


def _cost_model(model: Any) -> CostModel:
    try:
        return _COST_MODELS.setdefault(model, CostModel())
    except TypeError:  # an object without weak references: learnt per engine
        return CostModel()


class SpeculativeRows:
    """Speculative decoding over an engine's slots (``_core._ModelSlots``) of ``model``.

    ``rollback_snapshots``: for a hybrid model, the first of speculation's checkpoints,
    ``per_slot`` per slot (slot s from ``rollback_snapshots + s * per_slot``), which a verifying
    row's pass writes after each of its tokens (see the module docstring). None for a model
    without a recurrent state (a rejected draft is truncated)."""

    def __init__(self, model: Any, slots: Any, rollback_snapshots: Optional[int] = None, per_slot: int = 1):
        self.model, self._slots = model, slots
        if rollback_snapshots is not None and not model._core.token_checkpoints:
            raise ValueError(f"{model.family}: a model with a recurrent state must write token checkpoints to "
                             "verify drafts")
        self._rollback = rollback_snapshots
        self._per_slot = per_slot
        self._before: dict[int, int] = {}  # slot -> its length before its verification pass (hybrid)
        self._cost = _cost_model(model)  # what a draft token costs in a forward pass (adaptive draft length)
        self._drafters: dict[int, Any] = {}  # id(draft model or MTP head) -> its DraftModel / MtpDrafter
        self._draft_seconds = 0.0  # spent drafting for the next pass
        self._pass_cost = self._cost  # the cost model the next pass is timed for

    def start(self, r: Request) -> None:
        """An admitted request starts speculating (its draft model's prefill, if it has one)."""
        assistant = None
        assert r.first_slot is not None
        if r.assistant_model is not None:
            assistant = self._drafters.get(id(r.assistant_model))
            if assistant is None:
                drafter = MtpDrafter if isinstance(r.assistant_model, MtpHead) else DraftModel
                assistant = drafter(r.assistant_model, self.model, self._slots.slots, self._slots.context)
                self._drafters[id(r.assistant_model)] = assistant
            for s in range(r.first_slot, r.first_slot + r.rows):
                assistant.reset(s)
        r.speculation = Speculation(r.selector.config, r.prompts, r.rows_per_prompt, assistant)
        if assistant is not None:  # the draft model's prefill, with the request's
            assistant.catch_up({r.first_slot + k: tokens for k, tokens in enumerate(r.speculation.tokens)})

    @staticmethod
    def target_hidden_rows(requests: Any) -> dict[int, MtpDrafter]:
        """slot -> its MTP drafter, for the rows of ``requests`` that draft with an MTP head: their
        forward passes return their hidden states for it (``MtpDrafter.target_hidden``)."""
        rows: dict[int, MtpDrafter] = {}
        for r in requests:
            spec = r.speculation
            if spec is not None and isinstance(spec.assistant, MtpDrafter) and r.first_slot is not None:
                rows.update({s: spec.assistant for s in range(r.first_slot, r.first_slot + r.rows)})
        return rows

    @staticmethod
    def copy_row(r: Request, src: int, dst: int) -> None:
        """The engine copied slot src's row to slot dst (a prompt's rows after its prefill)."""
        spec = r.speculation
        if spec is not None and isinstance(spec.assistant, MtpDrafter):
            spec.assistant.copy_row(src, dst)

    def new_pass(self) -> None:
        """Drafting for a new pass starts."""
        self._draft_seconds = 0.0
        self._pass_cost = self._cost

    def set_drafts(self, r: Request) -> None:
        """The request's drafts for the next pass (``r.drafts``, ``r.verifying``: none when no row drafts)."""
        drafts = self._drafts(r)
        r.drafts, r.verifying = (drafts, [len(d) for d in drafts]) if drafts is not None else ([], [])
        if self._rollback is not None and drafts is not None:  # the rows whose pass writes checkpoints
            assert r.first_slot is not None
            for k, d in enumerate(drafts):
                slot = r.first_slot + k
                if r.running[k] and d:
                    self._before[slot] = self._slots.length(slot)
                else:  # nothing to roll back
                    self._before.pop(slot, None)

    def checkpoints(self, chunks: Any) -> list[tuple[int, int]]:
        """(slot, first checkpoint) of the chunks that verify a hybrid row's drafts (the pass
        writes the row's state after each of their tokens)."""
        if self._rollback is None:
            return []
        return [(c.slot, self._rollback + c.slot * self._per_slot) for c in chunks if c.slot in self._before]

    def observe(self, seconds: float, rows: int, draft_tokens: int) -> None:
        """A pass without prompt tokens took ``seconds`` for ``rows`` rows and ``draft_tokens``."""
        self._pass_cost.observe(seconds + self._draft_seconds, rows, draft_tokens)

    def _drafts(self, r: Request) -> Optional[list[list[int]]]:
        """Each row's drafts for this step, or None when no row drafts (a plain step)."""
        spec, first = r.speculation, r.first_slot
        assert spec is not None and first is not None
        limit = min(self._slots.verify_positions - 1, self._slots.max_rollback)
        room = []
        for k in range(r.rows):
            prompt = r.prompts[k // r.rows_per_prompt]
            generated = len(spec.tokens[k]) - prompt.size  # the next token included
            left = r.selector.max_new_tokens(prompt.size) - generated  # new tokens still to come
            # the chunk is the next token and the drafts: all within the slot
            room.append(max(0, min(limit, left, self._slots.context - self._slots.length(first + k) - 1)))
        start = time.perf_counter()
        cost = self._cost if spec.assistant is None else spec.assistant.cost
        drafts = spec.drafts(first, r.running, room, cost.beta)
        self._draft_seconds += time.perf_counter() - start
        if spec.assistant is not None:
            self._pass_cost = spec.assistant.cost  # the pass times the draft model's drafting
        return drafts if any(drafts) else None

    def verify(self, r: Request) -> tuple[list[StepUpdate], bool]:
        """Verifies the drafts the request's rows were fed with: (the updates to report, whether
        the request is done). Raises what the verification raised (the request fails)."""
        first, spec = r.first_slot, r.speculation
        assert first is not None and spec is not None
        lengths = np.asarray(r.verifying, dtype=np.int64)
        r.verifying = []
        logits = self._slots.verify_logits[first:first + r.rows]  # (rows, width, vocab), in place
        drafts = np.zeros((r.rows, logits.shape[1] - 1), dtype=np.int64)  # (rows, k), padded
        for k, d in enumerate(r.drafts):
            drafts[k, :len(d)] = d
        was_running = r.running
        # under a constraint, the token selector masks each draft position along the drafts
        result = r.selector.verify(logits, drafts, lengths)
        for k in range(r.rows):
            slot = first + k
            before = self._before.pop(slot, None)
            if was_running[k] and result.rollback[k]:
                kept = self._slots.length(slot) - int(result.rollback[k])
                if before is None:
                    self._slots.truncate(slot, kept)
                else:  # a recurrent state: the checkpoint after the last accepted token
                    assert self._rollback is not None
                    self._slots.resume(slot, kept, self._rollback + slot * self._per_slot + kept - before - 1)
        emitted = [[int(t) for t in e] for e in result.emitted]
        spec.after_verify(emitted, result.accepted, lengths, was_running, first)
        r.next_tokens = result.tokens
        reasons = r.selector.finish_reasons
        r.running = [reason is None for reason in reasons]
        done = r.selector.is_done()  # a row whose grammar completed stopped after the verdict
        updates = verified_updates(r, result, emitted, reasons, done) if r.on_update is not None else []
        return updates, done
