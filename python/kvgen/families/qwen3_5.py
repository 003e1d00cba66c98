"""Qwen3.5 (Qwen3_5ForCausalLM, and the text model of Qwen3_5ForConditionalGeneration): a hybrid
of Gated DeltaNet layers, which keep a recurrent state per sequence instead of KV rows, and gated
full-attention layers (a sigmoid output gate from a q projection twice as wide, (1 + w) q/k
RMSNorm, partial rotary embeddings), each before a SwiGLU MLP. Computed by the core's "qwen35"
model (cpp/include/kvgen/models/qwen35.h).

The checkpoints are published as ``Qwen3_5ForConditionalGeneration`` directories (model_type
``qwen3_5``), read as their text model by kvgen.families.composite: ``text_config`` and the
``model.language_model.`` tensors; the vision tower is never read.

The multi-token-prediction head (``mtp.*`` tensors; ``nextn`` layers after the model's own in
llama.cpp's files) is built beside the model where the file has one (``build_mtp``: the core's
``qwen35_mtp``, sharing the model's embedding and LM head): ``Model.mtp_head``, a drafter for
speculative decoding (kvgen.generation.mtp).

Which layers are recurrent is ``layer_types`` (``linear_attention`` / ``full_attention``; by
default every ``full_attention_interval``-th layer attends, as transformers); each recurrent
layer's state is the convolution window over the fused q/k/v (2 key heads x key_dim + value heads
x value_dim channels, ``linear_conv_kernel_dim`` wide) and the delta rule's matrix per value head
(``linear_key_head_dim`` x ``linear_value_head_dim``).

The rotary embedding is multimodal in transformers (``mrope_section``); for text the three
position ids are the token's position, and it is the ordinary rotary embedding of
``partial_rotary_factor`` (0.25 by default) of head_dim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional

import numpy as np

from kvgen import _core
from kvgen.families.capabilities import Capabilities
from kvgen.families.config_values import epsilon, given, integer_or, positive
from kvgen.families.family import Family, GGUFModel
from kvgen.families.llama import read_sizes
from kvgen.loaders.gguf.model import GGUFContents
from kvgen.loaders.rope import rotary

#: The DeltaNet's input projections, whose names do not end in ``_proj.weight``: quantized with the
#: others by Model.load(directory, dtype=...), so that no product runs on float32 weights.
_IN_PROJECTIONS = tuple(f"linear_attn.in_proj_{p}.weight" for p in ("qkv", "z", "a", "b"))


def gguf_dense_mlp(gguf: GGUFContents, layer: int, inner: int, hidden: int, prefix: str, arrays: dict, used: set,
                   suffix: str = "") -> None:
    """A SwiGLU MLP's blk.<layer>.ffn_{gate,up,down}<suffix> tensors as
    model.layers.<layer>.<prefix>{gate,up,down}_proj.weight (inner wide)."""
    for gg, hf, shape in (("ffn_gate", "gate_proj", (inner, hidden)), ("ffn_up", "up_proj", (inner, hidden)),
                          ("ffn_down", "down_proj", (hidden, inner))):
        src = f"blk.{layer}.{gg}{suffix}.weight"
        if src not in gguf.tensors:
            raise ValueError(f"{gguf.path}: layer {layer} has no {src}")
        arrays[f"model.layers.{layer}.{prefix}{hf}.weight"] = gguf.matrix(src, shape)
        used.add(src)


#: where a checkpoint keeps its multi-token-prediction head
MTP_PREFIX = "mtp."


def mtp_layer_count(arrays: dict, config: dict) -> int:
    """How many decoder layers the checkpoint's MTP head has (``mtp.layers.<i>.``, numbered from
    0 without gaps); 0 without a head. ValueError where the numbering has gaps or differs from the
    config's ``mtp_num_hidden_layers``."""
    numbers = {int(n.split(".")[2]) for n in arrays if n.startswith(MTP_PREFIX + "layers.")
               and len(n.split(".")) > 3 and n.split(".")[2].isdecimal()}
    if not numbers and not any(n.startswith(MTP_PREFIX) for n in arrays):
        return 0
    if not numbers or numbers != set(range(len(numbers))):
        raise ValueError(f"the multi-token-prediction head's layers are numbered {sorted(numbers)[:8]}, not 0 .. n - 1")
    declared = config.get("mtp_num_hidden_layers")
    if declared is not None and declared != len(numbers):
        raise ValueError(f"model config: mtp_num_hidden_layers = {declared!r:.20} but the checkpoint's MTP head has "
                         f"{len(numbers)} layers")
    return len(numbers)


