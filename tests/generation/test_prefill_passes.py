"""A prompt's logits do not depend on how many prompt chunks a pass carries: the engine feeds a
request that is alone several chunks per pass (SOLO_PREFILL_CHUNKS), batched ones one chunk per
pass, and the model attends in kPrefillChunk-aligned query blocks either way."""

from __future__ import annotations

import numpy as np

import kvgen
from kvgen import _core
from kvgen.generation.engine import PREFILL_CHUNK, SOLO_PREFILL_CHUNKS


def test_a_prompt_gets_the_same_logits_in_one_pass_as_in_one_chunk_per_pass(smollm2_model):
    assert SOLO_PREFILL_CHUNKS > 1
    threads = kvgen.get_num_threads()
    rng = np.random.default_rng(5)
    prompt = rng.integers(0, smollm2_model.vocab_size, 3 * PREFILL_CHUNK + 7).astype(np.int64)
    try:
        for t in (1, 2):
            kvgen.set_num_threads(t)
            slots = _core._ModelSlots(smollm2_model._core, 3, 256)
            slots.forward([(0, prompt)])  # every chunk in one pass
            for c in range(0, prompt.size, PREFILL_CHUNK):  # one chunk per pass
                slots.forward([(1, prompt[c:c + PREFILL_CHUNK])])
            # from a cached whole chunk on, two chunks per pass: the query blocks still end at
            # multiples of the chunk
            slots.forward([(2, prompt[:PREFILL_CHUNK])])
            slots.forward([(2, prompt[PREFILL_CHUNK:])])
            np.testing.assert_array_equal(slots.logits[0], slots.logits[1])
            np.testing.assert_array_equal(slots.logits[2], slots.logits[1])
            # the next token's step too (it attends every cached position)
            step = np.array([int(slots.logits[0].argmax())])
            slots.forward([(0, step), (1, step), (2, step)])
            np.testing.assert_array_equal(slots.logits[0], slots.logits[1])
            np.testing.assert_array_equal(slots.logits[2], slots.logits[1])
    finally:
        kvgen.set_num_threads(threads)
