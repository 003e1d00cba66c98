"""Embedding models for the tests: a tiny random Qwen3 saved as Qwen3-Embedding is (a base
Qwen3Model checkpoint, its tensors without the ``model.`` prefix, with sentence-transformers'
``modules.json``, ``1_Pooling/config.json`` and ``2_Normalize``, written by hand as
sentence-transformers documents them), and transformers' embeddings of texts as the model
cards compute them: last-token pooling over left-padded inputs (Qwen3-Embedding's
``last_token_pool``), the masked mean over right-padded ones, then F.normalize."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from family_models import random_family_model
from llama_cpp_convert import save_smollm2_tokenizer

# sentence-transformers' Pooling config keys (models/Pooling.py); one mode set per directory
_POOLING_FLAGS = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens",
                  "max": "pooling_mode_max_tokens", "last": "pooling_mode_lasttoken"}

TEXTS = ["hello world", "a", "The quick brown fox jumps over the lazy dog, " * 7 + "and sleeps.",
         "Embeddings map each text to one vector; similar texts get nearby vectors."]


def random_qwen3(seed: int = 0) -> transformers.Qwen3ForCausalLM:
    """A random Qwen3 (q/k norms, head_dim 24) with 256 positions and a tied head (as Qwen3-Embedding)."""
    return random_family_model("qwen3", seed, max_position_embeddings=256, tie_word_embeddings=True)


def save_embedding_directory(model: transformers.Qwen3ForCausalLM, directory: Path, smollm2_file: Path,
                             pooling: Optional[str], modules: Optional[list[dict]] = None) -> Path:
    """``model``'s base model (Qwen3Model: Qwen3-Embedding's layout) in ``directory`` with
    SmolLM2's tokenizer; with ``pooling``, sentence-transformers' files declaring it
    (``modules``: another modules.json instead of Transformer, Pooling, Normalize)."""
    model.model.save_pretrained(directory)
    save_smollm2_tokenizer(directory, smollm2_file)
    if pooling is None:
        return directory
    listed = modules or [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    (directory / "modules.json").write_text(json.dumps(listed))
    config = {"word_embedding_dimension": model.config.hidden_size, **{flag: False for flag in _POOLING_FLAGS.values()},
              "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
              "include_prompt": True}
    config[_POOLING_FLAGS[pooling]] = True
    (directory / "1_Pooling").mkdir()
    (directory / "1_Pooling" / "config.json").write_text(json.dumps(config))
    (directory / "2_Normalize").mkdir()
    return directory


def reference_embeddings(base: torch.nn.Module, tokenizer, texts: list, pooling: str,
                         normalize: bool = True) -> np.ndarray:
    """transformers' embeddings of ``texts`` (strings, or token-id lists when ``tokenizer`` is
    None) by ``base`` (a Qwen3Model / LlamaModel: its last_hidden_state is after the final
    norm): one padded batch, left-padded for last-token pooling, right-padded for the mean."""
    side = "left" if pooling == "last" else "right"
    if tokenizer is not None:
        tokenizer.padding_side = side
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        batch = tokenizer(texts, padding=True, return_tensors="pt")
        ids, mask = batch["input_ids"], batch["attention_mask"]
    else:
        longest = max(len(t) for t in texts)
        rows = [([0] * (longest - len(t)) + list(t)) if side == "left" else (list(t) + [0] * (longest - len(t)))
                for t in texts]
        ids = torch.tensor(rows)
        mask = torch.tensor([([0] * (longest - len(t)) + [1] * len(t)) if side == "left"
                             else ([1] * len(t) + [0] * (longest - len(t))) for t in texts])
    with torch.inference_mode():
        hidden = base(input_ids=ids, attention_mask=mask).last_hidden_state
        if pooling == "last":  # Qwen3-Embedding's last_token_pool, on left padding
            pooled = hidden[:, -1]
        elif pooling == "mean":  # sentence-transformers' mean over the attention mask
            m = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
        else:  # cls: the first token
            pooled = hidden[:, 0]
        if normalize:
            pooled = F.normalize(pooled, p=2, dim=-1)
    return pooled.numpy()