def layer_kinds(config: dict, layers: int) -> list[bool]:
    """Per layer, whether it is a Gated DeltaNet (linear_attention) layer: ``layer_types``, or
    transformers' default (a full-attention layer every ``full_attention_interval``-th)."""
    types = config.get("layer_types")
    if types is None:
        interval = integer_or(config, "full_attention_interval", 4)
        if interval < 1:
            raise ValueError(f"model config: full_attention_interval = {interval} must be positive")
        return [bool((i + 1) % interval) for i in range(layers)]
    if not isinstance(types, list) or len(types) != layers:
        raise ValueError(f"model config: layer_types must list {layers} layer kinds (num_hidden_layers), got "
                         f"{types!r:.80}")
    kinds = []
    for i, t in enumerate(types):
        if t not in ("linear_attention", "full_attention"):
            raise ValueError(f"model config: layer_types[{i}] = {t!r:.40} is not linear_attention or full_attention")
        kinds.append(t == "linear_attention")
    return kinds


@dataclass(frozen=True)
class Qwen35Family(Family):
    """Qwen3.5's translation into the core's "qwen35" model."""

    core = "qwen35"
    activation = ("hidden_act", "silu", frozenset({"silu"}))
    #: llama.cpp's files of the family order the DeltaNet's value heads tiled over the key heads
    #: (its converter reorders Qwen3.5's, not Qwen3-Next's).
    gguf_value_heads_tiled: ClassVar[bool] = True

    # ---- a Hugging Face config ----

    def expert_sizes(self, config: dict) -> dict[str, int]:
        """The mixture of experts' _ModelConfig sizes (none: a dense family; kvgen.families.qwen3_5_moe)."""
        return {}

    def expert_options(self, config: dict) -> dict[str, Any]:
        """The mixture of experts' _Qwen35Options (none: a dense family)."""
        return {}

    def sizes(self, config: dict) -> "_core._ModelConfig":
        text = config
        read = read_sizes(text)
        kinds = layer_kinds(text, read["layers"])
        key_dim, value_dim = positive(text, "linear_key_head_dim"), positive(text, "linear_value_head_dim")
        key_heads, value_heads = positive(text, "linear_num_key_heads"), positive(text, "linear_num_value_heads")
        kernel = positive(text, "linear_conv_kernel_dim")
        if value_heads % key_heads:
            raise ValueError(f"model config: linear_num_value_heads = {value_heads} is not a multiple of "
                             f"linear_num_key_heads = {key_heads}")
        channels = 2 * key_heads * key_dim + value_heads * value_dim
        state = (channels, kernel, value_heads, key_dim, value_dim)
        sizes = _core._ModelConfig(architecture=self.core, **read, **self.expert_sizes(text),
                                   recurrent_layers=[state if r else (0, 0, 0, 0, 0) for r in kinds])
        sizes.validate()
        return sizes

    def options(self, config: dict, sizes: "_core._ModelConfig", norms_plus_one: bool) -> "_core._Qwen35Options":
        """The core options from the text config. norms_plus_one: a llama.cpp file, which stores
        the (1 + w) norms' weights as 1 + w and (gguf_value_heads_tiled) orders the DeltaNet's
        value heads tiled over its key heads."""
        text = dict(config)
        params = text.get("rope_parameters")
        if "partial_rotary_factor" not in text and not (isinstance(params, dict) and "partial_rotary_factor" in params):
            text["partial_rotary_factor"] = 0.25  # Qwen3_5TextConfig's default
        rope = rotary(text, sizes.head_dim, partial=True)
        if rope.inv_freq_long is not None:
            raise ValueError("model config: LongRoPE scaling is not supported for qwen3_5")
        return _core._Qwen35Options(inv_freq=rope.inv_freq, rotary_dim=rope.dim,
                                    norm_offset=0.0 if norms_plus_one else 1.0,
                                    linear_key_heads=positive(text, "linear_num_key_heads"),
                                    value_heads_tiled=norms_plus_one and self.gguf_value_heads_tiled,
                                    **given(rms_norm_eps=epsilon(text, "rms_norm_eps")), **self.expert_options(text))

    def checkpoint_arrays(self, config: dict, arrays: dict, dtype: Optional[str]) -> dict:
        """The text model's tensors by Qwen3_5ForCausalLM's names, conv1d weights as (channels,
        kernel); quantized to ``dtype`` like Llama's."""
        out: dict[str, Any] = {}
        for name, w in arrays.items():
            if name.endswith("linear_attn.conv1d.weight") and len(w.shape) == 3 and w.shape[1] == 1:
                w = w.reshape(w.shape[0], w.shape[2])  # (channels, 1, kernel): a view
            out[name] = w
        if dtype is None:
            return out
        from kvgen.loaders.quantize import quantize, quantize_checkpoint, to_float32

        out = quantize_checkpoint("llama", out, dtype)  # the *_proj.weight matrices, as Llama's
        for name, w in out.items():  # and the DeltaNet's input projections
            if name.endswith(_IN_PROJECTIONS) and w.shape[1] % 32 == 0:
                out[name] = quantize(to_float32(w), dtype.upper())
        return out

    def build_core(self, config: dict, arrays: dict, *, activations: str = "int8x2",
                   rope_freqs: Optional[np.ndarray] = None, norms_plus_one: bool = False) -> "_core._Model":
        self.check_config(config)
        sizes = self.sizes(config)
        if rope_freqs is not None:
            raise ValueError("qwen3_5: a rope_freqs tensor is not supported")
        arrays = self.checkpoint_arrays(config, arrays, None)
        return _core._Model.qwen35(sizes, self.options(config, sizes, norms_plus_one), arrays,
                                   activations=activations)

    def build_mtp(self, config: dict, arrays: dict, core: "_core._Model", *, activations: str = "int8x2",
                  norms_plus_one: bool = False) -> Optional["_core._Model"]:
        """The checkpoint's multi-token-prediction head over its ``mtp.*`` tensors (qwen35.h:
        make_qwen35_mtp), sharing ``core``'s embedding and LM head; None without one. Its layers
        are full-attention layers of the model's shape, with the model's MLP or experts."""
        head = {n: w for n, w in arrays.items() if n.startswith(MTP_PREFIX)}
        layers = mtp_layer_count(head, config)
        if layers == 0:
            return None
        # the head's layers read as a model's of that many full-attention layers (checkpoint_arrays'
        # per-layer work: fused experts), each with experts where it has a router
        ours, theirs = "mtp.layers.", "model.layers."
        renamed = {(theirs + n[len(ours):] if n.startswith(ours) else n): w for n, w in head.items()}
        head_config = {**config, "num_hidden_layers": layers, "layer_types": ["full_attention"] * layers,
                       "mlp_only_layers": [i for i in range(layers) if f"{theirs}{i}.mlp.gate.weight" not in renamed],
                       "decoder_sparse_step": 1}
        sizes = self.sizes(head_config)
        converted = self.checkpoint_arrays(head_config, renamed, None)
        tensors = {(ours + n[len(theirs):] if n.startswith(theirs) else n): w for n, w in converted.items()}
        return _core._Model.qwen35_mtp(core, sizes, self.options(head_config, sizes, norms_plus_one), tensors,
                                       activations=activations)

    def capabilities(self, config: dict, core: "_core._Model") -> Capabilities:
        """A recurrent state per slot: a cached prefix resumes from a state snapshot (whole chunks
        of a prefix only), a rejected draft from the verification pass's per-token checkpoint."""
        return Capabilities(partial_prefix_reuse=False, recurrent_state=True)

    # ---- a GGUF file ----

    def from_gguf(self, gguf: GGUFContents) -> GGUFModel:
        """A llama.cpp ``qwen35`` file: its ``ssm.*`` keys give the DeltaNet's sizes
        (state_size = key_dim, group_count = key heads, time_step_rank = value heads,
        inner_size = value heads x value_dim), ``attention.recurrent_layers`` the layer kinds.
        The converter stores -exp(A_log) (``ssm_a``: read back as its log), the (1 + w) norms as
        1 + w (the gated one as w), and the value heads tiled over the key heads, which the core
        reads as they are (``options``). The multi-token-prediction head (``nextn_predict_layers``
        blocks after the model's) is read as ``mtp.*`` tensors: its layers' tensors under
        ``mtp.layers.<i>.``, and ``nextn.eh_proj``, ``nextn.enorm``, ``nextn.hnorm``,
        ``nextn.shared_head_norm`` as ``mtp.fc``, ``mtp.pre_fc_norm_embedding``,
        ``mtp.pre_fc_norm_hidden``, ``mtp.norm`` (build_mtp)."""
        path = gguf.path
        a = self.gguf_architecture + "."
        hidden, heads, kv_heads, head_dim = gguf.attention_shape(self.gguf_architecture)
        if gguf.size(a + "attention.value_length", head_dim) != head_dim:
            raise ValueError(f"{path}: attention.value_length differs from key_length = {head_dim}")
        blocks = gguf.size(a + "block_count")
        heads_mtp = gguf.get(a + "nextn_predict_layers", int, 0)
        if not 0 <= heads_mtp < blocks:
            raise ValueError(f"{path}: nextn_predict_layers = {heads_mtp} leaves no model layers of block_count = "
                             f"{blocks}")
        L = blocks - heads_mtp  # the model's layers; the MTP head's follow them
        embed_shape = gguf.embedding_shape(hidden)
        vocab, C = embed_shape[0], hidden
        value_heads, inner = gguf.size(a + "ssm.time_step_rank"), gguf.size(a + "ssm.inner_size")
        if inner % value_heads:
            raise ValueError(f"{path}: ssm.inner_size = {inner} is not a multiple of ssm.time_step_rank = "
                             f"{value_heads}")
        recurrent = gguf.flags(a + "attention.recurrent_layers", blocks)
        if recurrent is None:
            interval = gguf.size(a + "full_attention_interval", 4)
            recurrent = [bool((i + 1) % interval) for i in range(L)]
        elif any(recurrent[L:]):
            raise ValueError(f"{path}: attention.recurrent_layers flags a multi-token-prediction layer as recurrent")
        recurrent = recurrent[:L]
        rope_dims = gguf.size(a + "rope.dimension_count", head_dim)
        if rope_dims > head_dim or rope_dims % 2:
            raise ValueError(f"{path}: rope.dimension_count = {rope_dims} must be even and within head_dim {head_dim}")
        factor = rope_dims / head_dim
        if int(head_dim * factor) != rope_dims:
            factor = float(np.nextafter(factor, 1.0))
        config: dict[str, Any] = {
            "model_type": self.model_types[0], "vocab_size": vocab,
            "max_position_embeddings": gguf.size(a + "context_length"), "hidden_size": hidden,
            "num_hidden_layers": L, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
            "head_dim": head_dim, **self.gguf_mlp_config(gguf),
            "rms_norm_eps": gguf.get(a + "attention.layer_norm_rms_epsilon", float),
            "linear_conv_kernel_dim": gguf.size(a + "ssm.conv_kernel"),
            "linear_key_head_dim": gguf.size(a + "ssm.state_size"),
            "linear_num_key_heads": gguf.size(a + "ssm.group_count"),
            "linear_num_value_heads": value_heads, "linear_value_head_dim": inner // value_heads,
            "layer_types": ["linear_attention" if r else "full_attention" for r in recurrent],
            "rope_parameters": {"rope_type": "default", "rope_theta": gguf.get(a + "rope.freq_base", float, 10000.0),
                                "partial_rotary_factor": factor},
            "tie_word_embeddings": "output.weight" not in gguf.tensors,
        }
        if gguf.get(a + "rope.scaling.type", str, "none") != "none":
            raise ValueError(f"{path}: rope scaling is not supported for {self.name}")
        sizes = self.sizes(config)  # the state shapes checked against the heads before any tensor is read
        Hk, dk = config["linear_num_key_heads"], config["linear_key_head_dim"]
        dv, K = config["linear_value_head_dim"], config["linear_conv_kernel_dim"]
        channels = 2 * Hk * dk + value_heads * dv
        arrays: dict[str, Any] = {"model.embed_tokens.weight": gguf.matrix("token_embd.weight", embed_shape),
                                  "model.norm.weight": gguf.vector("output_norm.weight", (C,))}
        used = {"token_embd.weight", "output_norm.weight"}
        if "output.weight" in gguf.tensors:
            arrays["lm_head.weight"] = gguf.matrix("output.weight", (vocab, C))
            used.add("output.weight")
        q, kv = heads * head_dim, kv_heads * head_dim
        common = {"attn_norm": ("input_layernorm", (C,)), "post_attention_norm": ("post_attention_layernorm", (C,))}
        attention = {"attn_q": ("self_attn.q_proj", (2 * q, C)), "attn_k": ("self_attn.k_proj", (kv, C)),
                     "attn_v": ("self_attn.v_proj", (kv, C)), "attn_output": ("self_attn.o_proj", (C, q)),
                     "attn_q_norm": ("self_attn.q_norm", (head_dim,)), "attn_k_norm": ("self_attn.k_norm", (head_dim,))}
        linear = {"attn_qkv": ("linear_attn.in_proj_qkv", (channels, C)),
                  "attn_gate": ("linear_attn.in_proj_z", (value_heads * dv, C)),
                  **self.gguf_beta_alpha(value_heads, C),
                  "ssm_out": ("linear_attn.out_proj", (C, value_heads * dv)),
                  "ssm_conv1d": ("linear_attn.conv1d", (channels, K)),
                  "ssm_norm": ("linear_attn.norm", (dv,))}
        for layer in range(L):
            kind = linear if sizes.recurrent_layers[layer][0] else attention
            for gg, (hf, shape) in {**common, **kind}.items():
                src = f"blk.{layer}.{gg}.weight"
                if src not in gguf.tensors:
                    raise ValueError(f"{path}: layer {layer} is a {'linear' if kind is linear else 'full'}-attention "
                                     f"layer (attention.recurrent_layers) but has no {src}")
                read = gguf.matrix if len(shape) == 2 and gg != "ssm_conv1d" else gguf.vector
                arrays[f"model.layers.{layer}.{hf}.weight"] = read(src, shape)
                used.add(src)
            if kind is linear:
                p = f"blk.{layer}."
                with np.errstate(divide="ignore", invalid="ignore"):
                    a_log = np.log(-gguf.vector(p + "ssm_a", (value_heads,))).astype(np.float32)
                if not np.all(np.isfinite(a_log)):
                    raise ValueError(f"{path}: {p}ssm_a holds values that are not negative (it stores -exp(A_log))")
                arrays[f"model.layers.{layer}.linear_attn.A_log"] = a_log
                arrays[f"model.layers.{layer}.linear_attn.dt_bias"] = gguf.vector(p + "ssm_dt.bias", (value_heads,))
                used |= {p + "ssm_a", p + "ssm_dt.bias"}
            self.gguf_mlp(gguf, layer, config, arrays, used)
        for i in range(heads_mtp):  # the MTP head's layers: full-attention blocks, read as one and renamed
            layer = L + i
            for gg, (hf, shape) in {**common, **attention}.items():
                src = f"blk.{layer}.{gg}.weight"
                if src not in gguf.tensors:
                    raise ValueError(f"{path}: multi-token-prediction layer {i} (block {layer}) has no {src}")
                read = gguf.matrix if len(shape) == 2 else gguf.vector
                arrays[f"mtp.layers.{i}.{hf}.weight"] = read(src, shape)
                used.add(src)
            mlp: dict[str, Any] = {}
            self.gguf_mlp(gguf, layer, config, mlp, used)
            stem = f"model.layers.{layer}."
            arrays.update({f"mtp.layers.{i}." + n[len(stem):]: w for n, w in mlp.items()})
        if heads_mtp:
            p = f"blk.{L}.nextn."
            for gg, hf, shape in (("eh_proj", "mtp.fc.weight", (C, 2 * C)),
                                  ("enorm", "mtp.pre_fc_norm_embedding.weight", (C,)),
                                  ("hnorm", "mtp.pre_fc_norm_hidden.weight", (C,)),
                                  ("shared_head_norm", "mtp.norm.weight", (C,))):
                if p + gg + ".weight" not in gguf.tensors:
                    raise ValueError(f"{path}: the multi-token-prediction head has no {p}{gg}.weight")
                arrays[hf] = (gguf.matrix if len(shape) == 2 else gguf.vector)(p + gg + ".weight", shape)
                used.add(p + gg + ".weight")
            config["mtp_num_hidden_layers"] = heads_mtp
        gguf.check_all_used(used)
        return GGUFModel(self, config, arrays, norms_plus_one=True)

    def gguf_mlp_config(self, gguf: GGUFContents) -> dict[str, Any]:
        """The config keys of the MLP (and of a mixture of experts) from a file's keys."""
        return {"intermediate_size": gguf.size(self.gguf_architecture + ".feed_forward_length")}

    def gguf_beta_alpha(self, value_heads: int, hidden: int) -> dict[str, tuple[str, tuple[int, int]]]:
        """The file's tensors of the DeltaNet's beta and decay projections (GGUF name -> the
        Hugging Face name and shape)."""
        return {"ssm_beta": ("linear_attn.in_proj_b", (value_heads, hidden)),
                "ssm_alpha": ("linear_attn.in_proj_a", (value_heads, hidden))}

    def gguf_mlp(self, gguf: GGUFContents, layer: int, config: dict, arrays: dict, used: set) -> None:
        """Layer ``layer``'s SwiGLU MLP (ffn_gate, ffn_up, ffn_down) into ``arrays``."""
        gguf_dense_mlp(gguf, layer, config["intermediate_size"], config["hidden_size"], "mlp.", arrays, used)


FAMILY = Qwen35Family("qwen3_5", ("qwen3_5_text",), "qwen35", "Qwen3_5ForCausalLM",
                      "hybrid: Gated DeltaNet layers with a recurrent state, and gated full attention (sigmoid "
                      "output gate, (1 + w) q/k norms, partial rotary) where layer_types says (every 4th by default)")
