"""Speculative decoding with the real SmolLM2 model: the slot cache's verification pass (the
logits of every drafted position in one forward) and its rollback, the drafters, and the
engine's speculative generation against its plain decode."""

from __future__ import annotations

import numpy as np
import pytest
from activation_modes import BF16

import kvgen
from kvgen import _core
from kvgen.generation import speculative_rows
from kvgen.generation.drafters import CostModel


@pytest.fixture
def model(smollm2_model):
    return smollm2_model


class _UntimedCost(CostModel):
    """The draft-cost estimate at its prior, not timed: whether a row drafts then depends on
    its acceptance alone, not on how loaded the machine running the tests is (the timed
    estimate has tests of its own)."""

    def observe(self, seconds: float, rows: int, extra: int) -> None:
        pass


@pytest.fixture(autouse=True)
def untimed_draft_cost(monkeypatch):
    monkeypatch.setattr(speculative_rows, "_cost_model", lambda model: _UntimedCost())


@pytest.fixture(params=["int8x2", "float", BF16])
def mode(request, model):
    before = model.activations
    model.activations = request.param
    yield request.param
    model.activations = before


def test_verify_logits_are_step_by_step_decode_logits_and_rollback_forgets(model, mode):
    prompt = np.array(model.encode("The quick brown fox jumps over the lazy dog. The quick brown fox"))
    drafts = [9, 500, 1200, 77, 3000]
    other = np.array(model.encode("An unrelated prompt that prefills beside the row"))
    slots = _core._ModelSlots(model._core, 3, 128, verify_positions=8)
    slots.forward([(0, prompt), (2, other[:4])])
    # the reference: one token at a time
    steps = []
    for t in drafts:
        slots.forward([(0, np.array([t]))])
        steps.append(slots.logits[0].copy())
    slots.truncate(0, prompt.size)
    # all positions at once, beside a prefill chunk of another slot and a plain decode row
    slots.forward([(2, other[4:]), (0, np.array(drafts)), (1, prompt[:3])], verify=[0])
    verify = slots.verify_logits
    assert verify.shape == (3, len(drafts), model.vocab_size)
    for i, expected in enumerate(steps):
        assert np.array_equal(verify[0, i], expected), f"position {i}"
    # roll back the last three drafts: the next decode is the one after the second draft
    slots.truncate(0, prompt.size + 2)
    assert slots.length(0) == prompt.size + 2
    slots.forward([(0, np.array([drafts[2]]))])
    assert np.array_equal(slots.logits[0], steps[2])
    # ... and a different token there continues as if the rejected ones were never fed
    slots.truncate(0, prompt.size + 2)
    slots.forward([(0, np.array([42]))])
    fresh = _core._ModelSlots(model._core, 1, 128)
    fresh.forward([(0, prompt)])
    fresh.forward([(0, np.array(drafts[:2]))])
    fresh.forward([(0, np.array([42]))])
    assert np.array_equal(slots.logits[0], fresh.logits[0])


@pytest.mark.parametrize("threads", [1, 2])
def test_verify_chunks_crossing_a_key_block_give_each_positions_decode_logits(model, threads):
    """A verify chunk's positions share each 256-position block of keys and values; every
    position still gets its own decode step's logits, bit for bit, where the chunk crosses into
    a new block (its first positions see one block fewer), for each chunk length, and beside
    a prefill chunk of another row and a decode row (batch order: verify, prefill, decode)."""
    before = kvgen.get_num_threads()
    kvgen.set_num_threads(threads)
    try:
        rng = np.random.default_rng(threads)
        context = 250
        slots = _core._ModelSlots(model._core, 3, 280, verify_positions=16)
        slots.forward([(1, rng.integers(100, 40000, size=context)), (2, rng.integers(100, 40000, size=5))])
        for n in (2, 7, 16):
            drafts = rng.integers(100, 40000, size=n)
            steps = []
            for t in drafts:
                slots.forward([(1, np.array([t]))])
                steps.append(slots.logits[1].copy())
            slots.truncate(1, context)
            for beside in ([], [(0, rng.integers(100, 40000, size=40)), (2, np.array([7]))]):
                slots.forward([(1, drafts), *beside], verify=[1])
                for i, expected in enumerate(steps):
                    assert np.array_equal(slots.verify_logits[1, i], expected), f"{n} positions: position {i}"
                slots.truncate(1, context)
                slots.reset(0)
                slots.truncate(2, 5)
    finally:
        kvgen.set_num_threads(before)


