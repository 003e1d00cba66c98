"""Mistral (MistralForCausalLM): Llama with sliding-window attention on every layer.

llama.cpp's converter writes Mistral checkpoints as "llama" files, without the window (llama.cpp
runs them with full attention): such a file is read as Llama, so this family has no GGUF
architecture of its own."""

from __future__ import annotations

from kvgen.families.llama import LlamaFamily

FAMILY = LlamaFamily("mistral", ("mistral",), None, "MistralForCausalLM",
                     "Llama with sliding-window attention on every layer (sliding_window)",
                     gguf_permuted_qk=True, sliding_layers="all")
