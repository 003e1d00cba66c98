"""kvgen.Generator over external logits: stopping rules, sampling seeds, bad input."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hf_models import HFStepper, random_gpt2
from sandbox import Sandbox

import kvgen

VOCAB = 50


class Script:
    """A fake model: row r's logits strongly prefer tokens[r][step] (or cycle through them)."""

    def __init__(self, tokens_per_row, vocab=VOCAB):
        self.tokens, self.vocab, self.step = tokens_per_row, vocab, 0

    def __call__(self, inputs, beam_indices):
        logits = np.zeros((len(inputs), self.vocab), dtype=np.float32)
        for r in range(len(inputs)):
            seq = self.tokens[r % len(self.tokens)]
            logits[r, seq[self.step % len(seq)]] = 10.0
        self.step += 1
        return logits


def run(config, prompts, script, **options):
    return kvgen.generate(script, prompts, config, **options)


def test_eos_list_length_and_finish_reasons():
    config = kvgen.GenerationConfig(max_new_tokens=6, eos_token_id=[7, 9], pad_token_id=0)
    script = Script([[3, 4, 7, 5], [9], [3, 3, 3, 3, 3, 3, 3, 3]])
    result = run(config, [[1], [2, 2], [3]], script)
    assert [s[0].tolist() for s in result.sequences] == [[3, 4, 7], [9], [3, 3, 3, 3, 3, 3]]
    assert [r[0] for r in result.finish_reasons] == ["eos", "eos", "length"]


def test_finished_rows_get_pad_and_stay_unchanged():
    generator = kvgen.Generator(kvgen.GenerationConfig(max_new_tokens=5, eos_token_id=9, pad_token_id=0))
    generator.append_tokens([[1], [2]])
    script = Script([[9], [4]])
    first = generator.step(script([np.array([1]), np.array([2])], None))
    assert first.tokens.tolist() == [9, 4] and generator.finish_reasons == ["eos", None]
    second = generator.step(script([np.array([9]), np.array([4])], None))
    assert second.tokens.tolist() == [0, 4]  # the finished row is fed pad_token_id
    assert [s.tolist() for s in generator.sequences] == [[1, 9], [2, 4, 4]]


def test_min_new_tokens_masks_eos():
    config = kvgen.GenerationConfig(max_new_tokens=8, min_new_tokens=3, eos_token_id=9)
    result = run(config, [[1]], Script([[9]]))  # the model wants EOS at once
    assert result.sequences[0][0].tolist() == [0, 0, 0, 9] and result.finish_reasons[0][0] == "eos"


def test_stop_sequences():
    config = kvgen.GenerationConfig(max_new_tokens=10, stop_sequences=[[4, 5], [8]])
    result = run(config, [[4], [1], [1]], Script([[5, 6], [3, 4, 5, 6], [2, 2, 2]]))
    # a stop sequence must lie in the generated tokens: the prompt's 4 does not count
    assert [s[0].tolist() for s in result.sequences] == [
        [5, 6, 5, 6, 5, 6, 5, 6, 5, 6], [3, 4, 5], [2] * 10]
    assert [r[0] for r in result.finish_reasons] == ["length", "stop", "length"]


def test_stop_strings_match_across_token_boundaries():
    texts = [f"<{i}>" for i in range(VOCAB)]
    texts[10], texts[11], texts[12], texts[13] = "He", "llo wor", "ld!", "x"
    config = kvgen.GenerationConfig(max_new_tokens=10, stop_strings=["world"])
    result = run(config, [[1], [1]], Script([[10, 11, 12, 13], [13]]), token_strings=texts)
    assert result.sequences[0][0].tolist() == [10, 11, 12]  # "Hello world!" completes "world" inside "ld!"
    assert result.finish_reasons[0][0] == "stop"
    assert result.finish_reasons[1][0] == "length"
    with pytest.raises(ValueError, match="token_strings"):
        kvgen.Generator(config).append_tokens([[1]])


def test_sampling_with_a_seed_reproduces_itself():
    model = random_gpt2(vocab_size=97)
    prompts = [[5, 9, 13], [7, 8]]
    config = kvgen.GenerationConfig(do_sample=True, temperature=1.5, top_k=0, max_new_tokens=12, seed=7,
                                    num_return_sequences=3, pad_token_id=2)
    a = kvgen.generate(HFStepper(model, 2), prompts, config)
    b = kvgen.generate(HFStepper(model, 2), prompts, config)
    assert [[s.tolist() for s in per] for per in a.sequences] == [[s.tolist() for s in per] for per in b.sequences]
    flat = [tuple(s.tolist()) for per in a.sequences for s in per]
    assert len(set(flat)) > 1  # the rows draw differently
    other = kvgen.generate(HFStepper(model, 2), prompts, kvgen.GenerationConfig(**{**config.to_dict(), "seed": 8}))
    assert [[s.tolist() for s in per] for per in other.sequences] != [[s.tolist() for s in per] for per in a.sequences]


