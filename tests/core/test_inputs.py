"""Zero copy, clear errors on bad input, and the GIL released during the C++ work."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
import torch

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
