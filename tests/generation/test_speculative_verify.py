"""Speculative verification over external logits (Generator.verify): the tokens a row keeps
equal what step() by step() generation gives, token for token under greedy search and in
distribution under sampling (a chi-square test over seeded runs), with history-dependent
processors, stopping rules and per-position constraint masks."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import kvgen
from kvgen.generation.step import StepGenerator

V = 8  # a small vocabulary keeps the exact reference distributions cheap


def toy_logits(history, vocab: int = V, scale: float = 2.0) -> np.ndarray:
    """A deterministic "model": logits that depend on the whole history (a seeded draw per
    history), so that a wrong history at a verified position shows up in the tokens."""
    seed = zlib.crc32(np.asarray(history, dtype=np.int64).tobytes())
    return (np.random.default_rng(seed).standard_normal(vocab) * scale).astype(np.float32)


def run_steps(config, prompts, vocab: int = V, sequence_ids=None):
    """Plain step() by step() generation over toy_logits; the generator at the end."""
    g = StepGenerator(config)
    g.append_tokens(prompts, sequence_ids=sequence_ids)
    while not g.is_done():
        rows = [toy_logits(s, vocab) if reason is None else np.zeros(vocab, np.float32)
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


def run_speculative(config, prompts, draft_fn, k: int, vocab: int = V, sequence_ids=None, rng=None):
    """Generation through verify(): draft_fn(row, sequence, rng) -> up to k draft tokens."""
    g = StepGenerator(config)
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


GREEDY_CONFIGS = {
    "plain": dict(),
    "repetition_penalty": dict(repetition_penalty=1.8),
    "no_repeat_ngram": dict(no_repeat_ngram_size=2),
    "presence_frequency": dict(presence_penalty=0.7, frequency_penalty=0.4),
    "eos_min_new": dict(eos_token_id=[3], min_new_tokens=4),
    "stop_sequence": dict(stop_sequences=[[5, 1]], eos_token_id=[7]),
}


@pytest.mark.parametrize("name", list(GREEDY_CONFIGS))
def test_greedy_verify_equals_step_by_step(name):
    config = kvgen.GenerationConfig(max_new_tokens=24, do_sample=False, **GREEDY_CONFIGS[name])
    prompts = [[1, 2, 3], [4, 5], [6, 0, 2, 2]]
    ref = run_steps(config, prompts)
    spec, results = run_speculative(config, prompts, oracle_drafts(config), k=4)
    for r in range(ref.rows):
        np.testing.assert_array_equal(spec.sequences[r], ref.sequences[r])
    assert spec.finish_reasons == ref.finish_reasons
    for a, b in zip(spec._hypotheses(), ref._hypotheses()):
        for ha, hb in zip(a, b):
            np.testing.assert_array_equal(ha["logprobs"], hb["logprobs"])  # the same log-probs, bit for bit
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
    g = StepGenerator(config)
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
    g = StepGenerator(config)
    g.append_tokens([seq])
    drafts = np.array([[first, eos, 0]])
    res = g.verify(verify_logits(g.sequences, drafts, [3]), drafts)
    assert res.emitted[0].tolist() == [first, eos]
    assert res.accepted.tolist() == [2] and res.rollback.tolist() == [1]
    assert g.finish_reasons == ["eos"] and res.done
    # max_new_tokens cuts an accepted run the same way
    config = kvgen.GenerationConfig(max_new_tokens=2, do_sample=False)
    g = StepGenerator(config)
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
    g = StepGenerator(config)
    g.append_tokens([seq, [4, 4, 4]])
    g.verify(verify_logits(g.sequences, np.zeros((2, 0), np.int64), [0, 0]), None)
    assert g.finish_reasons[0] == "eos" or g.finish_reasons[1] is None
    drafts = np.array([[0, 1], [2, 3]])
    res = g.verify(np.zeros((2, 3, V), np.float32), drafts, [2, 1])
    assert res.num_emitted[0] == 0 and res.accepted[0] == 0 and res.rollback[0] == 2
    assert res.tokens[0] == g.config.pad_token_id or res.tokens[0] == eos
    assert g.drafted_tokens[0] == 0  # drafts of a finished row are not counted


def test_verify_reads_the_logits_in_place_and_checks_its_inputs():
    config = kvgen.GenerationConfig(max_new_tokens=5, do_sample=False)
    g = StepGenerator(config)
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
    with pytest.raises(ValueError, match="draft_probs"):
        g.verify(logits, [[2, 2]], draft_probs=np.full((1, 2, V), -1.0, np.float32))
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
    g = StepGenerator(config)
    g.append_tokens([[1, 2]])
    logits = torch.zeros((1, 2, V))
    logits[0, :, 4] = 1.0
    res = g.verify(logits, torch.tensor([[4]]))
    assert res.emitted[0].tolist() == [4, 4]
    with pytest.raises(TypeError, match="float32"):
        g.verify(logits.double(), torch.tensor([[4]]))


def test_beam_search_is_refused():
    g = StepGenerator(kvgen.GenerationConfig(max_new_tokens=5, num_beams=2))
    g.append_tokens([[1, 2]])
    with pytest.raises(ValueError, match="beam search"):
        g.verify(np.zeros((2, 2, V), np.float32), [[1], [1]])


def test_verify_repr_and_fields():
    g = StepGenerator(kvgen.GenerationConfig(max_new_tokens=5, do_sample=False))
    g.append_tokens([[1, 2]])
    res = g.verify(np.zeros((1, 1, V), np.float32), None)
    assert "VerifyResult(tokens=" in repr(res) and "rollback=" in repr(res)
    assert res.accepted.dtype == np.int64 and res.emitted_logprobs[0].dtype == np.float32
    assert g.acceptance_rate is None  # nothing drafted yet
