"""A prompt's logits do not depend on how many prompt chunks a pass carries: the engine feeds a
request several chunks per pass where the pass has room (SOLO_PREFILL_CHUNKS, PREFILL_BUDGET),
else one. A layer that keeps every position attends every token on its own, as a decode step does;
a sliding window's ring attends chunks in kPrefillChunk-aligned query blocks either way, and a last
piece of at most TOKEN_BY_TOKEN_ATTENTION tokens token by token, so the engine gives it a pass of its
own in both cases."""

from __future__ import annotations

import numpy as np
import pytest
from teacher_forcing import slot_logits

import kvgen
from kvgen import _core
from kvgen.generation.pass_plan import PREFILL_CHUNK, SOLO_PREFILL_CHUNKS, TOKEN_BY_TOKEN_ATTENTION


def test_a_prompt_gets_the_same_logits_in_one_pass_as_in_one_chunk_per_pass(smollm2_model):
    assert SOLO_PREFILL_CHUNKS > 1
    threads = kvgen.get_num_threads()
    rng = np.random.default_rng(5)
    prompt = rng.integers(0, smollm2_model.vocab_size, 3 * PREFILL_CHUNK + 7).astype(np.int64)
    try:
        for t in (1, 2):
            kvgen.set_num_threads(t)
            slots = _core._ModelSlots(smollm2_model._core, 3, 256)
            whole = prompt.size // PREFILL_CHUNK * PREFILL_CHUNK
            assert 0 < prompt.size - whole <= TOKEN_BY_TOKEN_ATTENTION
            slots.forward([(0, prompt[:whole])])  # every whole chunk in one pass, then the short last piece
            slots.forward([(0, prompt[whole:])])
            for c in range(0, prompt.size, PREFILL_CHUNK):  # one chunk per pass
                slots.forward([(1, prompt[c:c + PREFILL_CHUNK])])
            # from a cached whole chunk on, two chunks per pass: the query blocks still end at
            # multiples of the chunk
            slots.forward([(2, prompt[:PREFILL_CHUNK])])
            slots.forward([(2, prompt[PREFILL_CHUNK:whole])])
            slots.forward([(2, prompt[whole:])])
            np.testing.assert_array_equal(slots.logits[0], slots.logits[1])
            np.testing.assert_array_equal(slots.logits[2], slots.logits[1])
            # the next token's step too (it attends every cached position)
            step = np.array([int(slots.logits[0].argmax())])
            slots.forward([(0, step), (1, step), (2, step)])
            np.testing.assert_array_equal(slots.logits[0], slots.logits[1])
            np.testing.assert_array_equal(slots.logits[2], slots.logits[1])
    finally:
        kvgen.set_num_threads(threads)



def test_a_full_attention_prompt_gets_the_logits_of_its_decode_steps(smollm2_model):
    """SmolLM2 keeps every position in every layer, so a long prompt chunk attends token by token
    (pieces of TOKEN_BY_TOKEN_ATTENTION tokens sharing each block of keys and values): every
    position's logits are its decode step's bit for bit, across blocks of 256 positions, at 1 and 2
    threads, and with the pass's partial results held a piece at a time (its smallest budget)."""
    rng = np.random.default_rng(23)
    prompt = rng.integers(0, smollm2_model.vocab_size, 300).astype(np.int64)
    threads = kvgen.get_num_threads()
    try:
        kvgen.set_num_threads(1)
        steps = slot_logits(smollm2_model, prompt, 1)
        assert np.isfinite(steps).all()
        for t in (1, 2):
            kvgen.set_num_threads(t)
            np.testing.assert_array_equal(slot_logits(smollm2_model, prompt, prompt.size), steps)
            np.testing.assert_array_equal(slot_logits(smollm2_model, prompt, 4 * PREFILL_CHUNK), steps)
            before = _core._set_attention_parts_budget(0)
            try:
                np.testing.assert_array_equal(slot_logits(smollm2_model, prompt, prompt.size), steps)
            finally:
                _core._set_attention_parts_budget(before)
    finally:
        kvgen.set_num_threads(threads)


def test_the_attention_parts_budget_is_checked():
    with pytest.raises(ValueError, match="negative"):
        _core._set_attention_parts_budget(-1)


def test_a_request_gets_the_same_tokens_in_passes_of_several_chunks_as_of_one(smollm2_model, monkeypatch):
    """Alone, a request feeds SOLO_PREFILL_CHUNKS chunks per pass; beside others, one chunk per
    pass. Prompts whose last piece is attended token by token (7 tokens) or with matrix products
    (20 tokens) get bit-identical tokens and log-probs either way."""
    import kvgen.generation.pass_plan as engine

    model = smollm2_model
    rng = np.random.default_rng(11)
    config = kvgen.GenerationConfig(max_new_tokens=4)
    for tail in (7, 20):
        prompt = rng.integers(0, model.vocab_size, 3 * PREFILL_CHUNK + tail).astype(np.int64)
        several = kvgen.Generator(model, config, prefix_cache=False).generate([prompt])
        with monkeypatch.context() as m:
            m.setattr(engine, "SOLO_PREFILL_CHUNKS", 1)
            one = kvgen.Generator(model, config, prefix_cache=False).generate([prompt])
        assert np.array_equal(several.sequences[0][0], one.sequences[0][0])
        assert np.array_equal(several.token_logprobs[0][0], one.token_logprobs[0][0])


def test_requests_that_arrive_together_prefill_in_the_same_passes(smollm2_model):
    """A pass carries the chunks of every request still prefilling, up to PREFILL_BUDGET tokens:
    4 prompts of 2 chunks beside a running row take at most 2 passes, not 8, and every request
    gets the tokens of its own generate call."""
    from kvgen.generation.engine import Engine, Request
    from kvgen.generation.pass_plan import PREFILL_BUDGET
    from kvgen.generation.request_setup import RequestSetup

    model = smollm2_model
    rng = np.random.default_rng(5)
    config = kvgen.GenerationConfig(max_new_tokens=8, do_sample=True, seed=2, top_k=20)
    prompts = [rng.integers(0, model.vocab_size, n).astype(np.int64) for n in (5, 64, 61, 58, 55)]
    assert 4 * PREFILL_CHUNK <= PREFILL_BUDGET

    def request(p):
        return Request([p], RequestSetup(config).token_selector(model), engine.context)

    engine = Engine(model, slots=5)
    running = engine.add(request(prompts[0]))
    engine.step()  # alone: its prompt in one pass, its first token
    assert not running.prefilling
    newcomers = [engine.add(request(p)) for p in prompts[1:]]
    engine.step()
    engine.step()
    assert not any(r.prefilling for r in newcomers) and len(running.selector.sequences[0]) == 5 + 3
    requests = [running, *newcomers]
    while not all(r.done() for r in requests):
        engine.step()
    for r, p in zip(requests, prompts):
        alone = kvgen.Generator(model, config, prefix_cache=False).generate([p])
        assert np.array_equal(r.wait().sequences[0][0], alone.sequences[0][0])