def test_beam_sampling_runs_and_ranks():
    model = random_gpt2(vocab_size=97)
    config = kvgen.GenerationConfig(do_sample=True, num_beams=3, num_return_sequences=3, max_new_tokens=8, seed=3,
                                    top_k=20, pad_token_id=2)
    a = kvgen.generate(HFStepper(model, 2), [[5, 9, 13]], config)
    b = kvgen.generate(HFStepper(model, 2), [[5, 9, 13]], config)
    assert [s.tolist() for s in a.sequences[0]] == [s.tolist() for s in b.sequences[0]]
    assert a.scores[0] == sorted(a.scores[0], reverse=True)
    for seq, lp, score in zip(a.sequences[0], a.token_logprobs[0], a.scores[0]):
        assert score == pytest.approx(lp.sum() / len(seq), rel=1e-5)


def test_result_can_keep_the_prompt_and_stream_yields_steps():
    config = kvgen.GenerationConfig(max_new_tokens=3)
    steps = list(kvgen.stream(Script([[4, 5, 6]]), [[1, 2]], config))
    assert [s.tokens.tolist() for s in steps] == [[4], [5], [6]] and steps[-1].done
    generator = kvgen.Generator(config)
    for _ in generator.stream(Script([[4, 5, 6]]), [[1, 2]]):
        pass
    assert generator.result(strip_prompt=False).sequences[0][0].tolist() == [1, 2, 4, 5, 6]
    assert "done" in repr(generator)


# ---- bad input -----------------------------------------------------------------------

def logits(rows, vocab=VOCAB):
    return np.zeros((rows, vocab), dtype=np.float32)


def test_wrong_rows_and_vocab():
    generator = kvgen.Generator(kvgen.GenerationConfig(num_beams=2, max_new_tokens=3))
    generator.append_tokens([[1], [2, 3]])
    assert generator.rows == 4
    with pytest.raises(ValueError, match="3 rows, expected 4"):
        generator.step(logits(3))
    generator.step(logits(4))
    with pytest.raises(ValueError, match="vocabulary of 60, the first step had 50"):
        generator.step(logits(4, 60))
    with pytest.raises(TypeError, match="float32"):
        generator.step(logits(4).astype(np.float64))


def test_stepping_a_finished_or_unstarted_generator():
    generator = kvgen.Generator(kvgen.GenerationConfig(max_new_tokens=1))
    with pytest.raises(ValueError, match="append_tokens"):
        generator.step(logits(1))
    generator.append_tokens([[1]])
    generator.step(logits(1))
    assert generator.is_done()
    with pytest.raises(ValueError, match="finished"):
        generator.step(logits(1))
    with pytest.raises(ValueError, match="already called"):
        generator.append_tokens([[1]])


@pytest.mark.parametrize(
    "prompts, error, match",
    [
        ([], ValueError, "at least one prompt"),
        ([[1], []], ValueError, "prompt 1 is empty"),
        ([[1, -3]], ValueError, "negative"),
        ([[1.5]], TypeError, "integer"),
        ([3, 4], TypeError, "list of token-id lists"),
    ],
)
def test_bad_prompts(prompts, error, match):
    with pytest.raises(error, match=match):
        kvgen.Generator(kvgen.GenerationConfig()).append_tokens(prompts)


def test_prompt_token_outside_vocabulary_and_max_length():
    generator = kvgen.Generator(kvgen.GenerationConfig())
    generator.append_tokens([[1, 70]])
    with pytest.raises(ValueError, match="70 is outside the vocabulary"):
        generator.step(logits(1))
    with pytest.raises(ValueError, match="reaches GenerationConfig.max_length"):
        kvgen.Generator(kvgen.GenerationConfig(max_length=3)).append_tokens([[1, 2, 3]])
    with pytest.raises(ValueError, match="batch_size 2"):
        kvgen.Generator(kvgen.GenerationConfig(), batch_size=2).append_tokens([[1]])


