"""GLM-4 (Glm4ForCausalLM, e.g. GLM-4-9B-0414): Llama with norms before and after attention and
the MLP (a sandwich: ``input_layernorm`` / ``post_self_attn_layernorm``, ``post_attention_layernorm``
/ ``post_mlp_layernorm``), a rotary embedding over the first half of each head
(``partial_rotary_factor`` 0.5) that turns adjacent pairs of dimensions (transformers'
GLM-style ``rotate_half``), q/k/v biases and the gate and up projections fused in one matrix.

kvgen reorders each head's rotary q/k rows (and biases) at load into its own (i, i + d/2)
pairs, as for ERNIE 4.5 (``interleaved_rotary``), and splits ``gate_up_proj`` by rows into views
(as for Phi-3). llama.cpp's converter writes ``glm4`` files with the rows as the checkpoint stores
them and gate | up fused as ``ffn_up``; they are read the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from kvgen import _core
from kvgen.families import phi3
from kvgen.families.llama import LlamaFamily
from kvgen.loaders.rope import rope_parameters

#: transformers' Glm4Config defaults that differ from Llama's, for a config.json without them
HEAD_DIM = 128
PARTIAL_ROTARY_FACTOR = 0.5


def with_defaults(config: dict) -> dict:
    """``config`` with Glm4Config's head_dim and partial_rotary_factor where it does not say."""
    out = dict(config)
    out.setdefault("head_dim", HEAD_DIM)
    if "partial_rotary_factor" not in out and "partial_rotary_factor" not in rope_parameters(config):
        out["partial_rotary_factor"] = PARTIAL_ROTARY_FACTOR
    return out


@dataclass(frozen=True)
class Glm4Family(LlamaFamily):
    """Llama's translation over a config with Glm4Config's defaults."""

    def sizes(self, config: dict) -> "_core._ModelConfig":
        return super().sizes(with_defaults(config))

    def options(self, config: dict, sizes: "_core._ModelConfig",
                rope_freqs: Optional[np.ndarray] = None) -> "_core._LlamaOptions":
        return super().options(with_defaults(config), sizes, rope_freqs)

    def checkpoint_arrays(self, config: dict, arrays: dict, dtype: Optional[str]) -> dict:
        return super().checkpoint_arrays(with_defaults(config), arrays, dtype)


FAMILY = Glm4Family("glm4", ("glm4",), "glm4", "Glm4ForCausalLM",
                    "norms before and after attention and MLP; partial rotary over adjacent pairs (reordered at "
                    "load); fused gate/up (split at load as views); q/k/v biases",
                    partial_rotary=True, interleaved_rotary=True,
                    fused={"mlp.gate_up_proj": phi3.FAMILY.fused["mlp.gate_up_proj"]})
