"""Speculative verification over external logits (Generator.verify): the tokens a row keeps
equal what step() by step() generation gives, token for token under greedy search and in
distribution under sampling (a chi-square test over seeded runs), with history-dependent
processors, stopping rules and per-position constraint masks."""

from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest

import kvgen
from kvgen.generation.step import TokenSelector

V = 8  # a small vocabulary keeps the exact reference distributions cheap


def toy_logits(history, vocab: int = V, scale: float = 2.0) -> np.ndarray:
    """A deterministic "model": logits that depend on the whole history (a seeded draw per
    history), so that a wrong history at a verified position shows up in the tokens."""
    return _toy_logits(tuple(int(t) for t in history), vocab, scale).copy()


@functools.lru_cache(maxsize=None)
def _toy_logits(history: tuple, vocab: int, scale: float) -> np.ndarray:
    seed = zlib.crc32(np.asarray(history, dtype=np.int64).tobytes())
    return (np.random.default_rng(seed).standard_normal(vocab) * scale).astype(np.float32)


def run_steps(config, prompts, vocab: int = V, sequence_ids=None, scale: float = 2.0, **generator_kwargs):
    """Plain step() by step() generation over toy_logits; the generator at the end."""
    g = TokenSelector(config, **generator_kwargs)
    g.append_tokens(prompts, sequence_ids=sequence_ids)
    while not g.is_done():
        rows = [toy_logits(s, vocab, scale) if reason is None else np.zeros(vocab, np.float32)
                for s, reason in zip(g.sequences, g.finish_reasons)]
        g.step(np.stack(rows))
    return g


def verify_logits(sequences, drafts, lengths, vocab: int = V) -> np.ndarray:
    """(rows, k + 1, vocab): toy_logits after each row's history and its first j drafts."""
    rows, k = drafts.shape
    out = np.zeros((rows, k + 1, vocab), np.float32)
    for r, seq in enumerate(sequences):
        for j in range(int(lengths[r]) + 1):
            out[r, j] = toy_logits(list(seq) + list(drafts[r, :j]), vocab)
    return out


def run_speculative(config, prompts, draft_fn, k: int, vocab: int = V, sequence_ids=None, rng=None,
                    **generator_kwargs):
    """Generation through verify(): draft_fn(row, sequence, rng) -> up to k draft tokens."""
    g = TokenSelector(config, **generator_kwargs)
    g.append_tokens(prompts, sequence_ids=sequence_ids)
    results = []
    while not g.is_done():
        drafts = np.full((g.rows, k), -1, np.int64)
        lengths = np.zeros(g.rows, np.int64)
        for r, seq in enumerate(g.sequences):
            d = list(draft_fn(r, list(seq), rng))[:k]
            drafts[r, :len(d)] = d
            lengths[r] = len(d)
        logits = verify_logits(g.sequences, drafts, lengths, vocab)
        results.append((g.sequences, lengths, g.verify(logits, drafts, lengths)))
    return g, results


def oracle_drafts(config, vocab: int = V, wrong_every: int = 3, k: int = 4):
    """Drafts that follow plain greedy generation's tokens for a while, then go wrong: the
    draft of a row agrees in part, so accepted runs of every length are exercised."""
    def draft(r, seq, rng):
        out, h = [], list(seq)
        n = (len(seq) + r) % (k + 1)
        for i in range(n):
            t = int(np.argmax(toy_logits(h, vocab)))  # raw argmax: processors may disagree
            if (len(seq) + i + r) % wrong_every == 0:
                t = (t + 1) % vocab
            out.append(t)
            h.append(t)
        return out
    return draft


TEXTS = ["a", "b", "c", "d", "e", "f", "g", "h"]  # token texts, for stop strings

GREEDY_CONFIGS = {
    "plain": dict(),
    "top_logprobs": dict(top_logprobs=3, repetition_penalty=1.5),
    "dry_bias_bad_words": dict(dry_multiplier=0.8, dry_allowed_length=1, dry_sequence_breakers=[],
                               logit_bias={1: 0.7}, bad_words_ids=[[4, 4]]),
    "stop_strings": dict(stop_strings=["cd", "hh"]),
    "repetition_penalty": dict(repetition_penalty=1.8),
    "no_repeat_ngram": dict(no_repeat_ngram_size=2),
    "presence_frequency": dict(presence_penalty=0.7, frequency_penalty=0.4),
    "eos_min_new": dict(eos_token_id=[3], min_new_tokens=4),
    "stop_sequence": dict(stop_sequences=[[0, 7, 2], [5, 4, 5], [1, 1, 1]]),
}


