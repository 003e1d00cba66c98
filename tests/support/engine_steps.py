"""Each decode step's raw logits, read from the engine as it runs (shared by the model tests)."""

from __future__ import annotations

import numpy as np

import kvgen
from kvgen.generation.engine import one_request
from kvgen.generation.request_setup import RequestSetup


def decode_step_logits(model, prompts, new: int) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """Per greedy decode step (no processors), per row: (its sequence so far, the step's raw logits)."""
    config = kvgen.GenerationConfig(max_new_tokens=new, min_new_tokens=new)
    engine, request = one_request(model, prompts, RequestSetup(config))
    steps = []
    while True:
        engine.step()
        if request.next_tokens is not None:
            session = request.selector
            steps.append([(np.array(session.sequences[r]), session.last_logits[r].copy()) for r in range(len(prompts))])
        if request.done():
            return steps


def decode_step_logits_at(model, prompts, new: int, thread_counts=(1, 2)) -> list:
    """decode_step_logits at each of thread_counts in turn (kvgen's thread count restored after)."""
    before = kvgen.get_num_threads()
    try:
        runs = []
        for threads in thread_counts:
            kvgen.set_num_threads(threads)
            runs.append(decode_step_logits(model, prompts, new))
        return runs
    finally:
        kvgen.set_num_threads(before)
