"""LFM2 (Lfm2ForCausalLM): a hybrid of gated short convolutions and attention. Most layers are
``conv`` layers (in_proj to B, C and x; y = C * conv(B * x), a causal depthwise convolution of
kernel ``conv_L_cache`` whose window is a recurrent state per sequence; out_proj), the others
grouped-query attention with RMSNorm of each head of q and k; every layer has a SwiGLU
feed-forward whose width transformers adjusts (``block_auto_adjust_ff_dim``); the final norm is
``embedding_norm``. The core's "lfm2" model computes it (cpp/src/models/lfm2.cpp).

Which layers convolve: ``layer_types`` ("conv" / "full_attention"), else ``full_attn_idxs`` (the
attention layers; absent: all), as Lfm2Config reads them; in a GGUF file from llama.cpp's
converter, the per-layer ``attention.head_count_kv`` (0 for a convolution layer). The engine
resumes a cached prefix and rolls a rejected draft back from snapshots of the state
(kvgen.generation.prefix_cache, kvgen.generation.speculative_rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from kvgen import _core
from kvgen.families.capabilities import Capabilities
from kvgen.families.config_values import boolean, epsilon, number, positive
from kvgen.families.family import Family, GGUFModel
from kvgen.families.llama import read_sizes
from kvgen.loaders.gguf.model import GGUFContents
from kvgen.loaders.rope import rotary

#: Lfm2Config's defaults for the keys it reads beyond Llama's.
_ROPE_THETA = 1000000.0
_CONV_KERNEL = 3

#: The matrices of a checkpoint the core multiplies (quantized with ``dtype``).
_MATRICES = ("_proj.weight", "feed_forward.w1.weight", "feed_forward.w2.weight", "feed_forward.w3.weight",
             "embed_tokens.weight", "lm_head.weight")


def layer_is_conv(config: dict, layers: int) -> list[bool]:
    """Per layer, whether it is a short convolution, as Lfm2Config reads ``layer_types``
    (else ``full_attn_idxs``, the attention layers; neither: every layer attends)."""
    types = config.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers or not set(types) <= {"conv", "full_attention"}:
            raise ValueError(f"model config: layer_types must name 'conv' or 'full_attention' for each of the "
                             f"{layers} layers, got {types!r:.80}")
        return [t == "conv" for t in types]
    idxs = config.get("full_attn_idxs")
    if idxs is None:
        return [False] * layers
    if not isinstance(idxs, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in idxs):
        raise ValueError(f"model config: full_attn_idxs must be a list of layer indices, got {idxs!r:.80}")
    outside = [i for i in idxs if not 0 <= i < layers]
    if outside:
        raise ValueError(f"model config: full_attn_idxs names layer {outside[0]}, outside the {layers} layers")
    return [i not in idxs for i in range(layers)]


def feed_forward_width(config: dict) -> int:
    """The SwiGLU width, as Lfm2MLP adjusts ``intermediate_size`` (``block_ff_dim``): with
    ``block_auto_adjust_ff_dim`` 2/3 of it, times ``block_ffn_dim_multiplier`` and rounded up
    to ``block_multiple_of`` (when a multiplier is set)."""
    width = positive(config, "block_ff_dim" if "block_ff_dim" in config else "intermediate_size")
    adjust = boolean(config, "block_auto_adjust_ff_dim")
    if adjust is False:
        return width
    width = int(2 * width / 3)
    multiplier = config.get("block_ffn_dim_multiplier", 1.0)
    if multiplier is None:  # transformers then keeps 2/3 of the width, unrounded
        return width
    number(config, "block_ffn_dim_multiplier")  # a finite number, else a ValueError naming it
    multiple = positive(config, "block_multiple_of") if "block_multiple_of" in config else 256
    width = int(multiplier * width)  # in Python's float, as transformers
    width = multiple * ((width + multiple - 1) // multiple)
    if width < 1:
        raise ValueError(f"model config: the feed-forward width ({width}) of intermediate_size, "
                         "block_ffn_dim_multiplier and block_multiple_of must be positive")
    return width


def conv_kernel(config: dict) -> int:
    """``conv_L_cache``, the short convolution's kernel (Lfm2Config's default 3)."""
    return positive(config, "conv_L_cache") if config.get("conv_L_cache") is not None else _CONV_KERNEL


def layer_kv_heads(gguf: GGUFContents, key: str, heads: int, layers: int) -> list[int]:
    """Per layer, the kv heads of a GGUF file's ``key`` as llama.cpp's converter writes it for a
    hybrid: an array with 0 for each recurrent layer and one count for every attention layer (a
    scalar: every layer attends); ValueError naming the key when it is not that."""
    from gguf.constants import GGUFValueType

    from kvgen.loaders.gguf.metadata import INTEGER_TYPES, read_number_array

    path = gguf.path
    stored = gguf.reader.fields.get(key)
    if stored is not None and stored.type == GGUFValueType.ARRAY:  # per layer, as llama.cpp's converter writes it
        try:
            counts = read_number_array(gguf.reader, key, set(INTEGER_TYPES), "head counts")
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
        per_layer = [int(k) for k in (() if counts is None else counts)]
    else:  # a scalar: every layer attends
        per_layer = [gguf.size(key, heads)] * layers
    if len(per_layer) != layers:
        raise ValueError(f"{path}: {key} has {len(per_layer)} entries for {layers} layers")
    kv_counts = {k for k in per_layer if k != 0}
    if len(kv_counts) > 1 or any(k < 0 for k in kv_counts):
        raise ValueError(f"{path}: {key} = {per_layer[:8]} must be 0 (a recurrent layer) or one kv head "
                         f"count for every attention layer")
    kv_heads = next(iter(kv_counts), heads)
    if heads % kv_heads:
        raise ValueError(f"{path}: attention.head_count = {heads} is not a multiple of head_count_kv = {kv_heads}")
    return per_layer


@dataclass(frozen=True)
class Lfm2Family(Family):
    """LFM2's translation: config.json's keys and GGUF's ``lfm2.*`` keys."""

    core = "lfm2"
    # Lfm2MLP and Lfm2ShortConv use SiLU and no activation whatever the config says
    activation = ("hidden_act", "silu", frozenset({"silu"}))

    def sizes(self, config: dict) -> "_core._ModelConfig":
        config = {**config, "intermediate_size": feed_forward_width(config)}
        config.pop("block_ff_dim", None)
        read = read_sizes(config)
        kernel = conv_kernel(config)
        conv = layer_is_conv(config, read["layers"])
        shapes = [(read["hidden"], kernel, 0, 0, 0) if c else (0, 0, 0, 0, 0) for c in conv]
        sizes = _core._ModelConfig(architecture=self.core, **read, recurrent_layers=shapes)
        sizes.validate()
        return sizes

    def check_config(self, config: dict) -> None:
        super().check_config(config)
        boolean(config, "conv_bias")  # a TypeError naming it unless true / false / absent

    def options(self, config: dict, sizes: "_core._ModelConfig") -> "_core._Lfm2Options":
        params = config if config.get("rope_parameters") or "rope_theta" in config else \
            {**config, "rope_theta": _ROPE_THETA}
        rope = rotary(params, sizes.head_dim)
        eps = epsilon(config, "norm_eps")
        return _core._Lfm2Options(inv_freq=rope.inv_freq, **({} if eps is None else {"norm_eps": eps}))

    def checkpoint_arrays(self, config: dict, arrays: dict, dtype: Optional[str]) -> dict:
        if dtype is None:
            return arrays
        from kvgen.loaders.quantize import LOAD_DTYPES, quantize, to_float32

        if dtype not in LOAD_DTYPES:
            raise ValueError(f"dtype={dtype!r} is not supported (choose one of: {', '.join(LOAD_DTYPES)}, or None "
                             "to keep the checkpoint's float32 weights)")
        out = {}
        for name, w in arrays.items():
            if len(w.shape) == 2 and name.endswith(_MATRICES):
                if w.shape[1] % 32:
                    raise ValueError(f"dtype={dtype!r}: {name} has rows of {w.shape[1]} weights, not a multiple of "
                                     "the 32-weight quantization block")
                w = quantize(to_float32(w), dtype.upper())
            out[name] = w
        return out

    def build_core(self, config: dict, arrays: dict, *, activations: str = "int8x2",
                   rope_freqs: Optional[np.ndarray] = None, norms_plus_one: bool = False) -> "_core._Model":
        self.check_config(config)
        sizes = self.sizes(config)
        if rope_freqs is not None or norms_plus_one:
            raise ValueError("lfm2: a GGUF file's rope_freqs or 1 + w norms are not LFM2's")
        arrays = dict(arrays)
        # Lfm2Config: tie_embedding (LiquidAI's own key) over tie_word_embeddings, tied by default
        if config.get("tie_embedding", config.get("tie_word_embeddings", True)) is not False:
            arrays.pop("lm_head.weight", None)  # tied: transformers' head is the embedding table
        for name, w in arrays.items():  # nn.Conv1d's (channels, 1, kernel) depthwise weight, as (channels, kernel)
            if name.endswith("conv.conv.weight") and len(w.shape) == 3 and w.shape[1] == 1:
                arrays[name] = np.ascontiguousarray(w, dtype=np.float32).reshape(w.shape[0], w.shape[2])
        return _core._Model.lfm2(sizes, self.options(config, sizes), arrays, activations=activations)

    def capabilities(self, config: dict, core: "_core._Model") -> Capabilities:
        # a state per sequence: cached prefixes resume from state snapshots, rejected drafts from checkpoints
        return Capabilities(partial_prefix_reuse=False, recurrent_state=True)

    # ---- a GGUF file (llama.cpp's convert_hf_to_gguf.py, LFM2Model) ----

    def from_gguf(self, gguf: GGUFContents) -> GGUFModel:
        """llama.cpp's converter writes the adjusted feed-forward width (``feed_forward_length``),
        the layer pattern as a per-layer ``attention.head_count_kv`` (0: a convolution layer),
        ``shortconv.l_cache``, the depthwise kernel as (channels, kernel), ``embedding_norm`` as
        ``token_embd_norm``; it permutes nothing (llama.cpp rotates LFM2 in its "neox" layout,
        as transformers does)."""
        path = gguf.path
        a = "lfm2."
        hidden = gguf.size(a + "embedding_length")
        heads = gguf.size(a + "attention.head_count")
        layers = gguf.size(a + "block_count")
        head_dim = gguf.size(a + "attention.key_length", max(hidden // heads, 1))
        key = a + "attention.head_count_kv"
        per_layer = layer_kv_heads(gguf, key, heads, layers)
        kv_heads = next((k for k in per_layer if k), heads)
        conv = [k == 0 for k in per_layer]
        embed_shape = gguf.embedding_shape(hidden)
        vocab = embed_shape[0]
        kernel = gguf.size(a + "shortconv.l_cache", _CONV_KERNEL)
        ffn = gguf.size(a + "feed_forward_length")
        config: dict[str, Any] = {
            "model_type": self.model_types[0],
            "vocab_size": vocab,
            "max_position_embeddings": gguf.size(a + "context_length"),
            "hidden_size": hidden,
            "num_hidden_layers": layers,
            "num_attention_heads": heads,
            "num_key_value_heads": kv_heads,
            "head_dim": head_dim,
            "intermediate_size": ffn,
            "block_auto_adjust_ff_dim": False,  # feed_forward_length is the adjusted width
            "norm_eps": gguf.get(a + "attention.layer_norm_rms_epsilon", float),
            "conv_L_cache": kernel,
            "layer_types": ["conv" if c else "full_attention" for c in conv],
            "rope_parameters": {"rope_type": "default",
                                "rope_theta": gguf.get(a + "rope.freq_base", float, _ROPE_THETA)},
            "tie_word_embeddings": "output.weight" not in gguf.tensors,
        }
        rope_dims = gguf.size(a + "rope.dimension_count", head_dim)
        if rope_dims != head_dim:
            raise ValueError(f"{path}: rope.dimension_count = {rope_dims} differs from head_dim {head_dim} "
                             "(LFM2 rotates all of head_dim)")
        scaling = gguf.get(a + "rope.scaling.type", str, "none")
        if scaling != "none":
            raise ValueError(f"{path}: rope scaling {scaling!r} is not supported for lfm2")
        C, I = hidden, ffn
        q, kv = heads * head_dim, kv_heads * head_dim
        norm = "token_embd_norm.weight" if "token_embd_norm.weight" in gguf.tensors else "output_norm.weight"
        arrays: dict[str, Any] = {"model.embed_tokens.weight": gguf.matrix("token_embd.weight", embed_shape),
                                  "model.embedding_norm.weight": gguf.vector(norm, (C,))}
        used = {"token_embd.weight", norm}
        if "output.weight" in gguf.tensors:
            arrays["lm_head.weight"] = gguf.matrix("output.weight", (vocab, C))
            used.add("output.weight")
        common = {"attn_norm": ("operator_norm", (C,)), "ffn_norm": ("ffn_norm", (C,)),
                  "ffn_gate": ("feed_forward.w1", (I, C)), "ffn_up": ("feed_forward.w3", (I, C)),
                  "ffn_down": ("feed_forward.w2", (C, I))}
        attention = {"attn_q": ("self_attn.q_proj", (q, C)), "attn_k": ("self_attn.k_proj", (kv, C)),
                     "attn_v": ("self_attn.v_proj", (kv, C)), "attn_output": ("self_attn.out_proj", (C, q)),
                     "attn_q_norm": ("self_attn.q_layernorm", (head_dim,)),
                     "attn_k_norm": ("self_attn.k_layernorm", (head_dim,))}
        convolution = {"shortconv.in_proj": ("conv.in_proj", (3 * C, C)),
                       "shortconv.conv": ("conv.conv", (C, kernel)),
                       "shortconv.out_proj": ("conv.out_proj", (C, C))}
        for layer in range(layers):
            mixer = convolution if conv[layer] else attention
            other = attention if conv[layer] else convolution
            stray = [f"blk.{layer}.{gg}.weight" for gg in other if f"blk.{layer}.{gg}.weight" in gguf.tensors]
            if stray:
                kind = "a convolution" if conv[layer] else "an attention layer"
                raise ValueError(f"{path}: layer {layer} is {kind} by {key} but the file has {stray[0]}")
            for gg, (hf, shape) in {**common, **mixer}.items():
                for kind, kind_shape in (("weight", shape), ("bias", shape[:1])):
                    src = f"blk.{layer}.{gg}.{kind}"
                    if kind == "bias" and src not in gguf.tensors:
                        continue  # conv_bias models only
                    if kind == "weight" and len(shape) == 2 and gg != "shortconv.conv":
                        w = gguf.matrix(src, kind_shape)
                    else:
                        w = gguf.vector(src, kind_shape)
                    arrays[f"model.layers.{layer}.{hf}.{kind}"] = w
                    used.add(src)
        gguf.check_all_used(used)
        return GGUFModel(self, config, arrays)


FAMILY = Lfm2Family("lfm2", ("lfm2",), "lfm2", "Lfm2ForCausalLM",
                    "gated short convolutions (a recurrent window per sequence) beside attention layers with "
                    "q/k norms; an adjusted SwiGLU width")