@pytest.mark.parametrize("name", list(GREEDY_CONFIGS))
def test_greedy_verify_equals_step_by_step(name):
    config = kvgen.GenerationConfig(max_new_tokens=24, do_sample=False, **GREEDY_CONFIGS[name])
    prompts = [[1, 2, 3], [4, 5], [6, 0, 2, 2]]
    kwargs = dict(token_strings=TEXTS, output_raw_logprobs=True)
    ref = run_steps(config, prompts, **kwargs)
    spec, results = run_speculative(config, prompts, oracle_drafts(config), k=4, **kwargs)
    for r in range(ref.rows):
        np.testing.assert_array_equal(spec.sequences[r], ref.sequences[r])
    assert spec.finish_reasons == ref.finish_reasons
    if name.startswith("stop"):
        assert "stop" in spec.finish_reasons  # the rule fired
    for a, b in zip(spec._hypotheses(), ref._hypotheses()):
        for ha, hb in zip(a, b):  # the same log-probs (processed, raw, top-n), bit for bit
            assert ha.keys() == hb.keys()
            for key in ha:
                if isinstance(ha[key], np.ndarray):
                    np.testing.assert_array_equal(ha[key], hb[key], err_msg=key)
                else:
                    assert ha[key] == hb[key], key
    # drafts agreed in part: some were accepted, some rejected
    assert 0 < int(spec.accepted_tokens.sum()) < int(spec.drafted_tokens.sum())
    for _before, lengths, res in results:
        # the result's per-row fields describe what was appended
        for r in range(spec.rows):
            assert res.rollback[r] == lengths[r] - res.accepted[r]
            assert len(res.emitted[r]) == res.num_emitted[r]
            if res.num_emitted[r]:
                assert res.tokens[r] == res.emitted[r][-1]
                assert res.num_emitted[r] <= res.accepted[r] + 1


def test_greedy_bonus_token_after_every_draft_is_accepted():
    config = kvgen.GenerationConfig(max_new_tokens=10, do_sample=False)
    g = TokenSelector(config)
    g.append_tokens([[1, 2]])
    seq, drafts = [1, 2], []
    for _ in range(3):
        t = int(np.argmax(toy_logits(seq)))
        drafts.append(t)
        seq.append(t)
    drafts = np.array([drafts])
    res = g.verify(verify_logits(g.sequences, drafts, [3]), drafts)
    bonus = int(np.argmax(toy_logits(seq)))
    assert res.accepted.tolist() == [3] and res.rollback.tolist() == [0]
    assert res.emitted[0].tolist() == drafts[0].tolist() + [bonus]
    assert res.tokens.tolist() == [bonus]
    assert g.acceptance_rate == 1.0


def test_a_row_that_stops_inside_the_accepted_run_keeps_tokens_up_to_the_stop():
    # EOS is the second draft: the row keeps two tokens, the third draft is not looked at
    seq = [1, 2]
    first = int(np.argmax(toy_logits(seq)))
    eos = int(np.argmax(toy_logits(seq + [first])))
    config = kvgen.GenerationConfig(max_new_tokens=10, do_sample=False, eos_token_id=[eos])
    g = TokenSelector(config)
    g.append_tokens([seq])
    drafts = np.array([[first, eos, 0]])
    res = g.verify(verify_logits(g.sequences, drafts, [3]), drafts)
    assert res.emitted[0].tolist() == [first, eos]
    assert res.accepted.tolist() == [2] and res.rollback.tolist() == [1]
    assert g.finish_reasons == ["eos"] and res.done
    # max_new_tokens cuts an accepted run the same way
    config = kvgen.GenerationConfig(max_new_tokens=2, do_sample=False)
    g = TokenSelector(config)
    g.append_tokens([seq])
    drafts = np.array([[first, eos, 0]])
    res = g.verify(verify_logits(g.sequences, drafts, [3]), drafts)
    assert res.emitted[0].tolist() == [first, eos] and g.finish_reasons == ["length"]


