"""Continuous batching (kvgen.generation.engine) with the real SmolLM2 model: a row's logits do not
depend on the other rows of a forward pass, so the batch call gives each prompt exactly
what its own ``generate`` call gives."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

import kvgen
import kvgen.generation.pass_plan
from kvgen import _core
from kvgen.generation.engine import Engine


@pytest.fixture
def model(smollm2_model):
    return smollm2_model


def _logits_after(model, prompt, others, slot, threads):
    """slot's logits after prefilling `prompt` and one decode step, beside `others` in the same passes."""
    kvgen.set_num_threads(threads)
    slots = _core._ModelSlots(model._core, 8, 256)
    spare = [s for s in range(8) if s != slot]
    chunks = [(slot, np.array(prompt))] + [(s, o) for s, o in zip(spare, others)]
    slots.forward(chunks)
    prefill = slots.logits[slot].copy()
    slots.forward([(slot, np.array([int(prefill.argmax())]))] + [(s, o[:1]) for s, o in chunks[1:]])
    return prefill, slots.logits[slot].copy()


def test_a_rows_logits_are_bit_identical_whatever_else_is_in_the_batch(model):
    threads = kvgen.get_num_threads()
    try:
        prompt = model.encode("The three primary colors are red, blue and")
        alone = _logits_after(model, prompt, [], slot=0, threads=1)
        # the reference: the model's own forward over the whole prompt
        assert np.array_equal(model.forward([prompt])[0, -1], alone[0])
        rng = np.random.default_rng(0)
        for k, t in [(1, 1), (3, 2), (7, 2), (7, 3)]:  # other rows of 1 to 40 tokens; 1 to 3 threads
            others = [rng.integers(0, model.vocab_size, int(n)).astype(np.int64) for n in rng.integers(1, 40, k)]
            batched = _logits_after(model, prompt, others, slot=k % 5, threads=t)
            assert np.array_equal(batched[0], alone[0]) and np.array_equal(batched[1], alone[1])
    finally:
        kvgen.set_num_threads(threads)


def test_a_prompt_longer_than_a_prefill_chunk_gets_the_tokens_of_a_single_call(model):
    """Both cut a prompt into chunks at the same offsets (one pass over the whole prompt would
    sum attention in another order), while the engine's other rows decode beside them."""
    long = model.encode(" ".join(f"word{i}" for i in range(140)))
    assert len(long) > 2 * kvgen.generation.pass_plan.PREFILL_CHUNK
    prompts = [model.encode("Hi there"), long, model.encode("Count: 1, 2,"), long]
    config = kvgen.GenerationConfig(max_new_tokens=6, do_sample=True, seed=3)
    singles = [kvgen.Generator(model, config).generate([p]) for p in prompts]
    batched = kvgen.Generator(model, config).generate_batch(prompts, max_batch=3)
    assert all(_same(s, b) for s, b in zip(singles, batched))


def test_slots_check_their_arguments(model):
    slots = _core._ModelSlots(model._core, 2, 16)
    with pytest.raises(ValueError, match="appears twice"):
        slots.forward([(0, np.array([1])), (0, np.array([2]))])
    with pytest.raises(ValueError, match="outside"):
        slots.forward([(2, np.array([1]))])
    with pytest.raises(ValueError, match="context overflow"):
        slots.forward([(1, np.arange(17))])
    with pytest.raises(ValueError, match="context"):
        _core._ModelSlots(model._core, 2, model.context_length + 1)
    assert slots.length(0) == slots.length(1) == 0  # a refused forward computes nothing


def _configs(n):
    """Greedy and seeded sampling, with their own temperatures, penalties, lengths and stops."""
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(kvgen.GenerationConfig(max_new_tokens=3 + i % 5, repetition_penalty=1.0 + (i % 3) / 10))
        else:
            out.append(kvgen.GenerationConfig(max_new_tokens=4 + i % 3, do_sample=True, temperature=0.5 + i / 64,
                                              top_p=0.9, seed=i, frequency_penalty=0.2 * (i % 2),
                                              num_return_sequences=1 + (i % 7 == 1), stop_strings=["."]))
    return out


def _same(a: kvgen.GenerationResult, b: kvgen.GenerationResult) -> bool:
    return (a.finish_reasons == b.finish_reasons
            and all(np.array_equal(x, y) for pa, pb in zip(a.sequences, b.sequences) for x, y in zip(pa, pb))
            and all(np.array_equal(x, y) for pa, pb in zip(a.token_logprobs, b.token_logprobs) for x, y in zip(pa, pb)))


