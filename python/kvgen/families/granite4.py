"""Granite 4.0's hybrid (GraniteMoeHybridForCausalLM, model_type ``granitemoehybrid``): Mamba-2
layers, which keep a recurrent state per sequence instead of KV rows, beside grouped-query
attention layers (rotary embeddings only with ``position_embedding_type`` "rope"; Granite 4.0
ships without), each followed by a mixture of experts plus a shared SwiGLU MLP
(``num_local_experts`` > 0) or the shared MLP alone; Granite's embedding, residual and attention
multipliers and logit divisor. Computed by the core's "granitehybrid" model
(cpp/include/kvgen/models/granite_hybrid.h).

Which layers are Mamba-2 is ``layer_types``: ``linear_attention`` / ``full_attention`` as
transformers 5 writes them, ``mamba`` / ``attention`` as the published checkpoints (and llama.cpp's
converter) spell them; absent, every layer is Mamba-2 (GraniteMoeHybridConfig's default). Each
Mamba-2 layer's state is the convolution window over x | B | C (heads x head_dim + 2 x groups x
d_state channels, ``mamba_d_conv`` wide) and the scan's matrix (heads, head_dim, d_state). The
state goes through the engine's snapshots for the prefix cache and speculative rollback.

A GGUF file from llama.cpp's converter (``granitehybrid``) stores the layer pattern as a per-layer
``attention.head_count_kv`` (0: a Mamba-2 layer), ``-exp(A_log)`` as ``ssm_a``, and whether the
attention layers rotate as ``rope.scaling.finetuned`` (false for Granite 4.0's hybrids, whatever
their config said: llama.cpp then computes no rotary embedding, and neither does kvgen).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from kvgen import _core
from kvgen.families.capabilities import Capabilities
from kvgen.families.config_values import epsilon, number, positive
from kvgen.families.family import Family, GGUFModel
from kvgen.families.lfm2 import layer_kv_heads
from kvgen.families.llama import gguf_experts, read_sizes, split_fused
from kvgen.loaders.gguf.model import GGUFContents
from kvgen.loaders.rope import rotary

#: GraniteMoeHybridConfig's defaults for the keys it reads beyond Llama's.
_DEFAULTS = dict(mamba_n_heads=128, mamba_n_groups=1, mamba_d_state=256, mamba_d_conv=4, mamba_expand=2,
                 num_local_experts=8, num_experts_per_tok=2, shared_intermediate_size=1024)
#: layer_types' spellings: transformers 5's and the checkpoints' (its legacy names) -> Mamba-2 or not.
_LAYER_KINDS = {"linear_attention": True, "mamba": True, "full_attention": False, "attention": False}


def _setting(config: dict, key: str) -> int:
    """A positive integer setting, GraniteMoeHybridConfig's default when absent or null."""
    return positive(config, key) if config.get(key) is not None else _DEFAULTS[key]


def layer_is_mamba(config: dict, layers: int) -> list[bool]:
    """Per layer, whether it is a Mamba-2 layer: ``layer_types`` (or ``layers_block_type``, its
    alias) in either spelling; absent, every layer (transformers' default)."""
    types = config.get("layer_types", config.get("layers_block_type"))
    if types is None:
        return [True] * layers
    if not isinstance(types, list) or len(types) != layers:
        raise ValueError(f"model config: layer_types must list {layers} layer kinds (num_hidden_layers), got "
                         f"{types!r:.80}")
    for i, t in enumerate(types):
        if not isinstance(t, str) or t not in _LAYER_KINDS:
            raise ValueError(f"model config: layer_types[{i}] = {t!r:.40} is not one of {', '.join(_LAYER_KINDS)}")
    return [_LAYER_KINDS[t] for t in types]


