"""The engine's prefix cache (kvgen.generation.engine, ``prefix_cache=True``): a prompt that
starts with an earlier prompt's whole chunks reuses that slot's cached positions, and every
output stays bit-identical to the engine without the cache."""

from __future__ import annotations

import numpy as np
import pytest

import kvgen
from kvgen import _core
from kvgen.generation.engine import PREFILL_CHUNK, Engine

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
