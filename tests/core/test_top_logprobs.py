"""GenerationConfig(top_logprobs=n): the n most likely tokens at each generated token and their
log-probs, checked against a NumPy log-softmax of the processed logits (Generator.last_logits)
and of the raw logits, for greedy, sampling and beam search."""

from __future__ import annotations

import numpy as np
import pytest

import kvgen
from kvgen import GenerationConfig, Generator


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    finite = np.isfinite(x)
    out = np.full_like(x, -np.inf)
    m = x[finite].max()
    out[finite] = x[finite] - m - np.log(np.exp(x[finite] - m).sum())
    return out


def top(lp: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The n largest, largest first, equal values by smaller id (a stable sort)."""
    ids = np.argsort(-lp, kind="stable")[:n]
    return ids, lp[ids]


def run(config: GenerationConfig, vocab: int = 30, rows_logits=None, raw: bool = False, seed: int = 0):
    """Steps a one-prompt generator with random logits; yields (step, raw logits, processed logits)."""
    g = Generator(config, output_raw_logprobs=raw)
    g.append_tokens([[1, 2]])
    rng = np.random.default_rng(seed)
    steps = []
    while not g.is_done():
        logits = (rng.normal(size=(g.rows, vocab)) * 2).astype(np.float32)
        step = g.step(logits)
        steps.append((step, logits, g.last_logits.copy()))
    return g, steps


@pytest.mark.parametrize("config", [
    GenerationConfig(max_new_tokens=6, top_logprobs=5),
    GenerationConfig(max_new_tokens=6, top_logprobs=5, do_sample=True, top_k=3, temperature=0.7, seed=1),
    GenerationConfig(max_new_tokens=6, top_logprobs=1, do_sample=True, top_p=0.8, seed=2, num_return_sequences=3),
], ids=["greedy", "top-k sampling", "top-p, 3 sequences"])
def test_top_logprobs_are_the_log_softmax_of_the_processed_logits(config):
    g, steps = run(config, raw=True)
    n = config.top_logprobs
    result = g.result()
    for t, (step, raw, processed) in enumerate(steps):
        assert step.top_token_ids.shape == (g.rows, n) and step.top_token_ids.dtype == np.int64
        assert step.top_logprobs.dtype == np.float32
        for r in range(g.rows):
            lp = log_softmax(processed[r])
            ids, values = top(lp, n)
            np.testing.assert_array_equal(step.top_token_ids[r], ids)
            np.testing.assert_allclose(step.top_logprobs[r], values, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(step.logprobs[r], lp[step.tokens[r]], rtol=1e-5, atol=1e-5)
            raw_ids, raw_values = top(log_softmax(raw[r]), n)
            np.testing.assert_array_equal(step.raw_top_token_ids[r], raw_ids)
            np.testing.assert_allclose(step.raw_top_logprobs[r], raw_values, rtol=1e-5, atol=1e-5)
            # the result keeps the same, per token
            np.testing.assert_array_equal(result.top_token_ids[0][r][t], ids)
            np.testing.assert_allclose(result.top_logprobs[0][r][t], values, rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(result.raw_top_token_ids[0][r][t], raw_ids)


def test_filtered_tokens_come_last_with_minus_inf():
    config = GenerationConfig(max_new_tokens=2, top_logprobs=4, do_sample=True, top_k=2, seed=0)
    _, steps = run(config)
    for step, _, processed in steps:
        assert np.isneginf(step.top_logprobs[0, 2:]).all()
        # among the -inf ones, the smallest ids
        minus_inf = np.flatnonzero(np.isneginf(processed[0]))
        np.testing.assert_array_equal(step.top_token_ids[0, 2:], minus_inf[:2])


def test_beam_search_top_logprobs_follow_the_parent_rows():
    config = GenerationConfig(max_new_tokens=5, num_beams=3, num_return_sequences=2, top_logprobs=3)
    g, steps = run(config, raw=True)
    for step, raw, processed in steps:
        for r in range(g.rows):
            parent = int(step.beam_indices[r])
            # beam search's processed values are already log-probs (token_logprobs' scale)
            ids, values = top(processed[parent].astype(np.float64), 3)
            np.testing.assert_array_equal(step.top_token_ids[r], ids)
            np.testing.assert_allclose(step.top_logprobs[r], values, rtol=1e-6)
            raw_ids, raw_values = top(log_softmax(raw[parent]), 3)
            np.testing.assert_array_equal(step.raw_top_token_ids[r], raw_ids)
            np.testing.assert_allclose(step.raw_top_logprobs[r], raw_values, rtol=1e-5, atol=1e-5)
    result = g.result()
    for seq, lps, top_ids, top_lps in zip(result.sequences[0], result.token_logprobs[0], result.top_token_ids[0],
                                          result.top_logprobs[0]):
        assert top_ids.shape == top_lps.shape == (len(seq), 3)
        for t, token in enumerate(seq):  # greedy beams: the chosen token is in the top 3 with its log-prob
            where = np.flatnonzero(top_ids[t] == token)
            if where.size:
                assert top_lps[t][where[0]] == lps[t]


def test_ties_are_ordered_by_token_id():
    g = Generator(GenerationConfig(max_new_tokens=1, top_logprobs=4))
    g.append_tokens([[0]])
    step = g.step(np.array([[1.0, 3.0, 1.0, 3.0, 2.0, 3.0]], np.float32))
    np.testing.assert_array_equal(step.top_token_ids[0], [1, 3, 5, 4])
    lp = log_softmax(np.array([1.0, 3.0, 1.0, 3.0, 2.0, 3.0]))
    np.testing.assert_allclose(step.top_logprobs[0], lp[[1, 3, 5, 4]], rtol=1e-6)


def test_more_alternatives_than_tokens():
    g = Generator(GenerationConfig(max_new_tokens=1, top_logprobs=5))
    g.append_tokens([[0]])
    step = g.step(np.array([[0.0, 1.0, 2.0]], np.float32))
    np.testing.assert_array_equal(step.top_token_ids[0], [2, 1, 0, -1, -1])
    assert np.isneginf(step.top_logprobs[0, 3:]).all()


def test_zero_gives_nothing():
    g, steps = run(GenerationConfig(max_new_tokens=2))
    assert steps[0][0].top_token_ids is None and steps[0][0].top_logprobs is None
    result = g.result()
    assert result.top_token_ids is None and result.top_logprobs is None


@pytest.mark.parametrize("n", [-1, 21])
def test_bad_n(n):
    with pytest.raises(ValueError, match="top_logprobs"):
        GenerationConfig(top_logprobs=n).validate()


def test_streamed_pieces_carry_their_logprobs(smollm2_model):
    config = GenerationConfig(max_new_tokens=8, top_logprobs=3)
    generator = kvgen.Generator(smollm2_model, config)
    pieces = list(generator.stream("The capital of France is"))
    result = generator.last_result
    assert "".join(pieces) == result.texts[0][0]
    tokens = [t for p in pieces for t in p.token_ids]
    assert tokens == list(result.sequences[0][0])
    np.testing.assert_array_equal(np.concatenate([p.logprobs for p in pieces]), result.token_logprobs[0][0])
    tops = [d for p in pieces for d in p.top_logprobs]
    for d, ids, lps in zip(tops, result.top_token_ids[0][0], result.top_logprobs[0][0]):
        assert list(d) == list(ids) and list(d.values()) == pytest.approx(list(lps))
    # greedy: each token is its step's most likely one
    assert all(next(iter(d)) == t for d, t in zip(tops, tokens))


@pytest.mark.parametrize("seed", range(4))
def test_large_rows_with_many_ties(seed):
    """Rows longer than the selection's blocks, with values from a few levels (ties everywhere)."""
    rng = np.random.default_rng(seed)
    logits = rng.integers(-3, 3, size=(2, 1000)).astype(np.float32)
    g = Generator(GenerationConfig(max_new_tokens=1, top_logprobs=20, num_beams=1), batch_size=2)
    g.append_tokens([[0], [1]])
    step = g.step(logits)
    for r in range(2):
        ids, values = top(log_softmax(logits[r]), 20)
        np.testing.assert_array_equal(step.top_token_ids[r], ids)
        np.testing.assert_allclose(step.top_logprobs[r], values, rtol=1e-5)