def mamba_shape(config: dict) -> tuple[int, int, int, int, int]:
    """A Mamba-2 layer's state (conv channels, conv kernel, heads, head_dim, d_state) and its
    sizes' agreement, as GraniteMoeHybridConfig checks them (``mamba_d_head`` "auto": the inner
    width mamba_expand x hidden_size over the heads)."""
    hidden = positive(config, "hidden_size")
    heads, groups = _setting(config, "mamba_n_heads"), _setting(config, "mamba_n_groups")
    d_state, kernel, expand = _setting(config, "mamba_d_state"), _setting(config, "mamba_d_conv"), \
        _setting(config, "mamba_expand")
    inner = expand * hidden
    head_dim = config.get("mamba_d_head", "auto")
    if head_dim in ("auto", None):
        if inner % heads:
            raise ValueError(f"model config: mamba_n_heads = {heads} must divide mamba_expand x hidden_size = {inner}")
        head_dim = inner // heads
    else:
        head_dim = positive(config, "mamba_d_head")
    if head_dim * heads != inner:
        raise ValueError(f"model config: mamba_d_head x mamba_n_heads = {head_dim} x {heads} differs from "
                         f"mamba_expand x hidden_size = {inner}")
    if heads % groups:
        raise ValueError(f"model config: mamba_n_heads = {heads} is not a multiple of mamba_n_groups = {groups}")
    return inner + 2 * groups * d_state, kernel, heads, head_dim, d_state


def _check_time_step_limit(config: dict) -> None:
    """``time_step_limit`` clamps dt in transformers' prefill only (its decode step does not);
    kvgen computes the default, (0, inf), which clamps nothing."""
    limit = config.get("time_step_limit")
    if limit is None:
        return

    def value(v: Any) -> Optional[float]:
        if isinstance(v, dict) and set(v) == {"__float__"}:  # transformers' JSON spelling of inf
            v = v["__float__"]
        try:
            return None if isinstance(v, bool) else float(v)
        except (TypeError, ValueError):
            return None

    bounds = [value(v) for v in limit] if isinstance(limit, (list, tuple)) and len(limit) == 2 else [None]
    if None in bounds or bounds[0] > 0.0 or bounds[1] != math.inf:
        raise ValueError(f"model config: time_step_limit = {limit!r:.60} is not supported (kvgen computes "
                         "(0.0, inf), which clamps nothing)")


def _experts(config: dict) -> int:
    experts = config.get("num_local_experts", _DEFAULTS["num_local_experts"])
    if experts == 0:
        return 0
    return positive(config, "num_local_experts") if "num_local_experts" in config else experts


