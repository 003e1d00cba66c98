"""llama.cpp's samplers (DRY, XTC, top-n-sigma, mirostat v1/v2) against their definitions in
llama.cpp's src/llama-sampling.cpp: hand-worked cases on tiny vocabularies, NumPy re-derivations
of each rule, and chi-square tests over seeded draws for the random ones."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import scipy.stats

import kvgen
from kvgen import GenerationConfig, Generator

TEXTS = ["a", "b", "c", "d", "\n", ":", "x", "y"]
A, B, C, D, NL, COLON, X, Y = range(8)


def processed(config: GenerationConfig, logits, history, texts=TEXTS) -> np.ndarray:
    """The processed logits of one step over one prompt."""
    g = Generator(config, token_strings=texts)
    g.append_tokens([list(history)])
    g.step(np.asarray(logits, dtype=np.float32)[None])
    return g.last_logits[0].copy()


def dry(**kw) -> GenerationConfig:
    kw.setdefault("dry_multiplier", 1.0)
    kw.setdefault("dry_base", 2.0)
    return GenerationConfig(max_new_tokens=1, **kw)


# ---- DRY --------------------------------------------------------------------------------


def dry_reference(logits, history, texts, mult, base, allowed, last_n, breakers):
    """DRY from llama.cpp's definition, written directly (quadratic, no Z-algorithm): the
    repeat each token would extend, capped by the tokens since the most recent breaker."""
    out = np.array(logits, dtype=np.float32)
    window = list(history) if last_n == -1 else list(history)[-last_n:]
    n = len(window)
    if n <= allowed:
        return out
    s = window[::-1]  # s[j]: the j-th token from the end

    def tail(i):  # tokens after s[i] that complete a breaker starting in s[i]
        text = texts[s[i]]
        if any(b in text for b in breakers):
            return 0
        best = None
        for b in breakers:
            for pos in range(len(text)):
                part = text[pos:]
                if not b.startswith(part):
                    continue
                spelled, k = part, 0
                while len(spelled) < len(b) and k < i:
                    k += 1
                    spelled += texts[s[i - k]]
                if spelled.startswith(b) and (best is None or k > best):
                    best = k
        return best

    limit = n
    for i in range(n):
        t = tail(i)
        if t is not None:
            limit = i - t
            break
    if limit < allowed:
        return out
    longest = {}
    for k in range(1, n):
        m = 0
        while k + m < n and s[m] == s[k + m]:
            m += 1
        rep = min(m, limit)
        if rep >= allowed:
            longest[s[k - 1]] = max(longest.get(s[k - 1], -1), rep)
    for tok, rep in longest.items():
        if not any(b in texts[tok] for b in breakers):
            out[tok] -= np.float32(mult * base ** (rep - allowed))
    return out


def test_dry_penalizes_the_token_that_extends_a_repeat():
    # a b c a b: "a b" repeats (length 2 = allowed_length), so c would extend it: 1 * 2**0
    out = processed(dry(), np.zeros(8), [A, B, C, A, B])
    expected = np.zeros(8, np.float32)
    expected[C] = -1.0
    np.testing.assert_array_equal(out, expected)


def test_dry_penalty_grows_with_the_repeat_length():
    # a b c a b c a b: "a b c a b" (5 tokens) repeats before c: 1 * 2**(5 - 2) = 8
    out = processed(dry(), np.zeros(8), [A, B, C, A, B, C, A, B])
    expected = np.zeros(8, np.float32)
    expected[C] = -8.0
    np.testing.assert_array_equal(out, expected)


def test_dry_single_token_breaker_limits_the_repeat_and_is_never_penalized():
    history = [A, B, COLON, A, B, COLON, A, B]
    # with ':' a breaker: the repeat stops at the last ':' (2 tokens), and ':' itself is exempt
    np.testing.assert_array_equal(processed(dry(), np.zeros(8), history), np.zeros(8, np.float32))
    # without breakers ':' would extend "a b : a b" (5 tokens): 2**3
    out = processed(dry(dry_sequence_breakers=None), np.zeros(8), history)
    expected = np.zeros(8, np.float32)
    expected[COLON] = -8.0
    np.testing.assert_array_equal(out, expected)


def test_dry_multi_token_breaker():
    # breaker "xy" spelled by the tokens x, y: the repeat is limited to the 2 tokens after it
    history = [A, B, X, Y, A, B, X, Y, A, B]
    out = processed(dry(dry_sequence_breakers=["xy"]), np.zeros(8), history)
    expected = np.zeros(8, np.float32)
    expected[X] = -1.0  # 1 * 2**(2 - 2)
    np.testing.assert_array_equal(out, expected)
    out = processed(dry(dry_sequence_breakers=None), np.zeros(8), history)
    expected[X] = -16.0  # "a b x y a b" (6 tokens): 2**4
    np.testing.assert_array_equal(out, expected)


def test_dry_penalty_last_n_and_off_switches():
    history = [A, B, C, A, B, C, A, B]
    # only the last 5 tokens (a b c a b) are scanned: "a b" repeats before c, 1 * 2**0
    out = processed(dry(dry_penalty_last_n=5), np.zeros(8), history)
    expected = np.zeros(8, np.float32)
    expected[C] = -1.0
    np.testing.assert_array_equal(out, expected)
    for off in ({"dry_multiplier": 0.0}, {"dry_penalty_last_n": 0}):
        np.testing.assert_array_equal(processed(dry(**off), np.zeros(8), history), np.zeros(8, np.float32))


@pytest.mark.parametrize("seed", range(12))
def test_dry_matches_the_reference_on_random_histories(seed):
    rng = np.random.default_rng(seed)
    history = [int(t) for t in rng.integers(0, 8, size=int(rng.integers(3, 40)))]
    logits = rng.normal(size=8).astype(np.float32)
    breakers = [["\n", ":"], ["xy", "c:"], []][seed % 3]
    allowed = int(rng.integers(0, 4))
    last_n = [-1, 10, 25][seed % 3]
    config = dry(dry_multiplier=0.8, dry_base=1.75, dry_allowed_length=allowed, dry_penalty_last_n=last_n,
                 dry_sequence_breakers=breakers or None)
    expected = dry_reference(logits, history, TEXTS, 0.8, 1.75, allowed, last_n, breakers)
    np.testing.assert_allclose(processed(config, logits, history), expected, rtol=1e-6, atol=1e-6)


def test_dry_needs_the_token_texts():
    g = Generator(dry())
    with pytest.raises(ValueError, match="dry_sequence_breakers"):
        g.append_tokens([[0, 1]])
    g = Generator(dry(dry_sequence_breakers=None))  # no breakers: no texts needed
    g.append_tokens([[0, 1]])
    g.step(np.zeros((1, 8), np.float32))


def test_dry_with_the_model_uses_its_token_texts(smollm2_model):
    config = GenerationConfig(max_new_tokens=12, dry_multiplier=0.8)
    text = kvgen.Generator(smollm2_model, config).generate("One, two, one, two, one, two,")
    assert isinstance(text, str)


# ---- top-n-sigma ------------------------------------------------------------------------


def sampling(**kw) -> GenerationConfig:
    return GenerationConfig(do_sample=True, top_k=0, max_new_tokens=1, seed=0, **kw)


@pytest.mark.parametrize("n", [0.5, 1.0, 2.0])
def test_top_n_sigma_keeps_logits_within_n_std_of_the_max(n):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=64).astype(np.float32) * 3
    logits[5] = -np.inf  # -inf entries are left out of the mean and std
    finite = logits[np.isfinite(logits)].astype(np.float64)
    keep = logits >= np.float32(finite.max() - n * finite.std())
    out = processed(sampling(top_n_sigma=n), logits, [0], texts=None)
    np.testing.assert_array_equal(np.isfinite(out), keep)
    np.testing.assert_array_equal(out[keep], logits[keep])


def test_top_n_sigma_worked_case():
    # logits 0, 1, 2, 3: mean 1.5, std sqrt(1.25) = 1.118; n = 1 keeps >= 3 - 1.118 = 1.882
    out = processed(sampling(top_n_sigma=1.0), [0.0, 1.0, 2.0, 3.0], [0], texts=None)
    np.testing.assert_array_equal(out, [-np.inf, -np.inf, 2.0, 3.0])


# ---- XTC ----------------------------------------------------------------------------------


def test_xtc_removes_the_top_choices_but_the_least_likely():
    p = np.array([0.4, 0.3, 0.2, 0.1])
    # threshold 0.15: 0.4, 0.3, 0.2 are top choices; 0.2 (the least likely of them) stays
    out = processed(sampling(xtc_probability=1.0, xtc_threshold=0.15), np.log(p), [0], texts=None)
    np.testing.assert_allclose(out, [-np.inf, -np.inf, np.log(0.2), np.log(0.1)], rtol=1e-6)
    # one top choice only (0.4 >= 0.35): nothing removed; threshold > 0.5: off
    for threshold in (0.35, 0.6):
        out = processed(sampling(xtc_probability=1.0, xtc_threshold=threshold), np.log(p), [0], texts=None)
        np.testing.assert_allclose(out, np.log(p), rtol=1e-6)


def draw_counts(config: GenerationConfig, logits, rows: int, steps: int = 1) -> np.ndarray:
    """Counts of the first-step tokens of `rows` independently keyed rows."""
    config = copy.copy(config)
    config.num_return_sequences = rows
    g = Generator(config)
    g.append_tokens([[0]])
    step = g.step(np.tile(np.asarray(logits, np.float32), (rows, 1)))
    return np.bincount(step.tokens, minlength=len(logits))


def test_xtc_distribution_is_the_mixture_of_both_branches():
    p = np.array([0.4, 0.3, 0.2, 0.1])
    prob = 0.5
    cut = np.array([0, 0, 0.2, 0.1]) / 0.3
    expected = (1 - prob) * p + prob * cut
    rows = 4000
    counts = draw_counts(sampling(xtc_probability=prob, xtc_threshold=0.15), np.log(p), rows)
    assert scipy.stats.chisquare(counts, expected * rows).pvalue > 1e-3


# ---- mirostat -----------------------------------------------------------------------------


def mirostat_config(version, **kw) -> GenerationConfig:
    kw.setdefault("mirostat_tau", 1.0)
    kw.setdefault("mirostat_eta", 0.1)
    return GenerationConfig(do_sample=True, mirostat=version, max_new_tokens=5, seed=3, **kw)


def test_mirostat_v2_truncates_at_mu_and_updates_it():
    p = np.array([0.5, 0.3, 0.15, 0.05])
    g = Generator(mirostat_config(2))
    g.append_tokens([[0]])
    np.testing.assert_allclose(g.mirostat_mu, [2.0])  # 2 * tau
    step = g.step(np.log(p).astype(np.float32)[None])
    # mu = 2 bits: keep p >= 2**-2 = 0.25
    np.testing.assert_allclose(g.last_logits[0], [np.log(0.5), np.log(0.3), -np.inf, -np.inf], rtol=1e-6)
    token = int(step.tokens[0])
    surprise = -math.log2(p[token] / 0.8)  # under the renormalized kept set
    np.testing.assert_allclose(g.mirostat_mu, [2.0 - 0.1 * (surprise - 1.0)], rtol=1e-5)


def mirostat_v1_keep(p: np.ndarray, mu: float, m: int = 100) -> int:
    """llama.cpp's mirostat v1: the Zipf exponent from the top m probabilities, then k."""
    q = np.sort(p)[::-1][:m]
    i = np.arange(len(q) - 1)
    t = np.log((i + 2) / (i + 1))
    b = np.log(q[:-1] / q[1:])
    s = (t * b).sum() / (t * t).sum()
    eps = s - 1
    k = (eps * 2 ** mu / (1 - len(p) ** -eps)) ** (1 / s)
    return max(int(k), 1)


