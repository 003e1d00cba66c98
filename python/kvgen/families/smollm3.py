"""SmolLM3 (SmolLM3ForCausalLM): Llama without the rotary embedding on some layers (config.json's
``no_rope_layers``, or every ``no_rope_layer_interval``-th) and optional sliding-window layers
(``layer_types``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from kvgen.families.config_values import positive, present
from kvgen.families.llama import LlamaFamily
from kvgen.loaders.gguf.model import GGUFContents

# transformers' SmolLM3Config default; llama.cpp's fixed rule for SmolLM3 files, which do not
# store which layers rotate: no layer whose index + 1 is a multiple of it
NO_ROPE_LAYER_INTERVAL = 4


@dataclass(frozen=True)
class SmolLM3Family(LlamaFamily):
    """Llama's translation plus SmolLM3's per-layer rotary switch."""

    def rope_layers(self, config: dict, layers: int) -> Optional[list[int]]:
        """Per layer, 1 where it applies the rotary embedding (no_rope_layers, or transformers'
        rule from no_rope_layer_interval)."""
        flags = config.get("no_rope_layers")
        if flags is None:
            interval = positive(config, "no_rope_layer_interval") if present(config, "no_rope_layer_interval") \
                else NO_ROPE_LAYER_INTERVAL
            return [int((i + 1) % interval != 0) for i in range(layers)]
        if not isinstance(flags, list) or len(flags) != layers or not all(f in (0, 1) and not isinstance(f, float)
                                                                          for f in flags):
            raise ValueError(f"model config: no_rope_layers must list 0 or 1 for each of the {layers} layers, got "
                             f"{flags!r:.80}")
        return [int(f) for f in flags]

    def gguf_config(self, gguf: GGUFContents, config: dict) -> dict[str, Any]:
        return {"no_rope_layer_interval": NO_ROPE_LAYER_INTERVAL}  # not stored: llama.cpp's fixed rule


FAMILY = SmolLM3Family("smollm3", ("smollm3",), "smollm3", "SmolLM3ForCausalLM",
                       "no rotary embedding on every 4th layer; optional sliding-window layers (layer_types)",
                       gguf_permuted_qk=True, sliding_layers="layer_types")
