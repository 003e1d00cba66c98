"""Shared pytest set-up. Helper modules beside the tests (hf_reference, sandbox, ...) are
importable through ``pythonpath = ["tests"]`` in pyproject.toml.

SmolLM2-135M-Instruct (kvgen's default model) and transformers' reading of the same GGUF file
take seconds each to load, and several test modules use them: the fixtures below load each
once per session. Tests only read them (generation state lives in each Generator, not in the
model), so sharing them across modules changes nothing that the tests see. transformers is
imported inside the fixtures, so runs that need none of them do not pay for it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import kvgen


def pytest_runtest_setup(item):
    """transformers' reference products run on one torch thread: on a machine of few cores,
    torch's threads (which keep spinning after each product) and kvgen's thread pool wait for
    each other, and a cached-decode comparison took 9.7 s on 2 torch threads against 0.24 s on
    one. torch is imported by the test modules that use it; the first test after that sets it."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def pytest_collection_modifyitems(items):
    """Tests that load the real SmolLM2-135M model (kvgen's, transformers' or its file) carry the
    ``real_model`` mark: the sanitizer stage of CI leaves them out (the tiny random models of the
    other tests drive the same kernels and engine paths in a fraction of the time)."""
    real = {"smollm2_file", "smollm2_model", "smollm2_hf_model", "smollm2_hf_tokenizer", "smollm2_tokenizer_info"}
    for item in items:
        if real & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.real_model)


@pytest.fixture(scope="session")
def smollm2_file() -> Path:
    """Path of the SmolLM2 GGUF; fails (not skips) with the install command when it is missing."""
    from gguf_models import smollm2_path

    return Path(smollm2_path())


@pytest.fixture(scope="session")
def smollm2_model() -> kvgen.Model:
    """kvgen's default model, ``kvgen.load_default()``."""
    return kvgen.load_default()


@pytest.fixture(scope="session")
def smollm2_tokenizer_info(smollm2_file):
    """kvgen's tokenizer read from the GGUF metadata (a ``GGUFTokenizerInfo``)."""
    from kvgen.loaders.gguf.file import read_gguf_file
    from kvgen.loaders.gguf.tokenizer import tokenizer_from_gguf

    return tokenizer_from_gguf(read_gguf_file(smollm2_file))


@pytest.fixture(scope="session")
def smollm2_hf_tokenizer(smollm2_file):
    """transformers' tokenizer for the GGUF file (``AutoTokenizer.from_pretrained(..., gguf_file=...)``)."""
    import transformers

    return transformers.AutoTokenizer.from_pretrained(str(smollm2_file.parent), gguf_file=smollm2_file.name)


@pytest.fixture(scope="session")
def smollm2_hf_model(smollm2_file):
    """transformers' model for the GGUF file, dequantized to float32, in eval mode."""
    import torch
    import transformers

    return transformers.AutoModelForCausalLM.from_pretrained(
        str(smollm2_file.parent), gguf_file=smollm2_file.name, dtype=torch.float32).eval()