# ---- Hostile sizes, failed steps, prompt-token range, batch-invariant keyed sampling -----------
# Hardening of the Generator: hostile sizes, failed steps, prompt-token range,
# and batch-invariant sampling keyed by sequence ids. Cases that could crash, hang or
# allocate without bound run in tests/support/sandbox.py's Sandbox.
SMALL_VOCAB = 8
MAX_SEQUENCE_LENGTH = 1 << 24  # limits.h kMaxSequenceLength
MAX_ROWS = 1 << 16             # limits.h kMaxRows


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(timeout_s=60) as box:
        yield box


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("gpt2")
    random_gpt2(vocab_size=64, n_embd=16, n_layer=1, n_head=2).save_pretrained(directory)
    return str(directory)


# ---- cases run in the sandbox (module level, picklable arguments) ----------------------

def run_steps(settings: dict, prompts: list, steps: int, vocab: int = SMALL_VOCAB) -> list:
    """Steps a Generator with fixed logits; returns the row lengths."""
    generator = kvgen.Generator(kvgen.GenerationConfig(**settings))
    generator.append_tokens(prompts)
    logits = np.tile(np.linspace(0.0, 1.0, vocab, dtype=np.float32), (generator.rows, 1))
    for _ in range(steps):
        if generator.is_done():
            break
        generator.step(logits)
    return [len(s) for s in generator.sequences]


def run_model(path: str, settings: dict, prompts: list) -> list:
    model = kvgen.Model.load(path)
    result = kvgen.Generator(model, kvgen.GenerationConfig(**settings)).generate(prompts)
    return [len(s[0]) for s in result.sequences]


# ---- size arithmetic -----------------------------------------------------------------

@pytest.mark.parametrize("settings, fields", [
    (dict(max_new_tokens=2**62), ("max_new_tokens", "kMaxSequenceLength")),
    (dict(max_new_tokens=10**9), ("max_new_tokens", "kMaxSequenceLength")),
    (dict(max_new_tokens=2**63 - 1), ("max_new_tokens", "kMaxSequenceLength")),
    (dict(max_length=2**63 - 1), ("max_length", "kMaxSequenceLength")),
    (dict(num_beams=2**62, max_new_tokens=2), ("num_beams", "kMaxRows")),
    (dict(num_beams=MAX_ROWS, max_new_tokens=2), ("num_beams", "kMaxRows")),  # 4 prompts: 4x the limit
    (dict(do_sample=True, num_return_sequences=2**62, max_new_tokens=2), ("num_return_sequences", "kMaxRows")),
])
def test_hostile_sizes_are_refused_with_the_limit_named(sandbox, settings, fields):
    outcome = sandbox.run(run_steps, settings, [[1, 2]] * 4, 1)
    assert outcome.status == "raised" and outcome.error_type == "ValueError", outcome.describe()
    for field in fields:
        assert field in outcome.message


def test_history_grows_instead_of_preallocating_max_new_tokens(sandbox):
    # 64 rows x 2**24 tokens preallocated would be 12 GiB, four times the sandbox's limit.
    max_new = MAX_SEQUENCE_LENGTH - 3
    outcome = sandbox.run(run_steps, dict(max_new_tokens=max_new), [[1, 2, 3]] * 64, 70)
    assert outcome.status == "returned", outcome.describe()
    assert outcome.message == repr([73] * 64)


def test_many_beams_need_no_beams_squared_scratch(sandbox):
    # 2**13 beams: candidate scratch of beams x 2 beams (reserved up front) was 5 GB.
    outcome = sandbox.run(run_steps, dict(num_beams=2**13, max_new_tokens=2), [[1]], 2, 4)
    assert outcome.status == "returned", outcome.describe()


def test_model_path_with_a_huge_max_new_tokens_is_a_context_error(sandbox, gpt2_dir):
    for settings in (dict(max_new_tokens=2**63 - 1), dict(max_new_tokens=10**9), dict(max_length=2**63 - 1)):
        outcome = sandbox.run(run_model, gpt2_dir, settings, [[1, 2]] * 4)
        assert outcome.status == "raised" and outcome.error_type == "ValueError", outcome.describe()
        assert "context" in outcome.message


def test_history_regrowth_keeps_every_token_and_logprob():
    # Past the first capacity (32 new tokens) several times, with a processor that reads the
    # history (repetition penalty) and beam reordering: a batch equals a run per prompt.
    def run(prompts, ids, **settings):
        config = kvgen.GenerationConfig(max_new_tokens=150, repetition_penalty=1.3, **settings)
        generator = kvgen.Generator(config, output_raw_logprobs=True)
        generator.append_tokens(prompts, sequence_ids=ids)
        while not generator.is_done():
            generator.step(np.stack([history_logits(s, 50) for s in generator.sequences]))
        return generator.result()

    prompts, ids = [[3, 4], [5, 6, 7, 8, 9]], [10, 20]
    for settings in (dict(do_sample=True, seed=3), dict(num_beams=2)):
        batch = run(prompts, ids, **settings)
        for i in range(2):
            alone = run([prompts[i]], [ids[i]], **settings)
            np.testing.assert_array_equal(batch.sequences[i][0], alone.sequences[0][0])
            np.testing.assert_array_equal(batch.token_logprobs[i][0], alone.token_logprobs[0][0])
            np.testing.assert_array_equal(batch.raw_token_logprobs[i][0], alone.raw_token_logprobs[0][0])
        assert len(batch.sequences[0][0]) == 150


