"""kvgen.LogitsProcessor against Hugging Face's own processor chain, token for token.

HF builds its processors with ``GenerationMixin._get_logits_processor`` (see
hf_reference.py); both sides get the same random logits and histories. The processed
logits must mask the same tokens (-inf) and agree within 1e-5 elsewhere.

Where a filter's cut depends on a float sum (top-p, typical, epsilon, eta), the two
sides round differently: torch sums the softmax and the entropy in float32 over up to
150k terms (an error near 1e-4 at that size), kvgen in double. A token whose statistic
lies that close to the cut can fall on the other side. Such a token is accepted only if
it lies within BORDER_TOLERANCE nats of the border between the tokens both keep and the
tokens both drop, in the filter's own ordering.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch
from hf_reference import hf_process

import kvgen

VOCABS = [7, 1000, 5003, 50257, 151936]
BORDER_TOLERANCE = 1e-3
PROMPT = 9  # prompt tokens in every 12-token history

# (id, kvgen = HF settings, ordering key of a threshold filter or None)
CASES = [
    ("repetition_penalty", dict(repetition_penalty=1.3), None),
    ("repetition_penalty_below_1", dict(repetition_penalty=0.7), None),
    ("no_repeat_ngram_1", dict(no_repeat_ngram_size=1), None),
    ("no_repeat_ngram_2", dict(no_repeat_ngram_size=2), None),
    ("no_repeat_ngram_3", dict(no_repeat_ngram_size=3), None),
    ("bad_words", dict(bad_words_ids=[[5], [3, 4], [1, 2, 3], [2]], eos_token_id=2), None),
    ("sequence_bias", dict(sequence_bias={(5,): 2.0, (3, 4): -1.5, (0, 1, 2): 4.0}), None),
    ("min_length", dict(min_length=40, eos_token_id=[2, 3]), None),
    ("min_length_reached", dict(min_length=5, eos_token_id=[2, 3]), None),
    ("min_new_tokens", dict(min_new_tokens=5, eos_token_id=2), None),
    ("forced_eos", dict(forced_eos_token_id=2, max_length=13), None),
    ("forced_eos_with_max_new_tokens", dict(forced_eos_token_id=[2, 3], max_new_tokens=4), None),
    ("suppress_tokens", dict(suppress_tokens=[1, 4]), None),
    ("begin_suppress_tokens", dict(begin_suppress_tokens=[1, 4]), None),
    ("temperature", dict(do_sample=True, temperature=0.7, top_k=0), None),
    ("top_k", dict(do_sample=True, top_k=10), None),
    ("top_k_default_50", dict(do_sample=True), None),
    ("top_p", dict(do_sample=True, top_k=0, top_p=0.8), "logit"),
    ("top_p_wide", dict(do_sample=True, top_k=0, top_p=0.99), "logit"),
    ("min_p", dict(do_sample=True, top_k=0, min_p=0.1), "logit"),
    ("typical_p", dict(do_sample=True, top_k=0, typical_p=0.7), "typical"),
    ("epsilon_cutoff", dict(do_sample=True, top_k=0, epsilon_cutoff=3e-4), "logit"),
    ("eta_cutoff", dict(do_sample=True, top_k=0, eta_cutoff=3e-4), "logit"),
    ("renormalize", dict(renormalize_logits=True), None),
    ("greedy_ignores_warpers", dict(do_sample=False, top_k=3, top_p=0.5, temperature=0.5), None),
    ("beam_sampling_min_keep", dict(do_sample=True, num_beams=3, top_k=1, eos_token_id=[2, 3]), None),
    (
        "full_chain",
        dict(
            do_sample=True, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, repetition_penalty=1.2,
            no_repeat_ngram_size=3, sequence_bias={(5,): 1.0}, suppress_tokens=[6], renormalize_logits=True,
        ),
        None,
    ),
    (
        "chain_after_top_k",
        dict(do_sample=True, temperature=1.3, top_k=200, top_p=0.9, typical_p=0.9, epsilon_cutoff=1e-4,
             eta_cutoff=1e-3),
        None,
    ),
]


def typical_key(logits: np.ndarray) -> np.ndarray:
    """|surprisal - entropy| per token: the ordering of HF's TypicalLogitsWarper."""
    t = torch.from_numpy(logits)
    logp = torch.log_softmax(t, -1)
    entropy = -(logp * logp.exp()).nansum(-1, keepdim=True)
    return (-logp - entropy).abs().numpy()


