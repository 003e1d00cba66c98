"""The engine's prefix cache (kvgen.generation.engine, ``prefix_cache=True``): a prompt that
starts with an earlier prompt's whole chunks reuses that slot's cached positions, and every
output stays bit-identical to the engine without the cache."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from activation_modes import needs_bf16

import kvgen
from kvgen import _core
from kvgen.generation.engine import Engine
from kvgen.generation.pass_plan import PREFILL_CHUNK

SYSTEM = ("You are a careful assistant who answers briefly. The river runs past the old mill, and the miller "
          "counts the sacks of flour every evening before the lamps are lit. ") * 2


def _same(a: kvgen.GenerationResult, b: kvgen.GenerationResult) -> bool:
    return (a.finish_reasons == b.finish_reasons
            and all(np.array_equal(x, y) for pa, pb in zip(a.sequences, b.sequences) for x, y in zip(pa, pb))
            and all(np.array_equal(x, y) for pa, pb in zip(a.token_logprobs, b.token_logprobs) for x, y in zip(pa, pb)))


def _whole_chunks(n: int) -> int:
    return n // PREFILL_CHUNK * PREFILL_CHUNK


def test_a_conversation_reuses_its_history_and_gets_the_same_tokens(smollm2_model):
    model = smollm2_model
    config = kvgen.GenerationConfig(max_new_tokens=6, top_logprobs=2)
    first = model.encode(SYSTEM + "Question: what does the miller count?")
    other = model.encode("An unrelated prompt about bees and honey.")
    later = model.encode(SYSTEM + "Question: when are the lamps lit?")
    assert len(first) > 2 * PREFILL_CHUNK
    results = {}
    for cached in (False, True):
        with Engine(model, slots=2, prefix_cache=cached) as engine:
            out = [engine.submit(first, config, logprobs=True).wait()]
            turn = first + [int(t) for t in out[0].sequences[0][0]] + model.encode(" And then?")
            out.append(engine.submit(other, config, logprobs=True).wait())
            out.append(engine.submit(turn, config, logprobs=True).wait())  # the first prompt, whole, then more
            out.append(engine.submit(later, config, logprobs=True).wait())  # the system prompt only
            results[cached] = out
            hits, queries = engine.prefix_cache_hits, engine.prefix_cache_queries
    assert all(_same(a, b) for a, b in zip(results[False], results[True]))
    shared = next(i for i, (a, b) in enumerate(zip(first, later)) if a != b)
    assert hits == _whole_chunks(len(first)) + _whole_chunks(shared) and hits >= 3 * PREFILL_CHUNK
    assert queries == len(first) + len(other) + len(turn) + len(later)


def test_concurrent_requests_with_shared_prefixes_equal_the_engine_without_the_cache(smollm2_model):
    model = smollm2_model
    prompts = [model.encode(SYSTEM + f"Question {i}: name a colour.") for i in range(6)]
    prompts += [prompts[0] + model.encode(" Another one, please.")]
    sampled = {"do_sample": True, "top_k": 20}
    configs = [kvgen.GenerationConfig(max_new_tokens=5 + i % 3, seed=i, **(sampled if i % 2 else {}))
               for i in range(len(prompts))]
    runs = {}
    for cached in (False, True):
        with Engine(model, slots=3, prefix_cache=cached) as engine:
            runs[cached] = [engine.generate(prompts, configs) for _ in range(2)]  # the second round finds the first's
            hits = engine.prefix_cache_hits
    for a, b in zip(runs[False], runs[True]):
        assert all(_same(x, y) for x, y in zip(a, b))
    assert hits > 0


def test_truncate_keeps_a_prefix_and_checks_its_length(smollm2_model):
    slots = _core._ModelSlots(smollm2_model._core, 2, 256)
    prompt = np.array(smollm2_model.encode(SYSTEM), dtype=np.int64)[:2 * PREFILL_CHUNK + 5]
    slots.forward([(0, prompt[:PREFILL_CHUNK])])
    slots.forward([(0, prompt[PREFILL_CHUNK:2 * PREFILL_CHUNK])])
    slots.forward([(0, prompt[2 * PREFILL_CHUNK:])])
    fresh = slots.logits[0].copy()
    slots.truncate(0, PREFILL_CHUNK)
    assert slots.length(0) == PREFILL_CHUNK
    slots.forward([(0, prompt[PREFILL_CHUNK:2 * PREFILL_CHUNK])])
    slots.forward([(0, prompt[2 * PREFILL_CHUNK:])])
    assert np.array_equal(slots.logits[0], fresh)
    with pytest.raises(ValueError, match="cannot truncate row 0"):
        slots.truncate(0, slots.length(0) + 1)
    with pytest.raises(ValueError, match="cannot truncate row 1"):
        slots.truncate(1, -1)


# ---- kvgen.Generator keeps one engine with the prefix cache across its calls ----

def _chat_turns(model, cached: bool) -> tuple[list[kvgen.GenerationResult], list[int], list[list[int]]]:
    """Three chat turns (each extends the last), a sampled call between them, a two-sequence call
    (which makes the kept engine grow) and a stream closed early: results, cached tokens, prompts."""
    gen = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=5, top_logprobs=2), prefix_cache=cached)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What does the miller count?"}]
    results, cached_tokens, prompts = [], [], []
    for turn, question in enumerate(["When are the lamps lit?", "And the river?", None]):
        prompts.append(model.encode_chat(messages, add_generation_prompt=True))
        reply = gen.chat(messages, **({"do_sample": True, "seed": turn, "top_k": 20} if turn == 1 else {}))
        results.append(gen.last_result)
        cached_tokens.append(gen.last_stats.cached_tokens)
        if turn == 0:
            gen.generate(SYSTEM + "Count.", num_return_sequences=2, do_sample=True, seed=3)
            results.append(gen.last_result)
        if turn == 1:
            pieces = gen.chat_stream(messages + [{"role": "user", "content": "Say more."}], max_new_tokens=8)
            next(pieces)
            pieces.close()  # cancels its request: the next call finds the engine free
        if question is not None:
            messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": question}]
    return results, cached_tokens, prompts


def test_chat_turns_reuse_the_history_and_get_the_same_tokens(smollm2_model):
    plain, no_hits, _ = _chat_turns(smollm2_model, cached=False)
    reused, hits, prompts = _chat_turns(smollm2_model, cached=True)
    assert all(_same(a, b) for a, b in zip(plain, reused))
    assert no_hits == [0, 0, 0]
    expected = [0]
    for earlier, prompt in zip(prompts, prompts[1:]):
        common = next((i for i, (a, b) in enumerate(zip(earlier, prompt)) if a != b), len(earlier))
        expected.append(_whole_chunks(min(common, len(prompt) - 1)))
    assert hits == expected and min(expected[1:]) >= 2 * PREFILL_CHUNK


def test_a_call_while_another_runs_uses_an_engine_of_its_own(smollm2_model):
    model = smollm2_model
    prompts = [SYSTEM + "First question?", SYSTEM + "Second question?"]
    config = kvgen.GenerationConfig(max_new_tokens=6)
    alone = [kvgen.Generator(model, config, prefix_cache=False).generate(p) for p in prompts]
    gen = kvgen.Generator(model, config)
    gen.generate(prompts[0])  # fills the cache
    first, second = gen.stream(prompts[0]), gen.stream(prompts[1])
    texts = ["", ""]
    texts[0] += next(first)  # the first holds the kept engine, the second runs beside it
    for piece in second:
        texts[1] += piece
    texts[0] += "".join(first)
    assert texts == alone
    out: dict[int, str] = {}
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, gen.generate(prompts[i]))) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [out[0], out[1]] == alone
    assert gen.generate(prompts[1]) == alone[1] and gen.last_stats.cached_tokens > 0


def test_the_kept_engine_grows_for_a_longer_prompt(smollm2_model, monkeypatch):
    from kvgen.generation import engine_size

    model = smollm2_model
    config = kvgen.GenerationConfig(max_new_tokens=4)
    short, longer = model.encode(SYSTEM), model.encode(SYSTEM + SYSTEM)
    gen = kvgen.Generator(model, config)
    monkeypatch.setattr(engine_size, "KEPT_CONTEXT", 16)  # sized to the first call: the second needs more positions
    out = [gen.generate([short]), gen.generate([longer])]
    assert gen._engines.kept is not None and gen._engines.kept.context == len(longer) + 4
    assert gen.last_stats.cached_tokens == 0  # a new engine starts empty
    out.append(gen.generate([longer]))
    assert gen.last_stats.cached_tokens == _whole_chunks(len(longer) - 1)
    alone = kvgen.Generator(model, config, prefix_cache=False)
    assert all(_same(a, alone.generate([p])) for a, p in zip(out, [short, longer, longer]))


def test_the_kept_engine_is_built_again_when_the_model_turns_exact(smollm2_model):
    """Exact mode keeps a float32 KV cache, the int8 modes a half one: a kept engine of the other
    type is not reused (its cached prefix was computed in the other mode)."""
    model = smollm2_model
    config = kvgen.GenerationConfig(max_new_tokens=3)
    prompt = model.encode(SYSTEM)
    gen = kvgen.Generator(model, config)
    gen.generate([prompt])
    half_bytes = gen._engines.kept.kv_cache_bytes
    try:
        model.exact = True
        out = gen.generate([prompt])
        assert gen.last_stats.cached_tokens == 0
        assert gen._engines.kept.kv_cache_bytes == 2 * half_bytes
        assert _same(out, kvgen.Generator(model, config, prefix_cache=False).generate([prompt]))
    finally:
        model.exact = False


# ---- a prefix that ends inside a chunk ----

def _fed_in_chunks(slots, slot: int, prompt: np.ndarray, start: int = 0) -> np.ndarray:
    """Feeds prompt[start:] to a slot holding its first `start` positions as the engine does
    (the rest of a chunk in blocks, then chunk after chunk); the last position's logits."""
    rest = start % PREFILL_CHUNK
    if rest:
        slots.forward([(slot, prompt[start:start - rest + PREFILL_CHUNK])], in_blocks=[slot])
        start += PREFILL_CHUNK - rest
    for o in range(start, prompt.size, PREFILL_CHUNK):
        slots.forward([(slot, prompt[o:o + PREFILL_CHUNK])])
    return slots.logits[slot].copy()


