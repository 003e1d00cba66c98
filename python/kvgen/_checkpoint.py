"""Reading Hugging Face checkpoint directories: config.json, safetensors weights (one
file or shards listed in model.safetensors.index.json, read with the ``safetensors``
library into NumPy arrays), tokenizer.json (a ``tokenizers.Tokenizer``) and the chat
template (tokenizer_config.json or chat_template.jinja)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import numpy as np

# Buffers some GPT-2 checkpoints carry that are not weights (the causal mask).
_NOT_WEIGHTS = (".attn.bias", ".attn.masked_bias", ".rotary_emb.inv_freq")


def read_json(path: Path, what: str) -> dict:
    """The JSON object in ``path``; FileNotFoundError / ValueError naming the file."""
    if not path.is_file():
        raise FileNotFoundError(f"{path.parent}: no {path.name} ({what})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def read_config(directory: Path) -> dict:
    """config.json of a Hugging Face model directory."""
    return read_json(directory / "config.json", "kvgen.Model.load expects a Hugging Face model directory")


def read_weights(directory: Path) -> dict[str, np.ndarray]:
    """Every tensor of model.safetensors, or of the shards model.safetensors.index.json lists."""
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        weight_map = read_json(index, "the shard index").get("weight_map")
        if not isinstance(weight_map, dict):
            raise ValueError(f"{index}: no 'weight_map' object")
        arrays: dict[str, np.ndarray] = {}
        for shard in sorted(set(weight_map.values())):
            arrays.update(_read_safetensors(directory / shard))
        return arrays
    return _read_safetensors(directory / "model.safetensors")


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    from safetensors import SafetensorError, safe_open

    if not path.is_file():
        raise FileNotFoundError(f"{path.parent}: no {path.name} (kvgen reads safetensors weights)")
    arrays: dict[str, np.ndarray] = {}
    try:
        with safe_open(str(path), framework="np") as f:
            for name in f.keys():
                if name.endswith(_NOT_WEIGHTS):
                    continue
                arrays[name] = f.get_tensor(name)
    except (SafetensorError, OSError, ValueError, TypeError) as e:
        raise ValueError(f"{path}: cannot read the safetensors file ({e}); is it truncated or corrupt?") from None
    return arrays


def read_tokenizer(directory: Path) -> Any:
    """The directory's tokenizer.json as a ``tokenizers.Tokenizer``, or None."""
    path = directory / "tokenizer.json"
    if not path.is_file():
        return None
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(str(path))
    except Exception as e:  # tokenizers raises its own Exception type
        raise ValueError(f"{path}: cannot read the tokenizer ({e})") from None


def read_chat_template(directory: Path) -> Optional[str]:
    """The chat template: chat_template.jinja, or tokenizer_config.json's "chat_template"."""
    jinja = directory / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    config = directory / "tokenizer_config.json"
    if config.is_file():
        template = read_json(config, "tokenizer settings").get("chat_template")
        return template if isinstance(template, str) else None
    return None
