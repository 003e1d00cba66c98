"""Embedding requests in the engine (Engine.submit_embedding, what /v1/embeddings runs) on the real
SmolLM2: they are prefilled in the same passes as the rows that decode, which still get exactly
the tokens they get alone; their vectors are Model.embed's (a row's hidden states do not depend
on the other rows of a pass); a cancelled one gives its slot back; the slot cache checks the
hidden-state arrays it is given."""

from __future__ import annotations

import time

import numpy as np
import pytest

import kvgen
from kvgen import _core
from kvgen._embedding import normalized
from kvgen.generation import pass_plan
from kvgen.generation.engine import Engine

TEXTS = ["The three primary colors are red, blue and yellow. " * 4, "Paris", "What is an embedding?"]


def test_embeddings_decode_beside_a_generation_that_gets_its_own_tokens(smollm2_model, monkeypatch):
    model = smollm2_model
    prompt = model.encode("Write a sentence about the sea.")
    config = kvgen.GenerationConfig(max_new_tokens=24)
    with Engine(model, slots=3) as engine:
        (alone,) = engine.generate([prompt], [config])
    plans = []
    original = pass_plan.plan_pass

    def recording(*args, **kwargs):
        plan = original(*args, **kwargs)
        plans.append(plan)
        return plan

    monkeypatch.setattr("kvgen.generation.engine.plan_pass", recording)
    with Engine(model, slots=3) as engine:
        generation = engine.submit(prompt, config)
        generation_started = False
        while not generation_started:  # the embeddings come while the generation decodes
            generation_started = bool(plans) and not plans[-1].prefill_tokens
            time.sleep(0.001)
        embeddings = [engine.submit_embedding(model.encode(t), pooling) for t in TEXTS for pooling in ("last", "mean")]
        vectors = [r.wait_embeddings(60) for r in embeddings]
        assert generation.wait(60).sequences[0][0].tolist() == alone.sequences[0][0].tolist()
        assert len(alone.sequences[0][0]) > 10
    # some pass fed embedded chunks and a decoding row together
    assert any(plan.embedded and plan.decode_rows for plan in plans)
    for k, (text, pooling) in enumerate((t, p) for t in TEXTS for p in ("last", "mean")):
        np.testing.assert_allclose(normalized(vectors[k])[0], model.embed(text, pooling=pooling)[0], atol=1e-6,
                                   err_msg=f"{pooling} {text!r}")


def test_a_cancelled_embedding_gives_its_slot_back(smollm2_model):
    with Engine(smollm2_model, slots=1) as engine:
        first = engine.submit_embedding(smollm2_model.encode(TEXTS[0] * 4), "mean")
        waiting = engine.submit_embedding(smollm2_model.encode(TEXTS[1]), "mean")
        waiting.cancel()
        assert waiting.wait_embeddings(60) is None
        assert first.wait_embeddings(60).shape == (1, 576)
        again = engine.submit_embedding(smollm2_model.encode(TEXTS[1]), "last")
        assert again.wait_embeddings(60).shape == (1, 576)
    with pytest.raises(ValueError, match="context overflow"):
        Engine(smollm2_model, slots=1, context=8).submit_embedding(list(range(9)), "last")


def test_slots_check_the_hidden_state_arrays(smollm2_model):
    slots = _core._ModelSlots(smollm2_model._core, 2, 64)
    tokens = np.array([1, 2, 3])
    for out, error, match in [
        (np.empty((3, 576), dtype=np.float64), TypeError, "float32"),
        (np.empty((2, 576), dtype=np.float32), ValueError, r"shape \(3, 576\)"),
        (np.empty((576, 3), dtype=np.float32).T, ValueError, "C-contiguous"),
    ]:
        with pytest.raises(error, match=match):
            slots.forward([(0, tokens)], hidden=[(0, out)])
    with pytest.raises(ValueError, match="hidden slot 1 has no chunk"):
        slots.forward([(0, tokens)], hidden=[(1, np.empty((3, 576), dtype=np.float32))])
    with pytest.raises(ValueError, match="hidden states and logits at once"):
        _core._ModelSlots(smollm2_model._core, 1, 64, verify_positions=4).forward(
            [(0, tokens)], verify=[0], hidden=[(0, np.empty((3, 576), dtype=np.float32))])
    assert slots.length(0) == 0  # nothing was computed
    out = np.full((3, 576), np.nan, dtype=np.float32)
    slots.forward([(0, tokens), (1, tokens)], hidden=[(0, out)])
    assert np.isfinite(out).all() and slots.length(0) == slots.length(1) == 3
    logits = slots.logits[1].copy()  # the other chunk still gets its logits
    reference = _core._ModelSlots(smollm2_model._core, 1, 64)
    reference.forward([(0, tokens)])
    np.testing.assert_array_equal(logits, reference.logits[0])
