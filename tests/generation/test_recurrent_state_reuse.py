"""A hybrid model's recurrent state through the prefix cache and speculative decoding, on tiny
random LFM2 (short convolutions) and Qwen3.5 (Gated DeltaNet) models: a cached prefix resumes
from a snapshot of the state at a chunk boundary and gives a fresh run's tokens and
log-probabilities bit for bit; a rejected draft resumes the state from the verification pass's
checkpoint at the last accepted token, so prompt lookup and a draft model give plain greedy
tokens. Weights are Q8_0 at load, so that each row of a product is computed on its own
(bit-equality across different pass layouts)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

import kvgen
from kvgen.generation import speculation
from kvgen.generation.drafters import DraftLength
from kvgen.generation.pass_plan import PREFILL_CHUNK
from kvgen.generation.prefix_cache import SNAPSHOTS_PER_SLOT, StateSnapshots
from kvgen.generation.speculation import MAX_DRAFT_TOKENS

VOCAB = 512
C = PREFILL_CHUNK

# tiny models of both recurrent kinds, each with an attention layer after a recurrent one
CONFIGS = {
    "lfm2": lambda: transformers.Lfm2Config(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, layer_types=["conv", "full_attention", "conv"], max_position_embeddings=512,
        initializer_range=0.3, pad_token_id=None, bos_token_id=1, eos_token_id=2),
    "qwen3_5": lambda: transformers.Qwen3_5TextConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, head_dim=64, max_position_embeddings=512, initializer_range=0.3,
        linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
        linear_num_value_heads=4, layer_types=["linear_attention", "full_attention", "linear_attention"],
        tie_word_embeddings=False, pad_token_id=None, bos_token_id=1, eos_token_id=2),
}
CLASSES = {"lfm2": transformers.Lfm2ForCausalLM, "qwen3_5": transformers.Qwen3_5ForCausalLM}


@pytest.fixture(scope="module")
def granite4(tmp_path_factory):
    """A tiny random Granite 4 hybrid (Mamba-2 layers beside an attention layer), Q8_0."""
    torch.manual_seed(0)
    config = transformers.GraniteMoeHybridConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=32, shared_intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        layer_types=["mamba", "attention", "mamba"], mamba_n_heads=8, mamba_n_groups=2, mamba_d_state=16,
        mamba_d_head=16, mamba_d_conv=4, mamba_expand=2, num_local_experts=0, position_embedding_type=None,
        initializer_range=0.3, pad_token_id=None, bos_token_id=1, eos_token_id=2)
    hf = transformers.GraniteMoeHybridForCausalLM(config).eval()
    path = tmp_path_factory.mktemp("granite4")
    hf.save_pretrained(path)
    return kvgen.Model.load(path, dtype="q8_0")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = {}
    for family, config in CONFIGS.items():
        torch.manual_seed(0)
        hf = CLASSES[family](config()).eval()
        path = tmp_path_factory.mktemp(family)
        hf.save_pretrained(path)
        out[family] = kvgen.Model.load(path, dtype="q8_0")
        assert out[family].capabilities.recurrent_state
    return out


@pytest.fixture(params=list(CONFIGS))
def model(request, models):
    return models[request.param]


def _tokens_and_logprobs(result) -> tuple[list[int], np.ndarray]:
    return result.sequences[0][0].tolist(), np.asarray(result.token_logprobs[0][0])


def test_the_prefix_cache_resumes_from_snapshots_and_equals_a_fresh_run(model):
    rng = np.random.default_rng(5)
    first = rng.integers(3, VOCAB, 6 * C + 8).tolist()  # prefilled 0-128, 128-192, 192-200: snapshots at 128, 192
    # shares 170 positions (inside a chunk, past the 128 boundary, short of 192): resumes at
    # 128; its own last boundary (256) lies in its suffix
    second = first[:170] + rng.integers(3, VOCAB, 90).tolist()
    # shares 258 positions with the second (its slot then holds snapshots at 128 and 256)
    third = second[:258] + rng.integers(3, VOCAB, 10).tolist()
    # shares 20 positions with the first: before every snapshot, computed from the start (its
    # piece cut at its last boundary, 32, where a fresh run feeds all 50 tokens in one piece)
    fourth = first[:20] + rng.integers(3, VOCAB, 30).tolist()
    config = kvgen.GenerationConfig(max_new_tokens=6, eos_token_id=[])
    cached = kvgen.Generator(model, config, prefix_cache=True)
    fresh = kvgen.Generator(model, config, prefix_cache=False)
    for prompt, hits in ((first, 0), (second, 4 * C), (third, 8 * C), (fourth, 0)):
        got = cached.generate([prompt])
        assert cached.last_stats.cached_tokens == hits
        tokens, logprobs = _tokens_and_logprobs(got)
        want_tokens, want_logprobs = _tokens_and_logprobs(fresh.generate([prompt]))
        assert tokens == want_tokens
        np.testing.assert_array_equal(logprobs, want_logprobs)


def test_an_engine_with_several_slots_resumes_each_prompt_from_its_own_slot(model):
    from kvgen.generation.engine import Engine

    rng = np.random.default_rng(6)
    a, b = (rng.integers(3, VOCAB, 2 * C + 20).tolist() for _ in range(2))
    later = [a[:2 * C + 3] + [7, 8, 9], b[:2 * C + 5] + [4, 5]]  # each resumes at 64 in its own slot
    config = kvgen.GenerationConfig(max_new_tokens=5, eos_token_id=[])
    runs = {}
    for cached in (False, True):
        with Engine(model, slots=2, prefix_cache=cached) as engine:
            runs[cached] = [engine.submit(p, config).wait().sequences[0][0].tolist() for p in (a, b, *later)]
            hits = engine.prefix_cache_hits
            # and speculation's: a checkpoint per position a verification pass may hold
            assert engine.state_snapshots == 2 * ((SNAPSHOTS_PER_SLOT if cached else 0) + MAX_DRAFT_TOKENS + 1)
            assert engine.kv_cache_bytes == model.kv_cache_bytes(2, engine.context, engine.state_snapshots)
    assert runs[True] == runs[False]
    assert hits == 2 * (2 * C)


class _Slots:
    """Stands for _ModelSlots: records which snapshot each take writes."""

    def __init__(self):
        self.taken: list[tuple[int, int]] = []

    def snapshot(self, slot: int, index: int) -> None:
        self.taken.append((slot, index))


def test_a_slot_keeps_its_latest_snapshot_and_earlier_ones_spread_out():
    snapshots, slots = StateSnapshots(2, 4), _Slots()
    for b in range(1, 11):  # a long prompt: a snapshot at each of 10 boundaries
        snapshots.take(1, b * C, slots)
    assert all(slot == 1 and 4 <= index < 8 for slot, index in slots.taken)  # slot 1's own snapshots
    held = sorted(b // C for b in snapshots._held[1])
    assert held[-1] == 10 and len(held) == 4
    gaps = np.diff([0, *held])
    assert gaps.max() <= 4  # spread over the prompt, not the last four
    assert snapshots.latest(1, 10 * C - 1)[0] == held[-2] * C
    assert snapshots.latest(1, held[0] * C - 1) == (0, None)
    snapshots.keep(1, held[1] * C)  # a new request keeps the first positions: later snapshots go
    assert sorted(snapshots._held[1]) == [held[0] * C, held[1] * C]
    assert snapshots.latest(0, 10 * C) == (0, None)


@pytest.fixture
def forced_drafts(monkeypatch):
    """Prompt lookup's drafts replaced by the plain greedy continuation's next j tokens followed by
    wrong ones, j cycling over 0..k: every pass verifies a draft, most with rejections."""
    expected: list[int] = []  # the plain run's tokens, prompt included (the test fills it)
    calls = [0]

    def drafts(self, first_slot, running, room, beta):
        out = []
        for r, run in enumerate(running):
            k = min(4, room[r])
            if not run or k < 1:
                out.append([])
                continue
            n = len(self.tokens[r])  # the row's tokens, up to the one fed next
            right = calls[0] % (k + 1)
            calls[0] += 1
            draft = expected[n:n + right]
            draft += [(t + 1) % VOCAB for t in expected[n + len(draft):n + k]]
            self.judged[r] = self.judged[r] or DraftLength(self.max_tokens)
            out.append(draft[:k])
        return out

    monkeypatch.setattr(speculation.Speculation, "drafts", drafts)
    return expected


def test_prompt_lookup_with_rejected_drafts_gives_plain_greedy_tokens(model, forced_drafts):
    prompt = np.random.default_rng(7).integers(3, VOCAB, C + 9).tolist()
    config = kvgen.GenerationConfig(max_new_tokens=20, eos_token_id=[])
    generator = kvgen.Generator(model, config)
    plain = generator.generate([prompt]).sequences[0][0].tolist()
    forced_drafts.extend(prompt + plain)  # the row's tokens: the prompt, then the new ones
    speculative = generator.generate([prompt], prompt_lookup_num_tokens=4)
    assert speculative.sequences[0][0].tolist() == plain
    stats = generator.last_stats
    assert stats.drafted_tokens > stats.accepted_tokens > 0  # drafts accepted and rejected
    assert stats.decode_steps < 20  # some passes kept several tokens


def test_a_draft_model_of_another_family_gives_plain_greedy_tokens(models):
    """Qwen3.5 drafts for LFM2 and the other way round: both states are rolled back on rejections."""
    prompt = np.random.default_rng(8).integers(3, VOCAB, 40).tolist()
    config = kvgen.GenerationConfig(max_new_tokens=16, eos_token_id=[])
    for target, drafter in (("lfm2", "qwen3_5"), ("qwen3_5", "lfm2")):
        plain = kvgen.Generator(models[target], config).generate([prompt]).sequences[0][0].tolist()
        generator = kvgen.Generator(models[target], config, assistant_model=models[drafter])
        assert generator.generate([prompt]).sequences[0][0].tolist() == plain
        assert generator.last_stats.drafted_tokens > generator.last_stats.accepted_tokens


@pytest.mark.parametrize("family", ["lfm2", "qwen3_5", "granite4"])
def test_a_verification_pass_checkpoints_each_tokens_state(family, models, granite4):
    """Every hybrid writes its state after each token of a verification chunk (LFM2 its
    convolution windows, Qwen3.5 its DeltaNet windows and matrices, Granite 4 its Mamba-2 windows
    and states): the chunk's logits are those of one-token decode steps bit for bit, and
    resuming at any position of it from that position's checkpoint continues as a row that was
    fed only the tokens up to there."""
    from kvgen._core import _ModelSlots

    model = granite4 if family == "granite4" else models[family]
    assert model._core.token_checkpoints
    rng = np.random.default_rng(12)
    prompt, fed = rng.integers(3, VOCAB, 40), rng.integers(3, VOCAB, 5)

    def slots():
        s = _ModelSlots(model._core, 1, 64, verify_positions=8, snapshots=8)
        s.forward([(0, prompt)])
        return s

    verified = slots()
    verified.forward([(0, fed)], [0], checkpoints=[(0, 2)])
    logits = verified.verify_logits[0, :5].copy()
    stepped = slots()
    for i in range(len(fed)):
        stepped.forward([(0, fed[i:i + 1])])
        np.testing.assert_array_equal(logits[i], stepped.logits[0])
    # back to the state after fed[kept - 1], then another token (after all 5 the row's own state
    # is the last token's: no checkpoint is written for it)
    for kept in (1, 3, 4):
        resumed = slots()
        resumed.forward([(0, fed)], [0], checkpoints=[(0, 2)])
        resumed.resume(0, 40 + kept, 2 + kept - 1)
        resumed.forward([(0, np.array([7]))])
        fresh = slots()
        for token in [*fed[:kept], 7]:  # one token a step, as decoding feeds them
            fresh.forward([(0, np.array([token]))])
        np.testing.assert_array_equal(resumed.logits[0], fresh.logits[0])
    with pytest.raises(ValueError, match="beyond the cache's 8 snapshot slots"):
        verified.forward([(0, fed)], [0], checkpoints=[(0, 5)])


def test_a_model_without_a_recurrent_state_writes_no_checkpoints(tmp_path):
    from kvgen._core import _ModelSlots

    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path)
    model = kvgen.Model.load(tmp_path, dtype="q8_0")
    assert not model._core.token_checkpoints
    with pytest.raises(ValueError, match="asks for state checkpoints, which this model does not write"):
        _ModelSlots(model._core, 1, 64, verify_positions=8).forward([(0, np.array([5, 6]))], [0],
                                                                   checkpoints=[(0, 0)])

