"""Model families: one module per family (``gpt2``, ``llama``, ``mistral``, ``qwen2``, ``qwen3``,
``qwen3moe``, ``granite``, ``smollm3``, ``phi3``, ``gemma2``, ``gemma3``, ``ministral3``,
``ernie4_5``; ``composite`` reads vision-language checkpoints' text model) turns its files' facts
into the core's options (kvgen.families.family.Family) and the model's capabilities
(kvgen.families.capabilities), read by the engine and the server. They are registered in one
place, kvgen.families.registry; docs/adding-a-family.md is the recipe for a new one."""

from kvgen.families.capabilities import Capabilities
from kvgen.families.family import Family, GGUFModel
from kvgen.families.registry import (
    FAMILIES,
    capabilities_for,
    family_named,
    family_of_config,
    family_of_gguf,
    read_gguf,
    supported,
)

__all__ = ["FAMILIES", "Capabilities", "Family", "GGUFModel", "capabilities_for", "family_named",
           "family_of_config", "family_of_gguf", "read_gguf", "supported"]
