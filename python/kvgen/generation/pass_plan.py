"""What one forward pass of the engine carries: ``plan_pass``, a pure function of the running
requests' state (it reads them, changes nothing, needs no model), and the PassPlan it returns.

A pass carries every running row's last token plus prompt chunks of requests still
prefilling, first come first served: at most PREFILL_BUDGET prompt tokens per pass, and up to
SOLO_PREFILL_CHUNKS chunks of a one-prompt request (a request of several prompts feeds one
chunk of each). Requests that arrive together prefill in a few large passes, so a running row
waits a few times rather than once per chunk of every newcomer, and the first of them get
their first token first.

Prompts are cut into chunks at fixed offsets from their start (0, C, 2C, ...), here only, and
the model computes each row from its own tokens and cache only (the quantized kernels keep one
accumulator per row), so greedy and seeded outputs do not depend on what else is in the batch:
tests/generation/test_engine.py checks the logits bit for bit.

A request that scores its prompt (prompt log-probs) feeds its chunks with the logits of every
position, as verification does, at most as many positions per pass as the slot cache returns
(``scoring_positions``, whole chunks): its prompt interleaves with the other rows' decode steps
like any prompt.

An embedding request (``request.poolers``) feeds its chunks with their hidden states asked for
(``Chunk.hidden``: the final-normed hidden states of every position, and no logits), pooled by
the request after the pass: like a scored prompt, it interleaves with the other rows' decode
steps within the same budget of prompt tokens.

A request whose rows verify drafts (``request.verifying``, speculative decoding) feeds each
running row its next token and drafts as one chunk with the logits of every position.

A model with LongRoPE (Phi-3) computes a row with its long rotary factors once the row's
sequence is longer than the original context (``recompute_past``), from the first position on,
as transformers' Phi-3 does: a prompt longer than that is fed in one piece, a row whose
generation reaches it is computed again from its first token (``Chunk.restart``), and such rows
run in a forward pass of their own (the core picks the factors per pass, from its largest
position).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from kvgen import _core

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


@dataclass(frozen=True)
class Chunk:
    """Tokens fed to one slot in a pass."""

    slot: int
    tokens: np.ndarray        # int64 [count]
    all_logits: bool = False  # the logits of every position (verification, prompt scoring), not the last one's
    in_blocks: bool = False   # the rest of a prompt chunk whose first positions are cached (the prefix cache)
    restart: bool = False     # the slot is emptied first: the row is computed again from its first token
    hidden: bool = False      # the final hidden states of every position instead of logits (embeddings)


@dataclass(frozen=True)
class ScoredPiece:
    """A prompt chunk whose every position's logits score the prompt (prompt log-probs)."""

    request: Any
    prompt: int   # which prompt of the request
    slot: int
    start: int    # the prompt position of the chunk's first token
    count: int    # its tokens


@dataclass(frozen=True)
class EmbeddedPiece:
    """A prompt chunk whose hidden states are pooled into its prompt's embedding."""

    request: Any
    prompt: int   # which prompt of the request
    slot: int
    start: int    # the prompt position of the chunk's first token


@dataclass
class PassPlan:
    """What one forward pass carries and what follows it."""

    chunks: list[Chunk] = field(default_factory=list)       # the pass
    long_chunks: list[Chunk] = field(default_factory=list)  # LongRoPE rows past the switch: a pass of their own
    fed: list[tuple[Any, int]] = field(default_factory=list)  # (prefilling request, its prompt positions fed after)
    scored: list[ScoredPiece] = field(default_factory=list)   # the chunks that score their prompt
    embedded: list[EmbeddedPiece] = field(default_factory=list)  # the chunks whose hidden states are pooled
    ready: list[Any] = field(default_factory=list)  # the requests whose logits are ready after the pass: stepped
    prefill_tokens: int = 0  # prompt tokens in the pass
    decode_rows: int = 0     # running rows fed their next token
    draft_tokens: int = 0    # the draft tokens fed with them

    @property
    def decodes_only(self) -> bool:
        """No prompt tokens: the pass times what its rows and draft tokens cost."""
        return self.prefill_tokens == 0 and not self.long_chunks

    def requests(self) -> list[Any]:
        """Every request with tokens in the pass."""
        out = list(self.ready)
        out += [r for r, _ in self.fed if all(r is not q for q in out)]
        return out