def test_verify_and_truncate_refuse_bad_requests(model):
    slots = _core._ModelSlots(model._core, 2, 64, verify_positions=4)
    slots.forward([(0, np.array([1, 2, 3]))])
    with pytest.raises(ValueError, match="verify_positions"):
        slots.forward([(0, np.arange(5))], verify=[0])
    with pytest.raises(ValueError, match="verify slot"):
        slots.forward([(0, np.arange(2))], verify=[1])
    with pytest.raises(ValueError, match="truncate"):
        slots.truncate(0, 4)
    with pytest.raises(ValueError, match="verify_positions"):
        _core._ModelSlots(model._core, 2, 64, verify_positions=65)


# ---- the engine: speculative generation gives plain decoding's tokens ----------------------------

def _grounded_prompt(model, words: int = 120) -> str:
    """An input-grounded prompt: a passage, then its start again, which the model goes on copying."""
    from pathlib import Path

    text = (Path(__file__).parent.parent / "data" / "pride_and_prejudice_ch1-2.txt").read_text()
    passage = " ".join(text.split()[200:200 + words])
    return f"{passage}\n\nThe same passage again:\n\n{' '.join(passage.split()[:12])}"


def test_prompt_lookup_greedy_gives_plain_greedy_tokens(model, mode):
    prompt = _grounded_prompt(model)
    generator = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=48))
    plain = generator.generate(prompt)
    plain_ids = generator.last_result.sequences[0][0]
    assert generator.last_stats.acceptance_rate is None
    speculative = generator.generate(prompt, prompt_lookup_num_tokens=8)
    assert np.array_equal(generator.last_result.sequences[0][0], plain_ids)
    assert speculative == plain
    stats = generator.last_stats
    assert stats.drafted_tokens > 0 and stats.accepted_tokens > 0  # the drafts were verified
    assert 0 < stats.acceptance_rate <= 1
    assert stats.decode_steps < len(plain_ids) - 1  # fewer forward passes than tokens
    assert "drafted tokens accepted" in stats.summary()


def test_prompt_lookup_through_stream_chat_and_generate_batch(model):
    prompt = _grounded_prompt(model, words=80)
    config = kvgen.GenerationConfig(max_new_tokens=24)
    generator = kvgen.Generator(model, config)
    plain = generator.generate(prompt)
    assert "".join(generator.stream(prompt, prompt_lookup_num_tokens=6)) == plain
    assert generator.last_stats.drafted_tokens > 0
    # a batch: speculating and plain requests side by side, one sampled (seeded: reproducible)
    prompts = [prompt, "The capital of France is", _grounded_prompt(model, words=60)]
    spec = kvgen.GenerationConfig(max_new_tokens=24, prompt_lookup_num_tokens=6)
    sampled = kvgen.GenerationConfig(max_new_tokens=24, prompt_lookup_num_tokens=6, do_sample=True,
                                     temperature=0.7, seed=5)
    batch = generator.generate_batch(prompts, [spec, config, sampled], max_batch=3)
    assert batch[0] == plain
    assert batch[1] == generator.generate(prompts[1])
    again = generator.generate_batch(prompts, [config, config, sampled], max_batch=2)
    assert again[2] == batch[2]
    messages = [{"role": "user", "content": "Repeat after me: " + prompt}]
    assert generator.chat(messages, prompt_lookup_num_tokens=6) == generator.chat(messages)


def test_speculation_refuses_beam_search(model):
    generator = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=4, num_beams=2))
    with pytest.raises(ValueError, match="beam search"):
        generator.generate("Hello", prompt_lookup_num_tokens=4)


def test_prompt_lookup_config_fields_are_checked():
    with pytest.raises(ValueError, match="prompt_lookup_num_tokens"):
        kvgen.GenerationConfig(prompt_lookup_num_tokens=0)
    with pytest.raises(ValueError, match="max_matching_ngram_size"):
        kvgen.GenerationConfig(max_matching_ngram_size=0)
    config = kvgen.GenerationConfig.from_hf({"prompt_lookup_num_tokens": 10, "max_matching_ngram_size": 3})
    assert (config.prompt_lookup_num_tokens, config.max_matching_ngram_size) == (10, 3)


