"""GPT-OSS (GptOssForCausalLM): a mixture of experts in every layer, computed by the core's Llama
model with what the files say:

- attention sinks (``self_attn.sinks``: a learned logit per query head in the softmax's
  denominator), biases on q/k/v/o, YaRN, sliding-window and full layers (``layer_types``; by
  default alternating, the first sliding);
- the router (``mlp.router``, with a bias): the top-k logits, softmaxed among themselves;
- the experts, with biases and the clamped SwiGLU of ``swiglu_limit`` and ``swiglu_alpha``
  (GptOssExperts: gate and up interleaved by columns in ``gate_up_proj`` (E, C, 2I), so that gate
  is column 2i and up column 2i + 1; ``down_proj`` (E, I, C) stored (in, out)). kvgen splits and
  transposes them into each expert's (out, in) gate / up / down matrices at load;
- MXFP4 experts (``quantization_config.quant_method == "mxfp4"``: ``*_blocks`` and ``*_scales``
  uint8 tensors, stored (E, out, in / 32, 16)): repacked bit for bit into the core's MXFP4 blocks
  (kvgen.loaders.mxfp4) and computed as MXFP4, never expanded to float.

llama.cpp's converter writes ``gpt-oss`` files: the gate / up experts split, biases as
``*_exps.bias``, the sinks as ``attn_sinks``, the MLP's norm as ``post_attention_norm``, the window
without the layers it binds, and neither the SwiGLU's limit and alpha nor YaRN's ``truncate``.
llama.cpp's rules for them (llama-model.cpp): the even layers slide, limit 7 and alpha 1.702;
transformers' GptOssConfig does not truncate YaRN's ramp (its default and every published
checkpoint's config), and kvgen reads the files so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from kvgen import _core
from kvgen.families.config_values import checked_window, layer_windows, number
from kvgen.families.llama import LlamaFamily
from kvgen.loaders.gguf.model import GGUFContents
from kvgen.loaders.mxfp4 import mxfp4_blocks
from kvgen.loaders.quantize import to_float32

# transformers' GptOssConfig defaults, and llama.cpp's fixed values for gpt-oss files
SWIGLU_LIMIT, SWIGLU_ALPHA = 7.0, 1.702
# GptOssConfig's rope when a config names none (its default_theta where no rope_theta is given)
DEFAULT_THETA = 150000.0
DEFAULT_ROPE = {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                "original_max_position_embeddings": 4096}


def with_rope_defaults(config: dict) -> dict:
    """``config`` with GptOssConfig's rope settings where it states none (YaRN, factor 32 over
    4096 positions, theta 150000)."""
    params = config.get("rope_parameters")
    if params is None and config.get("rope_scaling") is None:
        return {**config, "rope_parameters": {**DEFAULT_ROPE, "rope_theta": config.get("rope_theta", DEFAULT_THETA)}}
    if "rope_theta" not in config and not (isinstance(params, dict) and "rope_theta" in params):
        return {**config, "rope_theta": DEFAULT_THETA}
    return config


def default_layer_types(layers: int) -> list[str]:
    """GptOssConfig's layer_types when the config has none (llama.cpp's rule for its files too):
    sliding and full attention alternating, the first layer sliding."""
    return ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(layers)]


def expert_arrays(config: dict, arrays: dict) -> dict:
    """``arrays`` with each GPT-OSS layer's router and experts in the names and layout the core
    reads: ``mlp.router.*`` as ``mlp.gate.*``; ``gate_up_proj`` (E, C, 2I) split by interleaved
    columns and transposed into ``mlp.experts.gate_proj.weight`` and ``up_proj.weight`` (E, I, C),
    ``down_proj`` (E, I, C) into ``down_proj.weight`` (E, C, I), their biases likewise; MXFP4
    ``_blocks`` / ``_scales`` pairs (stored (E, out, ...)) split by interleaved rows and repacked.
    ValueError naming a tensor that an MXFP4 pair lacks."""
    out: dict[str, Any] = {}
    for name, w in arrays.items():
        stem, _, leaf = name.rpartition(".mlp.")
        if not stem:
            out[name] = w
            continue
        hf = f"{stem}.mlp."
        if leaf.startswith("router."):
            out[hf + "gate." + leaf.removeprefix("router.")] = w
        elif leaf == "experts.gate_up_proj":
            gate_up = np.asarray(w)
            out[hf + "experts.gate_proj.weight"] = _transposed(gate_up[..., 0::2])
            out[hf + "experts.up_proj.weight"] = _transposed(gate_up[..., 1::2])
        elif leaf == "experts.gate_up_proj_bias":  # (E, 2I): a 16-bit one travels as a matrix
            bias = to_float32(w)
            out[hf + "experts.gate_proj.bias"] = np.ascontiguousarray(bias[..., 0::2])
            out[hf + "experts.up_proj.bias"] = np.ascontiguousarray(bias[..., 1::2])
        elif leaf == "experts.down_proj":
            out[hf + "experts.down_proj.weight"] = _transposed(np.asarray(w))
        elif leaf == "experts.down_proj_bias":
            out[hf + "experts.down_proj.bias"] = np.ascontiguousarray(to_float32(w))
        elif leaf in ("experts.gate_up_proj_blocks", "experts.down_proj_blocks"):
            proj = leaf.removeprefix("experts.").removesuffix("_blocks")
            scales = arrays.get(f"{hf}experts.{proj}_scales")
            if scales is None:
                raise ValueError(f"MXFP4 checkpoint: {name!r} has no {proj}_scales beside it")
            if proj == "down_proj":
                out[hf + "experts.down_proj.weight"] = mxfp4_blocks(w, scales, name)
            else:  # rows interleaved: gate 2i, up 2i + 1
                out[hf + "experts.gate_proj.weight"] = mxfp4_blocks(w[:, 0::2], scales[:, 0::2], name)
                out[hf + "experts.up_proj.weight"] = mxfp4_blocks(w[:, 1::2], scales[:, 1::2], name)
        elif leaf.endswith("_scales") and leaf.startswith("experts."):
            if f"{hf}{leaf.removesuffix('_scales')}_blocks" not in arrays:
                raise ValueError(f"MXFP4 checkpoint: {name!r} has no _blocks beside it")
        else:
            out[name] = w
    return out


def _transposed(w: np.ndarray) -> np.ndarray:
    """(E, in, out) as (E, out, in), float32, contiguous."""
    if w.ndim != 3:
        raise ValueError(f"GPT-OSS experts: a 3-D (experts, in, out) tensor was expected, got shape {w.shape}")
    return np.ascontiguousarray(np.swapaxes(w, 1, 2), dtype=np.float32)


@dataclass(frozen=True)
class GptOssFamily(LlamaFamily):
    """Llama's translation with GPT-OSS's experts, router, windows and checkpoint layout."""

    def check_config(self, config: dict) -> None:
        super().check_config(config)
        quantization = config.get("quantization_config")
        if quantization is not None:
            method = quantization.get("quant_method") if isinstance(quantization, dict) else quantization
            if method != "mxfp4":
                raise ValueError(f"model config: quantization_config.quant_method = {method!r:.40} is not supported "
                                 "(kvgen reads MXFP4 checkpoints and float ones)")

    def sizes(self, config: dict) -> "_core._ModelConfig":
        # GptOssConfig's intermediate_size is the experts' width (there is no dense MLP)
        if "moe_intermediate_size" not in config:
            config = {**config, "moe_intermediate_size": config.get("intermediate_size")}
        return super().sizes(config)

    def layer_windows(self, config: dict, layers: int) -> Optional[list[int]]:
        types = config.get("layer_types")
        types = default_layer_types(layers) if types is None else types
        window = config.get("sliding_window")
        if window is None:  # GptOssAttention: no window, full attention on every layer
            return None
        return layer_windows(types, layers, checked_window(window))

    def options(self, config: dict, sizes: "_core._ModelConfig",
                rope_freqs: Optional[np.ndarray] = None) -> "_core._LlamaOptions":
        return super().options(with_rope_defaults(config), sizes, rope_freqs)

    def expert_options(self, config: dict) -> "_core._ExpertOptions":
        limit, alpha = number(config, "swiglu_limit"), number(config, "swiglu_alpha")
        limit = SWIGLU_LIMIT if limit is None else limit
        if limit <= 0:
            raise ValueError(f"model config: swiglu_limit = {limit} must be positive")
        return _core._ExpertOptions(softmax_after_top_k=True, swiglu_limit=limit,
                                    swiglu_alpha=SWIGLU_ALPHA if alpha is None else alpha)

    def checkpoint_arrays(self, config: dict, arrays: dict, dtype: Optional[str]) -> dict:
        self.check_config(config)
        return super().checkpoint_arrays(config, expert_arrays(config, arrays), dtype)

    def gguf_config(self, gguf: GGUFContents, config: dict) -> dict[str, Any]:
        layers = config["num_hidden_layers"]
        extra: dict[str, Any] = {"layer_types": default_layer_types(layers), "swiglu_limit": SWIGLU_LIMIT,
                                 "swiglu_alpha": SWIGLU_ALPHA}
        if config["rope_parameters"].get("rope_type") == "yarn":
            extra["rope_parameters"] = {**config["rope_parameters"], "truncate": False}
        return extra


FAMILY = GptOssFamily("gpt_oss", ("gpt_oss",), "gpt-oss", "GptOssForCausalLM",
                      "a mixture of experts in every layer (router bias, top-k logits softmaxed, clamped SwiGLU, "
                      "biases), attention sinks, alternating sliding and full layers, YaRN, MXFP4 experts",
                      sliding_layers="layer_types", moe=True)