def test_k_zero_is_a_step():
    for config in (kvgen.GenerationConfig(max_new_tokens=6, do_sample=False),
                   kvgen.GenerationConfig(max_new_tokens=6, do_sample=True, temperature=0.9, top_k=5, seed=3)):
        ref = run_steps(config, [[1, 2], [3]])
        spec, _ = run_speculative(config, [[1, 2], [3]], lambda r, s, rng: [], k=0)
        for a, b in zip(spec.sequences, ref.sequences):
            np.testing.assert_array_equal(a, b)


def test_finished_rows_emit_nothing_and_roll_back_their_drafts():
    seq = [1, 2]
    eos = int(np.argmax(toy_logits(seq)))
    config = kvgen.GenerationConfig(max_new_tokens=5, do_sample=False, eos_token_id=[eos])
    g = TokenSelector(config)
    g.append_tokens([seq, [4, 4, 4]])
    logits = verify_logits(g.sequences, np.zeros((2, 0), np.int64), [0, 0])
    logits[1, 0, eos] = -np.inf  # row 1 goes on
    g.verify(logits, None)
    assert g.finish_reasons == ["eos", None]
    drafts = np.array([[0, 1], [2, 3]])
    logits = np.zeros((2, 3, V), np.float32)
    logits[1, :, 2] = 1.0
    res = g.verify(logits, drafts, [2, 1])
    assert res.num_emitted.tolist() == [0, 2] and res.emitted[0].tolist() == []
    assert res.accepted.tolist() == [0, 1] and res.rollback.tolist() == [2, 0]
    assert res.tokens[0] == eos  # pad_token_id defaults to eos_token_id[0], as HF
    assert res.logprobs[0] == -np.inf
    assert g.drafted_tokens.tolist() == [0, 1]  # drafts of a finished row are not counted


def test_verify_reads_the_logits_in_place_and_checks_its_inputs():
    config = kvgen.GenerationConfig(max_new_tokens=5, do_sample=False)
    g = TokenSelector(config)
    g.append_tokens([[1, 2]])
    logits = np.zeros((1, 3, V), np.float32)
    logits[0, :, 2] = 1.0
    with pytest.raises(TypeError, match="float32"):
        g.verify(logits.astype(np.float64), [[2, 2]])
    with pytest.raises(ValueError, match="3-D"):
        g.verify(logits[0], [[2, 2]])
    with pytest.raises(ValueError, match="C-contiguous"):
        g.verify(np.asfortranarray(logits), [[2, 2]])
    with pytest.raises(ValueError, match=r"drafts must have shape \(1, 2\)"):
        g.verify(logits, [[2, 2, 2]])
    with pytest.raises(ValueError, match=r"drafts\[0, 1\] = 8 is outside the vocabulary"):
        g.verify(logits, [[2, 8]])
    with pytest.raises(ValueError, match=r"draft_lengths\[0\] = 3 is outside 0 .. k = 2"):
        g.verify(logits, [[2, 2]], [3])
    with pytest.raises(ValueError, match="draft_probs must have shape"):
        g.verify(logits, [[2, 2]], draft_probs=np.zeros((1, 3, V), np.float32))
    sampler = TokenSelector(kvgen.GenerationConfig(max_new_tokens=5, do_sample=True, seed=0))
    sampler.append_tokens([[1, 2]])  # (greedy search reads no q)
    with pytest.raises(ValueError, match=r"draft_probs\[0, 0, 2\] = -1.0+: the draft probabilities must be finite"):
        sampler.verify(logits, [[2, 2]], draft_probs=np.full((1, 2, V), -1.0, np.float32))
    assert sampler.sequences[0].tolist() == [1, 2]
    with pytest.raises(ValueError, match="no constraint"):
        g.verify(logits, [[2, 2]], allowed_tokens=np.full((1, 3, 1), 0xFFFFFFFF, np.uint32))
    with pytest.raises(ValueError, match="contains NaN"):
        g.verify(np.full((1, 3, V), np.nan, np.float32), [[2, 2]])
    assert g.step_count == 0 and g.sequences[0].tolist() == [1, 2]  # failed calls changed nothing
    # entries past draft_lengths are ignored, even out of the vocabulary
    res = g.verify(logits, [[2, -5]], [1])
    assert res.emitted[0].tolist() == [2, 2] and res.accepted.tolist() == [1] and res.rollback.tolist() == [0]
    # the processed logits of the last emitted position are the generator's buffer, as after step()
    assert g.last_logits.shape == (1, V) and int(np.argmax(g.last_logits[0])) == 2


