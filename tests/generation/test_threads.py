"""Threads: one Generator stepped by one thread while others read its state (sequences,
next_tokens, last_logits, result()), and a model-driven generation read while it
advances. The readers take the lock the stepping thread holds: nothing crashes, every
read is a consistent snapshot, and the final result equals a sequential run's."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hf_models import random_gpt2

import kvgen
from kvgen.generation.engine import one_request
from kvgen.generation.request_setup import RequestSetup

VOCAB = 97
STEPS = 40


def beam_config() -> kvgen.GenerationConfig:
    return kvgen.GenerationConfig(num_beams=4, num_return_sequences=2, max_new_tokens=STEPS, seed=1,
                                  repetition_penalty=1.2, eos_token_id=[])


def logits_for(sequences) -> np.ndarray:
    """Logits from each row's history alone (so the order of rows does not matter)."""
    out = np.empty((len(sequences), VOCAB), np.float32)
    for r, s in enumerate(sequences):
        out[r] = np.random.default_rng(int(np.sum(s * np.arange(1, len(s) + 1)))).normal(0, 3, VOCAB)
    return out


def start(generator) -> None:
    generator.append_tokens([[1, 2, 3], [4, 5]])  # 8 rows


def run_beams(generator) -> None:
    while not generator.is_done():
        generator.step(logits_for(generator.sequences))


def result_lists(result) -> list:
    return [[s.tolist() for s in per] for per in result.sequences]


def read_until(stop: threading.Event, generator, errors: list, reads: list) -> None:
    """Reads every piece of state in a loop and checks each read is self-consistent."""
    try:
        while not stop.is_set():
            sequences = generator.sequences
            lengths = {len(s) for s in sequences[:4]} | {len(s) + 1 for s in sequences[4:]}
            assert len(sequences) == 8 and len(lengths) == 1, lengths  # rows have as many new tokens
            tokens = generator.next_tokens
            assert tokens.shape == (8,) and np.all((tokens >= 0) & (tokens < VOCAB))
            view = generator.last_logits
            if view is not None:
                assert view.shape == (8, VOCAB)
                float(view.sum())  # touches the whole buffer
            generator.result()
            assert len(generator.finish_reasons) == generator.rows
            reads.append(1)
    except BaseException as e:  # noqa: BLE001  reported by the main thread
        errors.append(e)


def test_generator_read_while_another_thread_steps_it():
    sequential = kvgen.Generator(beam_config())
    start(sequential)
    run_beams(sequential)
    expected = result_lists(sequential.result())

    for _ in range(5):
        generator = kvgen.Generator(beam_config())
        start(generator)
        stop, errors, reads = threading.Event(), [], []
        readers = [threading.Thread(target=read_until, args=(stop, generator, errors, reads)) for _ in range(3)]
        for t in readers:
            t.start()
        try:
            run_beams(generator)
        finally:
            stop.set()
            for t in readers:
                t.join()
        assert not errors, errors[0]
        assert reads, "the readers never ran"
        assert result_lists(generator.result()) == expected


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("gpt2")
    random_gpt2(vocab_size=211, n_embd=32, n_layer=2, n_head=4).save_pretrained(directory)
    return kvgen.Model.load(directory)


def test_model_generation_read_while_it_advances(model):
    config = kvgen.GenerationConfig(num_beams=3, max_new_tokens=100, eos_token_id=[], seed=0)
    prompts = [[5, 9, 13], [7, 8]]

    def session():
        engine, request = one_request(model, prompts, RequestSetup(config))
        while request.next_tokens is None:  # prefill and the first step
            engine.step()
        return engine, request

    engine, request = session()
    while not request.done():
        engine.step()
    expected = request.selector._hypotheses()

    engine, request = session()
    running = request.selector
    stop, errors, reads = threading.Event(), [], []

    def read():
        try:
            while not stop.is_set():
                lengths = {len(s) - len(prompts[i // 3]) for i, s in enumerate(running.sequences)}
                assert len(lengths) == 1, lengths  # every row has the same number of new tokens
                running.next_tokens, running.last_logits, running._hypotheses(), engine.kv_cache_bytes
                reads.append(1)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        while not request.done():
            engine.step()
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert not errors, errors[0]
    assert reads
    got = running._hypotheses()
    assert [[h["tokens"].tolist() for h in per] for per in got] == [[h["tokens"].tolist() for h in per]
                                                                    for per in expected]
