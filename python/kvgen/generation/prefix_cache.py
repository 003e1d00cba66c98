"""Which free slots a new request of the engine takes: the first run of free slots its rows
need (``free_run``) or, for a one-row request, the slot the prefix cache chooses.

The engine's prefix cache (``prefix_cache=True``, as llama.cpp's slots reuse their prompt): a
free slot keeps the prompt chunks it last computed, and a new one-row request whose prompt
starts with the same tokens goes to the free slot that shares the longest prefix with it,
keeping those positions (``truncate``) and prefilling only the rest; otherwise it takes the
free slot used least recently.

Only positions of an earlier prompt's whole chunks are reused, never generated tokens, and the
rest of a chunk whose first positions are reused is computed as the fresh prefill's whole chunk
(``in_blocks``: the chunk's attention products with the cached positions' rows padded, since
their rounding depends on their row count), so every position holds what a fresh prefill
computes: outputs are bit-identical. A chunk is reused in part only where the new prompt holds
it whole (a shorter last piece has products of another shape), and only on models whose
capabilities allow it (no sliding windows, no LongRoPE); otherwise whole chunks only.

A hybrid model (``Capabilities.recurrent_state``) keeps, beside its KV rows, a recurrent state
that holds a slot's whole past in a fixed size and cannot be cut back to a shared prefix. Its
prefix cache resumes from snapshots of that state (``StateSnapshots``): while a slot prefills a
one-row prompt, the state is copied after every pass that ends the slot's piece at a chunk
boundary (the engine cuts a prompt's prefill at its last whole-chunk boundary, and its pieces
of up to SOLO_PREFILL_CHUNKS chunks end at boundaries too), and a slot keeps at most
SNAPSHOTS_PER_SLOT of them with the KV positions they belong to: the latest boundary fed, and
earlier ones thinned so that the largest gap between kept boundaries stays small (a new
snapshot past a full set evicts the one whose neighbours are closest). A new prompt resumes at
the latest snapshot at or before the prefix it shares (its own last boundary may lie anywhere in
its suffix), from the start when none fits: the slot keeps those KV positions and takes the
snapshot's state in one operation (``_ModelSlots.resume``). The recurrent kernels compute a
prompt in pieces that end at multiples of PREFILL_CHUNK from its start, so the state at a
boundary is the one a fresh prefill reaches there, bit for bit; a prefix is reused in whole
chunks only (``partial_prefix_reuse`` is off). Each snapshot is a copy of one slot's state: the
engine's cache grows by ``slots x SNAPSHOTS_PER_SLOT`` states (``Engine.state_snapshots``).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from kvgen.generation.pass_plan import PREFILL_CHUNK

#: Snapshots of the recurrent state a slot keeps for the prefix cache (a hybrid model).
SNAPSHOTS_PER_SLOT = 4


def free_run(free: Sequence[bool], rows: int) -> Optional[int]:
    """The first slot of the first ``rows`` consecutive free slots (a request's rows), None when none."""
    run = 0
    for s, is_free in enumerate(free):
        run = run + 1 if is_free else 0
        if run == rows:
            return s - rows + 1
    return None


class StateSnapshots:
    """The snapshots of a hybrid model's recurrent state each slot keeps for the prefix cache:
    slot s owns snapshots ``s * per_slot`` to ``s * per_slot + per_slot - 1`` of the engine's
    ``_core._ModelSlots``, each the state of the slot's first ``boundary`` positions."""

    def __init__(self, slots: int, per_slot: int):
        self.per_slot = per_slot
        self._held: list[dict[int, int]] = [{} for _ in range(slots)]  # per slot: boundary -> snapshot

    def latest(self, slot: int, limit: int) -> tuple[int, Optional[int]]:
        """(boundary, snapshot) of the slot's latest snapshot at or before ``limit``; (0, None) when none."""
        fits = [b for b in self._held[slot] if b <= limit]
        if not fits:
            return 0, None
        return max(fits), self._held[slot][max(fits)]

    def keep(self, slot: int, length: int) -> None:
        """The slot keeps its first ``length`` positions: the snapshots past them are dropped."""
        self._held[slot] = {b: i for b, i in self._held[slot].items() if b <= length}

    def take(self, slot: int, boundary: int, slots: Any) -> None:
        """The slot's state after its first ``boundary`` positions into one of its snapshots
        (``slots``: the engine's ``_core._ModelSlots``), evicting one when all are held."""
        held = self._held[slot]
        if boundary in held:
            return
        if len(held) < self.per_slot:
            index = min(set(range(slot * self.per_slot, (slot + 1) * self.per_slot)) - set(held.values()))
        else:  # evict the earlier boundary whose neighbours are closest: the largest gap stays small
            kept = sorted(held) + [boundary]
            evict = min(range(len(kept) - 1), key=lambda i: kept[i + 1] - (kept[i - 1] if i else 0))
            index = held.pop(kept[evict])
        slots.snapshot(slot, index)
        held[boundary] = index


class PrefixCache:
    """Which prompt each slot of an engine holds, and the choice of a slot for a new prompt.

    ``partial_reuse``: a prefix may end inside a chunk (Capabilities.partial_prefix_reuse).
    ``snapshots``: a hybrid model's state snapshots (None: the model keeps no recurrent state)."""

    def __init__(self, slots: int, partial_reuse: bool, snapshots: Optional[StateSnapshots] = None):
        self.partial_reuse = partial_reuse
        self.snapshots = snapshots
        # per slot: the prompt whose whole chunks it holds from position 0 and how many of its
        # positions are valid (None: nothing reusable), and when it was last taken
        self._prompts: list[Optional[tuple[np.ndarray, int]]] = [None] * slots
        self._used = [0] * slots
        self._taken = 0
        self.queries = 0  # prompt tokens of the requests looked up
        self.hits = 0     # of those, the tokens found in a slot

    def slot_for(self, prompt: np.ndarray, free: Sequence[bool]) -> tuple[int, int, Optional[int]]:
        """(free slot, positions to keep, the state snapshot to resume from) for a one-row
        request: the slot holding the longest prefix of ``prompt`` that may be kept (at least
        one token is left to feed; with a recurrent state, up to its latest snapshot within the
        shared prefix), else the free slot used least recently (0 kept, no snapshot). Counts the
        lookup in queries and hits."""
        best, keep, snapshot = None, 0, None
        for s, is_free in enumerate(free):
            held = self._prompts[s]
            if not is_free or held is None or prompt.size < 2:
                continue
            cached, valid = held
            n = min(prompt.size - 1, valid)
            differ = np.flatnonzero(cached[:n] != prompt[:n])
            common = int(differ[0]) if differ.size else n
            whole = common // PREFILL_CHUNK * PREFILL_CHUNK
            if not (self.partial_reuse and whole + PREFILL_CHUNK <= min(valid, prompt.size)):
                common = whole  # the chunk is kept whole or not at all
            index = None
            if self.snapshots is not None:  # the state resumes at a snapshot: its boundary at most
                common, index = self.snapshots.latest(s, common)
            if common > keep:
                best, keep, snapshot = s, common, index
        self.queries += prompt.size
        self.hits += keep
        if best is None:
            best = self.least_recent(free)
        return best, keep, snapshot

    def place(self, prompt: np.ndarray, free: Sequence[bool], slots: Any, reuse: bool = True) -> tuple[int, int]:
        """(free slot, positions kept) for a one-row request of ``prompt``: ``slot_for``'s choice
        (the slot least recently used when not ``reuse``), its positions past the prefix
        dropped from ``slots`` (the engine's ``_core._ModelSlots``)."""
        if not reuse:
            return self.least_recent(free), 0
        slot, keep, snapshot = self.slot_for(prompt, free)
        try:
            if snapshot is not None:
                slots.resume(slot, keep, snapshot)
            else:
                slots.truncate(slot, keep)
        except ValueError:  # a sliding-window ring that wrapped: nothing to keep
            self.hits -= keep
            keep = 0
        return slot, keep

    def least_recent(self, free: Sequence[bool]) -> int:
        """The free slot taken least recently."""
        return min((s for s, is_free in enumerate(free) if is_free), key=self._used.__getitem__)

    def take(self, slot: int, kept: int = 0) -> None:
        """The slot starts a new request, keeping its first ``kept`` positions (and the state
        snapshots within them): it holds no reusable prompt until the request ends."""
        self._taken += 1
        self._used[slot] = self._taken
        self._prompts[slot] = None
        if self.snapshots is not None:
            self.snapshots.keep(slot, kept)

    def prefilled(self, slot: int, fed: int, slots: Any) -> None:
        """A one-row request's pass ended with ``fed`` prompt positions in ``slot``: at a chunk
        boundary, a hybrid model's state there is kept (StateSnapshots)."""
        if self.snapshots is not None and fed % PREFILL_CHUNK == 0:
            self.snapshots.take(slot, fed, slots)

    def remember(self, slot: int, prompt: np.ndarray, fed: int) -> None:
        """After a one-row request in ``slot``: it holds its prompt's whole chunks (those fed)."""
        valid = min(fed, prompt.size) // PREFILL_CHUNK * PREFILL_CHUNK
        if valid:
            self._prompts[slot] = (prompt, valid)
