"""Threads sharing one Model or one LogitsProcessor get what sequential calls get.

Four threads start together (a barrier) and call the shared object with different
inputs; every result is kept and compared, after all threads finish, with the result of
the same call made alone. The GIL is released inside both calls, so the threads do
overlap in C++ (results overwritten by later calls, and a prompt
length that one thread's sequence fixed for another's).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hf_models import random_gpt2
from llama_models import random_llama

import kvgen

THREADS = 4
VOCAB = 211  # both random models' vocabulary


def run_threads(work, args_per_thread):
    """Runs work(*args) in one thread per args, started together; returns their results."""
    barrier = threading.Barrier(len(args_per_thread))
    results: list = [None] * len(args_per_thread)
    errors: list = []

    def body(i, args):
        try:
            barrier.wait()
            results[i] = work(*args)
        except BaseException as e:  # noqa: BLE001  reported after join
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i, a)) for i, a in enumerate(args_per_thread)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


# ---- one Model ---------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def model(request, tmp_path_factory):
    hf = random_gpt2() if request.param == "gpt2" else random_llama()
    directory = tmp_path_factory.mktemp(request.param)
    hf.save_pretrained(directory)
    return kvgen.Model.load(directory)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_forward_pass_gives_the_caller_its_floating_point_mode_back(model, threads):
    """The core flushes subnormal floats while it computes (its workers, and the calling thread
    while it takes part); the caller's NumPy then still computes with subnormals."""
    tiny = np.full(4, 1e-39, dtype=np.float32)  # below float32's smallest normal
    before = kvgen.get_num_threads()
    kvgen.set_num_threads(threads)
    try:
        assert np.all(tiny * np.float32(3.0) > 0)
        model.forward(np.arange(12)[None] % VOCAB)
        assert np.all(tiny * np.float32(3.0) > 0)
        assert np.array_equal(tiny * np.float32(3.0), np.full(4, 3e-39, dtype=np.float32))
    finally:
        kvgen.set_num_threads(before)


def inputs_of_thread(t: int) -> list[np.ndarray]:
    """Different row counts and lengths per call and per thread, so buffers change size."""
    rng = np.random.default_rng(t)
    return [rng.integers(0, VOCAB, size=(1 + (t + k) % 3, 2 + 5 * ((t * 3 + k) % 7))) for k in range(10)]


def test_threads_share_one_model(model):
    def work(inputs):
        return [model.forward(ids) for ids in inputs]

    per_thread = [inputs_of_thread(t) for t in range(THREADS)]
    concurrent = run_threads(work, [(inputs,) for inputs in per_thread])
    for inputs, results in zip(per_thread, concurrent):
        for ids, got in zip(inputs, results):
            assert np.array_equal(got, model.forward(ids))


# ---- one LogitsProcessor -----------------------------------------------------------------

EOS = 1
CONFIG = kvgen.GenerationConfig(min_new_tokens=4, eos_token_id=EOS, begin_suppress_tokens=[2, 3],
                                repetition_penalty=1.3, no_repeat_ngram_size=2)


def decode_loop(proc, prompt: list[int], seed: int, steps: int = 12) -> list[np.ndarray]:
    """A greedy loop over random logits (EOS favoured, so that min_new_tokens matters):
    the processed scores of every step."""
    rng = np.random.default_rng(seed)
    ids = np.array([prompt], np.int64)
    out = []
    for _ in range(steps):
        scores = rng.standard_normal((1, VOCAB)).astype(np.float32)
        scores[0, EOS] += 4.0
        proc(ids, scores)
        out.append(scores)
        ids = np.concatenate([ids, [[int(np.argmax(scores))]]], axis=1)
    return out


def test_threads_share_one_logits_processor():
    prompts = [[5, 9, 13], [7, 8, 100, 42, 3, 77, 150, 12], [60], [11, 12, 13, 14, 15]]
    shared = kvgen.LogitsProcessor(CONFIG)
    concurrent = run_threads(lambda p, s: decode_loop(shared, p, s), [(p, s) for s, p in enumerate(prompts)])
    for seed, (prompt, got) in enumerate(zip(prompts, concurrent)):
        alone = decode_loop(kvgen.LogitsProcessor(CONFIG), prompt, seed)
        for step, (a, b) in enumerate(zip(got, alone)):
            assert np.array_equal(a, b), (prompt, step)


def test_threads_sample_with_one_logits_processor():
    proc = kvgen.LogitsProcessor(kvgen.GenerationConfig(do_sample=True, top_k=20, seed=3, repetition_penalty=1.2))
    rng = np.random.default_rng(0)
    logits = [rng.standard_normal((3, VOCAB)).astype(np.float32) for _ in range(THREADS)]
    history = [rng.integers(0, VOCAB, size=(3, 4 + t)) for t in range(THREADS)]

    def work(t):
        return [proc.sample(logits[t], history[t], step=k, return_logprobs=True) for k in range(20)]

    concurrent = run_threads(work, [(t,) for t in range(THREADS)])
    for t, results in enumerate(concurrent):
        for k, (tokens, logprobs) in enumerate(results):
            alone, alone_logprobs = proc.sample(logits[t], history[t], step=k, return_logprobs=True)
            assert np.array_equal(tokens, alone) and np.array_equal(logprobs, alone_logprobs)