def test_verify_reads_a_torch_tensor_in_place():
    torch = pytest.importorskip("torch")
    config = kvgen.GenerationConfig(max_new_tokens=5, do_sample=False)
    g = TokenSelector(config)
    g.append_tokens([[1, 2]])
    logits = torch.zeros((1, 2, V))
    logits[0, :, 4] = 1.0
    res = g.verify(logits, torch.tensor([[4]]))
    assert res.emitted[0].tolist() == [4, 4]
    with pytest.raises(TypeError, match="float32"):
        g.verify(logits.double(), torch.tensor([[4]]))


def test_beam_search_is_refused():
    g = TokenSelector(kvgen.GenerationConfig(max_new_tokens=5, num_beams=2))
    g.append_tokens([[1, 2]])
    with pytest.raises(ValueError, match="beam search"):
        g.verify(np.zeros((2, 2, V), np.float32), [[1], [1]])


def test_verify_repr_and_fields():
    g = TokenSelector(kvgen.GenerationConfig(max_new_tokens=5, do_sample=False))
    g.append_tokens([[1, 2]])
    res = g.verify(np.zeros((1, 1, V), np.float32), None)
    assert "VerifyResult(tokens=" in repr(res) and "rollback=" in repr(res)
    assert res.accepted.dtype == np.int64 and res.emitted_logprobs[0].dtype == np.float32
    assert g.acceptance_rate is None  # nothing drafted yet


# ---- sampling: the rejection rule keeps the distribution ---------------------------------

SAMPLING = dict(do_sample=True, temperature=0.8, top_k=5, top_p=0.95, repetition_penalty=1.3, seed=1234)
SCALE = 1.0  # toy logits' spread here: many sequences keep a fair share of the mass
RUNS = 20_000  # seeded rows, one run each (rows draw with their own keys: batch-invariant)
PROMPT = [1, 2]
NEW = 3  # the joint distribution of the first three tokens


def processed_probs(history) -> np.ndarray:
    """SAMPLING's distribution after `history`, written from Hugging Face's processors
    (RepetitionPenalty, Temperature, TopK, TopP in that order) in NumPy."""
    x = toy_logits(history, scale=SCALE).astype(np.float64)
    seen = np.unique(np.asarray(history))
    x[seen] = np.where(x[seen] < 0, x[seen] * SAMPLING["repetition_penalty"], x[seen] / SAMPLING["repetition_penalty"])
    x = x / SAMPLING["temperature"]
    x[x < np.sort(x)[-SAMPLING["top_k"]]] = -np.inf
    order = np.argsort(x)  # ascending, as TopPLogitsWarper
    p_sorted = np.exp(x[order] - x.max())
    p_sorted /= p_sorted.sum()
    remove = np.cumsum(p_sorted) <= 1 - SAMPLING["top_p"]
    remove[-1] = False
    x[order[remove]] = -np.inf
    p = np.exp(x - x.max())
    return p / p.sum()


def exact_joint() -> dict:
    """P(first NEW tokens) of plain sampling, by enumeration."""
    out = {(): 1.0}
    for _ in range(NEW):
        nxt = {}
        for seq, prob in out.items():
            p = processed_probs(PROMPT + list(seq))
            for t in np.flatnonzero(p > 0):
                nxt[seq + (int(t),)] = prob * p[t]
        out = nxt
    return out


def draft_probs_after(history) -> np.ndarray:
    """A draft model's distribution: the target's raw logits plus noise, at the temperature,
    over every token (no top-k / top-p): close to p, never equal."""
    x = toy_logits(history, scale=SCALE) + toy_logits(list(history) + [V + 1], scale=0.8)
    q = np.exp((x - x.max()).astype(np.float64) / SAMPLING["temperature"])
    return (q / q.sum()).astype(np.float32)