def test_structured_output_stays_valid_and_identical_under_prompt_lookup(model):
    import json

    import jsonschema

    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40},
                                               "town": {"type": "string", "maxLength": 40},
                                               "daughters": {"type": "integer"}},
              "required": ["name", "town", "daughters"]}
    record = '{"name": "Mr. Bennet", "town": "Longbourn", "daughters": 5}'
    prompt = (f"Records of the neighbourhood:\n{record}\n{record.replace('Bennet', 'Lucas')}\n"
              f"The first record again, as JSON:\n")
    generator = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=40, json_schema=schema))
    plain = generator.generate(prompt)
    speculative = generator.generate(prompt, prompt_lookup_num_tokens=8, max_matching_ngram_size=3)
    assert speculative == plain
    jsonschema.validate(json.loads(speculative), schema)
    assert generator.last_stats.drafted_tokens > 0
    towns = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=8, choices=["Longbourn", "Netherfield"]))
    town = towns.generate(prompt + "The town: ", prompt_lookup_num_tokens=4)
    assert town == towns.generate(prompt + "The town: ") and town in ("Longbourn", "Netherfield")


def test_a_draft_model_gives_plain_greedy_tokens(model):
    """SmolLM2 drafting for itself: every greedy draft is accepted, the tokens are plain decoding's."""
    prompt = "The three primary colors are"
    plain = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=24))
    drafted = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=24), assistant_model=model)
    assert drafted.generate(prompt) == plain.generate(prompt)
    assert drafted.last_stats.drafted_tokens > 0
    assert drafted.last_stats.accepted_tokens == drafted.last_stats.drafted_tokens
    # per call, as transformers' generate(assistant_model=...)
    assert plain.generate(prompt, assistant_model=model) == plain.generate(prompt)
    with pytest.raises(ValueError, match="one drafter"):
        plain.generate(prompt, assistant_model=model, prompt_lookup_num_tokens=3)


def test_a_draft_model_catches_up_on_the_tokens_of_steps_it_did_not_draft(model):
    # a row that stops drafting is not fed to the draft model; when it drafts again the
    # model reads what the row kept meanwhile, and its drafts are greedy decoding's again
    from kvgen.generation.drafters import DraftModel

    greedy = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=12))
    tokens = [int(t) for t in model.encode("The three primary colors are")]
    expected = greedy.generate([tokens]).sequences[0][0].tolist()
    draft = DraftModel(model, model, 2, 128)
    draft.reset(1)
    draft.catch_up({1: tokens})  # the prompt, read with the request's prefill
    row = tokens + expected[:1]
    assert draft.propose({1: (row, 3)}) == {1: expected[1:4]}
    draft.rollback(1, len(row), 1)  # one draft accepted, then the row goes on without drafting
    row = tokens + expected[:7]
    assert draft.propose({1: (row, 4)}) == {1: expected[7:11]}


def test_a_draft_model_must_share_the_vocabulary(model):
    from kvgen.generation.drafters import DraftModel

    class Other:
        vocab_size = model.vocab_size + 1
        context_length = model.context_length

    with pytest.raises(ValueError, match="vocabulary"):
        DraftModel(Other(), model, 1, 64)


def test_token_streaming_under_prompt_lookup_yields_every_token(model):
    prompt = model.encode(_grounded_prompt(model, words=60))
    generator = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=20))
    plain = [int(step[0]) for step in generator.stream([prompt])]
    speculative = [int(step[0]) for step in generator.stream([prompt], prompt_lookup_num_tokens=6)]
    assert generator.last_stats.drafted_tokens > 0
    assert speculative == plain


def test_streamed_pieces_carry_each_of_their_tokens_logprobs_under_prompt_lookup(model):
    # a verified step emits several tokens (accepted drafts + the correction): each piece
    # carries the log-probs and top log-probs of exactly its tokens
    prompt = _grounded_prompt(model, words=80)
    generator = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=32, top_logprobs=3))
    plain = generator.generate(prompt)
    plain_result = generator.last_result
    generator.generate(prompt, prompt_lookup_num_tokens=6)
    whole = generator.last_result
    pieces = list(generator.stream(prompt, prompt_lookup_num_tokens=6))
    assert generator.last_stats.accepted_tokens > 0  # drafts were accepted: steps of several tokens
    assert generator.last_stats.decode_steps < generator.last_stats.new_tokens - 1
    assert "".join(pieces) == plain
    for piece in pieces:
        assert len(piece.logprobs) == len(piece.token_ids) == len(piece.top_logprobs)
    ids = [t for p in pieces for t in p.token_ids]
    logprobs = [lp for p in pieces for lp in p.logprobs]
    tops = [top for p in pieces for top in p.top_logprobs]
    assert ids == whole.sequences[0][0].tolist() == plain_result.sequences[0][0].tolist()
    assert logprobs == whole.token_logprobs[0][0].tolist()
    assert tops == [dict(zip(i.tolist(), lp.tolist()))
                    for i, lp in zip(whole.top_token_ids[0][0], whole.top_logprobs[0][0])]
    # the same distribution as the plain run's (up to the batched pass's float rounding)
    np.testing.assert_allclose(logprobs, plain_result.token_logprobs[0][0], atol=1e-3)
    assert [list(t) for t in tops] == plain_result.top_token_ids[0][0].tolist()