def test_the_batch_call_on_64_prompts_equals_64_single_calls_in_order(model):
    subjects = ["cats", "the sea", "bread", "music", "winter", "a robot", "maps", "tea"]
    prompts = [model.encode(f"Prompt {i}: a short note about {subjects[i % 8]}") for i in range(64)]
    configs = _configs(64)
    singles = [kvgen.Generator(model, c).generate([p]) for p, c in zip(prompts, configs)]
    batched = kvgen.Generator(model, kvgen.GenerationConfig()).generate_batch(prompts, configs, max_batch=8)
    assert len(batched) == 64
    assert all(_same(s, b) for s, b in zip(singles, batched))


def test_the_batch_call_on_text_returns_what_generate_returns(model):
    generator = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=5))
    prompts = ["Hello", "The capital of France is", "1, 2, 3,"]
    assert generator.generate_batch(prompts, max_batch=2, progress=True) == [generator.generate(p) for p in prompts]


def test_beam_search_in_the_engine_equals_beam_search_alone(model):
    config = kvgen.GenerationConfig(max_new_tokens=6, num_beams=3, num_return_sequences=2)
    prompt = model.encode("The best way to learn is")
    alone = kvgen.Generator(model, config).generate([prompt])
    greedy = kvgen.GenerationConfig(max_new_tokens=9)
    batched = kvgen.Generator(model, config).generate_batch([prompt, model.encode("Hi"), prompt],
                                                            [config, greedy, config], max_batch=5)
    assert _same(alone, batched[0]) and _same(alone, batched[2])
    assert np.allclose(alone.scores, batched[0].scores)


def test_a_prompt_over_the_context_is_refused_by_name(model):
    with Engine(model, slots=2, context=32) as engine:
        with pytest.raises(ValueError, match="context overflow"):
            engine.submit(list(range(30)), kvgen.GenerationConfig(max_new_tokens=8))
        with pytest.raises(ValueError, match="more than the engine's 2 slots"):
            engine.submit([1, 2], kvgen.GenerationConfig(max_new_tokens=2, do_sample=True, num_return_sequences=3))


def test_cancel_frees_the_slots_for_the_next_request(model):
    no_eos = {model.eos_token_id: -100.0}
    with Engine(model, slots=1, context=512) as engine:
        long = engine.submit(model.encode("Count:"), kvgen.GenerationConfig(max_new_tokens=400, logit_bias=no_eos))
        later = engine.submit(model.encode("Hi"), kvgen.GenerationConfig(max_new_tokens=3))
        long.cancel()
        assert later.wait(timeout=60).finish_reasons == [["length"]]
        assert long.wait().finish_reasons == [["cancelled"]] and len(long.wait().sequences[0][0]) < 400


@pytest.mark.parametrize("how", ["finished", "cancelled"])
def test_a_done_request_is_freed_by_refcounting_though_its_listener_holds_it(model, how):
    """A listener that holds its request (as the server's Completion does) forms no cycle once
    the request is done: dropping the owner frees the request and its step generator (and
    a constraint's matchers and their threads) at once, with the cyclic collector off."""
    import gc
    import weakref

    class Owner:
        pass

    gc.disable()
    try:
        with Engine(model, slots=1, context=256) as engine:
            owner = Owner()
            config = kvgen.GenerationConfig(max_new_tokens=40, regex="[a-z]{30}")
            owner.request = engine.submit(model.encode("Hi"), config, on_update=lambda update, owner=owner: None)
            if how == "cancelled":
                owner.request.cancel()
            owner.request.wait(timeout=60)
            gone = weakref.ref(owner.request.selector), weakref.ref(owner)
            del owner
            assert [ref() for ref in gone] == [None, None]
    finally:
        gc.enable()


def _rss_bytes() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def test_slot_cache_memory_is_resident_only_where_used(model):
    """8 slots of the full 8,192-position context span 1.5 GB (half keys and values), but only the positions
    used are in memory."""
    before = _rss_bytes()
    slots = _core._ModelSlots(model._core, 8, model.context_length)
    assert slots.kv_cache_bytes == model.kv_cache_bytes(8, model.context_length) > 1.4e9
    slots.forward([(s, np.arange(1, 65)) for s in range(8)])
    assert _rss_bytes() - before < 0.1 * slots.kv_cache_bytes


COLOR_SCHEMA = {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]},
                                                 "count": {"type": "integer", "minimum": 1, "maximum": 9}},
                "required": ["color", "count"], "additionalProperties": False}


