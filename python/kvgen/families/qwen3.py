"""Qwen3 (Qwen3ForCausalLM): Qwen2's layout and window rule, with a per-head RMSNorm of q and k
before the rotary embedding (read where their tensors exist) and a head_dim apart from
hidden / heads (the config's head_dim, GGUF's attention.key_length)."""

from __future__ import annotations

from dataclasses import replace

from kvgen.families import qwen2

FAMILY = replace(qwen2.FAMILY, name="qwen3", model_types=("qwen3",), gguf_architecture="qwen3",
                 transformers_class="Qwen3ForCausalLM",
                 differs="per-head RMSNorm of q and k before the rotary embedding; head_dim apart from hidden / heads")
