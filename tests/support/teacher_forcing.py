"""Teacher-forced quality of a model's logits over a fixed text, shared by the fidelity
tests and benchmarks/bench_perplexity.py (which imports it by path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

# A public-domain text (tests/data/README.md): 2,262 tokens under SmolLM2's tokenizer.
TEXT = Path(__file__).resolve().parents[1] / "data" / "pride_and_prejudice_ch1-2.txt"


def log_softmax64(logits: np.ndarray) -> np.ndarray:
    """log-softmax over the last axis, in float64."""
    x = logits.astype(np.float64)
    x -= x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def perplexity(logits: np.ndarray, ids: np.ndarray) -> float:
    """Teacher-forced perplexity of ids[1:] given logits [length, vocab] of ids: exp of the
    mean negative log-likelihood of each token from the logits at the position before it."""
    logp = log_softmax64(logits[:-1])
    return float(np.exp(-logp[np.arange(len(ids) - 1), ids[1:]].mean()))


def slot_logits(model, ids: np.ndarray, chunk: int) -> np.ndarray:
    """Teacher-forced logits [len(ids), vocab] through one cache slot of the engine's cache
    (``_core._ModelSlots``), `chunk` tokens per forward pass, every position's logits returned as
    a verify pass returns them."""
    from kvgen import _core

    slots = _core._ModelSlots(model._core, 1, len(ids) + chunk, chunk)
    out = []
    for a in range(0, len(ids), chunk):
        part = ids[a:a + chunk]
        slots.forward([(0, part)], verify=[0])
        out.append(np.array(slots.verify_logits[0, :len(part)]))
    return np.concatenate(out)
