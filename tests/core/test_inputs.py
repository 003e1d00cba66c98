"""Zero copy, clear errors on bad input, and the GIL released during the C++ work."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
import torch
from hf_models import left_pad, random_gpt2

import kvgen

CHAIN = kvgen.GenerationConfig(do_sample=True, temperature=0.8, top_k=40, top_p=0.95, repetition_penalty=1.1)


def logits(rows=2, vocab=100, seed=0):
    return np.random.default_rng(seed).standard_normal((rows, vocab)).astype(np.float32)


# ---- zero copy ---------------------------------------------------------------------

def test_numpy_logits_processed_in_place():
    x = logits()
    before = x.copy()
    out = kvgen.LogitsProcessor(CHAIN)(None, x)
    assert out is x and np.shares_memory(out, x)
    assert not np.array_equal(x, before)  # it really wrote into the caller's array


def test_torch_logits_processed_in_place_through_dlpack():
    t = torch.from_numpy(logits())
    ptr = t.data_ptr()
    ids = torch.randint(0, 100, (2, 8))
    out = kvgen.LogitsProcessor(CHAIN)(ids, t)
    assert out is t and t.data_ptr() == ptr
    assert torch.isinf(t).any()  # filtered tokens written in place


def test_sample_reads_logits_without_writing_them():
    x = logits()
    before = x.copy()
    x.flags.writeable = False  # read-only input is fine for sample
    kvgen.sample(x, CHAIN, np.zeros((2, 3), dtype=np.int64))
    np.testing.assert_array_equal(x, before)


def test_int32_histories_are_accepted():
    x = logits()
    a = x.copy()
    b = x.copy()
    ids = np.array([[1, 2, 3], [4, 5, 6]])
    kvgen.LogitsProcessor(CHAIN)(ids.astype(np.int64), a)
    kvgen.LogitsProcessor(CHAIN)(ids.astype(np.int32), b)
    np.testing.assert_array_equal(a, b)


# ---- bad input -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32])
def test_wrong_dtype_is_a_type_error_not_a_copy(dtype):
    with pytest.raises(TypeError, match="float32"):
        kvgen.LogitsProcessor(CHAIN)(None, logits().astype(dtype))
    with pytest.raises(TypeError, match="float32"):
        kvgen.sample(logits().astype(dtype), CHAIN)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_torch_half_precision_is_rejected_with_the_fix(dtype):
    with pytest.raises(TypeError, match=r"float32.*\.float\(\)"):
        kvgen.LogitsProcessor(CHAIN)(None, torch.zeros(2, 10, dtype=dtype))


@pytest.mark.parametrize("shape", [(100,), (2, 3, 100), (2, 0)])
def test_wrong_rank_or_empty_vocab(shape):
    with pytest.raises(ValueError, match="logits|scores"):
        kvgen.sample(np.zeros(shape, dtype=np.float32), CHAIN)


def test_non_contiguous_and_read_only():
    x = logits(vocab=200)
    with pytest.raises(ValueError, match="C-contiguous"):
        kvgen.sample(x[:, ::2], CHAIN)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        kvgen.LogitsProcessor(CHAIN)(None, x)


def test_not_an_array():
    with pytest.raises(TypeError, match="list"):
        kvgen.sample([[0.0, 1.0]], CHAIN)


@pytest.mark.parametrize("bad_id", [100, 5000, -1])
def test_token_id_outside_vocabulary(bad_id):
    ids = np.array([[1, 2, bad_id], [0, 0, 0]])
    with pytest.raises(ValueError, match=rf"input_ids\[0, 2\] = {bad_id} is outside the vocabulary \[0, 100\)"):
        kvgen.LogitsProcessor(CHAIN)(ids, logits())


def test_history_shape_and_dtype():
    with pytest.raises(ValueError, match="3 rows but logits has 2"):
        kvgen.sample(logits(), CHAIN, np.zeros((3, 4), dtype=np.int64))
    with pytest.raises(TypeError, match="integer"):
        kvgen.sample(logits(), CHAIN, np.zeros((2, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="2-D"):
        kvgen.sample(logits(), CHAIN, np.zeros(4, dtype=np.int64))
    with pytest.raises(ValueError, match="sequence_ids"):
        kvgen.sample(logits(), CHAIN, sequence_ids=[1, 2, 3])
    with pytest.raises(ValueError, match="step"):
        kvgen.sample(logits(), CHAIN, step=-1)


def test_config_token_ids_must_fit_the_vocabulary():
    for field, value in [("eos_token_id", 100), ("suppress_tokens", [3, 150]), ("bad_words_ids", [[1, 100]]),
                         ("logit_bias", {100: 1.0}), ("forced_bos_token_id", 400)]:
        config = kvgen.GenerationConfig(**{field: value})
        with pytest.raises(ValueError, match=rf"{field}.*vocab size 100"):
            kvgen.sample(logits(), config)


def test_nan_logits_raise_unless_remove_invalid_values():
    x = logits()
    x[1, 7] = np.nan
    before = x.copy()
    with pytest.raises(ValueError, match="row 1 contains NaN.*remove_invalid_values"):
        kvgen.LogitsProcessor(CHAIN)(None, x)
    np.testing.assert_array_equal(x, before)  # nothing written before the error
    tokens = kvgen.sample(x, kvgen.GenerationConfig(remove_invalid_values=True))
    assert tokens.shape == (2,)


def test_everything_filtered_is_an_error_not_garbage():
    config = kvgen.GenerationConfig(suppress_tokens=list(range(10)))
    with pytest.raises(ValueError, match="every token has probability 0"):
        kvgen.sample(logits(vocab=10), config)


# ---- Python niceties ---------------------------------------------------------------

def test_repr_names_the_chain():
    assert repr(kvgen.LogitsProcessor(CHAIN)) == (
        "LogitsProcessor([RepetitionPenalty(1.1), TopK(40), Temperature(0.8), TopP(0.95)])"
    )


def test_public_names_have_docstrings():
    for name in kvgen.__all__:
        obj = getattr(kvgen, name)
        if name.startswith("__"):
            continue
        assert obj.__doc__ and len(obj.__doc__.strip()) > 20, name
    for name in kvgen.GenerationConfig.fields():
        assert getattr(kvgen.GenerationConfig, name).__doc__, name


def _main_thread_runs_during(call) -> bool:
    """Whether this thread ran Python code while ``call()`` ran in another thread.

    With a switch interval of minutes, CPython never takes the GIL from a running thread,
    so this thread can see the worker between "entered" and "done" only if ``call``
    released the GIL itself. A held GIL can never pass; a released one is seen as long as
    the OS wakes this thread before the call ends."""
    entered, done = threading.Event(), threading.Event()

    def work():
        entered.set()
        call()
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(300.0)
    try:
        worker = threading.Thread(target=work)
        worker.start()
        assert entered.wait(60)
        ran = not done.is_set()
        worker.join()
    finally:
        sys.setswitchinterval(old)
    return ran


def test_gil_is_released_during_sampling():
    """Another Python thread runs while sample() is in C++ (a few tries, so that one slow
    wake-up of this thread on a loaded machine cannot fail the test; a held GIL fails all)."""
    x = np.random.default_rng(0).standard_normal((96, 151936)).astype(np.float32)
    config = kvgen.GenerationConfig(do_sample=True, top_k=0, top_p=0.95, seed=0)
    assert any(_main_thread_runs_during(lambda: kvgen.sample(x, config)) for _ in range(5)), (
        "the main thread could not run while sample() was in C++: the GIL was held")


# ---- Results that belong to the caller, token-id checks, a processor reused across generate() calls ----
# Model.forward's result belongs to the
# caller; token ids that are no ids are ValueErrors naming their position; one
# kvgen.LogitsProcessor serves one transformers generate() after another, each with its
# own prompt length, as transformers' own processors (built per call) do.
VOCAB = 211  # random_gpt2's vocabulary


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    hf = random_gpt2()
    directory = tmp_path_factory.mktemp("gpt2")
    hf.save_pretrained(directory)
    return hf, kvgen.Model.load(directory)


# ---- forward's result is the caller's ----------------------------------------


def test_forward_result_survives_a_larger_call(gpt2):
    # Reproduces the use-after-free: the small call's view pointed into a buffer that the
    # larger call reallocated.
    _, model = gpt2
    small = model.forward([[1, 2, 3]])
    kept = small.copy()
    model.forward(np.arange(120, dtype=np.int64).reshape(2, 60) % VOCAB)
    model.forward([[4, 5, 6]])
    assert np.array_equal(small, kept)


def test_forward_results_own_their_memory(gpt2):
    _, model = gpt2
    a = model.forward([[1, 2, 3]])
    b = model.forward([[1, 2, 3]])
    assert a.flags.owndata and a.flags.writeable and not np.shares_memory(a, b)
    assert np.array_equal(a, b)
    a[:] = 0  # writing the caller's array changes nothing of the model's
    assert np.array_equal(model.forward([[1, 2, 3]]), b)


# ---- token ids that are no ids -----------------------------------------------------------

BAD_IDS = [
    ("python_int_2_70", [[5, 2**70]], r"input_ids\[0, 1\] = 1180591620717411303424 "),
    ("negative_python_int_2_70", [[5, 6], [7, -(2**70)]], r"input_ids\[1, 1\] = -1180591620717411303424 "),
    ("python_int_2_64_minus_1", [[2**64 - 1]], r"input_ids\[0, 0\] = 18446744073709551615 "),
    ("uint64_beyond_int64", np.array([[3, 4, 2**64 - 1]], np.uint64), r"input_ids\[0, 2\] = 18446744073709551615 "),
    ("int64_max", np.array([[2**63 - 1]], np.int64), r"input_ids\[0, 0\] = 9223372036854775807 "),
    ("negative", np.array([[1, 2], [3, -1]], np.int64), r"input_ids\[1, 1\] = -1 "),
    ("vocabulary_size", [[1, 2, VOCAB]], rf"input_ids\[0, 2\] = {VOCAB} "),
    ("one_row", [1, 2, 3, 500], r"input_ids\[0, 3\] = 500 "),
    ("int32", np.array([[7, -2]], np.int32), r"input_ids\[0, 1\] = -2 "),
]


@pytest.mark.parametrize("ids,where", [c[1:] for c in BAD_IDS], ids=[c[0] for c in BAD_IDS])
def test_forward_refuses_token_ids_outside_the_vocabulary(gpt2, ids, where):
    _, model = gpt2
    with pytest.raises(ValueError, match=where + rf"is outside the vocabulary \[0, {VOCAB}\)"):
        model.forward(ids)


def test_forward_refuses_objects_that_are_not_integers(gpt2):
    _, model = gpt2
    with pytest.raises(TypeError, match=r"input_ids\[0, 1\] is a NoneType"):
        model.forward([[1, None, 2**70]])
    with pytest.raises(TypeError, match="integer token ids"):
        model.forward([[1.0, 2.0]])


@pytest.mark.parametrize("ids,where", [c[1:] for c in BAD_IDS if np.ndim(c[1]) == 2 and len(c[1]) == 1],
                         ids=[c[0] for c in BAD_IDS if np.ndim(c[1]) == 2 and len(c[1]) == 1])
def test_sampler_refuses_the_same_token_ids(ids, where):
    # history_view is shared with the sampler bindings: the same ids, the same errors.
    logits = np.zeros((1, VOCAB), np.float32)
    config = kvgen.GenerationConfig(repetition_penalty=1.2)
    message = where + rf"is outside the vocabulary \[0, {VOCAB}\)"
    with pytest.raises(ValueError, match=message):
        kvgen.sample(logits, config, ids)
    with pytest.raises(ValueError, match=message):
        kvgen.LogitsProcessor(config)(ids, logits)
    with pytest.raises(ValueError, match=message):
        kvgen.LogitsProcessor(config).sample(logits, ids)


def test_python_ints_in_range_are_read_as_ids(gpt2):
    _, model = gpt2
    # an object array of Python and NumPy ints (NumPy keeps dtype object with a huge int;
    # slicing it off leaves valid ids that must still be read)
    mixed = np.array([[1, np.int16(2), 3, 2**70]], dtype=object)[:, :3]
    assert np.array_equal(model.forward(mixed), model.forward([[1, 2, 3]]))


# ---- one LogitsProcessor, one generate() after another ---------------------------

SHORT = [5, 9, 13]
LONG = [7, 8, 100, 42, 3, 77, 150, 12, 19, 60]


def greedy(hf, prompt: list[int], n: int) -> list[int]:
    with torch.inference_mode():
        out = hf.generate(torch.tensor([prompt]), max_new_tokens=n, do_sample=False, pad_token_id=0,
                          eos_token_id=None)
    return out[0, len(prompt):].tolist()


def generate(hf, prompts: list[list[int]], **settings) -> list[list[int]]:
    ids, mask = left_pad(prompts, pad=0)
    with torch.inference_mode():
        out = hf.generate(input_ids=ids, attention_mask=mask, pad_token_id=0, do_sample=False, **settings)
    return out[:, ids.shape[1]:].tolist()


def assert_reused_processor_equals_hf(hf, calls, processor_settings, hf_settings, common):
    """Each generate() with one shared kvgen processor gives what transformers' own
    processors (built per call) give, and the processor reports that call's prompt."""
    proc = kvgen.LogitsProcessor(kvgen.GenerationConfig(**processor_settings))
    for prompts in calls:
        expected = generate(hf, prompts, **hf_settings, **common)
        got = generate(hf, prompts, logits_processor=[proc], **common)
        assert got == expected, prompts
        assert proc.prompt_length == max(len(p) for p in prompts)


