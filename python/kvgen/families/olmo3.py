"""OLMo 3 (Olmo3ForCausalLM): OLMo 2 (norms after each branch, q/k norms over the whole
projection) with sliding-window attention on the layers ``layer_types`` names (by default three
of every four, ``sliding_window`` 4096 when config.json does not say).

transformers 5 reads its rotary settings per layer kind (``rope_parameters`` keyed by
``sliding_attention`` / ``full_attention``; an older config's ``rope_scaling`` applies to the full
layers only). kvgen runs one rotary embedding on every layer: the settings of the two kinds must
be the same, and a checkpoint whose full layers scale theirs (YaRN) is refused, naming them.
llama.cpp's converter writes OLMo 3 as an ``olmo2`` file with its window and the layers it binds
(``attention.sliding_window``, ``attention.sliding_window_pattern``), read as this family's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from kvgen import _core
from kvgen.families import olmo2
from kvgen.families.llama import LlamaFamily
from kvgen.loaders.rope import rope_parameters

#: transformers' Olmo3Config defaults, for a config.json that leaves them out
SLIDING_WINDOW = 4096
FULL_LAYER_EVERY = 4  # layer_types: every 4th layer full, the others sliding
LAYER_KINDS = ("sliding_attention", "full_attention")


def layer_types(config: dict, layers: int) -> list:
    """config.json's layer_types, or transformers' default (every 4th layer full)."""
    types = config.get("layer_types")
    if types is None:
        return ["sliding_attention" if (i + 1) % FULL_LAYER_EVERY else "full_attention" for i in range(layers)]
    return types


def one_rotary(config: dict) -> dict:
    """``config`` with the one rope setting of every layer kind as its ``rope_parameters``
    (flat, as the Llama translation reads them); ValueError naming the kinds where they differ."""
    params = config.get("rope_parameters")
    if isinstance(params, dict) and set(params) & set(LAYER_KINDS):
        per_kind = {kind: params.get(kind) for kind in LAYER_KINDS}
        theta = config.get("rope_theta", 500000.0)
        for kind, value in per_kind.items():
            if value is not None and not isinstance(value, dict):
                raise ValueError(f"model config: rope_parameters[{kind!r}] must be an object, got {value!r:.60}")
            per_kind[kind] = rope_parameters({"rope_parameters": value or {}, "rope_theta": theta})
    else:  # an older config: rope_scaling applies to the full layers only (transformers' conversion)
        full = rope_parameters(config)
        per_kind = {"full_attention": full,
                    "sliding_attention": {"rope_type": "default", "rope_theta": full["rope_theta"]}}
    if per_kind["sliding_attention"] != per_kind["full_attention"]:
        raise ValueError(f"model config: rope_parameters differ between sliding_attention "
                         f"({per_kind['sliding_attention']!r:.120}) and full_attention "
                         f"({per_kind['full_attention']!r:.120}) layers: kvgen runs one rotary embedding on every "
                         "layer of an OLMo 3 model")
    flat = {k: v for k, v in config.items() if k not in ("rope_scaling", "rope_theta")}
    return {**flat, "rope_parameters": per_kind["full_attention"]}


@dataclass(frozen=True)
class Olmo3Family(LlamaFamily):
    """OLMo 2's translation with Olmo3Config's defaults for the window and its layers, and one
    rotary embedding for both kinds of layer."""

    def layer_windows(self, config: dict, layers: int) -> Optional[list[int]]:
        window = config.get("sliding_window", SLIDING_WINDOW)
        return super().layer_windows({**config, "sliding_window": window,
                                      "layer_types": layer_types(config, layers)}, layers)

    def options(self, config: dict, sizes: "_core._ModelConfig",
                rope_freqs: Optional[np.ndarray] = None) -> "_core._LlamaOptions":
        return super().options(one_rotary(config), sizes, rope_freqs)

    def long_rope_context(self, config: dict, core: "_core._Model") -> int:
        return super().long_rope_context(one_rotary(config), core)


FAMILY = Olmo3Family(**{**vars(olmo2.FAMILY), "name": "olmo3", "model_types": ("olmo3",),
                        "gguf_architecture": None, "transformers_class": "Olmo3ForCausalLM",
                        "differs": "as OLMo 2, with sliding-window attention on the layers layer_types names",
                        "sliding_layers": "layer_types", "gguf_windowed_as": None})
