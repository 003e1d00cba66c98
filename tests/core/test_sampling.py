"""kvgen.sample: greedy = argmax of HF-processed logits, draws follow the processed
distribution (chi-square), and a seed reproduces tokens whatever the batch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

import kvgen
from hf_reference import hf_process

CHAIN = dict(do_sample=True, temperature=0.8, top_k=40, top_p=0.95, repetition_penalty=1.1)


def processed_probs(logits_row: np.ndarray, input_ids_row: np.ndarray, **settings) -> np.ndarray:
    """Probabilities after HF's processors (the distribution kvgen must sample from)."""
    out = hf_process(input_ids_row[None, :], logits_row[None, :], prompt_length=len(input_ids_row), **settings)
    return torch.softmax(torch.from_numpy(out[0]).double(), -1).numpy()


def draw_many(logits_row, input_ids_row, n, seed=1234, **settings):
    """n independent draws: n rows with the same logits, each its own sequence id."""
    logits = np.ascontiguousarray(np.broadcast_to(logits_row, (n, logits_row.size)))
    ids = np.broadcast_to(input_ids_row, (n, input_ids_row.size))
    config = kvgen.GenerationConfig(seed=seed, **settings)
    return kvgen.sample(logits, config, ids, step=0, sequence_ids=np.arange(n))


def assert_follows(tokens: np.ndarray, probs: np.ndarray) -> None:
    support = probs > 0
    counts = np.bincount(tokens, minlength=probs.size)
    assert counts[~support].sum() == 0, "drew a token the processors filtered out"
    expected = probs[support] * len(tokens)
    # merge rare cells so that every expected count is >= 5
    order = np.argsort(expected)
    obs, exp, acc_o, acc_e = [], [], 0.0, 0.0
    for i in order:
        acc_o += counts[support][i]
        acc_e += expected[i]
        if acc_e >= 5:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e:
        obs[-1] += acc_o
        exp[-1] += acc_e
    if len(obs) > 1:
        p_value = stats.chisquare(obs, exp).pvalue
        assert p_value > 1e-3, f"chi-square p = {p_value:.2e}"


def test_worked_example_of_seed_004():
    """logits (10, 8, 5, 2, 1, 0.5), T=1, top-k 3, top-p 0.9 -> P(cat)=0.881, P(dog)=0.119."""
    logits = np.array([10.0, 8.0, 5.0, 2.0, 1.0, 0.5], dtype=np.float32)
    settings = dict(do_sample=True, temperature=1.0, top_k=3, top_p=0.9)
    probs = processed_probs(logits, np.zeros(0, dtype=np.int64), **settings)
    p_cat = math.exp(10) / (math.exp(10) + math.exp(8))
    np.testing.assert_allclose(probs, [p_cat, 1 - p_cat, 0, 0, 0, 0], atol=1e-6)
    assert round(p_cat, 3) == 0.881
    tokens = draw_many(logits, np.zeros(0, dtype=np.int64), 20000, **settings)
    assert set(np.unique(tokens)) == {0, 1}
    assert_follows(tokens, probs)
    assert abs((tokens == 0).mean() - 0.881) < 0.01


@pytest.mark.parametrize(
    "settings",
    [
        dict(do_sample=True, top_k=0),
        CHAIN,
        dict(do_sample=True, top_k=0, top_p=0.9),
        dict(do_sample=True, top_k=0, min_p=0.05, temperature=1.5),
        dict(do_sample=True, top_k=0, typical_p=0.8),
        dict(do_sample=True, top_k=20, eta_cutoff=1e-3, presence_penalty=0.3),
    ],
    ids=["plain", "chain", "top_p", "min_p", "typical", "top_k_eta"],
)
@pytest.mark.parametrize("vocab", [50, 3001])
def test_draws_follow_processed_distribution(settings, vocab):
    rng = np.random.default_rng(vocab)
    logits = (rng.standard_normal(vocab) * 2).astype(np.float32)
    history = rng.integers(0, vocab, 64)
    hf_settings = {k: v for k, v in settings.items() if k != "presence_penalty"}
    probs = processed_probs(logits, history, **hf_settings) if hf_settings == settings else None
    tokens = draw_many(logits, history, 20000, **settings)
    if probs is None:  # presence penalty has no HF counterpart: check the support only
        assert tokens.min() >= 0 and tokens.max() < vocab
        return
    assert_follows(tokens, probs)