@pytest.mark.parametrize("threads,mode", [(1, "int8x2"), (2, "int8x2"), (2, "float"), pytest.param(2, "bf16",
                                                                                                 marks=needs_bf16)])
def test_the_rest_of_a_chunk_after_a_cached_prefix_gets_a_fresh_prefills_logits(smollm2_model, threads, mode):
    """Positions kept from another prompt's chunk, then that chunk's rest computed in blocks
    (in_blocks), give bit for bit the logits of the new prompt's fresh prefill, beside decode
    rows, in the default mode, in exact mode (float activations, float32 cache) and with bf16
    activations."""
    saved = kvgen.get_num_threads()
    rng = np.random.default_rng(threads)
    try:
        kvgen.set_num_threads(threads)
        smollm2_model.activations = mode
        slots = _core._ModelSlots(smollm2_model._core, 3, 256)
        for length, kept in [(42, 27), (42, 1), (40, 31), (80, 33), (100, 70), (64, 62)]:
            cached = rng.integers(0, smollm2_model.vocab_size, length)
            prompt = cached.copy()
            prompt[kept:] = rng.integers(0, smollm2_model.vocab_size, length - kept)
            for s in range(3):
                slots.reset(s)
            _fed_in_chunks(slots, 0, cached)
            fresh = _fed_in_chunks(slots, 1, prompt)
            slots.copy_row(0, 2)
            slots.truncate(2, kept)
            slots.forward([(0, prompt[:1]), (2, prompt[kept:kept - kept % PREFILL_CHUNK + PREFILL_CHUNK])],
                          in_blocks=[2])  # beside a decode row
            reused = _fed_in_chunks(slots, 2, prompt, kept - kept % PREFILL_CHUNK + PREFILL_CHUNK)
            assert np.array_equal(reused, fresh), (length, kept)
    finally:
        kvgen.set_num_threads(saved)
        smollm2_model.activations = "int8x2"
    with pytest.raises(ValueError, match="in_blocks slot 1"):
        slots.forward([(0, prompt[:1])], in_blocks=[1])