def history_logits(history: np.ndarray, vocab: int) -> np.ndarray:
    """Logits that depend only on a row's history (so are the same in any batch), peaked
    enough to avoid EOS-like ties; no EOS is set, so rows run to max_new_tokens."""
    digest = hashlib.sha256(np.asarray(history, dtype=np.int64).tobytes()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    return rng.normal(0.0, 2.0, vocab).astype(np.float32)


# ---- a failing step changes nothing -------------------------------------------

def state_of(generator) -> tuple:
    return ([s.tolist() for s in generator.sequences], generator.next_tokens.tolist(),
            list(generator.finish_reasons), generator.step_count, generator.is_done(),
            None if generator.beam_indices is None else generator.beam_indices.tolist())


@pytest.mark.parametrize("num_beams", [1, 2])
def test_stop_strings_without_a_text_for_every_token_fail_before_any_change(num_beams):
    # The reported case: token_strings shorter than the vocabulary. Row 0 picks a token
    # with a text, row 1 one without; the step used to append to row 0 and then fail.
    config = kvgen.GenerationConfig(max_new_tokens=5, stop_strings=["ab"], num_beams=num_beams)
    generator = kvgen.Generator(config, token_strings=["a", "b", "c"])
    generator.append_tokens([[0], [0]])
    logits = np.zeros((generator.rows, 5), np.float32)
    logits[:num_beams, 1] = 5.0
    logits[num_beams:, 4] = 5.0
    before = state_of(generator)
    with pytest.raises(ValueError, match=r"token_strings has 3 entries.*5 columns"):
        generator.step(logits)
    assert state_of(generator) == before
    # with a text for every id, the same step runs, and row 0 stops on "ab" next
    generator = kvgen.Generator(config, token_strings=["a", "b", "c", "d", "e"])
    generator.append_tokens([[0], [0]])
    generator.step(logits)
    assert [len(s) for s in generator.sequences] == [2] * generator.rows


def test_a_row_failing_halfway_through_sampling_leaves_every_row_as_it_was():
    generator = kvgen.Generator(kvgen.GenerationConfig(max_new_tokens=3, do_sample=True, seed=1))
    generator.append_tokens([[1], [2]])
    good = np.tile(np.arange(SMALL_VOCAB, dtype=np.float32), (2, 1))
    generator.step(good)
    before = state_of(generator)
    bad = good.copy()
    bad[1] = -np.inf  # row 0 samples fine, row 1 has no possible token
    with pytest.raises(ValueError, match="row 1"):
        generator.step(bad)
    assert state_of(generator) == before
    # it goes on exactly as a generator that never saw the failed step
    reference = kvgen.Generator(kvgen.GenerationConfig(max_new_tokens=3, do_sample=True, seed=1))
    reference.append_tokens([[1], [2]])
    for g in (generator, reference):
        while not g.is_done():
            g.step(good)
    assert state_of(generator)[0] == state_of(reference)[0]


def test_a_failed_first_step_fixes_no_vocabulary():
    config = kvgen.GenerationConfig(max_new_tokens=2, stop_strings=["x"])
    generator = kvgen.Generator(config, token_strings=["x", "y", "z"])
    generator.append_tokens([[1]])
    with pytest.raises(ValueError, match="token_strings"):
        generator.step(np.zeros((1, 4), np.float32))
    assert generator.last_logits is None
    generator.step(np.zeros((1, 3), np.float32))  # a vocabulary the texts cover
    assert generator.last_logits.shape == (1, 3)


# ---- prompt token ids beyond int64 --------------------------------------------

@pytest.mark.parametrize("prompts", [[[1, 2**70]], [[3], [1, 2, -(2**70)]], np.array([[1, 2**64 - 1]], np.uint64)])
def test_prompt_token_beyond_int64_is_a_value_error_naming_it(prompts):
    generator = kvgen.Generator(kvgen.GenerationConfig(max_new_tokens=2))
    with pytest.raises(ValueError, match=r"prompt \d, position \d: -?\d+ does not fit"):
        generator.append_tokens(prompts)
    assert generator.batch_size == 0  # nothing was set: a good call still works
    generator.append_tokens([[1, 2]])


def test_prompt_token_beyond_int64_through_a_model(gpt2_dir):
    model = kvgen.Model.load(gpt2_dir)
    with pytest.raises(ValueError, match="prompt 0, position 1"):
        kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=2)).generate([[1, 2**70]])