def sample_speculative(mode: str, k: int = 2, config=None, sequence_ids=None, seed: int = 7):
    """Generation through verify() over RUNS rows, the drafts sampled from draft_probs_after
    with randomness of their own: mode 'q' passes q as draft_probs, mode 'onehot' does not
    (one-hot q, as for prompt-lookup drafts: exact for any drafts chosen independently of
    the verifier's draws)."""
    config = config or kvgen.GenerationConfig(max_new_tokens=NEW, **SAMPLING)
    ids = list(range(RUNS)) if sequence_ids is None else list(sequence_ids)
    g = TokenSelector(config)
    g.append_tokens([PROMPT] * len(ids), sequence_ids=ids)
    # the drafts' own randomness: a uniform per (row id, token index, draft position), so a
    # row drafts alike in any batch
    uniforms = np.random.default_rng(seed).random((max(ids) + 1, config.max_new_tokens + 1, k))
    logits_of, q_of = {}, {}
    while not g.is_done():
        seqs = g.sequences
        drafts = np.zeros((g.rows, k), np.int64)
        probs = np.zeros((g.rows, k, V), np.float32) if mode == "q" else None
        logits = np.zeros((g.rows, k + 1, V), np.float32)
        for r, s in enumerate(seqs):
            h = tuple(s.tolist())
            u = uniforms[ids[r], len(h) - len(PROMPT)]
            for j in range(k + 1):
                if h not in logits_of:
                    logits_of[h] = toy_logits(h, scale=SCALE)
                logits[r, j] = logits_of[h]
                if j == k:
                    break
                if h not in q_of:
                    q = draft_probs_after(h)
                    q_of[h] = (q, np.cumsum(q, dtype=np.float64))
                q, cdf = q_of[h]
                if probs is not None:
                    probs[r, j] = q
                t = min(int(np.searchsorted(cdf, u[j] * cdf[-1], side="right")), V - 1)
                drafts[r, j] = t
                h = h + (t,)
        g.verify(logits, drafts, draft_probs=probs)
    return g


def chi_square_pvalue(sequences, joint) -> float:
    """Chi-square of the first NEW generated tokens' counts against `joint`; cells with an
    expected count under 5 are pooled into one."""
    from scipy import stats

    n = len(sequences)
    counts = {}
    for s in sequences:
        key = tuple(int(t) for t in s[len(PROMPT):len(PROMPT) + NEW])
        counts[key] = counts.get(key, 0) + 1
    assert set(counts) <= set(joint), "a sequence that plain sampling cannot produce"
    big = [c for c in joint if joint[c] * n >= 5]
    observed = [counts.get(c, 0) for c in big]
    expected = [joint[c] * n for c in big]
    rest_observed, rest_expected = n - sum(observed), n - sum(expected)
    if rest_expected >= 5:
        observed.append(rest_observed)
        expected.append(rest_expected)
    else:  # too small a cell of its own: pooled with the smallest one
        smallest = int(np.argmin(expected))
        observed[smallest] += rest_observed
        expected[smallest] += rest_expected
    return float(stats.chisquare(observed, expected).pvalue)


@pytest.fixture(scope="module")
def joint():
    return exact_joint()


def test_plain_sampling_matches_the_reference_distribution(joint):
    # the reference itself: step() by step() sampling follows it
    g = run_steps(kvgen.GenerationConfig(max_new_tokens=NEW, **SAMPLING), [PROMPT] * RUNS, scale=SCALE)
    assert chi_square_pvalue(g.sequences, joint) > 1e-3


@pytest.mark.parametrize("mode", ["onehot", "q"])
def test_speculative_sampling_keeps_the_distribution(joint, mode):
    g = sample_speculative(mode)
    assert chi_square_pvalue(g.sequences, joint) > 1e-3
    # the drafts were both accepted and rejected
    assert 0 < int(g.accepted_tokens.sum()) < int(g.drafted_tokens.sum())


def test_speculative_sampling_repeats_and_does_not_depend_on_the_batch():
    config = kvgen.GenerationConfig(max_new_tokens=6, **SAMPLING)
    global RUNS
    saved, RUNS = RUNS, 64
    try:
        batch = sample_speculative("q", config=config)
        again = sample_speculative("q", config=config)
        for a, b in zip(batch.sequences, again.sequences):
            np.testing.assert_array_equal(a, b)
        for i in (0, 17, 63):  # a row alone, with its sequence id, draws the same tokens
            alone = sample_speculative("q", config=config, sequence_ids=[i])
            np.testing.assert_array_equal(alone.sequences[0], batch.sequences[i])
        # rows differ from each other (the keys differ)
        assert len({tuple(s.tolist()) for s in batch.sequences}) > 8
    finally:
        RUNS = saved


