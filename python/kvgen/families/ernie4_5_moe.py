"""ERNIE 4.5 MoE (Ernie4_5_MoeForCausalLM, e.g. ERNIE-4.5-21B-A3B): ERNIE 4.5 (kvgen.families.ernie4_5:
the rotary embedding over adjacent pairs, reordered at load; biases where ``use_bias``) with a
mixture of experts in its MoE layers, computed by the core's Llama model (moe.h):

- which layers: layer ``l`` is MoE where ``(l + 1) % moe_layer_interval == 0`` and
  ``moe_layer_start_index <= l <= moe_layer_end_index`` (-1: the last layer); the others run
  the dense MLP (``intermediate_size``). The core runs experts where a layer has a router, and
  a checkpoint whose routers are not where the config puts them is refused;
- the router (Ernie4_5_MoeTopKRouter): softmax over ``moe_num_experts`` in float32; the top
  ``moe_k`` chosen by the probabilities plus the selection bias (``moe_statics.
  e_score_correction_bias``, the core's ``mlp.gate.e_score_correction_bias``), weighted by the
  probabilities without it, renormalised over ``max(sum, moe_norm_min)``;
- the experts: SwiGLU MLPs ``moe_intermediate_size`` wide, without biases; plus the shared
  experts (``moe_num_shared_experts`` of them, one SwiGLU MLP ``moe_num_shared_experts x
  moe_intermediate_size`` wide, with biases where ``use_bias``), added unscaled
  (``mlp.shared_experts.*``, the core's ``mlp.shared_expert.*``).

llama.cpp's converter writes ``ernie4_5-moe`` files: the experts as 3-D ``ffn_{gate,up,down}_exps``,
the selection bias as ``exp_probs_b``, the shared experts as ``ffn_{gate,up,down}_shexp``; which
layers are MoE shows in the file's tensors. Its ``expert_shared_feed_forward_length`` key is
``intermediate_size // num_key_value_heads`` (the converter's reckoning, which equals the
shared experts' width in the published checkpoints only): kvgen takes the width as transformers
does, ``expert_shared_count x expert_feed_forward_length``, and checks the tensors against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from kvgen import _core
from kvgen.families.config_values import integer_or, number, positive
from kvgen.families.llama import LlamaFamily
from kvgen.loaders.gguf.model import GGUFContents
from kvgen.loaders.quantize import to_float32

# Ernie4_5_MoeConfig's defaults for the keys a config may leave out
DEFAULTS = {"moe_num_experts": 64, "moe_k": 6, "moe_intermediate_size": 1536, "moe_num_shared_experts": 2,
            "moe_layer_start_index": 1, "moe_layer_end_index": -1, "moe_layer_interval": 1, "moe_norm_min": 1e-12}

#: the checkpoint's names (the original one and transformers' in-memory one) -> the core's
_RENAMED = {".mlp.moe_statics.e_score_correction_bias": ".mlp.gate.e_score_correction_bias",
            ".mlp.gate.moe_statics.e_score_correction_bias": ".mlp.gate.e_score_correction_bias"}


def with_defaults(config: dict) -> dict:
    """``config`` with Ernie4_5_MoeConfig's defaults where it states none, and its experts under
    the names LlamaFamily reads (transformers' attribute_map: num_experts, num_experts_per_tok)."""
    config = {**{k: v for k, v in DEFAULTS.items() if config.get(k) is None}, **{
        k: v for k, v in config.items() if v is not None}}
    return {**config, "num_experts": config["moe_num_experts"], "num_experts_per_tok": config["moe_k"]}


def moe_layers(config: dict, layers: int) -> list[bool]:
    """Per layer, whether Ernie4_5_MoeDecoderLayer gives it the mixture of experts."""
    config = with_defaults(config)
    start, end = integer_or(config, "moe_layer_start_index", 1), integer_or(config, "moe_layer_end_index", -1)
    interval = positive(config, "moe_layer_interval")
    end = layers - 1 if end == -1 else end
    return [(layer + 1) % interval == 0 and start <= layer <= end for layer in range(layers)]


def core_arrays(arrays: dict) -> dict:
    """The selection bias (1, E) as the core's (E) vector, float32, and the shared experts under
    the core's name (mlp.shared_expert)."""
    out: dict[str, Any] = {}
    for name, w in arrays.items():
        renamed = next((name.replace(old, new) for old, new in _RENAMED.items() if name.endswith(old)), None)
        if renamed is not None:
            out[renamed] = to_float32(w).reshape(-1)
        else:
            out[name.replace(".mlp.shared_experts.", ".mlp.shared_expert.")] = w
    return out


@dataclass(frozen=True)
class Ernie45MoeFamily(LlamaFamily):
    """ERNIE 4.5's translation with its experts' keys, router and shared experts."""

    def sizes(self, config: dict) -> "_core._ModelConfig":
        return super().sizes(with_defaults(config))

    def expert_options(self, config: dict) -> "_core._ExpertOptions":
        config = with_defaults(config)
        shared = integer_or(config, "moe_num_shared_experts", 0)
        if shared < 0:
            raise ValueError(f"model config: moe_num_shared_experts = {shared} must not be negative")
        norm_min = number(config, "moe_norm_min")
        if norm_min is None or norm_min < 0:
            raise ValueError(f"model config: moe_norm_min = {norm_min} must not be negative")
        return _core._ExpertOptions(norm_topk_prob=True, norm_min=norm_min,
                                    shared_expert_intermediate=shared * positive(config, "moe_intermediate_size"))

    def checkpoint_arrays(self, config: dict, arrays: dict, dtype: Optional[str]) -> dict:
        """The checkpoint's routers checked against the config's MoE layers, then its selection
        biases and shared experts under the core's names, then as ERNIE 4.5's."""
        layers = positive(config, "num_hidden_layers")
        for layer, sparse in enumerate(moe_layers(config, layers)):
            if sparse != (f"model.layers.{layer}.mlp.gate.weight" in arrays):
                raise ValueError(f"layer {layer} {'has no' if sparse else 'has a'} router (mlp.gate.weight), but the "
                                 "config's moe_layer_start_index / moe_layer_interval / moe_layer_end_index make it "
                                 f"{'a MoE' if sparse else 'a dense'} layer")
        return super().checkpoint_arrays(config, core_arrays(arrays), dtype)

    def gguf_config(self, gguf: GGUFContents, config: dict) -> dict[str, Any]:
        """The experts' keys in Ernie4_5_MoeConfig's names (the shared experts' count, not the
        converter's expert_shared_feed_forward_length); llama.cpp's files store no moe_norm_min
        (transformers' default)."""
        a = self.gguf_architecture + "."
        return {"moe_num_experts": gguf.size(a + "expert_count"), "moe_k": gguf.size(a + "expert_used_count"),
                "moe_intermediate_size": gguf.size(a + "expert_feed_forward_length"),
                "moe_num_shared_experts": gguf.get(a + "expert_shared_count", int, 0)}


FAMILY = Ernie45MoeFamily("ernie4_5_moe", ("ernie4_5_moe",), "ernie4_5-moe", "Ernie4_5_MoeForCausalLM",
                          "as ERNIE 4.5, with a softmax top-k router (a selection bias, renormalised) over experts "
                          "and shared experts in its MoE layers",
                          gguf_permuted_qk=True, interleaved_rotary=True, moe=True)