def test_prompts_that_share_part_of_a_chunk_reuse_it_and_get_the_same_tokens(smollm2_model):
    model = smollm2_model
    first = model.encode(SYSTEM + "Question: what does the miller count?")
    others = [first[:PREFILL_CHUNK + 9] + model.encode(" Bees, honey and the mill." * 8),  # shares 9 of chunk 1
              first[:20] + model.encode(" A question about the lamps and the river." * 6)]  # 20 of chunk 0
    sampled = {"do_sample": True, "top_k": 20, "seed": 5}
    configs = [kvgen.GenerationConfig(max_new_tokens=6, top_logprobs=2, **(sampled if i == 1 else {}))
               for i in range(3)]
    assert len(first) >= 2 * PREFILL_CHUNK and all(len(p) >= 2 * PREFILL_CHUNK for p in others)  # chunks held whole
    results = {}
    for cached in (False, True):
        with Engine(model, slots=2, prefix_cache=cached) as engine:
            out = [engine.submit(first, configs[0], logprobs=True).wait()]
            out += [engine.submit(p, c, logprobs=True).wait() for p, c in zip(others, configs[1:])]
            results[cached] = out
            hits = engine.prefix_cache_hits
    assert all(_same(a, b) for a, b in zip(results[False], results[True]))
    assert hits == PREFILL_CHUNK + 9 + 20
