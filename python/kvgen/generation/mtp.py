"""Multi-token prediction (MTP): a checkpoint's own head drafting for speculative decoding.

Qwen3.5 / 3.6 and Qwen3-Next ship a head (``mtp.*``; cpp/include/kvgen/models/qwen35.h:
make_qwen35_mtp) trained to predict the token after next: at position i it reads the token at
i + 1 and the model's final-normed hidden state at i, and its logits are those of the token at
i + 2. As a drafter (vLLM's ``method="mtp"``, llama.cpp's ``--spec-type draft-mtp``):

- The target's forward passes for a row that drafts with it return the hidden state of every
  position beside the logits (``_ModelSlots.forward(hidden_and_logits=...)``); the drafter
  keeps the rows it has not fed the head yet.
- To draft k tokens after the row's next token (the target holding n positions), the head is
  fed the pairs (token at i + 1, hidden state at i) for the positions it lacks, up to n - 1, in
  one pass: its logits there give the first draft. Each further draft feeds the head the last
  draft with the head's own final-normed state (k - 1 one-token passes), as vLLM and llama.cpp
  chain it.
- After the verdict, the head's cache is cut back to the positions fed with the target's
  states, and the verification pass's states of the accepted positions wait for the next draft.
- A row that reused a cached prefix (or whose states are missing for another reason) starts
  the head at its first computed position: the head's positions count from there (rotary
  attention depends on the distance between positions only), and it attends over the
  positions computed since.

Drafts are greedy (the argmax of the head's logits); the engine verifies them as any drafts,
so the output is the model's own whatever the head proposes.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from kvgen import _core
from kvgen._mtp_head import MtpHead
from kvgen.generation.drafters import CostModel


class MtpDrafter:
    """An MTP head's side of speculation for one engine: the head's own slot cache (one slot
    per engine slot; kvgen.generation.speculative_rows calls it as it calls a DraftModel), and
    per slot the target's hidden states not yet fed to the head."""

    def __init__(self, head: MtpHead, target: Any, slots: int, context: int):
        if head._model_core is not target._core:
            raise ValueError("this MTP head belongs to another model: pass the generating model's own "
                             "(assistant_model=model.mtp_head)")
        core = head._core
        core.activations = target._core.activations  # the head computes as its model does
        core.kv_cache_dtype = target._core.kv_cache_dtype
        self._slots = _core._ModelSlots(core, slots, context)
        self._logits = self._slots.logits
        self._width = core.hidden_size
        #: what a draft token costs here: the head's passes and the target's verification
        self.cost = CostModel()
        self._start = [0] * slots    # the target position of the head's position 0
        self._fed = [0] * slots      # target positions the head holds from the target's states (from _start)
        self._pending: list[list[np.ndarray]] = [[] for _ in range(slots)]  # states of positions _fed ..
        self._drafts_fed = [0] * slots  # head positions past _fed fed with drafts (cut at the verdict)

    def _known(self, slot: int) -> int:
        """One past the last target position whose hidden state the drafter has."""
        return self._fed[slot] + sum(h.shape[0] for h in self._pending[slot])

    def reset(self, slot: int, start: int = 0) -> None:
        """The slot's head starts over at target position ``start`` (a new request; states missing)."""
        self._slots.reset(slot)
        self._start[slot] = self._fed[slot] = start
        self._pending[slot] = []
        self._drafts_fed[slot] = 0

    def catch_up(self, rows: dict[int, Sequence[int]]) -> None:
        """Nothing to do at a request's start: the head needs the target's states of the prompt,
        which its prefill passes hand over (``target_hidden``)."""

    def target_hidden(self, slot: int, position: int, hidden: np.ndarray) -> None:
        """The target computed positions [position, position + len(hidden)) of the slot's row:
        their final-normed hidden states (the engine's pass wrote them). A gap (a reused
        prefix) starts the head over there."""
        if position != self._known(slot):
            self.reset(slot, position)
        self._pending[slot].append(hidden)

    def copy_row(self, src: int, dst: int) -> None:
        """Slot dst's row starts as a copy of slot src's (the rows of one prompt after its prefill)."""
        self._slots.copy_row(src, dst)
        self._start[dst], self._fed[dst] = self._start[src], self._fed[src]
        self._pending[dst] = list(self._pending[src])
        self._drafts_fed[dst] = 0

    def propose(self, rows: dict[int, tuple[list[int], int]]) -> dict[int, list[int]]:
        """rows: slot -> (the row's tokens, prompt and generated, ending with the token the target
        is fed next; k >= 1). Feeds each head the pairs it lacks, then drafts k tokens per row
        greedily (one batched pass per draft position); slot -> drafts. A row whose states do not
        reach its next token (none handed over yet) drafts nothing."""
        drafts: dict[int, list[int]] = {s: [] for s in rows}
        # the head's catch-up: (token at i + 1, state at i) for i in [fed, n), n = the target's length
        pieces: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for s, (tokens, k) in rows.items():
            n = len(tokens) - 1
            if k < 1 or self._known(s) != n or n <= self._start[s]:
                continue
            pending = self._pending[s]
            states = pending[0] if len(pending) == 1 else np.concatenate(pending)
            self._pending[s] = []
            ids = np.asarray(tokens[self._fed[s] + 1:n + 1], dtype=np.int64)
            pieces[s] = (ids, states)
        if not pieces:
            return drafts
        size = _core._PREFILL_CHUNK * (1 if len(pieces) > 1 else 4)
        last: dict[int, np.ndarray] = {}  # slot -> the head's final-normed state at its last position
        done = {s: 0 for s in pieces}
        while True:
            chunks, inputs, outputs = [], [], []
            for s, (ids, states) in pieces.items():
                at = done[s]
                if at < ids.size:
                    end = min(at + size, ids.size)
                    out = np.empty((end - at, self._width), dtype=np.float32)
                    chunks.append((s, ids[at:end]))
                    inputs.append((s, np.ascontiguousarray(states[at:end])))
                    outputs.append((s, out))
                    done[s] = end
            if not chunks:
                break
            self._slots.forward(chunks, input_hidden=inputs, hidden_and_logits=outputs)
            for s, out in outputs:
                last[s] = out[-1:]
        for s in pieces:
            self._fed[s] = len(rows[s][0]) - 1
        # the drafts: the head's argmax, then its own state and that draft for the next position
        longest = max(rows[s][1] for s in pieces)
        for i in range(longest):
            chunks, inputs, outputs = [], [], []
            for s in pieces:
                if i < rows[s][1]:
                    token = int(self._logits[s].argmax())
                    drafts[s].append(token)
                    if i + 1 < rows[s][1]:
                        out = np.empty((1, self._width), dtype=np.float32)
                        chunks.append((s, np.array([token], dtype=np.int64)))
                        inputs.append((s, last[s]))
                        outputs.append((s, out))
            if not chunks:
                break
            self._slots.forward(chunks, input_hidden=inputs, hidden_and_logits=outputs)
            for s, out in outputs:
                last[s] = out
        for s in pieces:
            self._drafts_fed[s] = max(len(drafts[s]) - 1, 0)
        return drafts

    def rollback(self, slot: int, kept: int, accepted: int) -> None:
        """The verdict on the slot's last drafts: the row held `kept` tokens before them (its
        next token included) and accepted `accepted`. The head drops its draft positions, and of
        the verification pass's states those of the kept positions wait for the next draft."""
        if self._drafts_fed[slot]:
            self._slots.truncate(slot, self._fed[slot] - self._start[slot])
            self._drafts_fed[slot] = 0
        length = kept + accepted  # the target's positions after the verdict
        keep, out = self._fed[slot], []
        for h in self._pending[slot]:
            if keep >= length:
                break
            out.append(h[:length - keep])
            keep += min(h.shape[0], length - keep)
        self._pending[slot] = out
