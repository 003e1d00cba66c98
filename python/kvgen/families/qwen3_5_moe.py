"""Qwen3.5-MoE (Qwen3_5MoeForCausalLM, and the text model of Qwen3_5MoeForConditionalGeneration):
Qwen3.5 (kvgen.families.qwen3_5: Gated DeltaNet and gated full-attention layers) with a sparse
mixture of experts instead of every layer's MLP, computed by the same core "qwen35" model.

Each layer's MLP is transformers' Qwen3_5MoeSparseMoeBlock: a softmax router over
``num_experts`` (mlp.gate), the top ``num_experts_per_tok`` experts' weights always
renormalised to sum to 1, each expert a SwiGLU MLP ``moe_intermediate_size`` wide (the core's
SparseMoe, moe.h), plus a shared SwiGLU expert (``shared_expert_intermediate_size``) scaled per
token by ``sigmoid(shared_expert_gate(h))``.

The experts are stored one matrix per expert (``mlp.experts.<e>.gate_proj.weight``, as
transformers 5 saves them) or fused as published: ``mlp.experts.gate_up_proj`` (experts,
2 x moe_intermediate_size, hidden; each expert's gate rows, then its up rows) and
``mlp.experts.down_proj`` (experts, hidden, moe_intermediate_size). Fused ones are cut into
per-expert views of the same memory at load (each expert's gate or up is a contiguous block
of rows); ``Model.load(directory, dtype=...)`` then quantizes every expert like any projection.
llama.cpp's ``qwen35moe`` files store them as 3-D ``ffn_{gate,up,down}_exps`` tensors, read
whole (kvgen.families.llama).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional

from kvgen.families import qwen3_5
from kvgen.families.config_values import boolean, integer_or, positive
from kvgen.families.llama import gguf_experts, gguf_shared_expert
from kvgen.loaders.gguf.model import GGUFContents
from kvgen.loaders.quantize import QuantizedTensor, split_rows

#: the fused expert tensors of a layer (with or without a ``.weight`` suffix)
_FUSED = ("mlp.experts.gate_up_proj", "mlp.experts.down_proj")


def expert_matrices(w: Any, name: str) -> list:
    """A 3-D tensor (experts, out, in), float or 16-bit (QuantizedTensor), as one (out, in) view
    of the same memory per expert."""
    if len(w.shape) != 3:
        raise ValueError(f"tensor {name!r} has shape {tuple(w.shape)}, not (experts, out, in)")
    count, out, inner = (int(d) for d in w.shape)
    flat = (QuantizedTensor(w.type, w.data, (count * out, inner), w.mapped) if isinstance(w, QuantizedTensor)
            else w.reshape(count * out, inner))
    return split_rows(flat, [out] * count, name)


def unfuse_experts(arrays: dict, experts: int, inner: int) -> dict:
    """``arrays`` with each layer's fused expert tensors (``_FUSED``) as per-expert matrices
    (``mlp.experts.<e>.{gate,up,down}_proj.weight``), views of the same memory; ValueError
    naming a tensor whose shape does not match the config."""
    out: dict[str, Any] = {}
    for name, w in arrays.items():
        stem = name.removesuffix(".weight")
        if not stem.endswith(_FUSED):
            out[name] = w
            continue
        prefix = stem[:-len("gate_up_proj") if stem.endswith("gate_up_proj") else -len("down_proj")]
        matrices = expert_matrices(w, name)
        if len(matrices) != experts:
            raise ValueError(f"tensor {name!r} holds {len(matrices)} experts; the config has num_experts = {experts}")
        for e, m in enumerate(matrices):
            if stem.endswith("gate_up_proj"):
                gate, up = split_rows(m, [inner, inner], name)
                out[f"{prefix}{e}.gate_proj.weight"], out[f"{prefix}{e}.up_proj.weight"] = gate, up
            else:
                out[f"{prefix}{e}.down_proj.weight"] = m
    return out


@dataclass(frozen=True)
class Qwen35MoeFamily(qwen3_5.Qwen35Family):
    """Qwen3.5 with a mixture of experts and a gated shared expert in the layers with a router."""

    #: whether the config's norm_topk_prob applies (Qwen3-Next); Qwen3.5-MoE's router always
    #: renormalises the chosen experts' weights
    reads_norm_topk_prob: ClassVar[bool] = False

    def sizes(self, config: dict) -> Any:
        if "intermediate_size" not in config:  # no dense MLP: the core's MLP width is the shared expert's
            config = {**config, "intermediate_size": integer_or(config, "shared_expert_intermediate_size", 0)
                      or positive(config, "moe_intermediate_size")}
        return super().sizes(config)

    def expert_sizes(self, config: dict) -> dict[str, int]:
        return dict(experts=positive(config, "num_experts"), experts_per_token=positive(config, "num_experts_per_tok"),
                    expert_intermediate=positive(config, "moe_intermediate_size"))

    def expert_options(self, config: dict) -> dict[str, Any]:
        shared = integer_or(config, "shared_expert_intermediate_size", 0)
        if shared < 0:
            raise ValueError(f"model config: shared_expert_intermediate_size = {shared} must not be negative")
        norm = boolean(config, "norm_topk_prob") if self.reads_norm_topk_prob else None
        return dict(norm_topk_prob=True if norm is None else norm, shared_expert_intermediate=shared)

    def checkpoint_arrays(self, config: dict, arrays: dict, dtype: Optional[str]) -> dict:
        """Fused expert tensors cut into per-expert views (before any quantization), then as Qwen3.5's."""
        if any(name.removesuffix(".weight").endswith(_FUSED) for name in arrays):
            arrays = unfuse_experts(arrays, positive(config, "num_experts"), positive(config, "moe_intermediate_size"))
        return super().checkpoint_arrays(config, arrays, dtype)

    # ---- a GGUF file ----

    def gguf_mlp_config(self, gguf: GGUFContents) -> dict[str, Any]:
        """The experts' sizes from the file's keys; llama.cpp renormalises the chosen experts'
        weights (its files store no norm_topk_prob). The dense MLP's width where the file has one."""
        a = self.gguf_architecture + "."
        config: dict[str, Any] = dict(num_experts=gguf.size(a + "expert_count"),
                                      num_experts_per_tok=gguf.size(a + "expert_used_count"),
                                      moe_intermediate_size=gguf.size(a + "expert_feed_forward_length"),
                                      shared_expert_intermediate_size=gguf.size(a + "expert_shared_feed_forward_length",
                                                                                0),
                                      norm_topk_prob=True)
        if gguf.get(a + "feed_forward_length", int, None) is not None:
            config["intermediate_size"] = gguf.size(a + "feed_forward_length")
        return config

    def gguf_mlp(self, gguf: GGUFContents, layer: int, config: dict, arrays: dict, used: set) -> None:
        """A layer with a router (ffn_gate_inp): its experts' 3-D tensors and its shared expert
        (ffn_{gate,up,down}_shexp, and ffn_gate_inp_shexp, its gate: kvgen.families.llama's
        gguf_experts and gguf_shared_expert); otherwise a dense MLP."""
        if f"blk.{layer}.ffn_gate_inp.weight" not in gguf.tensors:
            super().gguf_mlp(gguf, layer, config, arrays, used)
            return
        gguf_experts(gguf, arrays, used, layer, config)
        gguf_shared_expert(gguf, arrays, used, layer, config["hidden_size"])

FAMILY = Qwen35MoeFamily("qwen3_5_moe", ("qwen3_5_moe_text",), "qwen35moe", "Qwen3_5MoeForCausalLM",
                         "as Qwen3.5 (Gated DeltaNet and gated attention), with a softmax top-k router over experts "
                         "and a sigmoid-gated shared expert instead of every MLP")