# ---- constraints: a mask per position ----------------------------------------------------

def toy_mask(history, vocab: int = V) -> np.ndarray:
    """An allowed-token bitmask (1 word) that depends on the history: about half the tokens."""
    bits = np.random.default_rng(zlib.crc32(np.asarray(history, np.int64).tobytes()) + 1).random(vocab) < 0.5
    bits[zlib.crc32(np.asarray(history, np.int64).tobytes()) % vocab] = True  # never empty
    return np.array([sum(1 << t for t in np.flatnonzero(bits))], dtype=np.uint32)


@pytest.mark.parametrize("sampling", [False, True])
def test_masks_per_position_are_honoured(sampling):
    # the core class takes the caller's masks (a config with a constraint asks for them)
    extra = dict(do_sample=True, temperature=1.0, seed=5) if sampling else dict(do_sample=False)
    config = kvgen.GenerationConfig(max_new_tokens=12, regex="unused: the masks are the caller's", **extra)
    prompts = [[1, 2], [3, 3, 4]]

    ref = kvgen._core._TokenSelector(config)
    ref.append_tokens(prompts)
    while not ref.is_done():
        ref.step(np.stack([toy_logits(s) for s in ref.sequences]),
                 allowed_tokens=np.stack([toy_mask(s) for s in ref.sequences]))

    g = kvgen._core._TokenSelector(config)
    g.append_tokens(prompts)
    k = 3
    while not g.is_done():
        drafts = np.zeros((g.rows, k), np.int64)
        for r, s in enumerate(g.sequences):  # raw argmaxes: often forbidden by the mask
            h = list(s)
            for j in range(k):
                drafts[r, j] = int(np.argmax(toy_logits(h))) if (len(h) + j) % 4 else (len(h) * 3) % V
                h.append(int(drafts[r, j]))
        lengths = np.full(g.rows, k)
        masks = np.zeros((g.rows, k + 1, 1), np.uint32)
        for r, s in enumerate(g.sequences):
            for j in range(k + 1):
                masks[r, j] = toy_mask(list(s) + list(drafts[r, :j]))
        before = [len(s) for s in g.sequences]
        res = g.verify(verify_logits(g.sequences, drafts, lengths), drafts, lengths, allowed_tokens=masks)
        for r, s in enumerate(g.sequences):  # every emitted token is allowed by its position's mask
            for i, t in enumerate(s[before[r]:]):
                assert masks[r, i, 0] >> np.uint32(t) & np.uint32(1), (r, i, t)
            assert res.num_emitted[r] == len(s) - before[r]
    if not sampling:  # greedy: the very tokens of step() by step() generation
        for a, b in zip(g.sequences, ref.sequences):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="allows no token for row 0 at position 0"):
        g2 = kvgen._core._TokenSelector(config)
        g2.append_tokens(prompts)
        g2.verify(np.zeros((2, 1, V), np.float32), None, allowed_tokens=np.zeros((2, 1, 1), np.uint32))
    with pytest.raises(ValueError, match=r"allowed_tokens must have shape \(2, 1, 1\)"):
        g2.verify(np.zeros((2, 1, V), np.float32), None, allowed_tokens=np.zeros((2, 1), np.uint32))


