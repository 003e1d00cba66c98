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
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from kvgen.generation.pass_plan import PREFILL_CHUNK


def free_run(free: Sequence[bool], rows: int) -> Optional[int]:
    """The first slot of the first ``rows`` consecutive free slots (a request's rows), None when none."""
    run = 0
    for s, is_free in enumerate(free):
        run = run + 1 if is_free else 0
        if run == rows:
            return s - rows + 1
    return None


class PrefixCache:
    """Which prompt each slot of an engine holds, and the choice of a slot for a new prompt.

    ``partial_reuse``: a prefix may end inside a chunk (Capabilities.partial_prefix_reuse)."""

    def __init__(self, slots: int, partial_reuse: bool):
        self.partial_reuse = partial_reuse
        # per slot: the prompt whose whole chunks it holds from position 0 and how many of its
        # positions are valid (None: nothing reusable), and when it was last taken
        self._prompts: list[Optional[tuple[np.ndarray, int]]] = [None] * slots
        self._used = [0] * slots
        self._taken = 0
        self.queries = 0  # prompt tokens of the requests looked up
        self.hits = 0     # of those, the tokens found in a slot

    def slot_for(self, prompt: np.ndarray, free: Sequence[bool]) -> tuple[int, int]:
        """(free slot, positions to keep) for a one-row request: the slot holding the longest
        prefix of ``prompt`` that may be kept (at least one token is left to feed), else the
        free slot used least recently (0 kept). Counts the lookup in queries and hits."""
        best, keep = None, 0
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
            if common > keep:
                best, keep = s, common
        self.queries += prompt.size
        self.hits += keep
        if best is None:
            best = self.least_recent(free)
        return best, keep

    def place(self, prompt: np.ndarray, free: Sequence[bool], slots: Any, reuse: bool = True) -> tuple[int, int]:
        """(free slot, positions kept) for a one-row request of ``prompt``: ``slot_for``'s choice
        (the slot least recently used when not ``reuse``), its positions past the prefix
        dropped from ``slots`` (the engine's ``_core._ModelSlots``)."""
        if not reuse:
            return self.least_recent(free), 0
        slot, keep = self.slot_for(prompt, free)
        try:
            slots.truncate(slot, keep)
        except ValueError:  # a sliding-window ring that wrapped: nothing to keep
            self.hits -= keep
            keep = 0
        return slot, keep

    def least_recent(self, free: Sequence[bool]) -> int:
        """The free slot taken least recently."""
        return min((s for s, is_free in enumerate(free) if is_free), key=self._used.__getitem__)

    def take(self, slot: int) -> None:
        """The slot starts a new request: it holds no reusable prompt until the request ends."""
        self._taken += 1
        self._used[slot] = self._taken
        self._prompts[slot] = None

    def remember(self, slot: int, prompt: np.ndarray, fed: int) -> None:
        """After a one-row request in ``slot``: it holds its prompt's whole chunks (those fed)."""
        valid = min(fed, prompt.size) // PREFILL_CHUNK * PREFILL_CHUNK
        if valid:
            self._prompts[slot] = (prompt, valid)
