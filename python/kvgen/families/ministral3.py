"""Ministral 3 (Ministral3ForCausalLM; also the text model of Mistral3ForConditionalGeneration
checkpoints, kvgen.families.composite): Mistral (a sliding window on every layer where the config
sets one) with YaRN rope scaling and Llama 4's attention temperature: past the original context,
transformers scales the queries of position p by 1 + beta ln(1 + floor(p / original)) (beta:
``rope_parameters``' ``llama_4_scaling_beta``; original: its ``original_max_position_embeddings``).

kvgen computes the queries unscaled, which is that scale exactly (1) at every position before the
original context: a model with a non-zero beta has kvgen's context end there (16,384 positions
in Ministral 3's checkpoints), so that its output is transformers' at every position it computes.

llama.cpp's converter writes the family as ``mistral3`` files: q/k rows permuted as Llama's, the
YaRN keys (``rope.scaling.yarn_log_multiplier`` for mscale_all_dim) and beta as
``attention.temperature_scale`` (llama.cpp: over the original context, ``n_ctx_orig_yarn``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvgen import _core
from kvgen.families.config_values import number
from kvgen.families.llama import LlamaFamily
from kvgen.loaders.gguf.model import GGUFContents
from kvgen.loaders.rope import rope_parameters


def attention_temperature(config: dict) -> tuple[float, int]:
    """(beta, length) of Llama 4's query scale 1 + beta ln(1 + floor(position / length)), as
    Ministral3Attention reads them from ``rope_parameters`` (ValueError naming a key that it
    needs and the config leaves out or sets to another type)."""
    params = rope_parameters(config)
    beta = number(params, "llama_4_scaling_beta")
    if beta is None:
        raise ValueError("model config: rope_parameters.llama_4_scaling_beta must be a number (Ministral3Attention "
                         "scales the queries by it)")
    if not beta:
        return 0.0, 0
    length = params.get("original_max_position_embeddings")
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise ValueError(f"model config: rope_parameters.original_max_position_embeddings = {length!r:.40} must be a "
                         "positive integer (the length of Llama 4's attention temperature steps)")
    return beta, length


@dataclass(frozen=True)
class Ministral3Family(LlamaFamily):
    """Mistral's translation, with the context ending where the attention temperature starts."""

    def sizes(self, config: dict) -> "_core._ModelConfig":
        beta, length = attention_temperature(config)
        context = config.get("max_position_embeddings")
        if beta and isinstance(context, int) and not isinstance(context, bool) and context > length:
            config = {**config, "max_position_embeddings": length}
        return super().sizes(config)

    def gguf_config(self, gguf: GGUFContents, config: dict) -> dict[str, Any]:
        beta = gguf.get(self.gguf_architecture + ".attention.temperature_scale", float, 0.0)
        return {"rope_parameters": {**config["rope_parameters"], "llama_4_scaling_beta": beta}}


FAMILY = Ministral3Family("ministral3", ("ministral3",), "mistral3", "Ministral3ForCausalLM",
                          "as Mistral, with YaRN and Llama 4's attention temperature past the original context "
                          "(kvgen's context ends there)",
                          gguf_permuted_qk=True, sliding_layers="all")