@dataclass(frozen=True)
class Granite4Family(Family):
    """Granite 4.0's translation into the core's "granitehybrid" model."""

    core = "granitehybrid"
    # transformers' Mamba-2 layer, MLP and experts take hidden_act; llama.cpp's converter asserts silu
    activation = ("hidden_act", "silu", frozenset({"silu"}))

    # ---- a Hugging Face config ----

    def check_config(self, config: dict) -> None:
        super().check_config(config)
        _check_time_step_limit(config)
        kind = config.get("position_embedding_type")
        if kind not in (None, "rope", "nope"):
            raise ValueError(f"model config: position_embedding_type = {kind!r:.40} is not supported (None, "
                             "'nope' or 'rope')")

    def sizes(self, config: dict) -> "_core._ModelConfig":
        # the shared MLP's width is the core's intermediate; each expert's is intermediate_size
        read = read_sizes({**config, "intermediate_size": _setting(config, "shared_intermediate_size")})
        kinds = layer_is_mamba(config, read["layers"])
        state = mamba_shape(config)
        experts = _experts(config)
        moe = {}
        if experts:
            moe = dict(experts=experts, experts_per_token=_setting(config, "num_experts_per_tok"),
                       expert_intermediate=positive(config, "intermediate_size"))
        sizes = _core._ModelConfig(architecture=self.core, **read, **moe,
                                   recurrent_layers=[state if m else (0, 0, 0, 0, 0) for m in kinds])
        sizes.validate()
        return sizes

    def options(self, config: dict, sizes: "_core._ModelConfig") -> "_core._GraniteHybridOptions":
        inv_freq = np.zeros(0, np.float32)
        if config.get("position_embedding_type") == "rope":
            rope = rotary(config, sizes.head_dim)
            if rope.inv_freq_long is not None or rope.attention_factor != 1.0:
                raise ValueError("model config: LongRoPE and YaRN scaling are not supported for granite4")
            inv_freq = rope.inv_freq
        divisor = number(config, "logits_scaling")
        if divisor == 0:
            raise ValueError("model config: logits_scaling must not be 0")
        multipliers = {key: number(config, key) for key in
                       ("embedding_multiplier", "residual_multiplier", "attention_multiplier")}
        return _core._GraniteHybridOptions(
            inv_freq=inv_freq, mamba_groups=_setting(config, "mamba_n_groups"),
            logit_scale=1.0 if divisor is None else 1.0 / divisor,
            **{k: v for k, v in multipliers.items() if v is not None},
            **({} if (eps := epsilon(config, "rms_norm_eps")) is None else {"rms_norm_eps": eps}))

    def checkpoint_arrays(self, config: dict, arrays: dict, dtype: Optional[str]) -> dict:
        """The tensors under the names the core reads: the shared MLP's input_linear split into
        gate_proj and up_proj rows (views), output_linear as down_proj; the router and each
        expert's gate, up (rows of input_linear, transformers' gate_up_proj) and down
        (output_linear, down_proj) under Qwen3-MoE's names; conv1d
        weights as (channels, kernel). Quantized to ``dtype`` like Llama's matrices."""
        shared = _setting(config, "shared_intermediate_size")
        arrays = split_fused({"shared_mlp.input_linear": [("shared_mlp.gate_proj", "i"), ("shared_mlp.up_proj", "i")]},
                             arrays, {"i": shared})
        out: dict[str, Any] = {}
        for name, w in arrays.items():
            stem, _, module = name.partition("block_sparse_moe.")
            if name.endswith("mamba.conv1d.weight") and len(w.shape) == 3 and w.shape[1] == 1:
                out[name] = w.reshape(w.shape[0], w.shape[2])  # (channels, 1, kernel): a view
            elif name.endswith("shared_mlp.output_linear.weight"):
                out[name.replace("output_linear", "down_proj")] = w
            elif module in ("router.layer.weight", "router.weight"):
                out[stem + "mlp.gate.weight"] = w
            elif module in ("input_linear.weight", "output_linear.weight", "experts.gate_up_proj",
                            "experts.down_proj"):  # as saved, and as transformers names them in memory
                if len(w.shape) != 3 or isinstance(w, tuple):
                    raise ValueError(f"tensor {name!r} has shape {tuple(w.shape)}; it must be (experts, out, in)")
                for e in range(w.shape[0]):  # each expert's matrices: views of the stacked tensor
                    if module in ("output_linear.weight", "experts.down_proj"):
                        out[f"{stem}mlp.experts.{e}.down_proj.weight"] = w[e]
                        continue
                    if w.shape[1] % 2:
                        raise ValueError(f"tensor {name!r} has {w.shape[1]} rows per expert, not gate and up halves")
                    half = w.shape[1] // 2
                    out[f"{stem}mlp.experts.{e}.gate_proj.weight"] = w[e, :half]
                    out[f"{stem}mlp.experts.{e}.up_proj.weight"] = w[e, half:]
            else:
                out[name] = w
        if dtype is None:
            return out
        from kvgen.loaders.quantize import quantize_checkpoint

        return quantize_checkpoint("llama", out, dtype)  # every *_proj.weight matrix, the embeddings

    def build_core(self, config: dict, arrays: dict, *, activations: str = "int8x2",
                   rope_freqs: Optional[np.ndarray] = None, norms_plus_one: bool = False) -> "_core._Model":
        self.check_config(config)
        sizes = self.sizes(config)
        if rope_freqs is not None or norms_plus_one:
            raise ValueError("granite4: a GGUF file's rope_freqs or 1 + w norms are not Granite's")
        arrays = self.checkpoint_arrays(config, arrays, None)
        if config.get("tie_word_embeddings", False) is not False:  # GraniteMoeHybridConfig: untied by default
            arrays.pop("lm_head.weight", None)  # tied: transformers' head is the embedding table
        return _core._Model.granite_hybrid(sizes, self.options(config, sizes), arrays, activations=activations)

    def capabilities(self, config: dict, core: "_core._Model") -> Capabilities:
        # a state per sequence: cached prefixes resume from state snapshots, rejected drafts from checkpoints
        return Capabilities(partial_prefix_reuse=False, recurrent_state=True)

    # ---- a GGUF file (llama.cpp's convert_hf_to_gguf.py, GraniteHybridModel) ----

    def from_gguf(self, gguf: GGUFContents) -> GGUFModel:
        """llama.cpp's converter writes the Mamba-2 sizes as ``ssm.*`` keys (conv_kernel,
        state_size = d_state, group_count, inner_size = heads x head_dim, time_step_rank = heads),
        the layer pattern as a per-layer ``attention.head_count_kv``, Granite's multipliers as in
        Granite 3 files (an absent attention.scale is 1 / sqrt(head_dim), llama.cpp's rule), the
        experts' widths as ``feed_forward_length`` and the shared MLP's as
        ``expert_shared_feed_forward_length``; it stores -exp(A_log), D as (heads, 1), the gated
        norm as (groups, inner / groups), q/k rows permuted for llama.cpp's rotary layout (undone
        where the layers rotate; without a rotary embedding q and k share the order, which leaves
        every score unchanged)."""
        path = gguf.path
        a = self.gguf_architecture + "."
        hidden, heads, layers = gguf.size(a + "embedding_length"), gguf.size(a + "attention.head_count"), \
            gguf.size(a + "block_count")
        head_dim = gguf.size(a + "attention.key_length", max(hidden // heads, 1))
        per_layer = layer_kv_heads(gguf, a + "attention.head_count_kv", heads, layers)
        kv_heads = next((k for k in per_layer if k), heads)
        mamba = [k == 0 for k in per_layer]
        embed_shape = gguf.embedding_shape(hidden)
        vocab, C = embed_shape[0], hidden
        experts = gguf.get(a + "expert_count", int, 0)
        ffn = gguf.size(a + "feed_forward_length")
        shared = gguf.size(a + "expert_shared_feed_forward_length", ffn)
        heads_m, inner = gguf.size(a + "ssm.time_step_rank"), gguf.size(a + "ssm.inner_size")
        if inner % heads_m or inner % hidden:
            raise ValueError(f"{path}: ssm.inner_size = {inner} is not a multiple of ssm.time_step_rank = {heads_m} "
                             f"and of embedding_length = {hidden}")
        config: dict[str, Any] = {
            "model_type": self.model_types[0], "vocab_size": vocab,
            "max_position_embeddings": gguf.size(a + "context_length"), "hidden_size": hidden,
            "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
            "head_dim": head_dim, "intermediate_size": ffn, "shared_intermediate_size": shared,
            "num_local_experts": experts, "rms_norm_eps": gguf.get(a + "attention.layer_norm_rms_epsilon", float),
            "mamba_n_heads": heads_m, "mamba_d_head": inner // heads_m,
            "mamba_expand": inner // hidden,
            "mamba_n_groups": gguf.size(a + "ssm.group_count"), "mamba_d_state": gguf.size(a + "ssm.state_size"),
            "mamba_d_conv": gguf.size(a + "ssm.conv_kernel"),
            "layer_types": ["mamba" if m else "attention" for m in mamba],
            "attention_multiplier": gguf.get(a + "attention.scale", float, 0.0) or 1 / math.sqrt(head_dim),
            "tie_word_embeddings": "output.weight" not in gguf.tensors,
        }
        if experts:
            config["num_experts_per_tok"] = gguf.size(a + "expert_used_count")
        for key, hf in (("embedding_scale", "embedding_multiplier"), ("residual_scale", "residual_multiplier"),
                        ("logit_scale", "logits_scaling")):
            value = gguf.get(a + key, float, None)
            if value is not None:
                config[hf] = value
        from kvgen.loaders.gguf.metadata import read_bool

        try:  # llama.cpp's use_rope: true when absent
            rotates = read_bool(gguf.reader, a + "rope.scaling.finetuned") is not False
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
        if rotates:
            config["position_embedding_type"] = "rope"
            config["rope_parameters"] = {"rope_type": "default",
                                         "rope_theta": gguf.get(a + "rope.freq_base", float, 10000.0)}
            if gguf.size(a + "rope.dimension_count", head_dim) != head_dim:
                raise ValueError(f"{path}: rope.dimension_count differs from head_dim {head_dim} (Granite rotates "
                                 "all of head_dim)")
            if gguf.get(a + "rope.scaling.type", str, "none") != "none":
                raise ValueError(f"{path}: rope scaling is not supported for {self.name}")
        self.sizes(config)  # the state shapes checked against the heads before any tensor is read
        conv, K, _, _, _ = mamba_shape(config)
        G = config["mamba_n_groups"]
        q, kv = heads * head_dim, kv_heads * head_dim
        arrays: dict[str, Any] = {"model.embed_tokens.weight": gguf.matrix("token_embd.weight", embed_shape),
                                  "model.norm.weight": gguf.vector("output_norm.weight", (C,))}
        used = {"token_embd.weight", "output_norm.weight"}
        if "output.weight" in gguf.tensors:
            arrays["lm_head.weight"] = gguf.matrix("output.weight", (vocab, C))
            used.add("output.weight")
        for layer in range(layers):
            p, hf = f"blk.{layer}.", f"model.layers.{layer}."
            names = {"attn_norm": ("input_layernorm", (C,)), "ffn_norm": ("post_attention_layernorm", (C,))}
            if mamba[layer]:
                names.update({"ssm_in": ("mamba.in_proj", (inner + conv + heads_m, C)),
                              "ssm_out": ("mamba.out_proj", (C, inner))})
            else:
                names.update({"attn_q": ("self_attn.q_proj", (q, C)), "attn_k": ("self_attn.k_proj", (kv, C)),
                              "attn_v": ("self_attn.v_proj", (kv, C)), "attn_output": ("self_attn.o_proj", (C, q))})
            suffix = "_shexp" if experts else ""
            names.update({f"ffn_gate{suffix}": ("shared_mlp.gate_proj", (shared, C)),
                          f"ffn_up{suffix}": ("shared_mlp.up_proj", (shared, C)),
                          f"ffn_down{suffix}": ("shared_mlp.down_proj", (C, shared))})
            stray = [n for n in ((f"{p}attn_q.weight",) if mamba[layer] else (f"{p}ssm_in.weight",))
                     if n in gguf.tensors]
            if stray:
                kind = "a Mamba-2 layer" if mamba[layer] else "an attention layer"
                raise ValueError(f"{path}: layer {layer} is {kind} by {a}attention.head_count_kv but the file has "
                                 f"{stray[0]}")
            for gg, (name, shape) in names.items():
                permute = {"attn_q": heads, "attn_k": kv_heads}.get(gg, 0) if rotates else 0
                for kind in ("weight", "bias"):
                    src = f"{p}{gg}.{kind}"
                    if kind == "bias":
                        if src in gguf.tensors:
                            arrays[f"{hf}{name}.bias"] = gguf.vector(src, shape[:1])
                            used.add(src)
                        continue
                    if len(shape) == 2:
                        arrays[f"{hf}{name}.weight"] = gguf.matrix(src, shape, permute_heads=permute)
                    else:
                        arrays[f"{hf}{name}.weight"] = gguf.vector(src, shape)
                    used.add(src)
            if mamba[layer]:
                m = hf + "mamba."
                with np.errstate(divide="ignore", invalid="ignore"):
                    a_log = np.log(-gguf.vector(p + "ssm_a", (heads_m, 1)).reshape(heads_m)).astype(np.float32)
                if not np.all(np.isfinite(a_log)):
                    raise ValueError(f"{path}: {p}ssm_a holds values that are not negative (it stores -exp(A_log))")
                arrays[m + "A_log"] = a_log
                arrays[m + "D"] = gguf.vector(p + "ssm_d", (heads_m, 1)).reshape(heads_m)
                arrays[m + "dt_bias"] = gguf.vector(p + "ssm_dt.bias", (heads_m,))
                arrays[m + "norm.weight"] = gguf.vector(p + "ssm_norm.weight", (G, inner // G)).reshape(inner)
                arrays[m + "conv1d.weight"] = gguf.vector(p + "ssm_conv1d.weight", (conv, K))
                used |= {p + "ssm_a", p + "ssm_d", p + "ssm_dt.bias", p + "ssm_norm.weight", p + "ssm_conv1d.weight"}
                if p + "ssm_conv1d.bias" in gguf.tensors:
                    arrays[m + "conv1d.bias"] = gguf.vector(p + "ssm_conv1d.bias", (conv,))
                    used.add(p + "ssm_conv1d.bias")
            if experts:  # the router and the 3-D expert matrices, as Qwen3-MoE's files hold them
                gguf_experts(gguf, arrays, used, layer,
                             {"num_experts": experts, "hidden_size": C, "moe_intermediate_size": ffn})
        gguf.check_all_used(used)
        return GGUFModel(self, config, arrays)


FAMILY = Granite4Family("granite4", ("granitemoehybrid",), "granitehybrid", "GraniteMoeHybridForCausalLM",
                        "hybrid: Mamba-2 layers with a recurrent state beside attention layers (rotary only with "
                        "position_embedding_type 'rope'), experts plus a shared MLP, Granite's multipliers")
