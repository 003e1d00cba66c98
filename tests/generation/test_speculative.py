"""Speculative decoding with the real SmolLM2 model: the slot cache's verification pass (the
logits of every drafted position in one forward) and its rollback, the drafters, and the
engine's speculative generation against its plain decode."""

from __future__ import annotations

import numpy as np
import pytest

from kvgen import _core


@pytest.fixture
def model(smollm2_model):
    return smollm2_model


@pytest.fixture(params=[False, True], ids=["default", "exact"])
def mode(request, model):
    before = model.exact
    model.exact = request.param
    yield request.param
    model.exact = before


def test_verify_logits_are_step_by_step_decode_logits_and_rollback_forgets(model, mode):
    prompt = np.array(model.encode("The quick brown fox jumps over the lazy dog. The quick brown fox"))
    drafts = [9, 500, 1200, 77, 3000]
    other = np.array(model.encode("An unrelated prompt that prefills beside the row"))
    slots = _core._ModelSlots(model._core, 3, 128, verify_positions=8)
    slots.forward([(0, prompt), (2, other[:4])])
    # the reference: one token at a time
    steps = []
    for t in drafts:
        slots.forward([(0, np.array([t]))])
        steps.append(slots.logits[0].copy())
    slots.truncate(0, prompt.size)
    # all positions at once, beside a prefill chunk of another slot and a plain decode row
    slots.forward([(2, other[4:]), (0, np.array(drafts)), (1, prompt[:3])], verify=[0])
    verify = slots.verify_logits
    assert verify.shape == (3, len(drafts), model.vocab_size)
    for i, expected in enumerate(steps):
        assert np.array_equal(verify[0, i], expected), f"position {i}"
    # roll back the last three drafts: the next decode is the one after the second draft
    slots.truncate(0, prompt.size + 2)
    assert slots.length(0) == prompt.size + 2
    slots.forward([(0, np.array([drafts[2]]))])
    assert np.array_equal(slots.logits[0], steps[2])
    # ... and a different token there continues as if the rejected ones were never fed
    slots.truncate(0, prompt.size + 2)
    slots.forward([(0, np.array([42]))])
    fresh = _core._ModelSlots(model._core, 1, 128)
    fresh.forward([(0, prompt)])
    fresh.forward([(0, np.array(drafts[:2]))])
    fresh.forward([(0, np.array([42]))])
    assert np.array_equal(slots.logits[0], fresh.logits[0])


def test_verify_and_truncate_refuse_bad_requests(model):
    slots = _core._ModelSlots(model._core, 2, 64, verify_positions=4)
    slots.forward([(0, np.array([1, 2, 3]))])
    with pytest.raises(ValueError, match="verify_positions"):
        slots.forward([(0, np.arange(5))], verify=[0])
    with pytest.raises(ValueError, match="verify slot"):
        slots.forward([(0, np.arange(2))], verify=[1])
    with pytest.raises(ValueError, match="truncate"):
        slots.truncate(0, 4)
    with pytest.raises(ValueError, match="verify_positions"):
        _core._ModelSlots(model._core, 2, 64, verify_positions=65)