def test_bad_sequence_ids():
    generator = kvgen.Generator(kvgen.GenerationConfig(max_new_tokens=2))
    with pytest.raises(ValueError, match=r"sequence_ids has 1 entries, expected one per prompt \(2\)"):
        generator.append_tokens([[1], [2]], sequence_ids=[5])
    with pytest.raises(ValueError, match=r"sequence_ids\[0\]"):
        generator.append_tokens([[1]], sequence_ids=[2**64])
    with pytest.raises(TypeError, match="sequence_ids"):
        generator.append_tokens([[1]], sequence_ids=["a"])


# ---- batch-invariant sampling keyed by sequence ids --------------------------

def sample_external(prompts, sequence_ids=None, **settings):
    config = kvgen.GenerationConfig(do_sample=True, seed=11, max_new_tokens=12, **settings)
    generator = kvgen.Generator(config)
    generator.append_tokens(prompts, sequence_ids=sequence_ids)
    while not generator.is_done():
        generator.step(np.stack([history_logits(s, 40) / 2 for s in generator.sequences]))
    return [[s.tolist() for s in per] for per in generator.result().sequences]


@pytest.mark.parametrize("settings", [dict(), dict(num_return_sequences=3), dict(num_beams=3)])
def test_same_prompt_seed_and_id_sample_the_same_tokens_in_any_batch(settings):
    prompt = [9, 8, 7]
    alone = sample_external([prompt], [42], **settings)[0]
    in_batch = sample_external([[1], [2, 3], [4, 5, 6], prompt], [0, 1, 2, 42], **settings)[3]
    assert in_batch == alone
    if settings.get("num_return_sequences"):
        assert len({tuple(s) for s in alone}) > 1  # the rows of one prompt still differ
    # without ids, the draws follow the position (the default ids are 0, 1, 2, ...)
    by_position = sample_external([[1], [2, 3], [4, 5, 6], prompt], **settings)
    assert by_position == sample_external([[1], [2, 3], [4, 5, 6], prompt], [0, 1, 2, 3], **settings)
    assert by_position[3] != alone


def test_default_ids_keep_the_row_keyed_draws():
    # The default (ids 0, 1, 2, ...) keys row r by r, as before sequence ids existed: the
    # first step's tokens are kvgen.sample's with sequence_ids = row index.
    logits = np.stack([history_logits([i], 40) for i in range(6)])
    config = kvgen.GenerationConfig(do_sample=True, seed=5, max_new_tokens=1, num_return_sequences=2)
    generator = kvgen.Generator(config)
    generator.append_tokens([[1], [2], [3]])
    generator.step(logits)
    expected = kvgen.sample(logits, config, sequence_ids=np.arange(6))
    np.testing.assert_array_equal(generator.next_tokens, expected)


def test_model_path_same_prompt_seed_and_id_sample_the_same_tokens_in_any_batch(gpt2_dir):
    model = kvgen.Model.load(gpt2_dir)
    config = kvgen.GenerationConfig(do_sample=True, seed=3, max_new_tokens=10)
    generator = kvgen.Generator(model, config)
    prompt = [5, 6, 7, 8]
    alone = generator.generate([prompt], sequence_ids=[7]).sequences[0][0]
    batch = generator.generate([[1, 2], [3], [9, 10, 11], prompt], sequence_ids=[1, 2, 3, 7])
    np.testing.assert_array_equal(batch.sequences[3][0], alone)


def test_the_core_says_when_token_texts_are_needed():
    """needs_token_texts: stop strings or DRY's sequence breakers, until the texts are set; the
    request set-up reads it instead of a rule of its own."""
    texts = [f"t{i}" for i in range(8)]
    for fields, needed in [({}, False), ({"stop_strings": ["t1"]}, True), ({"dry_multiplier": 0.8}, True),
                           ({"dry_multiplier": 0.8, "dry_sequence_breakers": None}, False),
                           ({"dry_multiplier": 0.8, "dry_penalty_last_n": 0}, False)]:
        generator = kvgen.Generator(kvgen.GenerationConfig(max_new_tokens=2, **fields))
        assert generator.needs_token_texts is needed, fields
        generator.set_token_strings(texts)
        assert not generator.needs_token_texts
        generator.append_tokens([[1, 2]])
        with pytest.raises(ValueError, match="before append_tokens"):
            generator.set_token_strings(texts)