def test_mirostat_v1_keeps_the_top_k_of_its_estimate():
    ranks = np.arange(1, 41)
    p = ranks ** -1.3
    p /= p.sum()
    for tau in (1.5, 3.0):
        k = mirostat_v1_keep(p, 2 * tau)
        assert 1 < k < 40
        g = Generator(mirostat_config(1, mirostat_tau=tau))
        g.append_tokens([[0]])
        g.step(np.log(p).astype(np.float32)[None])
        kept = np.isfinite(g.last_logits[0])
        np.testing.assert_array_equal(kept, np.arange(40) < k)


@pytest.mark.parametrize("version", [1, 2])
def test_mirostat_draws_follow_the_truncated_distribution(version):
    p = np.array([0.45, 0.3, 0.15, 0.06, 0.04])
    mu = 2.0  # tau = 1
    if version == 2:
        kept = -np.log2(p) <= mu
    else:
        kept = np.arange(len(p)) < mirostat_v1_keep(p, mu)
    expected = np.where(kept, p, 0) / p[kept].sum()
    rows = 3000
    counts = draw_counts(mirostat_config(version), np.log(p), rows)
    assert counts[~kept].sum() == 0
    assert scipy.stats.chisquare(counts[kept], expected[kept] * rows).pvalue > 1e-3