@pytest.mark.parametrize("num_beams", [1, 3])
def test_min_new_tokens_holds_for_a_second_prompt(gpt2, num_beams):
    # The prompt length fixed at the first call (3) let EOS through
    # after 3 new tokens of a 10-token prompt. EOS is the model's own 3rd greedy token.
    # (Beam search's sequences happen to agree either way here; its reordered rows are
    # checked through prompt_length, which a missed continuation would move.)
    hf, _ = gpt2
    eos = greedy(hf, LONG, 3)[2]
    assert eos not in greedy(hf, LONG, 2)
    common = dict(max_new_tokens=12, eos_token_id=eos, num_beams=num_beams)
    assert_reused_processor_equals_hf(hf, [[SHORT], [LONG], [SHORT, LONG]], dict(min_new_tokens=8, eos_token_id=eos),
                                      dict(min_new_tokens=8), common)


def test_begin_suppress_tokens_apply_at_each_prompts_first_token(gpt2):
    hf, _ = gpt2
    first = [greedy(hf, SHORT, 1)[0], greedy(hf, LONG, 1)[0]]
    settings = dict(begin_suppress_tokens=first)
    assert_reused_processor_equals_hf(hf, [[SHORT], [LONG], [SHORT]], settings, settings, dict(max_new_tokens=5))


