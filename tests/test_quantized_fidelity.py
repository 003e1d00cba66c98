"""Fidelity of kvgen's computation on the real SmolLM2 file, teacher-forced over a fixed text.

The reference is transformers' float32 forward pass over the same GGUF file (dequantized at
load), one pass over the first N_TOKENS tokens of a public-domain text (tests/data/). kvgen
runs one forward pass per mode:

* default (``kvgen.Model.load(path)``): quantized weights, activations quantized per 32-block
  to int8 where the kernels are faster. The arithmetic differs from the float reference, so
  the test bounds what users see: the argmax agrees at >= 99% of positions and the perplexity
  is within 0.5% (issue 10's bounds, which llama.cpp-style int8 activations meet).
* ``exact=True``: quantized weights, float activations: the same arithmetic as transformers
  up to the order of float32 sums, so the same bounds hold with a wide margin and, in
  addition, every logit is within LOGIT_ATOL of transformers'.

Perplexity: exp of the mean negative log-likelihood of tokens 1..N-1, each from the
log-softmax (float64) of the logits at the position before it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kvgen

TEXT = Path(__file__).resolve().parent / "data" / "pride_and_prejudice_ch1-2.txt"
N_TOKENS = 1100
MIN_ARGMAX_AGREEMENT = 0.99
MAX_PERPLEXITY_REL_DIFF = 0.005
# exact=True: kvgen's and torch's float32 sums differ in order only. Measured on this text with
# both engines on float32 weights dequantized at load (kvgen before issue 10): max |difference|
# 9.5e-5 over all 1,100 x 49,152 logits (|logit| up to 39), median per-position max 3e-5.
# Dequantizing a block inside the kernel reorders the sums once more, not more coarsely; 1e-3
# (10x the float32 rounding seen) still catches a real error (a wrong block scale or minimum,
# a wrong row) or activations rounded to int8, each of which moves logits far more.
LOGIT_ATOL = 1e-3


def log_softmax64(logits: np.ndarray) -> np.ndarray:
    """log-softmax over the last axis, in float64."""
    x = logits.astype(np.float64)
    x -= x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def perplexity(logits: np.ndarray, ids: np.ndarray) -> float:
    """Teacher-forced perplexity of ids[1:] given logits [length, vocab] of ids."""
    logp = log_softmax64(logits[:-1])
    nll = -logp[np.arange(len(ids) - 1), ids[1:]]
    return float(np.exp(nll.mean()))


@pytest.fixture(scope="session")
def text_ids(smollm2_model) -> np.ndarray:
    """The first N_TOKENS ids of the text under the file's tokenizer."""
    ids = smollm2_model.encode(TEXT.read_text(encoding="utf-8"))
    assert len(ids) >= N_TOKENS, f"{TEXT.name} gives {len(ids)} tokens, fewer than {N_TOKENS}"
    return np.asarray(ids[:N_TOKENS], dtype=np.int64)


@pytest.fixture(scope="session")
def hf_logits(smollm2_hf_model, text_ids) -> np.ndarray:
    """transformers' float32 logits [N_TOKENS, vocab] over the text, one forward pass."""
    import torch

    with torch.inference_mode():
        out = smollm2_hf_model(torch.from_numpy(text_ids)[None], use_cache=False)
    return out.logits[0].float().numpy()


@pytest.fixture(scope="session", params=["default", "exact"])
def kvgen_logits(request, smollm2_file, text_ids) -> tuple[str, np.ndarray]:
    """(mode, kvgen's logits [N_TOKENS, vocab]) for each mode, one forward pass each."""
    mode = request.param
    model = kvgen.Model.load(smollm2_file, exact=True) if mode == "exact" else kvgen.Model.load(smollm2_file)
    return mode, model.forward(text_ids[None])[0]


def test_text_is_long_enough_and_tokenizers_agree(smollm2_hf_tokenizer, smollm2_model):
    text = TEXT.read_text(encoding="utf-8")
    ids = smollm2_model.encode(text)
    assert len(ids) >= N_TOKENS
    assert ids == smollm2_hf_tokenizer(text)["input_ids"]


def test_argmax_agrees_with_transformers(kvgen_logits, hf_logits):
    mode, logits = kvgen_logits
    assert logits.shape == hf_logits.shape
    agreement = float((logits.argmax(-1) == hf_logits.argmax(-1)).mean())
    assert agreement >= MIN_ARGMAX_AGREEMENT, f"{mode}: argmax agrees at {agreement:.2%} of positions"


def test_perplexity_matches_transformers(kvgen_logits, hf_logits, text_ids):
    mode, logits = kvgen_logits
    ours, ref = perplexity(logits, text_ids), perplexity(hf_logits, text_ids)
    rel = abs(ours / ref - 1)
    assert rel <= MAX_PERPLEXITY_REL_DIFF, f"{mode}: perplexity {ours:.4f} against transformers' {ref:.4f}"


def test_exact_mode_logits_match_transformers(kvgen_logits, hf_logits):
    mode, logits = kvgen_logits
    if mode != "exact":
        pytest.skip("int8 activations change the logits by design; bounded by the argmax and perplexity tests")
    np.testing.assert_allclose(logits, hf_logits, rtol=0, atol=LOGIT_ATOL)
