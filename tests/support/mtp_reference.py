"""A Qwen3.5 multi-token-prediction head built from transformers' own pieces, the oracle for
kvgen's (kvgen.generation.mtp, cpp/include/kvgen/models/qwen35.h: make_qwen35_mtp).

transformers loads Qwen3.5 checkpoints without their ``mtp.*`` tensors, so the head is wired
here as vLLM's Qwen3NextMultiTokenPredictor and llama.cpp's qwen35 MTP graph wire it: the
token at position i + 1 and the model's final-normed hidden state at i make
``fc([enorm(embedding) | hnorm(hidden)])``, which a one-layer gated full-attention
Qwen3_5ForCausalLM runs (its layer the head's ``mtp.layers.0``, its final norm ``mtp.norm``,
its LM head the model's), with causal attention over the head's positions from 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import transformers
from hybrid_checks import randomize


class MtpReference:
    """A random MTP head for the Qwen3.5 model ``target`` (a Qwen3_5ForCausalLM)."""

    def __init__(self, target: transformers.PreTrainedModel, seed: int = 1):
        torch.manual_seed(seed)
        config = target.config.to_dict()
        config.update(num_hidden_layers=1, layer_types=["full_attention"])
        for key in ("architectures", "transformers_version", "dtype", "torch_dtype"):
            config.pop(key, None)
        self.target = target
        self.layer = randomize(type(target)(type(target.config)(**config)))  # its embed_tokens unused
        with torch.no_grad():
            self.layer.lm_head.weight.copy_(target.lm_head.weight)
        C, eps = target.config.hidden_size, target.config.rms_norm_eps
        norm = type(target.model.norm)
        self.fc = torch.nn.Linear(2 * C, C, bias=False)
        self.enorm, self.hnorm = norm(C, eps=eps), norm(C, eps=eps)
        with torch.no_grad():
            self.fc.weight.copy_(torch.randn(C, 2 * C) * 0.3)
            for n in (self.enorm, self.hnorm):
                n.weight.copy_(0.3 * torch.randn(C))

    def tensors(self) -> dict[str, np.ndarray]:
        """The head's tensors by a checkpoint's names (mtp.*)."""
        out = {"mtp.fc.weight": self.fc.weight, "mtp.pre_fc_norm_embedding.weight": self.enorm.weight,
               "mtp.pre_fc_norm_hidden.weight": self.hnorm.weight, "mtp.norm.weight": self.layer.model.norm.weight}
        for name, w in self.layer.model.layers[0].state_dict().items():
            out[f"mtp.layers.0.{name}"] = w
        return {k: v.detach().float().numpy().copy() for k, v in out.items()}

    def add_to(self, directory: Path) -> Path:
        """Writes the head into a saved checkpoint of the target (its model.safetensors and
        config.json's mtp_num_hidden_layers), as the published checkpoints carry it."""
        from safetensors.torch import load_file, save_file

        weights = directory / "model.safetensors"
        tensors = load_file(weights)
        dtype = next(iter(tensors.values())).dtype
        tensors.update({k: torch.from_numpy(v).to(dtype) for k, v in self.tensors().items()})
        save_file(tensors, weights, metadata={"format": "pt"})
        config = json.loads((directory / "config.json").read_text())
        config["mtp_num_hidden_layers"] = 1
        (directory / "config.json").write_text(json.dumps(config))
        return directory

    def target_states(self, tokens: list[int]) -> torch.Tensor:
        """(len(tokens), C) the target's final-normed hidden states."""
        with torch.inference_mode():
            return self.target.model(torch.as_tensor([tokens])).last_hidden_state[0]

    def run(self, pairs: list[tuple[int, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
        """The head over (token, hidden state) pairs at positions 0 .. len - 1: (logits, its own
        final-normed states), each (len, ...)."""
        with torch.inference_mode():
            ids = torch.as_tensor([t for t, _ in pairs])
            embedded = self.target.model.embed_tokens(ids)
            states = torch.stack([h for _, h in pairs])
            x = self.fc(torch.cat([self.enorm(embedded), self.hnorm(states)], dim=-1))
            out = self.layer.model(inputs_embeds=x[None])
            normed = out.last_hidden_state[0]
            return self.layer.lm_head(normed), normed

    def drafts(self, tokens: list[int], k: int, start: int = 0) -> list[int]:
        """The k greedy drafts after ``tokens`` (the last one the token the target is fed
        next), the head's positions starting at target position ``start``: the head over
        (tokens[i + 1], target state i), then chained on its own states."""
        states = self.target_states(tokens[:-1])
        pairs = [(tokens[i + 1], states[i]) for i in range(start, len(tokens) - 1)]
        drafts: list[int] = []
        for _ in range(k):
            logits, own = self.run(pairs)
            drafts.append(int(logits[-1].argmax()))
            pairs.append((drafts[-1], own[-1]))
        return drafts
