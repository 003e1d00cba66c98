"""Llama (LlamaForCausalLM): RMSNorm, rotary embeddings, grouped-query attention, SwiGLU; and the
translation every Llama-like family shares (the core's "llama" model computes them all).

``LlamaFamily`` reads a Hugging Face config and a GGUF file's ``<arch>.*`` keys into the core's
sizes and ``_LlamaOptions``. A Llama-like family module instantiates it with its facts (which
rope layout llama.cpp stored, which layers a ``sliding_window`` binds, fused matrices, experts,
partial rotary), or subclasses it where its transformers class reads keys of its own (Granite's
multipliers, SmolLM3's rotary-free layers): see docs/adding-a-family.md.

Everything else comes from the file: head_dim (``head_dim`` / ``attention.key_length``), the
rotary width (``partial_rotary_factor`` / ``rope.dimension_count``), rope scaling
(``rope_parameters`` / ``rope.scaling.*``; LongRoPE's factors from the ``rope_factors_long`` /
``_short`` tensors), biases and q/k norms (used where their tensors exist).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from kvgen import _core
from kvgen.families.config_values import (
    boolean,
    checked_window,
    epsilon,
    given,
    integer_or,
    layer_windows,
    positive,
    present,
)
from kvgen.families.family import Family, GGUFModel
from kvgen.loaders.gguf.model import GGUFContents, unpermute
from kvgen.loaders.rope import rotary


def read_sizes(config: dict) -> dict[str, int]:
    """The sizes every Llama-like config names (transformers' key names), in _ModelConfig's."""
    vocab_size, context_length = positive(config, "vocab_size"), positive(config, "max_position_embeddings")
    hidden, layers = positive(config, "hidden_size"), positive(config, "num_hidden_layers")
    heads = positive(config, "num_attention_heads")
    kv_heads = integer_or(config, "num_key_value_heads", heads)
    head_dim = integer_or(config, "head_dim", hidden // heads)
    intermediate = positive(config, "intermediate_size")
    return dict(vocab_size=vocab_size, context_length=context_length, hidden=hidden, layers=layers, heads=heads,
                kv_heads=kv_heads, head_dim=head_dim, intermediate=intermediate)


def check_window(config: dict, context: int) -> None:
    """Sliding-window attention that would bind within the context is refused (for families
    whose transformers class has no window); a window at least as long as the context changes
    nothing."""
    window = config.get("sliding_window")
    layer_types = config.get("layer_types")
    sliding = window is not None and config.get("use_sliding_window", True) is not False
    if isinstance(layer_types, list) and "sliding_attention" not in layer_types and "use_sliding_window" in config:
        sliding = False
    if sliding and (isinstance(window, bool) or not isinstance(window, int) or window < context):
        raise ValueError(f"model config: sliding_window = {window!r:.40} is shorter than the context "
                         f"({context} positions): sliding-window attention is not supported for this family")


def split_fused(fused: dict, arrays: dict, sizes: dict[str, int]) -> dict:
    """``arrays`` with the ``fused`` matrices (and their biases) split by rows into the
    separate Llama names the core reads. A split is a view of the same memory: float arrays
    as row slices, quantized or 16-bit ones (kvgen.loaders.quantize.QuantizedTensor) as
    slices of their rows of blocks. ``sizes``: "q" = heads x head_dim, "kv" = kv_heads x
    head_dim, "i" = the MLP width. ValueError naming a tensor whose rows do not add up."""
    if not fused:
        return arrays
    from kvgen.loaders.quantize import split_rows

    out = {}
    for name, w in arrays.items():
        stem, _, kind = name.rpartition(".")
        which = next((f for f in fused if stem.endswith(f)), None)
        if which is None:
            out[name] = w
            continue
        prefix = stem[: -len(which)]
        parts = fused[which]
        rows = [sizes[share] for _, share in parts]
        for (part, _), piece in zip(parts, split_rows(w, rows, name)):
            out[f"{prefix}{part}.{kind}"] = piece
    return out


def rename_suffixes(renamed: dict, arrays: dict) -> dict:
    """``arrays`` with each name ending in a key of ``renamed`` (before ``.weight`` / ``.bias``)
    given the name that key maps to, all at once (a name renamed is not renamed again)."""
    if not renamed:
        return arrays
    out = {}
    for name, w in arrays.items():
        stem, _, kind = name.rpartition(".")
        which = next((old for old in renamed if stem.endswith("." + old)), None)
        out[f"{stem[: -len(which)]}{renamed[which]}.{kind}" if which else name] = w
    return out


def halves_from_pairs(arrays: dict, heads: int, kv_heads: int, rotary_dim: int = 0) -> dict:
    """``arrays`` with the q_proj / k_proj rows (weights and biases) of each head reordered from
    a rotary embedding over adjacent pairs of dimensions into kvgen's (i, i + rotary_dim / 2)
    pairs (unpermute: llama.cpp's "norm" layout is the same order). ``rotary_dim``: the leading
    rows of each head that rotate (0: all of them; the others stay where they are, GLM-4's
    partial rotary). A 16-bit matrix's rows are reordered as they are stored (a copy of that
    matrix, not a conversion)."""
    from kvgen.loaders.quantize import QuantizedTensor

    counts = {"self_attn.q_proj": heads, "self_attn.k_proj": kv_heads}
    out = dict(arrays)
    for name, w in arrays.items():
        stem, _, kind = name.rpartition(".")
        count = next((h for suffix, h in counts.items() if stem.endswith(suffix)), 0)
        if not count or kind not in ("weight", "bias"):
            continue
        if isinstance(w, QuantizedTensor):
            rows = _halves_from_pairs(w.data.reshape(w.shape[0], -1), count, rotary_dim)
            out[name] = QuantizedTensor(w.type, rows.reshape(-1), w.shape)
        else:
            out[name] = _halves_from_pairs(np.asarray(w), count, rotary_dim)
    return out


def _halves_from_pairs(w: np.ndarray, heads: int, rotary_dim: int) -> np.ndarray:
    """The rows of w (heads x head_dim, ...), each head's first rotary_dim (0: all) unpermuted."""
    if not rotary_dim or w.shape[0] == heads * rotary_dim:
        return unpermute(w, heads)
    if w.shape[0] % heads or rotary_dim > w.shape[0] // heads:
        raise ValueError(f"q/k projection with {w.shape[0]} rows does not split into {heads} heads of at least "
                         f"{rotary_dim} rotary dimensions")
    per_head = w.reshape(heads, w.shape[0] // heads, *w.shape[1:])
    out = per_head.copy()
    rotating = np.ascontiguousarray(per_head[:, :rotary_dim]).reshape(heads * rotary_dim, *w.shape[1:])
    out[:, :rotary_dim] = unpermute(rotating, heads).reshape(heads, rotary_dim, *w.shape[1:])
    return out.reshape(w.shape)


@dataclass(frozen=True)
class LlamaFamily(Family):
    """A family the core's Llama model computes, with the facts its files do not state."""

    core = "llama"
    activation = ("hidden_act", "silu", frozenset({"silu"}))
    refused = {"pretraining_tp": (1, None)}  # numerics only: accepted either way

    # llama.cpp's converter permuted the q/k rows so that rotary pairs are adjacent (its
    # "norm" rope layout); kvgen rotates pairs (i, i + d/2) and undoes it. Families with
    # llama.cpp's "neox" layout are stored as transformers stores them.
    gguf_permuted_qk: bool = False
    # Which layers attend over ``sliding_window``, as the transformers class places it
    # (layer_windows): "all" (every layer, whenever the config has a window),
    # "max_window_layers" (only with use_sliding_window, the layers layer_types names, by
    # default those from max_window_layers on) or "layer_types" (the layers layer_types names,
    # by default the rotary-free ones when use_sliding_window is set). None: the class has no
    # window, and one shorter than the context is refused.
    sliding_layers: Optional[str] = None
    # HF tensor suffix of a fused matrix -> the (suffix, share) parts it splits into by rows,
    # share in units of the config sizes ("q", "kv", "i"); see split_fused.
    fused: dict = field(default_factory=dict)
    # The rotary embedding may cover a part of head_dim (partial_rotary_factor).
    partial_rotary: bool = False
    # The checkpoint rotates adjacent pairs of each head's dimensions (transformers' GLM-style
    # rotate_half, ERNIE 4.5, GLM-4 over its rotary part): its q/k rows are reordered per head
    # into kvgen's (i, i + d/2) pairs at load, and so are a GGUF file's, stored the same way.
    interleaved_rotary: bool = False
    # HF tensor suffix -> the name the core reads, for the norms a class names otherwise: the
    # core's are Llama's and GLM-4's (input_layernorm and post_attention_layernorm before each
    # branch, post_self_attn_layernorm and post_mlp_layernorm after it; each where it exists).
    renamed: dict = field(default_factory=dict)
    # The model_type of this family's windowed relative, whose checkpoints llama.cpp's converter
    # writes as files of this family's architecture without the window (Mistral's as "llama"
    # files): such a file given its window (Model.load's sliding_window) is read as that family.
    gguf_windowed_as: Optional[str] = None
    # Mixture of experts: the layers with a router run their experts (num_local_experts /
    # num_experts, num_experts_per_tok, moe_intermediate_size, norm_topk_prob); llama.cpp
    # always renormalises the chosen experts' weights (its files do not store norm_topk_prob).
    moe: bool = False

    # ---- a Hugging Face config ----

    def sizes(self, config: dict) -> "_core._ModelConfig":
        read = read_sizes(config)
        extra: dict[str, Any] = {}
        if self.sliding_layers is not None:
            windows = self.layer_windows(config, read["layers"])
            if windows is not None:
                extra["layer_windows"] = windows
        if self.moe:
            # transformers 5 writes num_local_experts (num_experts is its alias)
            experts_key = "num_local_experts" if present(config, "num_local_experts") else "num_experts"
            extra.update(experts=positive(config, experts_key),
                         experts_per_token=positive(config, "num_experts_per_tok"),
                         expert_intermediate=positive(config, "moe_intermediate_size"))
        sizes = _core._ModelConfig(architecture=self.core, **read, **extra)
        sizes.validate()
        return sizes

    def rope_layers(self, config: dict, layers: int) -> Optional[list[int]]:
        """Per layer, 1 where it applies the rotary embedding; None: every layer."""
        return None

    def layer_windows(self, config: dict, layers: int) -> Optional[list[int]]:
        """Per layer, the sliding window (0: full attention), as the transformers class
        applies ``sliding_window`` (``sliding_layers``); None: no window."""
        rule = self.sliding_layers
        window = config.get("sliding_window")
        types = config.get("layer_types")
        if rule == "max_window_layers" and config.get("use_sliding_window") is not True:
            window = None
        if rule == "layer_types":
            if types is None:
                if config.get("use_sliding_window") is not True or window is None:
                    return None
                rope = self.rope_layers(config, layers) or [1] * layers
                types = ["full_attention" if r else "sliding_attention" for r in rope]
            elif isinstance(types, list) and "sliding_attention" not in types:
                return None
            elif window is None:  # transformers: "Could not find a `sliding_window` argument in the config"
                raise ValueError("model config: layer_types names sliding_attention layers but sliding_window is "
                                 "not set")
        if window is None:
            return None
        window = checked_window(window)
        if rule == "all":
            return [window] * layers
        if types is None:
            first = integer_or(config, "max_window_layers", 28)
            if first < 0:
                raise ValueError(f"model config: max_window_layers = {first} must not be negative")
            types = ["sliding_attention" if i >= first else "full_attention" for i in range(layers)]
        return layer_windows(types, layers, window)

    def extra_options(self, config: dict) -> dict[str, Any]:
        """_LlamaOptions fields set from config keys of the family's own (None: the default)."""
        return {}

    def options(self, config: dict, sizes: "_core._ModelConfig",
                rope_freqs: Optional[np.ndarray] = None) -> "_core._LlamaOptions":
        """The core options, from the config keys the transformers class reads. rope_freqs: a
        GGUF file's rope_freqs tensor, dividing the computed frequencies."""
        if self.sliding_layers is None:
            check_window(config, sizes.context_length)
        rope = rotary(config, sizes.head_dim, partial=self.partial_rotary)
        freq = rope.inv_freq
        if rope_freqs is not None:
            if rope_freqs.shape != freq.shape:
                raise ValueError(f"rope_freqs has {rope_freqs.size} values for {freq.size} rotary frequencies")
            freq = np.ascontiguousarray(freq / rope_freqs.astype(np.float32), dtype=np.float32)
        options: dict[str, Any] = dict(rms_norm_eps=epsilon(config, "rms_norm_eps"),
                                       rope_layers=self.rope_layers(config, sizes.layers))
        if rope.dim != sizes.head_dim:
            options["rotary_dim"] = rope.dim
        if rope.inv_freq_long is not None:
            options.update(inv_freq_long=rope.inv_freq_long, original_context=rope.original_context)
        if rope.attention_factor != 1.0:  # LongRoPE's, YaRN's: multiplies cos and sin
            options["rope_attention_factor"] = rope.attention_factor
        if self.moe:
            options["experts"] = self.expert_options(config)
        options.update(self.extra_options(config))
        return _core._LlamaOptions(inv_freq=freq, **given(**options))

    def expert_options(self, config: dict) -> "_core._ExpertOptions":
        """How the family's mixture of experts routes and activates (moe)."""
        return _core._ExpertOptions(**given(norm_topk_prob=boolean(config, "norm_topk_prob")))

    def _split(self, arrays: dict, sizes: "_core._ModelConfig") -> dict:
        return split_fused(self.fused, arrays, {"q": sizes.heads * sizes.head_dim,
                                                "kv": sizes.kv_heads * sizes.head_dim, "i": sizes.intermediate})

    def checkpoint_arrays(self, config: dict, arrays: dict, dtype: Optional[str]) -> dict:
        arrays = rename_suffixes(self.renamed, arrays)
        if self.interleaved_rotary:
            sizes = self.sizes(config)
            rope = rotary(config, sizes.head_dim, partial=self.partial_rotary)
            arrays = halves_from_pairs(arrays, sizes.heads, sizes.kv_heads, rope.dim)
        if dtype is not None:  # fused matrices split before they are quantized
            arrays = self._split(arrays, self.sizes(config))
        return super().checkpoint_arrays(config, arrays, dtype)

    def build_core(self, config: dict, arrays: dict, *, activations: str = "int8x2",
                   rope_freqs: Optional[np.ndarray] = None, norms_plus_one: bool = False) -> "_core._Model":
        self.check_config(config)
        sizes = self.sizes(config)
        arrays = self._split(arrays, sizes)
        return _core._Model.llama(sizes, self.options(config, sizes, rope_freqs), arrays, activations=activations)

    def long_rope_context(self, config: dict, core: "_core._Model") -> int:
        """The original context of a model with LongRoPE's short and long factors
        (rope_parameters' original_max_position_embeddings). transformers computes a forward
        call with the long factors when its positions reach past it, and its Phi-3 ``generate``
        recomputes the whole sequence when generation crosses it."""
        if core.architecture != "llama" or not isinstance(config, dict):
            return 0
        head_dim = config.get("head_dim") or core.hidden_size // core.num_heads
        rope = rotary(config, head_dim, partial=self.partial_rotary)
        return rope.original_context if rope.inv_freq_long is not None else 0

    # ---- a GGUF file ----

    def gguf_config(self, gguf: GGUFContents, config: dict) -> dict[str, Any]:
        """Config keys of the family's own from the file's ``<arch>.*`` keys (or, for a fact
        its files do not store, llama.cpp's fixed rule for the family)."""
        return {}

    def from_gguf(self, gguf: GGUFContents) -> GGUFModel:
        """How GGUF differs from Hugging Face checkpoints, and what is undone here:
        llama.cpp's converter permutes the rows of q_proj and k_proj of the families it rotates
        in its "norm" layout (gguf_permuted_qk), reversed per head at load; fused qkv and
        gate/up matrices (Phi-3) stay fused, split by rows later like a checkpoint's; a mixture
        of experts' 3-D expert tensors stay whole, cut into matrices by the core."""
        path = gguf.path
        a = self.gguf_architecture + "."
        hidden, heads, kv_heads, head_dim = gguf.attention_shape(self.gguf_architecture)
        value_dim = gguf.size(a + "attention.value_length", head_dim)
        if value_dim != head_dim:
            raise ValueError(f"{path}: attention.value_length = {value_dim} differs from key_length = {head_dim}")
        rope_dims = gguf.size(a + "rope.dimension_count", head_dim)
        if rope_dims > head_dim or rope_dims % 2 or (rope_dims != head_dim and not self.partial_rotary):
            raise ValueError(f"{path}: rope.dimension_count = {rope_dims} of head_dim {head_dim} is not supported "
                             f"for {self.name} (kvgen rotates all of head_dim, or an even part of it for phi3)")
        embed_shape = gguf.embedding_shape(hidden)
        vocab = embed_shape[0]
        embed = gguf.matrix("token_embd.weight", embed_shape)
        context = gguf.size(a + "context_length")
        config: dict[str, Any] = {
            "model_type": self.model_types[0],
            "vocab_size": vocab,
            "max_position_embeddings": context,
            "hidden_size": hidden,
            "num_hidden_layers": gguf.size(a + "block_count"),
            "num_attention_heads": heads,
            "num_key_value_heads": kv_heads,
            "head_dim": head_dim,
            "intermediate_size": gguf.size(a + "feed_forward_length"),
            "rms_norm_eps": gguf.get(a + "attention.layer_norm_rms_epsilon", float),
            "tie_word_embeddings": "output.weight" not in gguf.tensors,
        }
        config.update(self.gguf_window(gguf, config["num_hidden_layers"]))
        if rope_dims != head_dim:  # as transformers' int(head_dim * partial_rotary_factor) gives it back
            factor = rope_dims / head_dim
            config["partial_rotary_factor"] = factor if int(head_dim * factor) == rope_dims else \
                math.nextafter(factor, 1.0)
        used = {"token_embd.weight", "output_norm.weight"}
        rope: dict[str, Any] = {"rope_type": "default", "rope_theta": gguf.get(a + "rope.freq_base", float, 10000.0)}
        scaling = gguf.get(a + "rope.scaling.type", str, "none")
        if "rope_factors_long.weight" in gguf.tensors or scaling == "longrope":
            rope.update(_longrope(gguf, a, rope_dims, context))
            used |= {"rope_factors_long.weight", "rope_factors_short.weight"}
        elif scaling == "linear":
            rope.update(rope_type="linear", factor=gguf.get(a + "rope.scaling.factor", float))
        elif scaling == "yarn":
            rope.update(_yarn(gguf, a, context))
        elif scaling != "none":
            raise ValueError(f"{path}: rope scaling {scaling!r} is not supported (supported: none, linear, yarn, "
                             "longrope)")
        config["rope_parameters"] = rope
        config.update(self.gguf_config(gguf, config))
        if self.moe:  # llama.cpp always renormalises the chosen experts' weights
            config.update(num_experts=gguf.size(a + "expert_count"),
                          num_experts_per_tok=gguf.size(a + "expert_used_count"),
                          moe_intermediate_size=gguf.size(a + "expert_feed_forward_length"), norm_topk_prob=True)
        C, I, L = hidden, config["intermediate_size"], config["num_hidden_layers"]
        arrays = {"model.embed_tokens.weight": embed, "model.norm.weight": gguf.vector("output_norm.weight", (C,))}
        if "output.weight" in gguf.tensors:
            arrays["lm_head.weight"] = gguf.matrix("output.weight", (vocab, C))
            used.add("output.weight")
        if "output.bias" in gguf.tensors:  # ERNIE 4.5 MoE's with use_bias (its head may be tied)
            arrays["lm_head.bias"] = gguf.vector("output.bias", (vocab,))
            used.add("output.bias")
        rope_freqs = None
        if "rope_freqs.weight" in gguf.tensors:  # Llama 3.1 scaling, stored as divisors of inv_freq
            rope_freqs = gguf.vector("rope_freqs.weight", (rope_dims // 2,))
            used.add("rope_freqs.weight")
        q, kv = heads * head_dim, kv_heads * head_dim
        # q/k norms per head, or over the whole projection (OLMo 2's), as their sizes say
        across = "blk.0.attn_q_norm.weight" in gguf.tensors and gguf.shape("blk.0.attn_q_norm.weight") != (head_dim,)
        # llama.cpp's post_attention_norm is a norm after attention (OLMo 2, GLM-4: with post_ffw_norm)
        # or, in a file with neither ffn_norm nor post_ffw_norm, the MLP's norm before it (GPT-OSS's
        # post_attention_layernorm)
        mlp_pre_norm = ("blk.0.post_attention_norm.weight" in gguf.tensors and "blk.0.ffn_norm.weight" not in
                        gguf.tensors and "blk.0.post_ffw_norm.weight" not in gguf.tensors)
        names = {"attn_norm": ("input_layernorm", (C,)), "ffn_norm": ("post_attention_layernorm", (C,)),
                 "post_attention_norm": ("post_attention_layernorm" if mlp_pre_norm else "post_self_attn_layernorm",
                                         (C,)),
                 "post_ffw_norm": ("post_mlp_layernorm", (C,)),
                 "attn_q_norm": ("self_attn.q_norm", (q if across else head_dim,)),
                 "attn_k_norm": ("self_attn.k_norm", (kv if across else head_dim,)),
                 "attn_output": ("self_attn.o_proj", (C, q)), "ffn_down": ("mlp.down_proj", (C, I))}
        # norms where the file has them (the core checks that each branch has one at least)
        optional = {"attn_q_norm", "attn_k_norm", "attn_norm", "ffn_norm", "post_attention_norm", "post_ffw_norm"}
        if "blk.0.attn_qkv.weight" in gguf.tensors:  # fused (Phi-3): split by self.fused later
            names.update({"attn_qkv": ("self_attn.qkv_proj", (q + 2 * kv, C))})
        else:
            names.update({"attn_q": ("self_attn.q_proj", (q, C)), "attn_k": ("self_attn.k_proj", (kv, C)),
                          "attn_v": ("self_attn.v_proj", (kv, C))})
        if "blk.0.ffn_gate.weight" in gguf.tensors or self.moe:
            names.update({"ffn_gate": ("mlp.gate_proj", (I, C)), "ffn_up": ("mlp.up_proj", (I, C))})
        else:  # fused gate | up, stored as ffn_up (Phi-3)
            names.update({"ffn_up": ("mlp.gate_up_proj", (2 * I, C))})
        # rows rotating adjacent pairs: over all of head_dim unpermuted as read, over a part of it
        # (interleaved_rotary, GLM-4) reordered as a checkpoint's are, after the loop
        permute = {"attn_q": heads, "attn_k": kv_heads} if self.gguf_permuted_qk and not self.interleaved_rotary \
            else {}
        for layer in range(L):
            sparse = self.moe and f"blk.{layer}.ffn_gate_inp.weight" in gguf.tensors  # a router: experts
            if sparse:
                gguf_experts(gguf, arrays, used, layer, config)
                gguf_shared_expert(gguf, arrays, used, layer, C)
            sinks = f"blk.{layer}.attn_sinks.weight"
            if sinks in gguf.tensors:  # attention sinks (GPT-OSS): a logit per query head
                arrays[f"model.layers.{layer}.self_attn.sinks"] = gguf.vector(sinks, (heads,))
                used.add(sinks)
            for gg, (hf, shape) in names.items():
                if sparse and gg in ("ffn_gate", "ffn_up", "ffn_down"):
                    continue
                for kind, kind_shape in (("weight", shape), ("bias", shape[:1])):
                    src = f"blk.{layer}.{gg}.{kind}"
                    if (kind == "bias" or gg in optional) and src not in gguf.tensors:
                        continue  # optional biases (attention_bias / mlp_bias models) and q/k norms
                    heads_here = permute.get(gg, 0)
                    if kind == "weight" and len(shape) == 2:
                        w = gguf.matrix(src, kind_shape, permute_heads=heads_here)
                    else:
                        w = gguf.vector(src, kind_shape)
                        w = unpermute(w, heads_here) if heads_here else w
                    arrays[f"model.layers.{layer}.{hf}.{kind}"] = w
                    used.add(src)
        gguf.check_all_used(used)
        if self.interleaved_rotary:
            arrays = halves_from_pairs(arrays, heads, kv_heads, rope_dims)
        notes = []
        if config.get("sliding_window") and self.sliding_layers is None and self.gguf_windowed_as:
            config["model_type"] = self.gguf_windowed_as  # read as that family's (registry.read_gguf)
        elif self.sliding_layers is not None and gguf.get(a + "attention.sliding_window", int, None) is None:
            notes.append(f"the file stores no sliding window (llama.cpp's converter does not write {self.name}'s): "
                         "kvgen runs full attention on every layer, as llama.cpp does; a checkpoint that windowed its "
                         "layers computes otherwise past the window (Model.load(..., sliding_window=N), kvgen "
                         "--sliding-window N)")
        return GGUFModel(self, config, arrays, rope_freqs=rope_freqs, notes=notes)

    def gguf_window(self, gguf: GGUFContents, layers: int) -> dict[str, Any]:
        """The sliding-window keys of a file's config: ``attention.sliding_window`` (llama.cpp: 0 =
        none, Phi-4), on the layers ``attention.sliding_window_pattern`` flags, else on every layer,
        in the keys the family's rule reads (layer_windows)."""
        a = self.gguf_architecture + "."
        window = gguf.get(a + "attention.sliding_window", int, 0)
        if not window:
            return {}
        if self.sliding_layers not in ("max_window_layers", "layer_types"):
            return {"sliding_window": window}
        pattern = gguf.flags(a + "attention.sliding_window_pattern", layers) or [True] * layers
        return {"sliding_window": window, "use_sliding_window": True,
                "layer_types": ["sliding_attention" if s else "full_attention" for s in pattern]}


def gguf_experts(gguf: GGUFContents, arrays: dict, used: set, layer: int, config: dict) -> None:
    """A mixture-of-experts layer's router (ffn_gate_inp, (E, C)) and its experts' 3-D
    matrices (ffn_{gate,up,down}_exps, (E, out, in)), which stay quantized: one (E, out, in)
    QuantizedTensor each, cut into per-expert matrices by the core; their biases (the router's
    (E), the experts' (E, out)) where the file has them (GPT-OSS), and the router's selection
    bias (exp_probs_b, (E): ERNIE 4.5's)."""
    E, C, Ie = config["num_experts"], config["hidden_size"], config["moe_intermediate_size"]
    p, hf = f"blk.{layer}.", f"model.layers.{layer}.mlp."
    arrays[hf + "gate.weight"] = gguf.matrix(p + "ffn_gate_inp.weight", (E, C))
    used.add(p + "ffn_gate_inp.weight")
    biases = {p + "ffn_gate_inp.bias": (hf + "gate.bias", (E,))}
    for gg, proj, shape in (("ffn_gate_exps", "gate_proj", (E, Ie, C)), ("ffn_up_exps", "up_proj", (E, Ie, C)),
                            ("ffn_down_exps", "down_proj", (E, C, Ie))):
        arrays[f"{hf}experts.{proj}.weight"] = gguf.stacked(p + gg + ".weight", shape)
        used.add(p + gg + ".weight")
        biases[p + gg + ".bias"] = (f"{hf}experts.{proj}.bias", shape[:2])
    for name, (to, shape) in biases.items():
        if name in gguf.tensors:
            arrays[to] = gguf.vector(name, shape)
            used.add(name)
    selection = p + "exp_probs_b.bias"
    if selection in gguf.tensors:
        arrays[hf + "gate.e_score_correction_bias"] = _vector_of(gguf, selection, E)
        used.add(selection)


def gguf_shared_expert(gguf: GGUFContents, arrays: dict, used: set, layer: int, hidden: int) -> None:
    """A mixture-of-experts layer's shared expert where the file has one (ffn_{gate,up,down}_shexp,
    and their biases: ERNIE 4.5's, Qwen3.5-MoE's), as wide as its tensors (the core checks the
    width against the config's), and its sigmoid gate (ffn_gate_inp_shexp, (C): Qwen3.5-MoE's)."""
    p, hf, C = f"blk.{layer}.", f"model.layers.{layer}.mlp.", hidden
    if p + "ffn_gate_shexp.weight" not in gguf.tensors:
        return
    shape = gguf.shape(p + "ffn_gate_shexp.weight")
    Is = shape[0] if len(shape) == 2 else 0
    for gg, proj, shape in (("ffn_gate_shexp", "gate_proj", (Is, C)), ("ffn_up_shexp", "up_proj", (Is, C)),
                            ("ffn_down_shexp", "down_proj", (C, Is))):
        arrays[f"{hf}shared_expert.{proj}.weight"] = gguf.matrix(p + gg + ".weight", shape)
        used.add(p + gg + ".weight")
        if p + gg + ".bias" in gguf.tensors:
            arrays[f"{hf}shared_expert.{proj}.bias"] = gguf.vector(p + gg + ".bias", shape[:1])
            used.add(p + gg + ".bias")
    gate = p + "ffn_gate_inp_shexp.weight"
    if gate in gguf.tensors:
        arrays[hf + "shared_expert_gate.weight"] = _vector_of(gguf, gate, C).reshape(1, C)
        used.add(gate)


def _vector_of(gguf: GGUFContents, name: str, size: int) -> np.ndarray:
    """Tensor ``name`` as a float32 vector of ``size`` values (llama.cpp's converter stores some as (1, size))."""
    v = gguf.vector(name)
    if v.size != size:
        raise ValueError(f"{gguf.path}: {name} has {v.size} values, not {size}")
    return v.reshape(size)


def _yarn(gguf: GGUFContents, a: str, context: int) -> dict:
    """YaRN's rope_parameters (transformers' names) from the keys llama.cpp's converter writes:
    the factor and the original context always; the attention factor and beta_fast / beta_slow
    where the checkpoint's config set them; the yarn_log_multiplier (the config's
    mscale_all_dim, with mscale 1: llama.cpp's reading) where the family's converter writes it."""
    params: dict[str, Any] = {"rope_type": "yarn", "factor": gguf.get(a + "rope.scaling.factor", float),
                              "original_max_position_embeddings":
                                  gguf.size(a + "rope.scaling.original_context_length", context)}
    for key, hf in (("yarn_attn_factor", "attention_factor"), ("yarn_beta_fast", "beta_fast"),
                    ("yarn_beta_slow", "beta_slow")):
        value = gguf.get(a + "rope.scaling." + key, float, None)
        if value is not None:
            params[hf] = value
    log_multiplier = gguf.get(a + "rope.scaling.yarn_log_multiplier", float, 0.0)
    if log_multiplier:
        params.update(mscale=1.0, mscale_all_dim=log_multiplier)
    return params


def _longrope(gguf: GGUFContents, a: str, rope_dims: int, context: int) -> dict:
    """LongRoPE's rope_parameters (transformers' names) from a Phi-3 file: the factors from the
    rope_factors_long / _short tensors, the original context and the cos/sin attention factor."""
    factors = {}
    for which in ("long", "short"):
        t = gguf.vector(f"rope_factors_{which}.weight", (rope_dims // 2,))
        if not (t > 0).all():
            raise ValueError(f"{gguf.path}: rope_factors_{which}.weight holds factors that are not positive")
        factors[f"{which}_factor"] = [float(f) for f in t]
    original = gguf.size(a + "rope.scaling.original_context_length", context)
    params: dict[str, Any] = {"rope_type": "longrope", **factors, "original_max_position_embeddings": original}
    attention = gguf.get(a + "rope.scaling.attn_factor", float, None)
    if attention is not None:
        params["attention_factor"] = attention
    return params


FAMILY = LlamaFamily("llama", ("llama",), "llama", "LlamaForCausalLM",
                     "Llama itself: RMSNorm, rotary embeddings, grouped-query attention, SwiGLU",
                     gguf_permuted_qk=True, gguf_windowed_as="mistral")
