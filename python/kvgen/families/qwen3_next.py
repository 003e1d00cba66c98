"""Qwen3-Next (Qwen3NextForCausalLM): the Gated-DeltaNet hybrid that Qwen3.5 grew from, computed
by the same core "qwen35" model as Qwen3.5 and Qwen3.5-MoE (kvgen.families.qwen3_5_moe). What
transformers' modeling_qwen3_next.py computes differently is only where the weights are:

- the DeltaNet's input projections are fused per key head: ``in_proj_qkvz`` holds, for each key
  head in turn, its q (key_dim rows), k (key_dim), then the v and z of its
  value_heads / key_heads value heads; ``in_proj_ba`` its b, then its a, of those value heads.
  Reordered once at load into Qwen3.5's ``in_proj_qkv`` (every q, every k, every v, value heads
  grouped by key head as Qwen3.5's), ``in_proj_z``, ``in_proj_b`` and ``in_proj_a`` (a copy of
  those matrices' rows, before any quantization);
- the MLP of the layers that ``decoder_sparse_step`` and ``mlp_only_layers`` make sparse is a
  softmax top-k mixture of experts (``norm_topk_prob`` applies) plus a sigmoid-gated shared
  expert; the others keep a SwiGLU MLP of ``intermediate_size``; the core tells them apart by
  the router tensor (mlp.gate.weight), checked here against the config;
- the rotary embedding is the ordinary partial one (no multimodal sections).

The norms, the gated attention (q projection twice as wide, (1 + w) q/k norms) and the delta
rule are Qwen3.5's. llama.cpp's ``qwen3next`` files store the reordered ``attn_qkv`` and
``attn_gate`` with the value heads grouped (not tiled, as its Qwen3.5 files), and ``ssm_ba``
as fused as the checkpoint's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from kvgen.families.config_values import integer_or, positive
from kvgen.families.family import GGUFModel
from kvgen.families.qwen3_5_moe import Qwen35MoeFamily
from kvgen.loaders.gguf.model import GGUFContents
from kvgen.loaders.quantize import QuantizedTensor


def take_rows(w: Any, rows: np.ndarray) -> Any:
    """The rows ``rows`` of the matrix ``w`` (a float array or a QuantizedTensor, whose rows are
    whole blocks), copied in that order."""
    if isinstance(w, QuantizedTensor):
        blocks = w.data.reshape(w.shape[0], -1)[rows]
        return QuantizedTensor(w.type, np.ascontiguousarray(blocks).reshape(-1), (len(rows), *w.shape[1:]))
    return np.ascontiguousarray(np.asarray(w)[rows])


def per_key_head_rows(w: Any, name: str, key_heads: int, parts: list[int]) -> list[np.ndarray]:
    """For the rows of ``w`` laid out per key head as ``parts`` (each key head's part 0, part 1,
    ...), the rows of each part over all key heads, in key-head order; ValueError naming the
    tensor when its rows are not key_heads x sum(parts)."""
    width = sum(parts)
    if len(w.shape) != 2 or w.shape[0] != key_heads * width:
        raise ValueError(f"tensor {name!r} has shape {tuple(w.shape)}; the config's heads need {key_heads * width} "
                         f"rows ({key_heads} key heads x {' + '.join(map(str, parts))})")
    starts = np.cumsum([0, *parts[:-1]])
    return [(np.arange(key_heads)[:, None] * width + start + np.arange(size)[None, :]).reshape(-1)
            for start, size in zip(starts, parts)]


@dataclass(frozen=True)
class Qwen3NextFamily(Qwen35MoeFamily):
    """Qwen3-Next as the core's qwen35 model: fused DeltaNet projections reordered at load."""

    reads_norm_topk_prob = True
    gguf_value_heads_tiled = False

    def sparse_layers(self, config: dict, layers: int) -> list[bool]:
        """Per layer, whether it has experts, as transformers' Qwen3NextDecoderLayer decides."""
        step = integer_or(config, "decoder_sparse_step", 1)
        if step < 1:
            raise ValueError(f"model config: decoder_sparse_step = {step} must be positive")
        only = config.get("mlp_only_layers") or []
        if not isinstance(only, list) or not all(isinstance(i, int) for i in only):
            raise ValueError(f"model config: mlp_only_layers must list layer indices, got {only!r:.60}")
        experts = integer_or(config, "num_experts", 0)
        return [i not in only and experts > 0 and (i + 1) % step == 0 for i in range(layers)]

    def checkpoint_arrays(self, config: dict, arrays: dict, dtype: Optional[str]) -> dict:
        """in_proj_qkvz / in_proj_ba reordered into Qwen3.5's four projections; the experts
        checked against decoder_sparse_step and mlp_only_layers; then as Qwen3.5-MoE's."""
        Hk, Hv = positive(config, "linear_num_key_heads"), positive(config, "linear_num_value_heads")
        dk, dv = positive(config, "linear_key_head_dim"), positive(config, "linear_value_head_dim")
        if Hv % Hk:
            raise ValueError(f"model config: linear_num_value_heads = {Hv} is not a multiple of "
                             f"linear_num_key_heads = {Hk}")
        r = Hv // Hk
        out: dict[str, Any] = {}
        for name, w in arrays.items():
            if name.endswith("linear_attn.in_proj_qkvz.weight"):
                stem = name.removesuffix("in_proj_qkvz.weight")
                q, k, v, z = per_key_head_rows(w, name, Hk, [dk, dk, r * dv, r * dv])
                out[stem + "in_proj_qkv.weight"] = take_rows(w, np.concatenate([q, k, v]))
                out[stem + "in_proj_z.weight"] = take_rows(w, z)
            elif name.endswith("linear_attn.in_proj_ba.weight"):
                stem = name.removesuffix("in_proj_ba.weight")
                b, a = per_key_head_rows(w, name, Hk, [r, r])
                out[stem + "in_proj_b.weight"] = take_rows(w, b)
                out[stem + "in_proj_a.weight"] = take_rows(w, a)
            else:
                out[name] = w
        layers = positive(config, "num_hidden_layers")
        for layer, sparse in enumerate(self.sparse_layers(config, layers)):
            if sparse != (f"model.layers.{layer}.mlp.gate.weight" in out):
                raise ValueError(f"layer {layer}: decoder_sparse_step and mlp_only_layers make its MLP "
                                 f"{'a mixture of experts' if sparse else 'dense'}, but its tensors "
                                 f"{'have no router (mlp.gate.weight)' if sparse else 'have a router'}")
        return super().checkpoint_arrays(config, out, dtype)

    # ---- a GGUF file ----

    def from_gguf(self, gguf: GGUFContents) -> GGUFModel:
        """As Qwen3.5-MoE's; the layers without a router (ffn_gate_inp) are the config's mlp_only_layers."""
        model = super().from_gguf(gguf)
        model.config["mlp_only_layers"] = [layer for layer in range(model.config["num_hidden_layers"])
                                           if f"model.layers.{layer}.mlp.gate.weight" not in model.arrays]
        return model

    def gguf_beta_alpha(self, value_heads: int, hidden: int) -> dict[str, tuple[str, tuple[int, int]]]:
        """llama.cpp stores in_proj_ba as the checkpoint does (ssm_ba), split by checkpoint_arrays."""
        return {"ssm_ba": ("linear_attn.in_proj_ba", (2 * value_heads, hidden))}


FAMILY = Qwen3NextFamily("qwen3_next", ("qwen3_next",), "qwen3next", "Qwen3NextForCausalLM",
                         "as Qwen3.5-MoE, with the DeltaNet's projections fused per key head (reordered at load), "
                         "ordinary partial rotary, and dense MLP layers where decoder_sparse_step / mlp_only_layers "
                         "say")