def plan_pass(requests: Sequence[Any], *, scoring_positions: int, recompute_past: Optional[int] = None,
              slot_length: Callable[[int], int] = lambda slot: 0, cut_at_last_boundary: bool = False) -> PassPlan:
    """The next forward pass over the admitted ``requests`` (kvgen.generation.request.Request:
    first_slot, prompts, fed, ... are read, nothing is changed); see the module docstring.

    ``scoring_positions``: the most positions whose logits a chunk may return (the slot cache's
    verify_positions); ``recompute_past``: LongRoPE's switch (None: no LongRoPE);
    ``slot_length(slot)``: positions a slot caches (read only with LongRoPE);
    ``cut_at_last_boundary``: a one-row prompt's piece ends at its last whole-chunk boundary,
    where a hybrid model's prefix cache snapshots the state (kvgen.generation.prefix_cache)."""
    plan = PassPlan()
    budget = PREFILL_BUDGET
    switch = recompute_past
    for r in requests:
        first = r.first_slot
        if r.prefilling and switch and r.longest > switch:
            # a prompt past LongRoPE's switch is computed with the long factors throughout: in one piece
            if budget < PREFILL_BUDGET:
                continue  # the pass already carries other prompt tokens
            budget = 0
            for i, p in enumerate(r.prompts):
                chunk = Chunk(first + i * r.rows_per_prompt, p, hidden=bool(r.poolers))
                (plan.long_chunks if p.size > switch else plan.chunks).append(chunk)
                plan.prefill_tokens += p.size
                if r.poolers:
                    plan.embedded.append(EmbeddedPiece(r, i, chunk.slot, 0))
            plan.fed.append((r, r.longest))
            plan.ready.append(r)
            continue
        if r.prefilling:
            size = _plan_prefill(plan, r, budget, scoring_positions, cut_at_last_boundary and r.rows == 1)
            if size:
                budget -= size
            continue
        _plan_decode(plan, r, switch, slot_length)
    return plan


def _plan_prefill(plan: PassPlan, r: Any, budget: int, scoring_positions: int, cut_at_last_boundary: bool) -> int:
    """Adds the request's next prompt chunks to the plan, if they fit; the prompt tokens added.
    ``cut_at_last_boundary``: a piece that would go past the prompt's last whole-chunk boundary
    ends there (the rest, in a pass of its own, is computed as it would be in one piece)."""
    # the next chunk of every prompt of the request, at offsets fixed by the prompts alone
    # up to the next chunk boundary: a whole chunk, or the rest of one after a cached prefix
    # (one-row requests; in_blocks), then more whole chunks where the pass has room
    rest = r.fed % PREFILL_CHUNK > 0
    take = PREFILL_CHUNK - r.fed % PREFILL_CHUNK
    scores = r.score_top is not None
    if len(r.prompts) == 1:
        whole = max(1, min(SOLO_PREFILL_CHUNKS, budget // PREFILL_CHUNK))
        if scores:  # every position's logits: as many as the slot cache returns
            whole = min(whole, max(1, scoring_positions // PREFILL_CHUNK))
        take += PREFILL_CHUNK * (whole - 1)
        # a last piece short enough to be attended token by token gets a pass of its own, as
        # it does one chunk per pass: the prompt's logits do not depend on the pass sizes
        left = r.longest - r.fed
        tail = r.longest % PREFILL_CHUNK
        if left <= take and left > tail and 0 < tail <= TOKEN_BY_TOKEN_ATTENTION:
            take = left - tail
        last = r.longest - tail
        if cut_at_last_boundary and r.fed < last < r.fed + take:
            take = last - r.fed
    pieces = [(i, r.first_slot + i * r.rows_per_prompt, p[r.fed:r.fed + take])
              for i, p in enumerate(r.prompts) if p.size > r.fed]
    size = sum(piece.size for *_, piece in pieces)
    if size > budget and budget < PREFILL_BUDGET:
        return 0  # the pass already carries other prompt tokens
    for i, slot, piece in pieces:
        plan.chunks.append(Chunk(slot, piece, all_logits=scores, in_blocks=rest and i == 0, hidden=bool(r.poolers)))
        if scores:
            plan.scored.append(ScoredPiece(r, i, slot, r.fed, piece.size))
        if r.poolers:
            plan.embedded.append(EmbeddedPiece(r, i, slot, r.fed))
    plan.prefill_tokens += size
    fed = min(r.fed + take, r.longest)
    plan.fed.append((r, fed))
    if fed >= r.longest:
        plan.ready.append(r)
    return size


def _plan_decode(plan: PassPlan, r: Any, switch: Optional[int], slot_length: Callable[[int], int]) -> None:
    """Adds each running row's next token (with its drafts when the request verifies) to the plan."""
    assert r.next_tokens is not None
    sequences = None
    for k in range(r.rows):
        if not r.running[k]:
            continue
        slot = r.first_slot + k
        cached = slot_length(slot) if switch else 0
        if switch and cached == switch:
            # the row crosses LongRoPE's switch: computed again, with the long factors (transformers'
            # Phi-3 drops its cache here); its cached positions had the short ones
            sequences = r.selector.sequences if sequences is None else sequences
            if sequences[k].size != cached + 1:
                raise RuntimeError(f"slot {slot} caches {cached} positions for {sequences[k].size} tokens")
            plan.long_chunks.append(Chunk(slot, sequences[k], restart=True))
        elif r.verifying:
            tokens = np.array([int(r.next_tokens[k]), *r.drafts[k]], dtype=np.int64)
            plan.chunks.append(Chunk(slot, tokens, all_logits=True))
            plan.draft_tokens += len(r.drafts[k])
        else:
            chunk = Chunk(slot, r.next_tokens[k:k + 1])
            (plan.long_chunks if switch and cached > switch else plan.chunks).append(chunk)
    plan.decode_rows += sum(r.running)
    plan.ready.append(r)
