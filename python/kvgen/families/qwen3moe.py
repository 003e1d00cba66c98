"""Qwen3-MoE (Qwen3MoeForCausalLM): Qwen3 with a softmax top-k router over experts instead of
the MLP (in the layers that have a router); GGUF files store the experts as 3-D tensors."""

from __future__ import annotations

from dataclasses import replace

from kvgen.families import qwen3

# transformers' Qwen3MoeModel has no sliding window (a window shorter than the context is refused)
FAMILY = replace(qwen3.FAMILY, name="qwen3moe", model_types=("qwen3_moe",), gguf_architecture="qwen3moe",
                 transformers_class="Qwen3MoeForCausalLM",
                 differs="as Qwen3, with a softmax top-k router over experts instead of the MLP (3-D expert "
                         "tensors in GGUF)", sliding_layers=None, moe=True)
