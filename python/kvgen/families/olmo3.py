"""OLMo 3 (Olmo3ForCausalLM): OLMo 2 (norms after each branch, q/k norms over the whole
projection) with sliding-window attention on the layers ``layer_types`` names (by default three
of every four, ``sliding_window`` 4096 when config.json does not say).

transformers 5 reads its rotary settings per layer kind (``rope_parameters`` keyed by
``sliding_attention`` / ``full_attention``; an older config's ``rope_scaling`` applies to the full
layers only, as OLMo 3's YaRN does): the sliding layers rotate with frequencies of their own where
the two differ (``_LlamaOptions.with_sliding_rotary``). llama.cpp's converter writes OLMo 3 as an
``olmo2`` file with its window and the layers it binds (``attention.sliding_window``,
``attention.sliding_window_pattern``), its full layers' scaling and its sliding layers' base
(``rope.freq_base_swa``), read as this family's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from kvgen import _core
from kvgen.families import olmo2
from kvgen.families.llama import LlamaFamily
from kvgen.loaders.rope import rope_parameters, rotary

#: transformers' Olmo3Config defaults, for a config.json that leaves them out
SLIDING_WINDOW = 4096
FULL_LAYER_EVERY = 4  # layer_types: every 4th layer full, the others sliding
LAYER_KINDS = ("sliding_attention", "full_attention")
DEFAULT_THETA = 500000.0


def layer_types(config: dict, layers: int) -> list:
    """config.json's layer_types, or transformers' default (every 4th layer full)."""
    types = config.get("layer_types")
    if types is None:
        return ["sliding_attention" if (i + 1) % FULL_LAYER_EVERY else "full_attention" for i in range(layers)]
    return types


def rope_per_kind(config: dict) -> dict[str, dict]:
    """The rope settings of each kind of layer (``sliding_attention``, ``full_attention``), each as
    one dict (kvgen.loaders.rope.rope_parameters), as transformers 5 reads an Olmo3Config:
    ``rope_parameters`` keyed by kind, or an older config's flat settings, whose ``rope_scaling``
    applies to the full layers only. ValueError naming a kind whose settings are not a dict."""
    params = config.get("rope_parameters")
    if isinstance(params, dict) and set(params) & set(LAYER_KINDS):
        theta = config.get("rope_theta", DEFAULT_THETA)
        per_kind = {}
        for kind in LAYER_KINDS:
            value = params.get(kind)
            if value is not None and not isinstance(value, dict):
                raise ValueError(f"model config: rope_parameters[{kind!r}] must be an object, got {value!r:.60}")
            per_kind[kind] = rope_parameters({"rope_parameters": value or {}, "rope_theta": theta})
        return per_kind
    full = rope_parameters({**config, "rope_theta": config.get("rope_theta", DEFAULT_THETA)})
    return {"full_attention": full, "sliding_attention": {"rope_type": "default", "rope_theta": full["rope_theta"]}}


def with_rope(config: dict, params: dict) -> dict:
    """``config`` with ``params`` as its only rope settings (flat, as the Llama translation reads them)."""
    flat = {k: v for k, v in config.items() if k not in ("rope_scaling", "rope_theta")}
    return {**flat, "rope_parameters": params}


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
        """The full layers' rotary embedding as Llama's; the sliding layers' apart where it differs."""
        kinds = rope_per_kind(config)
        options = super().options(with_rope(config, kinds["full_attention"]), sizes, rope_freqs)
        if kinds["sliding_attention"] == kinds["full_attention"]:
            return options
        sliding = rotary(with_rope(config, kinds["sliding_attention"]), sizes.head_dim)
        if sliding.inv_freq_long is not None:
            raise ValueError("model config: rope_parameters['sliding_attention'] is LongRoPE, which kvgen does not "
                             "run on sliding-window layers")
        return options.with_sliding_rotary(sliding.inv_freq, sliding.attention_factor)

    def long_rope_context(self, config: dict, core: "_core._Model") -> int:
        return super().long_rope_context(with_rope(config, rope_per_kind(config)["full_attention"]), core)


FAMILY = Olmo3Family(**{**vars(olmo2.FAMILY), "name": "olmo3", "model_types": ("olmo3",),
                        "gguf_architecture": None, "transformers_class": "Olmo3ForCausalLM",
                        "differs": "as OLMo 2, with sliding-window attention on the layers layer_types names",
                        "sliding_layers": "layer_types", "gguf_windowed_as": None})
