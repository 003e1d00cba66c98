"""Qwen2 (Qwen2ForCausalLM): Llama with q/k/v biases (read where their tensors exist) and a
large rope theta; a sliding window only with use_sliding_window, on the layers from
max_window_layers on (or those layer_types names). llama.cpp stores its q/k rows unpermuted
(its "neox" rope layout)."""

from __future__ import annotations

from kvgen.families.llama import LlamaFamily

FAMILY = LlamaFamily("qwen2", ("qwen2",), "qwen2", "Qwen2ForCausalLM", "q/k/v biases; large rope theta",
                     sliding_layers="max_window_layers")