def test_a_constrained_and_a_free_request_decode_together_as_each_does_alone(model):
    """The engine's generator computes the constrained request's masks (llguidance, in the
    background between steps) while the free request decodes beside it in the same passes."""
    constrained = kvgen.GenerationConfig(max_new_tokens=30, json_schema=COLOR_SCHEMA)
    free = kvgen.GenerationConfig(max_new_tokens=12, do_sample=True, seed=5)
    prompts = [model.encode("A JSON object describing a red ball:"), model.encode("Once upon a time")]
    singles = [kvgen.Generator(model, c).generate([p]) for p, c in zip(prompts, [constrained, free])]
    batched = kvgen.Generator(model, free).generate_batch(prompts, [constrained, free], max_batch=2)
    assert all(_same(s, b) for s, b in zip(singles, batched))
    assert batched[0].finish_reasons == [["stop"]]
    jsonschema.validate(json.loads(model.decode(batched[0].sequences[0][0], skip_special_tokens=True)), COLOR_SCHEMA)
    with Engine(model, slots=2, context=64) as engine:
        with pytest.raises(ValueError, match="json_schema"):
            engine.submit(prompts[0], kvgen.GenerationConfig(max_new_tokens=4, json_schema={"type": "nonsense"}))


def _same_result(a: kvgen.GenerationResult, b: kvgen.GenerationResult) -> bool:
    """Tokens, log-probs and top log-probs equal bit for bit."""
    def arrays(r):
        return [*r.sequences[0], *r.token_logprobs[0], *(r.top_token_ids[0] if r.top_token_ids else []),
                *(r.top_logprobs[0] if r.top_logprobs else [])]
    return len(arrays(a)) == len(arrays(b)) and all(np.array_equal(x, y) for x, y in zip(arrays(a), arrays(b)))


def test_generate_stream_and_generate_batch_are_one_driver(model):
    """The same prompt gives bit-identical tokens and log-probs through generate, stream (token
    ids and text pieces) and generate_batch beside other prompts: greedy with top log-probs,
    a seeded sampling chain with DRY, over a prompt shorter and one longer than a prefill chunk."""
    long = model.encode(" ".join(f"item{i}" for i in range(30)))
    assert len(long) > kvgen.generation.pass_plan.PREFILL_CHUNK
    others = [model.encode("Count: 1, 2,"), model.encode("Once upon a time")]
    configs = [kvgen.GenerationConfig(max_new_tokens=10, top_logprobs=3),
               kvgen.GenerationConfig(max_new_tokens=10, do_sample=True, seed=5, temperature=0.8, top_p=0.9,
                                      repetition_penalty=1.2, dry_multiplier=0.8)]
    for config in configs:
        generator = kvgen.Generator(model, config)
        for prompt in (model.encode("The capital of France is"), long):
            alone = generator.generate([prompt])
            steps = [s.copy() for s in generator.stream([prompt])]
            streamed = generator.last_result
            assert _same_result(alone, streamed)
            assert np.array_equal(np.concatenate(steps), alone.sequences[0][0])
            pieces = list(generator.stream(model.decode(prompt)))  # text: encoded again, the same ids
            assert np.array_equal(np.array([lp for p in pieces for lp in p.logprobs], dtype=np.float32),
                                  alone.token_logprobs[0][0])
            batched = generator.generate_batch([others[0], prompt, others[1]], configs=[config] * 3, max_batch=2)
            assert _same_result(alone, batched[1])


def test_generate_batch_with_dry_gives_generate_s_tokens(model):
    """DRY's sequence breakers need the token texts in every entry point (the core says when)."""
    generator = kvgen.Generator(model)
    config = kvgen.GenerationConfig(max_new_tokens=8, dry_multiplier=0.8)
    batched = generator.generate_batch(["Hello there", "Hi"], configs=[config] * 2)
    assert batched == [generator.generate(p, max_new_tokens=8, dry_multiplier=0.8) for p in ["Hello there", "Hi"]]
    ids = [model.encode("Hello there"), model.encode("Hi")]
    results = generator.generate_batch(ids, configs=[config] * 2)
    for prompt, result in zip(ids, results):
        assert np.array_equal(result.sequences[0][0], generator.generate([prompt], **config.to_dict()).sequences[0][0])


def test_a_request_of_several_prompts_is_chunked_like_one_prompt_requests(model):
    """generate([a, b]) is one request whose prompts are prefilled together (a chunk of each per
    pass): each gets the tokens of its own call (greedy; with beams, the same hypotheses)."""
    prompts = [model.encode(" ".join(f"w{i}" for i in range(25))), model.encode("Hi")]
    for config in (kvgen.GenerationConfig(max_new_tokens=6), kvgen.GenerationConfig(max_new_tokens=6, num_beams=3)):
        generator = kvgen.Generator(model, config)
        together = generator.generate(prompts)
        for i, p in enumerate(prompts):
            alone = generator.generate([p])
            assert all(np.array_equal(x, y) for x, y in zip(together.sequences[i], alone.sequences[0]))
            assert together.scores[i] == alone.scores[0]
