"""kvgen.Generator over external logits: stopping rules, sampling seeds, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import kvgen
from hf_models import HFStepper, random_gpt2

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
