"""plan_pass without a model: which rows a forward pass feeds, which prompt chunks it carries
(at fixed offsets, within the budget), what returns every position's logits (verification,
prompt scoring) and LongRoPE's recompute, on hand-made request states."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pytest

from kvgen.generation.pass_plan import (
    PREFILL_BUDGET,
    PREFILL_CHUNK,
    SOLO_PREFILL_CHUNKS,
    TOKEN_BY_TOKEN_ATTENTION,
    plan_pass,
)

C = PREFILL_CHUNK


@dataclass
class _Selector:
    sequences: list = field(default_factory=list)


@dataclass
class _Request:
    """The request state plan_pass reads (kvgen.generation.request.Request's fields)."""

    prompts: list
    first_slot: int
    rows_per_prompt: int = 1
    fed: int = 0
    next_tokens: Optional[np.ndarray] = None
    running: list = field(default_factory=lambda: [True])
    score_top: Optional[int] = None
    poolers: list = field(default_factory=list)  # an embedding request's
    verifying: list = field(default_factory=list)
    drafts: list = field(default_factory=list)
    selector: _Selector = field(default_factory=_Selector)

    @property
    def rows(self) -> int:
        return len(self.prompts) * self.rows_per_prompt

    @property
    def longest(self) -> int:
        return max(p.size for p in self.prompts)

    @property
    def prefilling(self) -> bool:
        return self.fed < self.longest


def _prompt(n: int, start: int = 0) -> np.ndarray:
    return np.arange(start, start + n, dtype=np.int64)


def _decoding(slot: int, token: int = 7) -> _Request:
    return _Request([_prompt(3)], slot, fed=3, next_tokens=np.array([token], dtype=np.int64))


def _run(requests, **options):
    """Plans passes until no request prefills, applying each plan's fed positions as the engine
    does; the plans."""
    options.setdefault("scoring_positions", 2 * C + 1)
    plans = []
    while any(r.prefilling for r in requests):
        plan = plan_pass(requests, **options)
        for r, fed in plan.fed:
            r.fed = fed
        plans.append(plan)
        assert len(plans) < 1000
    return plans


def test_a_lone_prompt_is_fed_in_whole_chunks_from_its_start_and_the_plan_changes_nothing():
    r = _Request([_prompt(5 * C + 3)], first_slot=2)
    plan = plan_pass([r], scoring_positions=1)
    assert r.fed == 0  # planning reads the request only
    assert [(c.slot, c.tokens.tolist()) for c in plan.chunks] == [(2, list(range(SOLO_PREFILL_CHUNKS * C)))]
    assert plan.fed == [(r, SOLO_PREFILL_CHUNKS * C)] and plan.ready == []
    assert plan.prefill_tokens == SOLO_PREFILL_CHUNKS * C and not plan.decodes_only
    plans = _run([r], scoring_positions=1)
    offsets = [p.fed[0][1] for p in plans]
    # then the last whole chunk, and its 3 tokens after (short enough to be attended token by
    # token: a pass of their own); the tokens arrive in order, each once
    assert offsets == [SOLO_PREFILL_CHUNKS * C, 5 * C, 5 * C + 3]
    assert np.array_equal(np.concatenate([c.tokens for p in plans for c in p.chunks]), r.prompts[0])
    assert plans[-1].ready == [r] and not any(c.all_logits or c.in_blocks for p in plans for c in p.chunks)


def test_a_short_last_piece_gets_a_pass_of_its_own():
    tail = TOKEN_BY_TOKEN_ATTENTION  # attended token by token: never in a pass with the chunk before it
    r = _Request([_prompt(C + tail)], first_slot=0)
    sizes = [[c.tokens.size for c in p.chunks] for p in _run([r])]
    assert sizes == [[C], [tail]]
    longer = _Request([_prompt(C + tail + 1)], first_slot=0)  # matrix products: in the same pass
    assert [[c.tokens.size for c in p.chunks] for p in _run([longer])] == [[C + tail + 1]]


def test_running_rows_decode_beside_newcomers_that_share_the_budget_first_come_first_served():
    running = _decoding(0)
    newcomers = [_Request([_prompt(3 * C, 100 * i)], first_slot=1 + i) for i in range(4)]
    plan = plan_pass([running, *newcomers], scoring_positions=1)
    assert plan.chunks[0].slot == 0 and plan.chunks[0].tokens.tolist() == [7]
    assert plan.decode_rows == 1 and running in plan.ready
    fed = {r.first_slot: n for r, n in plan.fed}
    # the first newcomer takes SOLO_PREFILL_CHUNKS chunks' room if it needs it (3 here), the next
    # ones what is left of PREFILL_BUDGET; a prompt that does not fit waits
    assert fed[1] == 3 * C and sum(fed.values()) <= PREFILL_BUDGET
    assert plan.prefill_tokens == sum(fed.values())
    assert [c.slot for c in plan.chunks] == [0, *sorted(fed)]


def test_a_decode_only_pass_and_verification_chunks():
    plain, drafting = _decoding(0), _decoding(1, token=9)
    drafting.verifying, drafting.drafts = [2], [[4, 5]]
    plan = plan_pass([plain, drafting], scoring_positions=3)
    assert [(c.slot, c.tokens.tolist(), c.all_logits) for c in plan.chunks] == [(0, [7], False), (1, [9, 4, 5], True)]
    assert plan.decodes_only and plan.decode_rows == 2 and plan.draft_tokens == 2 and plan.fed == []
    done_row = _decoding(2)
    done_row.running = [False]
    assert plan_pass([done_row], scoring_positions=1).chunks == []


def test_the_rest_of_a_chunk_after_a_cached_prefix_is_fed_in_blocks_up_to_the_next_boundary():
    r = _Request([_prompt(3 * C)], first_slot=4, fed=C + 5)  # 5 positions of the second chunk are cached
    plan = plan_pass([r], scoring_positions=1)
    (chunk,) = plan.chunks
    assert chunk.in_blocks and chunk.tokens[0] == C + 5 and plan.fed == [(r, 3 * C)]


@pytest.mark.parametrize("scoring_positions", [C, 2 * C + 1])
def test_a_scored_prompt_returns_every_position_and_interleaves_with_decode_steps(scoring_positions):
    """A prompt scored in chunks of at most scoring_positions whole chunks, every pass beside the
    running row's next token: the running row never waits for the whole prompt."""
    running = _decoding(0)
    scored = _Request([_prompt(10 * C + 7)], first_slot=1, score_top=20)
    plans = _run([running, scored], scoring_positions=scoring_positions)
    per_pass = scoring_positions // C * C
    assert len(plans) == -(-scored.longest // per_pass)
    for p in plans:
        assert running in p.ready and p.decode_rows == 1  # a decode step in every pass
        (chunk,) = [c for c in p.chunks if c.slot == 1]
        assert chunk.all_logits and chunk.tokens.size <= per_pass
        (piece,) = p.scored
        assert (piece.request, piece.prompt, piece.slot, piece.count) == (scored, 0, 1, chunk.tokens.size)
        assert np.array_equal(scored.prompts[0][piece.start:piece.start + piece.count], chunk.tokens)
    assert [p.scored[0].start for p in plans] == [i * per_pass for i in range(len(plans))]
    assert plans[-1].ready == [running, scored]


def test_long_rope_prompts_go_in_one_piece_and_rows_crossing_the_switch_restart():
    switch = 2 * C
    long = _Request([_prompt(3 * C)], first_slot=1)
    other = _Request([_prompt(C)], first_slot=2)
    lengths = {0: switch, 3: switch + 4}
    crossing = _decoding(0, token=11)
    crossing.selector.sequences = [_prompt(switch + 1)]
    past = _decoding(3, token=12)
    options = dict(scoring_positions=1, recompute_past=switch, slot_length=lengths.__getitem__)
    plan = plan_pass([crossing, past, other, long], **options)
    # the crossing row again from its first token, the row past the switch alone with it
    assert [(c.slot, c.tokens.size, c.restart) for c in plan.long_chunks] == [(0, switch + 1, True), (3, 1, False)]
    assert [c.slot for c in plan.chunks] == [2]  # the long prompt waits: the pass carries other prompt tokens
    plan = plan_pass([long], **options)
    assert [(c.slot, c.tokens.size) for c in plan.long_chunks] == [(1, 3 * C)] and plan.ready == [long]
    crossing.selector.sequences = [_prompt(switch + 3)]
    with pytest.raises(RuntimeError, match="caches"):
        plan_pass([crossing], **options)


def test_a_hybrid_models_prefix_cache_cuts_a_prompt_at_its_last_whole_chunk_boundary():
    # a tail longer than token-by-token attention is fed with the chunks before it, unless the
    # prefix cache snapshots a recurrent state at the prompt's last boundary
    size = 2 * C + TOKEN_BY_TOKEN_ATTENTION + 3
    plain = _run([_Request([_prompt(size)], first_slot=0)])
    assert [c.tokens.size for p in plain for c in p.chunks] == [size]
    cut = _run([_Request([_prompt(size)], first_slot=0)], cut_at_last_boundary=True)
    assert [c.tokens.size for p in cut for c in p.chunks] == [2 * C, TOKEN_BY_TOKEN_ATTENTION + 3]
    # pieces past the budget of one pass end at boundaries anyway, the last one where it is
    longer = _run([_Request([_prompt(6 * C + 20)], first_slot=0)], cut_at_last_boundary=True)
    assert [c.tokens.size for p in longer for c in p.chunks] == [SOLO_PREFILL_CHUNKS * C, 2 * C, 20]
