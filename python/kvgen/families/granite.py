"""Granite (GraniteForCausalLM): Llama with an embedding, a residual and an attention
multiplier and a logit divisor (config.json's names; GGUF's ``embedding_scale``,
``residual_scale``, ``attention.scale``, ``logit_scale``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kvgen.families.config_values import number
from kvgen.families.llama import LlamaFamily
from kvgen.loaders.gguf.model import GGUFContents


@dataclass(frozen=True)
class GraniteFamily(LlamaFamily):
    """Llama's translation plus Granite's multipliers."""

    def extra_options(self, config: dict) -> dict[str, Any]:
        # transformers' GraniteConfig defaults: 1.0 each
        divisor = number(config, "logits_scaling")
        if divisor == 0:
            raise ValueError("model config: logits_scaling must not be 0")
        return dict(embedding_multiplier=number(config, "embedding_multiplier"),
                    residual_multiplier=number(config, "residual_multiplier"),
                    attention_scale=number(config, "attention_multiplier") or 1.0,
                    logit_scale=None if divisor is None else 1.0 / divisor)

    def gguf_config(self, gguf: GGUFContents, config: dict) -> dict[str, Any]:
        # llama.cpp's names; an absent attention scale is 1 / sqrt(head_dim)
        a = self.gguf_architecture + "."
        out = {"attention_multiplier": gguf.get(a + "attention.scale", float, 0.0) or 1 / math.sqrt(config["head_dim"])}
        for key, hf in (("embedding_scale", "embedding_multiplier"), ("residual_scale", "residual_multiplier"),
                        ("logit_scale", "logits_scaling")):
            value = gguf.get(a + key, float, None)
            if value is not None:
                out[hf] = value
        return out


FAMILY = GraniteFamily("granite", ("granite",), "granite", "GraniteForCausalLM",
                       "embedding, residual and attention multipliers, logit divisor", gguf_permuted_qk=True)
