"""EXAONE 4 (Exaone4ForCausalLM): Llama with the norms after attention and after the MLP instead
of before them (as OLMo 2), per-head q/k RMSNorms (as Qwen3), and hybrid attention: sliding-window
layers with the rotary embedding and global layers without it (``layer_types``; by default three
sliding layers of every ``sliding_window_pattern``). A model without a window rotates every layer.

llama.cpp's converter writes ``exaone4`` files with the window and the layers it binds
(``attention.sliding_window``, ``attention.sliding_window_pattern``) and the q/k rows as the
checkpoint stores them; the rotary-free global layers follow from the same flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kvgen.families.config_values import checked_window, integer_or
from kvgen.families.llama import LlamaFamily
from kvgen.families.olmo2 import POST_NORMS

#: transformers' Exaone4Config defaults, for a config.json that leaves them out
SLIDING_WINDOW = 4096
SLIDING_WINDOW_PATTERN = 4


def layer_types(config: dict, layers: int) -> Optional[list]:
    """config.json's layer_types, or transformers' rule from sliding_window_pattern (every
    pattern-th layer global); None without a window."""
    window = config.get("sliding_window", SLIDING_WINDOW)
    if window is None:
        return None
    checked_window(window)
    types = config.get("layer_types")
    if types is not None:
        return types
    pattern = integer_or(config, "sliding_window_pattern", SLIDING_WINDOW_PATTERN)
    if pattern < 1:
        raise ValueError(f"model config: sliding_window_pattern = {pattern} must be at least 1")
    return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)]


@dataclass(frozen=True)
class Exaone4Family(LlamaFamily):
    """Llama's translation with EXAONE 4's window defaults and its rotary-free global layers."""

    def layer_windows(self, config: dict, layers: int) -> Optional[list[int]]:
        types = layer_types(config, layers)
        if types is None:
            return None
        return super().layer_windows({**config, "sliding_window": config.get("sliding_window", SLIDING_WINDOW),
                                      "layer_types": types}, layers)

    def rope_layers(self, config: dict, layers: int) -> Optional[list[int]]:
        """With a window, only the sliding layers rotate (transformers: "global NoPE")."""
        windows = self.layer_windows(config, layers)
        return None if windows is None else [int(w > 0) for w in windows]


FAMILY = Exaone4Family("exaone4", ("exaone4",), "exaone4", "Exaone4ForCausalLM",
                       "norms after attention and MLP instead of before; per-head q/k norms; sliding-window "
                       "layers with the rotary embedding, global layers without it (layer_types)",
                       sliding_layers="layer_types", renamed=POST_NORMS)