def assert_same_processing(ref: np.ndarray, got: np.ndarray, order: np.ndarray | None) -> None:
    ref_masked, got_masked = np.isneginf(ref), np.isneginf(got)
    differ = ref_masked != got_masked
    if order is not None:  # "higher order = kept first"
        for row in range(ref.shape[0]):
            cols = np.flatnonzero(differ[row])
            if len(cols):
                both_kept = order[row][~ref_masked[row] & ~got_masked[row]]
                both_dropped = order[row][ref_masked[row] & got_masked[row]]
                border = order[row][cols]
                assert both_kept.size == 0 or border.max() <= both_kept.min() + BORDER_TOLERANCE, (
                    f"row {row}: tokens {cols} filtered differently, away from the border"
                )
                assert both_dropped.size == 0 or border.min() >= both_dropped.max() - BORDER_TOLERANCE, (
                    f"row {row}: tokens {cols} filtered differently, away from the border"
                )
        keep = ~ref_masked & ~got_masked
    else:
        np.testing.assert_array_equal(got_masked, ref_masked, err_msg="different tokens masked")
        keep = ~ref_masked
    np.testing.assert_allclose(got[keep], ref[keep], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(ref))


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("name, settings, order_by", CASES, ids=[c[0] for c in CASES])
def test_matches_hf_processors(name, settings, order_by, vocab):
    rng = np.random.default_rng([zlib.crc32(name.encode()), vocab])
    rows = 4
    # Histories drawn from a few tokens, so that repeats and n-gram matches happen.
    input_ids = rng.integers(0, min(vocab, 12), size=(rows, 12))
    logits = (rng.standard_normal((rows, vocab)) * 3).astype(np.float32)
    ref = hf_process(input_ids, logits, prompt_length=PROMPT, **settings)

    got = logits.copy()
    out = kvgen.LogitsProcessor(kvgen.GenerationConfig(**settings), prompt_length=PROMPT)(input_ids, got)
    assert out is got

    order = None
    if order_by == "logit":
        order = logits
    elif order_by == "typical":
        order = -typical_key(logits)
    assert_same_processing(ref, got, order)


def test_remove_invalid_values_matches_hf():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((3, 101)).astype(np.float32)
    logits[0, 3] = np.nan
    logits[1, 5] = np.inf
    logits[2, 7] = -np.inf
    ids = rng.integers(0, 101, (3, 5))
    settings = dict(remove_invalid_values=True, suppress_tokens=[9])
    ref = hf_process(ids, logits, prompt_length=5, **settings)
    got = logits.copy()
    kvgen.LogitsProcessor(kvgen.GenerationConfig(**settings))(ids, got)
    np.testing.assert_array_equal(got, ref)


def test_forced_bos_matches_hf():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((2, 50)).astype(np.float32)
    ids = np.array([[3], [4]])
    ref = hf_process(ids, logits, prompt_length=1, forced_bos_token_id=11, begin_suppress_tokens=[11, 12])
    got = logits.copy()
    kvgen.LogitsProcessor(kvgen.GenerationConfig(forced_bos_token_id=11, begin_suppress_tokens=[11, 12]))(ids, got)
    np.testing.assert_array_equal(got, ref)


def test_logit_bias_is_single_token_sequence_bias():
    """OpenAI logit_bias has no HF field; it must act as HF's sequence_bias of 1-token sequences."""
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((2, 300)).astype(np.float32)
    ids = rng.integers(0, 300, (2, 6))
    ref = hf_process(ids, logits, prompt_length=6, sequence_bias={(5,): 3.5, (17,): -100.0})
    got = logits.copy()
    kvgen.LogitsProcessor(kvgen.GenerationConfig(logit_bias={5: 3.5, "17": -100.0}))(ids, got)
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_presence_and_frequency_penalties_follow_openai_formula():
    """OpenAI: logit[j] -= c[j] * frequency_penalty + (c[j] > 0) * presence_penalty."""
    rng = np.random.default_rng(4)
    logits = rng.standard_normal((3, 40)).astype(np.float32)
    ids = rng.integers(0, 10, (3, 15))
    got = logits.copy()
    kvgen.LogitsProcessor(kvgen.GenerationConfig(presence_penalty=0.5, frequency_penalty=0.25))(ids, got)
    counts = np.stack([np.bincount(row, minlength=40) for row in ids]).astype(np.float32)
    expected = logits - counts * np.float32(0.25) - (counts > 0) * np.float32(0.5)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_works_inside_hf_generate_as_a_logits_processor():
    """kvgen.LogitsProcessor has HF's call signature: HF generate() can use it on torch tensors."""
    from hf_reference import tiny_model

    model = tiny_model()
    prompt = torch.tensor([[5, 9, 5, 9, 1]])
    common = dict(max_new_tokens=12, do_sample=False, pad_token_id=0)
    with torch.inference_mode():
        expected = model.generate(prompt, repetition_penalty=1.5, no_repeat_ngram_size=2, **common)
        proc = kvgen.LogitsProcessor(kvgen.GenerationConfig(repetition_penalty=1.5, no_repeat_ngram_size=2))
        got = model.generate(prompt, logits_processor=[proc], **common)
    assert got.tolist() == expected.tolist()