def test_mirostat_mu_follows_beam_reorders():
    eta, tau = 0.2, 1.5
    g = Generator(GenerationConfig(do_sample=True, num_beams=3, mirostat=2, mirostat_tau=tau, mirostat_eta=eta,
                                   max_new_tokens=6, seed=5))
    g.append_tokens([[0]])
    rng = np.random.default_rng(0)
    mu = np.full(3, 2 * tau)
    while not g.is_done():
        step = g.step(rng.normal(size=(3, 12)).astype(np.float32) * 2)
        lp = g.last_logits.astype(np.float64)
        for r in range(3):
            parent = int(step.beam_indices[r])
            row = lp[parent]
            token = int(step.tokens[r])
            logp = row[token] - np.logaddexp.reduce(row[np.isfinite(row)])
            expected = mu[parent] - eta * (-logp / math.log(2) - tau)
            np.testing.assert_allclose(g.mirostat_mu[r], expected, rtol=1e-4, atol=1e-4)
        mu = g.mirostat_mu.astype(np.float64)


def test_mirostat_rows_draw_alike_in_any_batch():
    """A row's draws and mu are keyed by (seed, sequence id): the same in another batch."""
    rng = np.random.default_rng(2)
    steps = [rng.normal(size=16).astype(np.float32) * 2 for _ in range(5)]
    config = mirostat_config(2, mirostat_tau=2.0)
    alone, together = Generator(config), Generator(config)
    alone.append_tokens([[1]], sequence_ids=[7])
    together.append_tokens([[4], [1]], sequence_ids=[3, 7])
    for logits in steps:
        a = alone.step(logits[None])
        t = together.step(np.stack([logits[::-1].copy(), logits]))
        assert a.tokens[0] == t.tokens[1]
        assert alone.mirostat_mu[0] == together.mirostat_mu[1]