def test_draws_from_a_large_flat_nucleus():
    """top-p over a flat 50k distribution takes the histogram path; draws must still follow it."""
    rng = np.random.default_rng(7)
    logits = (rng.standard_normal(50257) * 0.5).astype(np.float32)
    settings = dict(do_sample=True, top_k=0, top_p=0.5)
    probs = processed_probs(logits, np.zeros(0, dtype=np.int64), **settings)
    assert (probs > 0).sum() > 10000
    tokens = draw_many(logits, np.zeros(0, dtype=np.int64), 4000, **settings)
    assert (probs[tokens] > 0).all()
    # compare the mass of probability deciles rather than 20k individual cells
    order = np.argsort(-probs)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    support = int((probs > 0).sum())
    edges = np.linspace(0, support, 11).astype(int)
    observed = np.histogram(rank[tokens], bins=edges)[0]
    expected = np.array([probs[order[a:b]].sum() for a, b in zip(edges[:-1], edges[1:])]) * len(tokens)
    assert stats.chisquare(observed, expected).pvalue > 1e-3


@pytest.mark.parametrize("settings", [dict(), dict(repetition_penalty=1.5, no_repeat_ngram_size=2),
                                      dict(temperature=0.0, do_sample=True)])
def test_greedy_is_argmax_of_hf_processed_logits(settings):
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((6, 997)).astype(np.float32)
    logits[0, [10, 20]] = 50.0  # a tie: the first index wins, as torch.argmax
    ids = rng.integers(0, 30, (6, 20))
    hf_settings = {k: v for k, v in settings.items() if k != "temperature"}
    hf_settings.pop("do_sample", None)
    ref = hf_process(ids, logits, prompt_length=20, **hf_settings)
    tokens, logprobs = kvgen.sample(logits, kvgen.GenerationConfig(**settings), ids, return_logprobs=True)
    np.testing.assert_array_equal(tokens, ref.argmax(-1))
    assert tokens[0] == 10
    expected_lp = torch.log_softmax(torch.from_numpy(ref), -1).numpy()[np.arange(6), tokens]
    np.testing.assert_allclose(logprobs, expected_lp, rtol=1e-5, atol=1e-5)


def test_logprobs_are_of_the_processed_distribution():
    rng = np.random.default_rng(6)
    logits = rng.standard_normal((8, 500)).astype(np.float32)
    ids = rng.integers(0, 500, (8, 10))
    tokens, logprobs = kvgen.sample(logits, kvgen.GenerationConfig(**CHAIN, seed=3), ids, return_logprobs=True)
    ref = hf_process(ids, logits, prompt_length=10, **CHAIN)
    expected = torch.log_softmax(torch.from_numpy(ref), -1).numpy()[np.arange(8), tokens]
    np.testing.assert_allclose(logprobs, expected, rtol=1e-5, atol=1e-5)
    assert np.isfinite(ref[np.arange(8), tokens]).all()


def test_same_seed_same_tokens_whatever_the_batch():
    rng = np.random.default_rng(8)
    logits = rng.standard_normal((8, 2000)).astype(np.float32)
    ids = rng.integers(0, 2000, (8, 16))
    config = kvgen.GenerationConfig(do_sample=True, top_k=0, seed=42)
    seq = np.arange(100, 108)
    full = kvgen.sample(logits, config, ids, step=3, sequence_ids=seq)
    # each row alone
    for r in range(8):
        alone = kvgen.sample(logits[r : r + 1].copy(), config, ids[r : r + 1], step=3, sequence_ids=seq[r : r + 1])
        assert alone[0] == full[r]
    # rows shuffled, ids travel with their rows
    perm = rng.permutation(8)
    shuffled = kvgen.sample(logits[perm].copy(), config, ids[perm], step=3, sequence_ids=seq[perm])
    np.testing.assert_array_equal(shuffled, full[perm])
    # a processor object gives the same tokens as the function
    np.testing.assert_array_equal(kvgen.LogitsProcessor(config).sample(logits, ids, step=3, sequence_ids=seq), full)


def test_seed_step_and_sequence_change_the_draws():
    logits = np.zeros((400, 1000), dtype=np.float32)  # uniform: draws are pure noise
    base = kvgen.sample(logits, kvgen.GenerationConfig(do_sample=True, top_k=0, seed=1))
    assert len(np.unique(base)) > 300  # rows (sequence ids) draw independently
    other_seed = kvgen.sample(logits, kvgen.GenerationConfig(do_sample=True, top_k=0, seed=2))
    other_step = kvgen.sample(logits, kvgen.GenerationConfig(do_sample=True, top_k=0, seed=1), step=1)
    assert (base != other_seed).mean() > 0.9
    assert (base != other_step).mean() > 0.9
    again = kvgen.sample(logits, kvgen.GenerationConfig(do_sample=True, top_k=0, seed=1))
    np.testing.assert_array_equal(base, again)
    unseeded = kvgen.GenerationConfig(do_sample=True, top_k=0)
    assert (kvgen.sample(logits, unseeded) != kvgen.sample(logits, unseeded)).mean() > 0.9