def test_the_draft_cost_estimate_recovers_from_slow_passes():
    # drafted passes slowed by other work push beta to its cap, where no draft pays: the
    # plain passes that follow must bring it back, or drafting stays off for the model
    from kvgen.generation.drafters import CostModel, DraftLength

    cost, length = CostModel(), DraftLength(10, prior_rate=0.9)
    cost.observe(0.01, 1, 0)
    for _ in range(10):
        cost.observe(0.2, 1, 2)  # a loaded machine: 2 draft tokens cost 10 rows
    assert cost.beta == 1.0 and length.choose(cost.beta) == 0
    for _ in range(60):
        cost.observe(0.01, 1, 0)
    assert length.choose(cost.beta) > 0


def test_prompt_lookup_takes_the_occurrence_whose_match_reaches_furthest_back():
    # the row ends with "... 7 1 2": the 2-gram "1 2" occurred three times; the latest
    # (after "9") is not the place being copied, the one after "7" matches 3 tokens
    from kvgen.generation.drafters import NgramLookup

    tokens = [5, 7, 1, 2, 30, 31, 32, 8, 1, 2, 40, 9, 1, 2, 50, 51, 6, 7, 1, 2]
    lookup = NgramLookup(tokens, max_ngram=2)
    assert lookup.match() == (4, 3)
    assert lookup.propose(3) == [30, 31, 32]
    # among equally long matches the latest wins (transformers-style latest occurrence)
    lookup = NgramLookup([1, 2, 10, 3, 1, 2, 20, 1, 2], max_ngram=2)
    assert lookup.match() == (6, 2) and lookup.propose(2) == [20, 1]
    # falls back to 1-grams (n from max_matching_ngram_size down to 1), [] without any match
    lookup = NgramLookup([4, 3, 9, 3], max_ngram=2)
    assert lookup.match() == (2, 1) and lookup.propose(5) == [9, 3]
    assert NgramLookup([1, 2, 3], max_ngram=2).propose(4) == []
    # the match is measured at most MAX_MATCH back, and extend keeps the index current
    copy = list(range(100, 100 + NgramLookup.MAX_MATCH + 5))
    lookup = NgramLookup(copy + [0], max_ngram=2)
    lookup.extend(copy[:-3])
    assert lookup.match() == (len(copy) - 3, NgramLookup.MAX_MATCH)
    assert lookup.propose(4) == copy[-3:] + [0]


def test_prompt_lookup_drafts_long_after_long_matches_and_not_after_short_ones():
    # each match length keeps its own acceptance estimate: a long match drafts many tokens
    # from the start, a 1-token match drafts none until its drafts prove right
    from kvgen.generation.drafters import MatchLengths

    lengths = MatchLengths(10)
    beta = 0.4
    assert lengths[1].choose(beta) == 0
    assert lengths[32].choose(beta) > lengths[3].choose(beta) > 0
    for _ in range(20):
        lengths[1].observe(1, 1)  # 1-token matches that keep being right
    assert lengths[1].choose(beta) > 0
    assert lengths[2] is not lengths[1] and lengths[16] is lengths[32]


def test_the_draft_models_vocabulary_check_is_remembered_per_tokenizer_pair():
    from kvgen.generation.drafters import _same_vocab

    class Tok:
        def __init__(self, vocab):
            self.vocab, self.calls = vocab, 0

        def get_vocab(self):
            self.calls += 1
            return self.vocab

    a, b, c = Tok({"x": 0, "y": 1}), Tok({"x": 0, "y": 1}), Tok({"x": 1, "y": 0})
    assert _same_vocab(a, b) and _same_vocab(a, b)
    assert a.calls == b.calls == 1
    assert not _same_vocab(a, c) and not _same_vocab(a, c)  # a mismatch is compared again, never remembered
    assert c.calls == 2