def test_a_tokenizer_constraint_stays_valid_and_exact_under_speculation(smollm2_model):
    import re

    pattern = r"[0-9]{1,3}(,[0-9]{1,3}){2}"
    vocab = smollm2_model.vocab_size
    config = kvgen.GenerationConfig(max_new_tokens=24, do_sample=False, regex=pattern)
    prompts = [[1, 2], [5]]

    ref = kvgen.Generator(config, tokenizer=smollm2_model)
    ref.append_tokens(prompts)
    while not ref.is_done():
        ref.step(np.stack([toy_logits(s, vocab) for s in ref.sequences]))
    plain = [list(s) for s in ref.sequences]

    g = kvgen.Generator(config, tokenizer=smollm2_model)
    g.append_tokens(prompts)
    k = 3
    while not g.is_done():
        drafts = np.zeros((g.rows, k), np.int64)
        for r, s in enumerate(g.sequences):  # the plain run's next tokens, one of them wrong now and then
            nxt = plain[r][len(s):len(s) + k]
            nxt += [7] * (k - len(nxt))
            if len(s) % 3 == 0:
                nxt[1] = 1000 + len(s)
            drafts[r] = nxt
        lengths = np.full(g.rows, k)
        res = g.verify(verify_logits(g.sequences, drafts, lengths, vocab), drafts, lengths)
        # drafts cut by the grammar roll back with the rejected ones
        assert (res.rollback == lengths - res.accepted).all()
    for a, b in zip(g.sequences, ref.sequences):
        np.testing.assert_array_equal(a, b)
    assert g.finish_reasons == ref.finish_reasons
    assert int(g.accepted_tokens.sum()) > 0
    assert g.finish_reasons == ["stop", "stop"]  # the grammar ended each row
    for s, p in zip(g.sequences, prompts):
        assert re.fullmatch(pattern, smollm2_model.decode(s[len(p):].tolist()))


@pytest.mark.parametrize("extra", [
    dict(mirostat=2, mirostat_tau=2.0, mirostat_eta=0.3),
    dict(top_k=0, min_p=0.05, typical_p=0.9, xtc_probability=0.5, xtc_threshold=0.1, presence_penalty=0.5,
         dry_multiplier=0.8, dry_allowed_length=1, dry_sequence_breakers=[]),
], ids=["mirostat", "xtc_min_p_typical_dry"])
def test_speculative_sampling_matches_plain_sampling_with_stateful_samplers(extra):
    # mirostat's mu follows each token's surprise and XTC draws its own keyed coin: the
    # reference is plain sampling itself, sampled, against which speculative verification's
    # joint distribution of the first tokens is tested (two-sample chi-square)
    from scipy import stats

    fields = dict(SAMPLING, top_k=0, top_p=1.0, repetition_penalty=1.0, temperature=1.0)
    fields.update(extra)
    config = kvgen.GenerationConfig(max_new_tokens=NEW, **fields)
    plain = run_steps(config, [PROMPT] * RUNS, scale=SCALE)
    spec = sample_speculative("q", config=config, sequence_ids=range(RUNS, 2 * RUNS))  # other keys
    assert 0 < int(spec.accepted_tokens.sum()) < int(spec.drafted_tokens.sum())
    table = {}
    for column, g in enumerate((plain, spec)):
        for s in g.sequences:
            key = tuple(s[len(PROMPT):].tolist())
            table.setdefault(key, [0, 0])[column] += 1
    counts = np.array(list(table.values()))
    small = counts.sum(axis=1) < 10  # sparse cells pooled
    if small.any():
        counts = np.vstack([counts[~small], counts[small].sum(axis=0, keepdims=True)])
    assert len(counts) > 20
    assert stats.chi2_contingency(counts).pvalue > 1e-3


def test_verify_releases_the_gil():
    # With a switch interval of minutes, this thread runs while verify() is in C++ only if
    # verify() released the GIL (a few tries: a late wake-up on a loaded machine can miss it).
    import sys
    import threading

    rows, k, vocab = 32, 4, 151_936
    logits = np.random.default_rng(0).standard_normal((rows, k + 1, vocab)).astype(np.float32)
    config = kvgen.GenerationConfig(max_new_tokens=8, do_sample=True, top_p=0.9, seed=0)

    def main_thread_runs_during_verify() -> bool:
        g = TokenSelector(config)
        g.append_tokens([[1]] * rows)
        drafts = np.argmax(logits[:, :k], axis=-1)
        entered, done = threading.Event(), threading.Event()

        def work():
            entered.set()
            g.verify(logits, drafts)
            done.set()

        worker = threading.Thread(target=work)
        worker.start()
        assert entered.wait(60)
        ran = not done.is_set()
        worker.join()
        return ran

    old = sys.getswitchinterval()
    sys.setswitchinterval(300.0)
    try:
        assert any(main_thread_runs_during_verify() for _ in range(5)), "verify() held the GIL"
    finally:
        sys.setswitchinterval(old)