def test_forced_eos_lands_at_each_prompts_last_new_token(gpt2):
    hf, _ = gpt2
    settings = dict(forced_eos_token_id=4, max_new_tokens=6)
    assert_reused_processor_equals_hf(hf, [[SHORT], [LONG], [SHORT]], settings, dict(forced_eos_token_id=4),
                                      dict(max_new_tokens=6, eos_token_id=None))


def call(proc, ids):
    proc(np.array(ids, np.int64), np.zeros((len(ids), 16), np.float32))
    return proc.prompt_length


def test_which_calls_continue_a_sequence():
    proc = kvgen.LogitsProcessor(kvgen.GenerationConfig(min_new_tokens=2, eos_token_id=1))
    assert proc.prompt_length is None
    assert call(proc, [[3, 4, 5]]) == 3
    assert call(proc, [[3, 4, 5, 6]]) == 3          # one token more: continues
    assert call(proc, [[3, 4, 5, 6]]) == 3          # the same tokens again: continues
    assert call(proc, [[3, 4, 5, 6, 7, 8]]) == 6    # two tokens more: a new prompt
    assert call(proc, [[3, 4, 5, 6, 7, 8, 9]]) == 6
    assert call(proc, [[3, 4, 5]]) == 3             # shorter than the prompt: new
    assert call(proc, [[3, 4, 9, 2]]) == 4          # other tokens: new
    assert call(proc, [[3, 4, 9, 2], [3, 4, 9, 2]]) == 4  # other row count: new
    assert call(proc, [[3, 4, 9, 2, 5], [3, 4, 9, 2, 6]]) == 4
    assert call(proc, [[3, 4, 9, 2, 6, 1], [3, 4, 9, 2, 6, 0]]) == 4  # beams reordered: continues
    assert call(proc, [[3, 4, 9, 2, 6]]) == 5
    proc.reset()
    assert proc.prompt_length is None
    assert call(proc, [[3, 4, 9, 2, 6, 1]]) == 6    # would continue, but reset() started anew


def test_a_fixed_prompt_length_holds_for_every_call():
    proc = kvgen.LogitsProcessor(kvgen.GenerationConfig(min_new_tokens=2, eos_token_id=1), prompt_length=2)
    assert call(proc, [[3, 4, 5]]) == 2
    assert call(proc, [[9, 9, 9, 9, 9, 9]]) == 2
