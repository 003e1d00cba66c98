"""Prompt scoring as an engine request (``score_prompt``: the server's prompt_logprobs and echo
with logprobs): its prompt is prefilled in chunks that return every position's logits, under the
engine's admission, so a short request beside it keeps a short latency; the scores agree with
the model's forward pass and the generation after them is unchanged, bit for bit."""

from __future__ import annotations

import time

import numpy as np
import pytest

import kvgen
from kvgen.batch import run as run_batch_file
from kvgen.generation.engine import Engine
from kvgen.generation.pass_plan import PREFILL_CHUNK
from kvgen.generation.prompt_scores import _top_ids


@pytest.fixture(scope="module")
def model(smollm2_model):
    return smollm2_model


def _reference(model, prompt: list[int]) -> np.ndarray:
    """Log-softmax of Model.forward's logits over the prompt: [length - 1, vocab], float64."""
    logits = model.forward(np.asarray(prompt, dtype=np.int64)[None, :-1])[0].astype(np.float64)
    return logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)


def test_top_ids_equal_a_full_stable_sort_ties_included():
    rng = np.random.default_rng(3)
    for _ in range(50):
        logp = rng.integers(-6, 0, 300).astype(np.float64)  # many ties, at the boundary too
        for top in (0, 1, 5, 20, 300, 301):
            assert np.array_equal(_top_ids(logp, top), np.argsort(-logp, kind="stable")[:top])
    logp[7] = np.nan
    assert np.array_equal(_top_ids(logp, 5), np.argsort(-logp, kind="stable")[:5])


def test_scores_agree_with_the_forward_pass_and_the_generation_is_unchanged(model):
    prompt = model.encode(" ".join(f"item{i}" for i in range(30)))
    assert len(prompt) > 2 * PREFILL_CHUNK + 1 and len(prompt) % PREFILL_CHUNK  # whole chunks and a last piece
    config = kvgen.GenerationConfig(max_new_tokens=4, do_sample=True, seed=5, top_k=40)
    with Engine.serving(model, 2, prefix_cache=False) as engine:
        scored = engine.submit(prompt, config, logprobs=True, score_prompt=5)
        plain = engine.submit(prompt, config, logprobs=True)
        got, alone = scored.wait(), plain.wait()
    assert np.array_equal(got.sequences[0][0], alone.sequences[0][0])
    assert np.array_equal(got.token_logprobs[0][0], alone.token_logprobs[0][0])  # bit for bit
    (scores,) = scored.wait_scores()
    ref = _reference(model, prompt)
    assert len(scores) == len(prompt) and scores[0] == (prompt[0], None, [], None)
    for i, (token, logprob, top, rank) in enumerate(scores[1:]):
        assert token == prompt[i + 1]
        assert logprob == pytest.approx(ref[i, token], abs=2e-3)
        assert abs(rank - (1 + int((ref[i] > ref[i, token]).sum()))) <= 1  # a near tie may order otherwise
        assert len(top) == 5 and [lp for _, lp in top] == sorted((lp for _, lp in top), reverse=True)
        # the alternatives' log-probs (down to -8) within the rounding of the model's int8 activations: a
        # chunk's products have other shapes than one pass over the whole prompt
        assert np.allclose([lp for _, lp in top], ref[i, [t for t, _ in top]], rtol=0, atol=1e-2)
        assert top[0][1] == pytest.approx(ref[i].max(), abs=2e-3)


def test_a_request_that_only_scores_takes_no_cached_prefix_and_generates_nothing(model):
    prompt = model.encode("A prompt that an earlier request left in the prefix cache, whole chunks of it." * 2)
    config = kvgen.GenerationConfig(max_new_tokens=2)
    updates = []
    with Engine.serving(model, 2, prefix_cache=True) as engine:
        engine.submit(prompt, config).wait()
        hits = engine.prefix_cache_hits
        assert engine.submit(prompt, config).wait() and engine.prefix_cache_hits > hits  # the cache holds it
        hits = engine.prefix_cache_hits
        scored = engine.submit(prompt, config, score_prompt=2, generate=False, on_update=updates.append)
        result = scored.wait()
        assert engine.prefix_cache_hits == hits  # every position's logits were computed
        one = engine.submit(prompt[:1], config, score_prompt=0, generate=False)
        assert one.wait_scores() == [[(prompt[0], None, [], None)]]
    assert len(result.sequences[0][0]) == 0
    assert [(u.tokens, u.finish_reasons, u.done) for u in updates] == [([None], ["length"], True)]
    (scores,) = scored.wait_scores()
    ref = _reference(model, prompt)
    assert np.allclose([lp for _, lp, *_ in scores[1:]], ref[np.arange(len(prompt) - 1), prompt[1:]], atol=2e-3)
    with pytest.raises(ValueError, match="score_prompt"):
        Engine.serving(model, 1).submit(prompt, config, generate=False)


def test_a_short_request_beside_a_scored_prompt_answers_long_before_it(model):
    """kvgen serve's and kvgen batch's path (kvgen.server.responses.Completion, here through
    kvgen.batch.run): a prompt scored with prompt_logprobs and a short completion sent together.
    The scored prompt is prefilled in chunks with the short request's steps between them, so the
    short one answers after a few passes, not after the whole scoring (before, the scoring ran
    Model.forward over the whole prompt beside the engine, holding the model)."""
    rng = np.random.default_rng(0)
    scored_prompt = rng.integers(0, model.vocab_size, 16 * PREFILL_CHUNK).tolist()
    lines = [{"custom_id": "scored", "method": "POST", "url": "/v1/completions",
              "body": {"prompt": scored_prompt, "max_tokens": 1, "prompt_logprobs": 20}},
             {"custom_id": "short", "method": "POST", "url": "/v1/completions",
              "body": {"prompt": "Hello", "max_tokens": 1, "temperature": 0}}]
    start = time.perf_counter()
    arrived = {}
    for result in run_batch_file(lines, model, max_batch=2, prefix_cache=False):
        assert result["error"] is None and result["response"]["status_code"] == 200, result
        arrived[result["custom_id"]] = time.perf_counter() - start
        if result["custom_id"] == "scored":
            scores = result["response"]["body"]["choices"][0]["prompt_logprobs"]
            assert len(scores) == len(scored_prompt) and scores[0] is None and all(scores[1:])
    assert list(arrived) == ["short", "scored"], arrived
    assert arrived["short"] < arrived["scored"] / 3, arrived
