"""kvgen.Generator driven by a real model's logits equals transformers' generate().

An HF GPT-2 with random weights runs step by step with its own KV cache (HFStepper);
each step's logits go to a kvgen Generator, and HF's cache is reordered with kvgen's
beam_indices. The sequences must equal ``model.generate(...)`` token for token, and the
scores must agree within 1e-4.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers
from hf_models import HFStepper, hf_generate, random_gpt2

import kvgen

PAD = 2  # not 0: HF fills finished beams with eos[0] when pad_token_id == 0
MODELS = [dict(vocab_size=97), dict(vocab_size=211, n_embd=48, n_head=6), dict(vocab_size=1000, n_layer=3, seed=1)]
BATCH = [[5, 9, 13, 4, 3], [7, 8], [11, 12, 13]]


def frequent_tokens(model, prompts, n=2):
    """Tokens greedy decoding emits early: as EOS ids they make sequences finish."""
    gen, _ = hf_generate(model, prompts, PAD, do_sample=False, max_new_tokens=6)
    counts = np.bincount(gen[:, 2:].flatten().numpy(), minlength=model.config.vocab_size)
    counts[PAD] = 0
    return [int(t) for t in np.argsort(-counts)[:n]]


def run_both(model, prompts, **settings):
    hf_gen, hf_out = hf_generate(model, prompts, PAD, output_logits=True, **settings)
    config = kvgen.GenerationConfig(pad_token_id=PAD, **settings)
    result = kvgen.generate(HFStepper(model, PAD), prompts, config, output_raw_logprobs=True)
    return hf_gen, hf_out, result


def assert_same_sequences(hf_gen, result, per_input):
    fill = PAD
    for i, seqs in enumerate(result.sequences):
        assert len(seqs) == per_input
        for k, seq in enumerate(seqs):
            hf = hf_gen[i * per_input + k].tolist()
            assert hf[: len(seq)] == seq.tolist(), f"input {i} sequence {k}"
            assert all(t == fill for t in hf[len(seq):]), f"input {i} sequence {k}: HF continues past kvgen"


@pytest.mark.parametrize("shape", MODELS, ids=lambda s: f"vocab{s['vocab_size']}")
def test_greedy_batch_of_different_lengths(shape):
    model = random_gpt2(**shape)
    hf_gen, hf_out, result = run_both(model, BATCH, do_sample=False, max_new_tokens=12)
    assert_same_sequences(hf_gen, result, 1)
    # per-token log-probs: HF's processed scores, normalised (compute_transition_scores)
    hf_lp = model.compute_transition_scores(hf_out.sequences, hf_out.scores, normalize_logits=True)
    raw = model.compute_transition_scores(hf_out.sequences, hf_out.logits, normalize_logits=True)
    for i in range(len(BATCH)):
        n = len(result.sequences[i][0])
        np.testing.assert_allclose(result.token_logprobs[i][0], hf_lp[i, :n].numpy(), atol=1e-4)
        np.testing.assert_allclose(result.raw_token_logprobs[i][0], raw[i, :n].numpy(), atol=1e-4)
        assert result.scores[i][0] == pytest.approx(float(hf_lp[i, :n].sum()), abs=1e-3)


@pytest.mark.parametrize("shape", MODELS[:2], ids=lambda s: f"vocab{s['vocab_size']}")
def test_greedy_with_penalties_and_eos(shape):
    model = random_gpt2(**shape)
    prompts = [[5, 9, 13, 4], [7, 8, 7, 8]]  # same length: HF's n-gram ban would read padding
    eos = frequent_tokens(model, prompts)
    settings = dict(do_sample=False, max_new_tokens=16, repetition_penalty=1.3, no_repeat_ngram_size=2,
                    eos_token_id=eos, min_new_tokens=3)
    hf_gen, _, result = run_both(model, prompts, **settings)
    assert_same_sequences(hf_gen, result, 1)
    for seqs, reasons in zip(result.sequences, result.finish_reasons):
        assert len(seqs[0]) >= 3
        assert reasons[0] == ("eos" if seqs[0][-1] in eos else "length")


BEAM_CASES = [
    dict(num_beams=2, length_penalty=1.0, early_stopping=False, num_return_sequences=1),
    dict(num_beams=3, length_penalty=1.0, early_stopping=True, num_return_sequences=2),
    dict(num_beams=4, length_penalty=2.0, early_stopping=False, num_return_sequences=4),
    dict(num_beams=4, length_penalty=0.5, early_stopping="never", num_return_sequences=3),
    dict(num_beams=3, length_penalty=-0.7, early_stopping="never", num_return_sequences=2),
    dict(num_beams=5, length_penalty=1.0, early_stopping=True, num_return_sequences=5),
]


@pytest.mark.parametrize("shape", MODELS, ids=lambda s: f"vocab{s['vocab_size']}")
@pytest.mark.parametrize(
    "beam", BEAM_CASES,
    ids=lambda b: "b{num_beams}-lp{length_penalty}-es{early_stopping}-n{num_return_sequences}".format(**b))
@pytest.mark.parametrize("with_eos", [True, False], ids=["eos", "no_eos"])
def test_beam_search(shape, beam, with_eos):
    model = random_gpt2(**shape)
    settings = dict(do_sample=False, max_new_tokens=10, **beam)
    if with_eos:
        settings["eos_token_id"] = frequent_tokens(model, BATCH)
    hf_gen, hf_out, result = run_both(model, BATCH, **settings)
    per_input = beam["num_return_sequences"]
    assert_same_sequences(hf_gen, result, per_input)
    reasons = [r for per in result.finish_reasons for r in per]
    assert ("eos" in reasons) == with_eos and set(reasons) <= {"eos", "length"}
    np.testing.assert_allclose(np.array(result.scores).ravel(), hf_out.sequences_scores.numpy(), atol=1e-4)
    transition = model.compute_transition_scores(hf_out.sequences, hf_out.scores, hf_out.beam_indices,
                                                 normalize_logits=False)
    for i, seqs in enumerate(result.token_logprobs):
        for k, lp in enumerate(seqs):
            np.testing.assert_allclose(lp, transition[i * per_input + k, : len(lp)].numpy(), atol=1e-4)


def test_beam_search_with_repetition_penalty():
    model = random_gpt2(**MODELS[1])
    settings = dict(do_sample=False, max_new_tokens=10, num_beams=3, num_return_sequences=3, repetition_penalty=1.5,
                    eos_token_id=frequent_tokens(model, BATCH))
    hf_gen, hf_out, result = run_both(model, BATCH, **settings)
    assert_same_sequences(hf_gen, result, 3)
    np.testing.assert_allclose(np.array(result.scores).ravel(), hf_out.sequences_scores.numpy(), atol=1e-4)


def test_last_logits_are_hf_scores_and_a_view():
    model = random_gpt2(**MODELS[0])
    prompts = [[5, 9, 13], [7, 8, 1]]
    settings = dict(do_sample=False, max_new_tokens=4, repetition_penalty=1.4)
    _, hf_out = hf_generate(model, prompts, PAD, **settings)
    generator = kvgen.Generator(kvgen.GenerationConfig(pad_token_id=PAD, **settings))
    stepper = HFStepper(model, PAD)
    views = []
    for step, _result in enumerate(generator.stream(stepper, prompts)):
        view = generator.last_logits
        np.testing.assert_allclose(view, hf_out.scores[step].numpy(), atol=1e-5)
        views.append(view)
    assert all(np.shares_memory(views[0], v) for v in views[1:])  # one buffer, no copies
    assert views[0].base is not None and not views[0].flags.owndata


class TableGPT2(transformers.GPT2LMHeadModel):
    """A GPT-2 (its KV cache, as beam search reorders it) whose logits at a position are row
    ``token % len(table)`` of a fixed table: exact in every run, so equal values tie exactly,
    within a row and across beams (a real model's rows of identical states can differ in
    the last bits between batch positions)."""

    def forward(self, input_ids=None, **kwargs):
        out = super().forward(input_ids=input_ids, **kwargs)
        out.logits = self.table[input_ids % self.table.shape[0]].to(out.logits.dtype)
        return out


def tied_gpt2(ties: str):
    """A TableGPT2 over vocab 97 whose logits are all 0.0 ("all") or drawn from three values
    in 8 rows ("levels": about 32 tokens share each value, and paths through different
    rows reach the same scores)."""
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=97, n_positions=128, n_embd=32, n_layer=1, n_head=4,
                                     bos_token_id=0, eos_token_id=1)
    model = TableGPT2(config).eval()
    table = torch.zeros(1, 97) if ties == "all" else torch.randint(0, 3, (8, 97)).float() * 0.75
    model.register_buffer("table", table)
    return model


TIE_CASES = [
    dict(num_beams=2, num_return_sequences=2, early_stopping=False),
    dict(num_beams=3, num_return_sequences=3, early_stopping=True),
    dict(num_beams=4, num_return_sequences=4, early_stopping="never"),
    dict(num_beams=5, num_return_sequences=3, early_stopping=False, length_penalty=2.0),
]


@pytest.mark.parametrize("ties", ["all", "levels"])
@pytest.mark.parametrize("beam", TIE_CASES, ids=lambda b: "b{num_beams}-n{num_return_sequences}".format(**b))
@pytest.mark.parametrize("eos", [[1], [3, 40]], ids=["eos1", "eos2"])
def test_beam_search_breaks_exact_ties_as_torch_topk(ties, beam, eos):
    """Under exactly tied scores the order is torch.topk's on the CPU (libstdc++'s heap or
    nth_element order, neither positional nor stable): the same sequences and scores as
    transformers' beam search."""
    model = tied_gpt2(ties)
    settings = dict(do_sample=False, max_new_tokens=6, eos_token_id=eos, **beam)
    hf_gen, hf_out, result = run_both(model, BATCH, **settings)
    per_input = beam["num_return_sequences"]
    assert_same_sequences(hf_gen, result, per_input)
    np.testing.assert_allclose(np.array(result.scores).ravel(), hf_out.sequences_scores.numpy(), atol=1e-4)
