"""kvgen.sample: greedy = argmax of HF-processed logits, draws follow the processed
distribution (chi-square), and a seed reproduces tokens whatever the batch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import transformers
from hf_reference import hf_process
from sandbox import Sandbox
from scipy import stats

import kvgen

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


# ---- Hostile input to the sampler and the config -----------------------------------------------
# Hardening of the sampler and the config.
#
# Infinite logits: a +inf logit (in the input, or made by processing finite values) makes
# the +inf tokens the only candidates, equally likely. That is the limit of the finite
# case, so the oracle is torch on the same row with each +inf replaced by one large
# finite value. Config values the float32 kernels cannot represent are refused, booleans
# are refused for numeric fields, and every token id of the config is checked against the
# vocabulary. The cases that used to read outside the sampler's buffers run in a Sandbox.
INF = np.float32(np.inf)


def finite_limit(row: np.ndarray, big: float = float(np.finfo(np.float32).max)) -> torch.Tensor:
    """The row with every +inf replaced by the same large finite value, float32's max
    (the oracle: torch's softmax of it is the limit kvgen gives)."""
    out = np.where(np.isposinf(row), np.float32(big), row).astype(np.float32)
    return torch.from_numpy(out)


def sample_one(row, **settings):
    tokens, logprobs = kvgen.sample(
        np.asarray([row], np.float32), kvgen.GenerationConfig(**settings), return_logprobs=True
    )
    return int(tokens[0]), float(logprobs[0])


# ---- cases run in the sandbox (module level, so the worker can import them) -----------

def issue_reproducers():
    """Hostile calls: every one must return a real token or refuse."""
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    out = []
    for settings in (dict(do_sample=True, temperature=1e-50, seed=0), dict(repetition_penalty=1e-300),
                     dict(logit_bias={1: float("inf")}), dict(logit_bias={1: 1e300}),
                     dict(sequence_bias={(1,): 1e300})):
        try:
            out.append(int(kvgen.sample(x, kvgen.GenerationConfig(**settings), input_ids=np.array([[1]]))[0]))
        except ValueError as e:
            out.append(str(e).split(" ")[0])
    y = x.copy()
    y[0, 1] = np.inf
    out.append(int(kvgen.sample(y, kvgen.GenerationConfig(do_sample=True, seed=0))[0]))
    tokens, logprobs = kvgen.sample(y, kvgen.GenerationConfig(), return_logprobs=True)
    out.append((int(tokens[0]), float(logprobs[0])))
    return out


def fuzz_rows(seed: int, cases: int) -> int:
    """Random rows mixing +-inf, huge and tiny logits under random configs: each picked
    token is a candidate of the processed row (a +inf one when there is one) and its
    log-probability is a number <= 0. Returns the number of checked rows."""
    rng = np.random.default_rng(seed)
    specials = np.array([np.inf, -np.inf, 3e38, -3e38, 1e30, 0.0], np.float32)
    checked = 0
    for case in range(cases):
        vocab = int(rng.choice([1, 2, 5, 64, 300, 3000]))
        row = (rng.standard_normal(vocab) * rng.choice([1.0, 1e3, 1e30])).astype(np.float32)
        hits = rng.random(vocab) < rng.choice([0.0, 0.01, 0.3, 0.9])
        row[hits] = rng.choice(specials, hits.sum())
        settings = dict(do_sample=bool(rng.integers(2)), seed=case, top_k=int(rng.choice([0, 1, 3, 50])),
                        temperature=float(rng.choice([1.0, 0.7, 1e-30, 5.0])))
        if rng.random() < 0.5:
            settings[str(rng.choice(["top_p", "typical_p", "min_p", "epsilon_cutoff", "eta_cutoff"]))] = float(
                rng.choice([0.1, 0.5, 0.9]))
        if rng.random() < 0.3:
            settings["renormalize_logits"] = True
        if rng.random() < 0.3:
            settings["logit_bias"] = {int(rng.integers(vocab)): float(rng.choice([3e38, -3e38, 5.0]))}
        if rng.random() < 0.2:
            settings["bad_words_ids"] = [[int(rng.integers(vocab))]]
        config = kvgen.GenerationConfig(**settings)
        ids = rng.integers(0, vocab, size=(1, 3))
        processed = kvgen.LogitsProcessor(config)(ids, row[None].copy())[0]
        try:
            tokens, logprobs = kvgen.sample(row[None].copy(), config, input_ids=ids, return_logprobs=True)
        except ValueError as e:
            if "all -inf" in str(e) and np.all(np.isneginf(processed)):
                continue
            raise
        t, lp = int(tokens[0]), float(logprobs[0])
        where = f"case {case}: row {row[:8]}..., settings {settings}, token {t}, logprob {lp}"
        assert 0 <= t < vocab and processed[t] > -np.inf, where
        assert not np.isposinf(processed).any() or np.isposinf(processed[t]), where
        assert not math.isnan(lp) and lp <= 0.0, where
        checked += 1
    return checked


# ---- hostile calls -------------------------------------------------------------------

def test_issue_reproducers_return_a_candidate_or_refuse():
    with Sandbox() as box:
        outcome = box.run(issue_reproducers)
    assert outcome.status == "returned", outcome.describe()
    # five refused configs (the error names the field), then token 1 twice, log-prob 0
    assert outcome.message == repr(["GenerationConfig.temperature", "GenerationConfig.repetition_penalty",
                                    "GenerationConfig.logit_bias", "GenerationConfig.logit_bias",
                                    "GenerationConfig.sequence_bias", 1, (1, 0.0)])


def test_fuzzed_rows_always_pick_a_candidate():
    with Sandbox(timeout_s=120) as box:
        outcome = box.run(fuzz_rows, 0, 400)
    assert outcome.status == "returned", outcome.describe()
    assert int(outcome.message) > 300  # most rows have a candidate


# ---- config values must be finite float32 -------------------------------------

@pytest.mark.parametrize(
    "field, value",
    [
        ("temperature", 1e-50), ("temperature", 1e300), ("temperature", float("inf")),
        ("temperature", float("nan")), ("repetition_penalty", 1e-300), ("repetition_penalty", 1e300),
        ("repetition_penalty", float("inf")), ("length_penalty", 1e300), ("length_penalty", float("-inf")),
        ("length_penalty", float("nan")), ("logit_bias", {0: float("inf")}), ("logit_bias", {0: 1e300}),
        ("logit_bias", {0: float("-inf")}), ("logit_bias", {0: float("nan")}), ("logit_bias", {0: 10**400}),
        ("sequence_bias", {(0, 1): float("inf")}), ("sequence_bias", {(0,): -1e300}),
        ("sequence_bias", [[[0], float("nan")]]), ("min_p", float("nan")), ("top_p", float("nan")),
    ],
)
def test_values_float32_cannot_hold_are_refused(field, value):
    with pytest.raises(ValueError, match=f"GenerationConfig.{field}"):
        kvgen.GenerationConfig(**{field: value})
    config = kvgen.GenerationConfig()
    with pytest.raises(ValueError, match=f"GenerationConfig.{field}"):
        setattr(config, field, value)  # set after construction: refused here or by validate()
        config.validate()


@pytest.mark.parametrize(
    "settings",
    [dict(temperature=1e-30), dict(temperature=3e38), dict(repetition_penalty=1e-30),
     dict(logit_bias={0: 3e38, 1: -3e38}), dict(sequence_bias={(0, 1): -3.4e38}), dict(length_penalty=-3e38)],
)
def test_extreme_but_representable_values_are_accepted(settings):
    kvgen.GenerationConfig(**settings)


# ---- +inf logits ----------------------------------------------------------------

def test_greedy_takes_the_first_inf_token_with_logprob_minus_log_count():
    row = np.array([5.0, INF, 1e30, INF, -INF, INF], np.float32)
    token, logprob = sample_one(row)
    assert token == int(torch.argmax(finite_limit(row)))
    assert logprob == pytest.approx(float(torch.log_softmax(finite_limit(row), -1)[token]), abs=1e-6)
    assert sample_one(np.array([0.0, 1.0, INF], np.float32)) == (2, 0.0)


def test_sampling_draws_uniformly_among_the_inf_tokens():
    row = np.array([3.0, INF, 2e38, INF, -INF, INF, 0.0], np.float32)
    limit = torch.softmax(finite_limit(row), -1).numpy()
    draws = [sample_one(row, do_sample=True, seed=s) for s in range(600)]
    tokens = np.array([t for t, _ in draws])
    counts = np.bincount(tokens, minlength=row.size) / len(draws)
    np.testing.assert_array_equal(counts > 0, limit > 1e-6)  # exactly the +inf tokens
    np.testing.assert_allclose(counts, limit, atol=0.08)  # 600 draws: about 3 standard deviations
    np.testing.assert_allclose([lp for _, lp in draws], -math.log(3), rtol=1e-6)


def test_inf_made_by_processing_finite_logits():
    # temperature: float32 division overflows for the two largest logits
    row = np.array([1e38, 3e38, -1.0, 2e38], np.float32)
    with np.errstate(over="ignore"):
        divided = row / np.float32(0.5)
    expected = set(np.flatnonzero(np.isposinf(divided)))
    assert expected == {1, 3}
    picked = {sample_one(row, do_sample=True, temperature=0.5, top_k=0, seed=s)[0] for s in range(40)}
    assert picked == expected
    # logit_bias: 3e38 + 3e38 overflows under greedy decoding
    assert sample_one(np.array([3e38, 0.0, 3e38], np.float32), logit_bias={2: 3e38}) == (2, 0.0)


def test_overflowing_processors_equal_hf_processed_logits():
    """Processing finite values to +inf is HF's arithmetic; only the pick differs."""
    ids = torch.tensor([[1, 2]])
    scores = torch.tensor([[1e10, 3e38, 2e38, -3e38]], dtype=torch.float32)  # history ends with token 2
    cases = [
        (dict(repetition_penalty=1e-30), transformers.RepetitionPenaltyLogitsProcessor(1e-30)),
        (dict(sequence_bias={(2, 1): 3e38}), transformers.SequenceBiasLogitsProcessor({(2, 1): 3e38})),
    ]
    for settings, hf in cases:
        ours = kvgen.LogitsProcessor(kvgen.GenerationConfig(**settings))(ids.numpy(), scores.numpy().copy())
        np.testing.assert_array_equal(ours, hf(ids, scores.clone()).numpy())
        assert np.isposinf(ours).any()


def test_ban_wins_over_an_inf_logit():
    # HF would compute +inf + -inf = NaN; kvgen bans the token
    row = np.array([0.0, INF, 1.0], np.float32)
    expected = float(torch.log_softmax(torch.tensor([0.0, 1.0]), -1)[1])
    assert sample_one(row, bad_words_ids=[[1]]) == (2, pytest.approx(expected))


@pytest.mark.parametrize("warper", [dict(top_p=0.5), dict(typical_p=0.5), dict(min_p=0.5), dict(epsilon_cutoff=0.2),
                                    dict(eta_cutoff=0.2), dict(top_k=2)])
def test_warpers_keep_inf_tokens_only(warper):
    rng = np.random.default_rng(1)
    row = rng.standard_normal(3000).astype(np.float32)
    inf_ids = [7, 1500, 2999]
    row[inf_ids] = np.inf
    settings = dict(do_sample=True, top_k=0) | warper
    processed = kvgen.LogitsProcessor(kvgen.GenerationConfig(**settings))(np.array([[0]]), row[None].copy())[0]
    assert not np.isnan(processed).any()
    kept = set(np.flatnonzero(processed > -np.inf))
    assert kept and kept <= set(inf_ids)
    picked = {sample_one(row, seed=s, **settings)[0] for s in range(30)}
    assert picked <= kept


def test_renormalize_logits_with_inf_is_the_limit_distribution():
    row = np.array([1.0, INF, 2.0, INF], np.float32)
    out = kvgen.LogitsProcessor(kvgen.GenerationConfig(renormalize_logits=True))(np.array([[0]]), row[None].copy())[0]
    np.testing.assert_allclose(np.exp(out), torch.softmax(finite_limit(row), -1).numpy(), atol=1e-6)
    assert out[1] == out[3] == pytest.approx(-math.log(2))


def test_nan_and_all_minus_inf_stay_refused():
    with pytest.raises(ValueError, match="NaN"):
        sample_one(np.array([0.0, np.nan, INF], np.float32))
    with pytest.raises(ValueError, match="all -inf"):
        sample_one(np.array([-INF, -INF], np.float32), do_sample=True, seed=0)
    # remove_invalid_values: +inf becomes the float32 max, as HF's InfNanRemoveLogitsProcessor
    assert sample_one(np.array([np.nan, INF, 1.0], np.float32), remove_invalid_values=True) == (1, 0.0)


def test_beam_search_log_softmax_with_inf_logits():
    row = np.array([0.5, INF, -1.0, INF, 2.0], np.float32)
    gen = kvgen.Generator(kvgen.GenerationConfig(num_beams=2, max_new_tokens=2, pad_token_id=0))
    gen.append_tokens([[4]])
    step = gen.step(np.stack([row, row]))
    lp = np.asarray(gen.last_logits)
    assert not np.isnan(lp).any()
    np.testing.assert_allclose(np.exp(lp[0]), torch.softmax(finite_limit(row), -1).numpy(), atol=1e-6)
    assert sorted(step.tokens.tolist()) == [1, 3]
    gen.step(np.stack([row, row]))
    result = gen.result()
    assert all(math.isfinite(s) for s in result.scores[0])
    assert result.scores[0][0] == pytest.approx(2 * -math.log(2) / 2)  # two new tokens of p 1/2 each


@pytest.mark.parametrize("settings", [dict(), dict(do_sample=True, seed=0), dict(num_beams=2),
                                      dict(num_beams=2, do_sample=True, seed=0)])
def test_raw_logprobs_with_inf_logits_are_the_limit(settings):
    """output_raw_logprobs: the raw log-probability of a +inf token is -log(count of +inf),
    as torch.log_softmax of the finite limit gives, not NaN (greedy, sampling, beams)."""
    row = np.array([0.5, INF, -1.0, INF, 2.0], np.float32)
    rows = 2 if "num_beams" in settings else 1
    gen = kvgen.Generator(kvgen.GenerationConfig(max_new_tokens=2, pad_token_id=0, **settings),
                          output_raw_logprobs=True)
    gen.append_tokens([[4]])
    while not gen.is_done():
        gen.step(np.stack([row] * rows))
    expected = float(torch.log_softmax(finite_limit(row), -1)[1])
    for raw in gen.result().raw_token_logprobs[0]:
        np.testing.assert_allclose(raw, [expected] * len(raw), atol=1e-6)


# ---- integer fields, booleans, the vocabulary -----------------------------------

INT_FIELDS = ["max_new_tokens", "max_length", "min_new_tokens", "min_length", "top_k", "no_repeat_ngram_size",
              "num_beams", "num_return_sequences", "pad_token_id", "bos_token_id", "forced_bos_token_id", "seed",
              "eos_token_id", "suppress_tokens", "forced_eos_token_id"]
FLOAT_FIELDS = ["temperature", "top_p", "min_p", "typical_p", "epsilon_cutoff", "eta_cutoff", "repetition_penalty",
                "presence_penalty", "frequency_penalty", "length_penalty"]


@pytest.mark.parametrize("field", INT_FIELDS + FLOAT_FIELDS)
@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_booleans_are_refused_for_numeric_fields(field, value):
    with pytest.raises(TypeError, match=field):
        kvgen.GenerationConfig(**{field: value})


@pytest.mark.parametrize("settings", [dict(logit_bias={True: 1.0}), dict(sequence_bias={(True,): 1.0}),
                                      dict(bad_words_ids=[[False]]), dict(logit_bias=[1, 2]),
                                      dict(logit_bias={"x": 1.0}), dict(sequence_bias={(1,): "a"}),
                                      dict(sequence_bias=[[1, 2, 3]]), dict(top_k=2.0), dict(temperature="1")])
def test_wrong_types_in_containers_are_type_errors(settings):
    with pytest.raises(TypeError, match=next(iter(settings))):
        kvgen.GenerationConfig(**settings)


@pytest.mark.parametrize("field", ["max_new_tokens", "top_k", "pad_token_id", "eos_token_id", "seed"])
def test_integers_beyond_64_bits_are_value_errors(field):
    with pytest.raises(ValueError, match=field):
        kvgen.GenerationConfig(**{field: 2**70})


def test_numpy_integers_are_accepted():
    config = kvgen.GenerationConfig(top_k=np.int64(7), pad_token_id=np.int32(3), eos_token_id=[np.int64(2)])
    assert (config.top_k, config.pad_token_id, config.eos_token_id) == (7, 3, 2)
    assert config.logit_bias is None and kvgen.GenerationConfig(logit_bias={"5": 1}).logit_bias == {5: 1.0}


@pytest.mark.parametrize("field, value", [("pad_token_id", 10**9), ("pad_token_id", 5), ("bos_token_id", 5),
                                          ("eos_token_id", 5), ("forced_bos_token_id", 7), ("suppress_tokens", [9]),
                                          ("bad_words_ids", [[0, 5]]), ("logit_bias", {5: 1.0})])
def test_token_ids_are_checked_against_the_vocabulary(field, value):
    logits = np.zeros((2, 5), np.float32)
    config = kvgen.GenerationConfig(**{field: value})
    with pytest.raises(ValueError, match=f"{field}.*vocab"):
        kvgen.sample(logits, config)
    gen = kvgen.Generator(config)
    gen.append_tokens([[1], [2]])
    with pytest.raises(ValueError, match=f"{field}.*vocab"):
        gen.step(logits)


def test_negative_pad_token_id_is_refused():
    with pytest.raises(ValueError, match="pad_token_id"):
        kvgen.GenerationConfig(pad_token_id=-1)
