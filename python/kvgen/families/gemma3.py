"""Gemma 3 (Gemma3ForCausalLM, the text model): Gemma 2's translation without soft-capping (its
configs set none), with q/k norms (read where their tensors exist) and 5 sliding-window layers to
1 global one, the sliding ones with a rotary base of their own."""

from __future__ import annotations

from dataclasses import replace

from kvgen.families import gemma2

FAMILY = replace(gemma2.FAMILY, name="gemma3", model_types=("gemma3_text",), gguf_architecture="gemma3",
                 transformers_class="Gemma3ForCausalLM",
                 differs="as Gemma 2 without soft-capping, plus q/k norms; 5 sliding-window layers to 1 global one, "
                         "the sliding ones with their own rotary base",
                 gguf_swa_pattern=6, gguf_wide_query_layers=62, gguf_local_rope_as_global=False)