# ---- order and bad values ------------------------------------------------------------------


def test_mirostat_replaces_the_other_warpers():
    """As llama.cpp: with mirostat, top-k (kvgen's default 50) and the rest do not apply."""
    p = np.full(80, 1 / 80)
    g = Generator(GenerationConfig(do_sample=True, mirostat=2, mirostat_tau=5.0, top_k=3, max_new_tokens=1))
    g.append_tokens([[0]])
    g.step(np.log(p).astype(np.float32)[None])
    # every token has surprise log2(80) = 6.3 <= mu = 10 bits: all kept, top_k ignored
    assert np.isfinite(g.last_logits[0]).all()


@pytest.mark.parametrize("field, value", [
    ("dry_multiplier", -1.0), ("dry_base", 0.5), ("dry_allowed_length", -1), ("dry_penalty_last_n", -2),
    ("xtc_probability", 1.5), ("xtc_threshold", -0.1), ("mirostat", 3), ("mirostat_tau", -1.0),
    ("mirostat_eta", -0.1), ("dry_sequence_breakers", [""]),
])
def test_bad_values_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        GenerationConfig(**{field: value}).validate()


def test_defaults_are_llama_cpp_pythons_and_off():
    c = GenerationConfig()
    assert (c.dry_multiplier, c.dry_base, c.dry_allowed_length, c.dry_penalty_last_n) == (0.0, 1.75, 2, -1)
    assert c.dry_sequence_breakers == ["\n", ":", '"', "*"]
    assert (c.xtc_probability, c.xtc_threshold, c.top_n_sigma) == (0.0, 0.1, -1.0)
    assert (c.mirostat, c.mirostat_tau, c.mirostat_eta) == (0, 5.0, 0.1)
