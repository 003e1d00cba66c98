"""kvgen.Model: built-in models loaded from Hugging Face checkpoint directories.

The weights are read with the ``safetensors`` library into NumPy arrays that the C++
model reads in place (no second copy); the tokenizer, when the directory has a
``tokenizer.json``, is a Hugging Face ``tokenizers.Tokenizer``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

import numpy as np

from kvgen import _core

# GPT-2 config values kvgen computes as transformers does; anything else is refused.
_GPT2_ACTIVATIONS = {"gelu_new", "gelu_pytorch_tanh", "gelu"}
_GPT2_REFUSED = {
    "add_cross_attention": (False, "cross-attention (encoder-decoder GPT-2)"),
    "reorder_and_upcast_attn": (False, None),  # numerics only: accepted either way
}
# Buffers some GPT-2 checkpoints carry that are not weights (the causal mask).
_NOT_WEIGHTS = (".attn.bias", ".attn.masked_bias")


def _read_config(directory: Path) -> dict:
    path = directory / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"{directory}: no config.json (kvgen.Model.load expects a Hugging Face model directory)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None


def _check_gpt2_config(config: dict) -> None:
    act = config.get("activation_function", "gelu_new")
    if act not in _GPT2_ACTIVATIONS:
        raise ValueError(f"GPT-2 config: activation_function={act!r} is not supported (supported: "
                         f"{', '.join(sorted(_GPT2_ACTIVATIONS))})")
    for key, (allowed, what) in _GPT2_REFUSED.items():
        if what and config.get(key, allowed) != allowed:
            raise ValueError(f"GPT-2 config: {key}={config[key]!r} ({what}) is not supported")


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    from safetensors import SafetensorError, safe_open

    if not path.is_file():
        raise FileNotFoundError(f"{path.parent}: no model.safetensors (kvgen reads safetensors weights)")
    arrays: dict[str, np.ndarray] = {}
    try:
        with safe_open(str(path), framework="np") as f:
            for name in f.keys():
                if name.endswith(_NOT_WEIGHTS):
                    continue
                arrays[name] = f.get_tensor(name)
    except (SafetensorError, OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read the safetensors file ({e}); is it truncated or corrupt?") from None
    return arrays


class Model:
    """A built-in model (GPT-2 today) with its tokenizer, loaded with ``Model.load(path)``.

    ``forward(input_ids)`` gives raw logits; ``kvgen.Generator(model, config)``
    generates with it (KV-cached, prefill in one batched pass).
    """

    def __init__(self, core: "_core._Model", config: dict, path: Optional[Path], tokenizer: Any = None):
        self._core = core
        self.config = config
        self.path = path
        self.tokenizer = tokenizer

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Model":
        """Loads a Hugging Face GPT-2 directory: config.json + model.safetensors (+ tokenizer.json)."""
        directory = Path(path)
        if not directory.is_dir():
            raise FileNotFoundError(f"{directory}: not a directory (kvgen.Model.load expects a model directory)")
        config = _read_config(directory)
        model_type = config.get("model_type")
        if model_type != "gpt2":
            raise ValueError(f"{directory}: model_type={model_type!r} is not supported (kvgen runs: gpt2)")
        _check_gpt2_config(config)
        arrays = _read_safetensors(directory / "model.safetensors")
        core = _core._Model.gpt2(config, arrays)
        tokenizer = None
        if (directory / "tokenizer.json").is_file():
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        return cls(core, config, directory, tokenizer)

    def forward(self, input_ids) -> np.ndarray:
        """Logits [rows, length, vocab] for ``input_ids`` [rows, length] (or one 1-D row).

        The array is a view over the model's own buffer, valid until the next call.
        """
        return self._core.forward(input_ids)

    @property
    def vocab_size(self) -> int:
        """Size of the output vocabulary."""
        return self._core.vocab_size

    @property
    def context_length(self) -> int:
        """Positions the model supports (prompt + generated tokens)."""
        return self._core.context_length

    def kv_cache_bytes(self, rows: int, positions: int) -> int:
        """Bytes of a KV cache for ``rows`` sequences of ``positions`` tokens."""
        return self._core.kv_cache_bytes(rows, positions)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (needs the directory's tokenizer.json)."""
        return self._need_tokenizer().encode(text).ids

    def decode(self, ids) -> str:
        """Text of token ids (needs the directory's tokenizer.json)."""
        return self._need_tokenizer().decode([int(i) for i in ids], skip_special_tokens=False)

    def token_strings(self) -> list[str]:
        """The text of every token id, for stop strings."""
        tok = self._need_tokenizer()
        return [tok.decode([i], skip_special_tokens=False) for i in range(self.vocab_size)]

    def _need_tokenizer(self):
        if self.tokenizer is None:
            raise ValueError(f"{self.path}: the model has no tokenizer.json; pass token ids instead of text")
        return self.tokenizer

    def __repr__(self) -> str:
        c = self._core
        return (f"Model({c.architecture}, layers={c.num_layers}, hidden={c.hidden_size}, heads={c.num_heads}, "
                f"vocab={c.vocab_size}, context={c.context_length}, tokenizer={self.tokenizer is not None}, "
                f"path={str(self.path)!r})")
