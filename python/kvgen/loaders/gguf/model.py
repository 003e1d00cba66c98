"""Reading GGUF model files.

The file is parsed and validated by kvgen.loaders.gguf.file (memory-mapped; every count, length
and offset checked against the file before use). Quantized matrices stay quantized: the
raw blocks of the types kvgen's core computes on (kvgen.loaders.quantize.PACKED_TYPES) go to the
core as they are, and are repacked there; Q2_K to Q6_K types without a kernel are converted
to Q8_0 at load. Float32 matrices are used in place (F16/BF16 ones are repacked in C++ like
the quantized ones); vectors (norms, biases) are read as float32 copies, so that the file's map closes once the
model is built. Any other tensor type is refused by name. Tensors are renamed to the
Hugging Face names the C++ models read, and the metadata becomes a Hugging Face style
config dict, its sizes checked to be positive and its floats finite.

The family comes from ``general.architecture`` (kvgen.loaders.families); its sizes and
options from the file's keys, prefixed by the architecture: head_dim from
``attention.key_length``, the rotary width from ``rope.dimension_count``, rope scaling from
``rope.scaling.*`` (LongRoPE's factors from the ``rope_factors_long``/``_short`` tensors),
Granite's multipliers from ``attention.scale``, ``embedding_scale``, ``residual_scale`` and
``logit_scale``; biases and q/k norms are used where their tensors exist.

How GGUF differs from Hugging Face checkpoints, and what is undone here:
- llama.cpp's converter permutes the rows of q_proj and k_proj of the families it rotates
  in its "norm" layout (Llama, Granite, SmolLM3) so that rotary pairs are adjacent; kvgen
  rotates in Hugging Face's rotate_half layout, so the permutation is reversed per head at
  load. Families in llama.cpp's "neox" layout (Qwen2, Qwen3, Phi-3) are stored unpermuted.
- Phi-3's fused qkv and gate/up matrices are stored fused, as in its checkpoints, and split
  by rows (views, no copy) like them.
- GPT-2's Conv1D weights are stored transposed ([out, in]), which is the layout kvgen's
  core reads (Hugging Face checkpoints' [in, out] ones are transposed to it at load).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from kvgen.loaders.families import Family, family_of_gguf
from kvgen.loaders.gguf.file import GGUF_MAGIC, GGUFFile, GGUFTensor, read_gguf_file
from kvgen.loaders.gguf.metadata import read_float, read_int, read_string
from kvgen.loaders.quantize import PACKED_TYPES, QuantizedTensor, check_finite_scales, requantize

SUPPORTED_TENSOR_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
                          "Q6_K", "IQ4_NL", "IQ4_XS", "MXFP4")


@dataclass
class GGUFModel:
    """What a GGUF file holds, in the terms kvgen's models use."""

    family: Family                    # kvgen.loaders.families
    config: dict                      # Hugging Face config names
    arrays: dict[str, Any]            # float32 arrays or QuantizedTensors by Hugging Face name
    rope_freqs: Optional[np.ndarray] = None   # per-frequency divisors (Llama 3 files)
    norms_plus_one: bool = False      # Gemma's norm weights stored as 1 + w (llama.cpp's converter)
    tokenizer: Any = None             # kvgen.loaders.gguf.tokenizer.GGUFTokenizerInfo, or None
    metadata: dict = field(default_factory=dict)  # name and tensor type counts, for repr and the CLI


def is_gguf(path: Path) -> bool:
    """Whether ``path`` is a file that starts with the GGUF magic."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == GGUF_MAGIC
    except OSError:
        return False


def read_gguf(path: Path) -> GGUFModel:
    """Reads a GGUF file; ValueError naming the problem for malformed or unsupported files."""
    reader = read_gguf_file(path)
    meta = _Metadata(reader, path)
    family = family_of_gguf(meta.get("general.architecture", str), path)
    tensors = {t.name: t for t in reader.tensors}
    reader_of = {"gpt2": lambda: _gpt2(meta, tensors, path), "gemma": lambda: _gemma(meta, tensors, path, family)}
    model = reader_of.get(family.core, lambda: _llama(meta, tensors, path, family))()
    from kvgen.loaders.gguf.tokenizer import tokenizer_from_gguf

    try:
        model.tokenizer = tokenizer_from_gguf(reader) if "tokenizer.ggml.model" in reader.fields else None
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    types = Counter(t.tensor_type.name for t in reader.tensors)
    model.metadata = {"name": meta.get("general.name", str, ""), "tensor_types": dict(types.most_common())}
    return model


class _Metadata:
    """Typed access to a GGUF file's key-value metadata, with errors naming the file and key."""

    def __init__(self, reader: GGUFFile, path: Path):
        self.reader, self.path = reader, path

    def get(self, key: str, kind: type, default: Any = ...) -> Any:
        read = {str: read_string, int: read_int, float: read_float}[kind]
        try:
            value = read(self.reader, key)
        except ValueError as e:
            raise ValueError(f"{self.path}: {e}") from None
        if value is None:
            if default is ...:
                raise ValueError(f"{self.path}: GGUF metadata has no {key!r}")
            return default
        if kind is float and not math.isfinite(value):
            raise ValueError(f"{self.path}: GGUF metadata {key} = {value} is not a finite number")
        return value

    def size(self, key: str, default: Any = ...) -> int:
        """A size (a count or a dimension): an integer of at least 1."""
        value = self.get(key, int, default)
        if value < 1:
            raise ValueError(f"{self.path}: GGUF metadata {key} = {value} is not a positive size")
        return value


def _find(tensors: dict[str, GGUFTensor], name: str, path: Path, shape: Optional[tuple]) -> GGUFTensor:
    """Tensor ``name``, its type readable and its logical shape ``shape`` (when given)."""
    t = tensors.get(name)
    if t is None:
        raise ValueError(f"{path}: GGUF tensor {name!r} is missing")
    qtype = t.tensor_type.name
    if qtype not in SUPPORTED_TENSOR_TYPES:
        raise ValueError(f"{path}: tensor {name!r} has type {qtype}, which kvgen does not read (supported: "
                         f"{', '.join(SUPPORTED_TENSOR_TYPES)})")
    logical = tuple(reversed(t.shape))  # GGUF lists dimensions fastest first
    if shape is not None and logical != tuple(shape):  # before reading: no work for a wrong tensor
        raise ValueError(f"{path}: tensor {name!r} has shape {logical}, expected {tuple(shape)}")
    return t


def _tensor(tensors: dict[str, GGUFTensor], name: str, path: Path, shape: Optional[tuple] = None) -> np.ndarray:
    """The tensor ``name`` as a float32 array in NumPy (row-major, Hugging Face) order: F32
    matrices in place, everything else converted (vectors copied, see the module docstring)."""
    import gguf

    t = _find(tensors, name, path, shape)
    qtype = t.tensor_type.name
    logical = tuple(reversed(t.shape))
    try:
        with np.errstate(all="ignore"):  # overflowing scales are refused below, not warned about
            if qtype == "F32":
                a = t.data.view(np.float32).reshape(logical)
                a = a if len(logical) > 1 else a.copy()  # a matrix in place, no copy
            else:
                a = gguf.quants.dequantize(t.data, t.tensor_type).reshape(logical)
    except ValueError as e:
        raise ValueError(f"{path}: tensor {name!r} ({qtype}, shape {logical}) cannot be read ({e})") from None
    if not np.isfinite(a).all():  # no real model has them; they would only make NaN logits
        raise ValueError(f"{path}: tensor {name!r} holds values that are not finite (nan or inf)")
    return np.ascontiguousarray(a, dtype=np.float32)


def _matrix(tensors: dict[str, GGUFTensor], name: str, path: Path, shape: Optional[tuple] = None,
            permute_heads: int = 0) -> Any:
    """The matrix ``name`` (out, in) for the core: quantized blocks as a QuantizedTensor
    (the file's bytes, no copy unless its rows are permuted), or a float32 array.
    permute_heads > 0: undo llama.cpp's rotary permutation of the rows for that many heads."""
    t = _find(tensors, name, path, shape)
    qtype = t.tensor_type.name
    if qtype == "F32":
        w = _tensor(tensors, name, path, shape)
        return _unpermute(w, permute_heads) if permute_heads else w
    logical = tuple(reversed(t.shape))
    raw = t.data.reshape(logical[0], -1)  # one row of blocks per output
    if not check_finite_scales(qtype, raw):
        raise ValueError(f"{path}: tensor {name!r} holds values that are not finite (a block scale is nan or inf)")
    if qtype not in PACKED_TYPES:
        raw = _unpermute(raw, permute_heads) if permute_heads else raw
        return requantize(qtype, raw, logical)
    if permute_heads:  # a reordered copy
        return QuantizedTensor(qtype, _unpermute(raw, permute_heads).reshape(-1), logical)
    return QuantizedTensor(qtype, raw.reshape(-1), logical, mapped=True)  # the file's pages, in place


def _check_no_extra(tensors: dict, used: set, path: Path) -> None:
    extra = sorted(set(tensors) - used)
    if extra:
        raise ValueError(f"{path}: unexpected GGUF tensors {extra[:5]} (kvgen does not know what they are for)")


def _unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """Reverses llama.cpp's rotary permutation of q/k rows (weights or biases): per head,
    rows interleaved as (pair, 2) go back to Hugging Face's (2, half) order."""
    rows = w.shape[0]
    if rows % (2 * heads):
        raise ValueError(f"q/k projection with {rows} rows does not split into {heads} heads of even size")
    return np.ascontiguousarray(
        w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape))


def _llama(meta: _Metadata, tensors: dict, path: Path, family: Family) -> GGUFModel:
    """A Llama-like family's file, as a Hugging Face config and tensors (module docstring)."""
    a = family.gguf_architecture + "."
    hidden = meta.size(a + "embedding_length")
    heads = meta.size(a + "attention.head_count")
    kv_heads = meta.size(a + "attention.head_count_kv", heads)
    head_dim = meta.size(a + "attention.key_length", max(hidden // heads, 1))
    if heads < 1 or kv_heads < 1 or heads % kv_heads:
        raise ValueError(f"{path}: attention.head_count = {heads} is not a positive multiple of "
                         f"head_count_kv = {kv_heads}")
    value_dim = meta.size(a + "attention.value_length", head_dim)
    if value_dim != head_dim:
        raise ValueError(f"{path}: attention.value_length = {value_dim} differs from key_length = {head_dim}")
    rope_dims = meta.size(a + "rope.dimension_count", head_dim)
    if rope_dims > head_dim or rope_dims % 2 or (rope_dims != head_dim and family.name != "phi3"):
        raise ValueError(f"{path}: rope.dimension_count = {rope_dims} of head_dim {head_dim} is not supported for "
                         f"{family.name} (kvgen rotates all of head_dim, or an even part of it for phi3)")
    embed_shape = tuple(reversed(_find(tensors, "token_embd.weight", path, None).shape))
    if len(embed_shape) != 2 or embed_shape[1] != hidden:
        raise ValueError(f"{path}: token_embd.weight has shape {embed_shape}, expected (vocab, {hidden})")
    vocab = embed_shape[0]
    embed = _matrix(tensors, "token_embd.weight", path, embed_shape)
    context = meta.size(a + "context_length")
    config: dict[str, Any] = {
        "model_type": family.model_types[0],
        "vocab_size": vocab,
        "max_position_embeddings": context,
        "hidden_size": hidden,
        "num_hidden_layers": meta.size(a + "block_count"),
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate_size": meta.size(a + "feed_forward_length"),
        "rms_norm_eps": meta.get(a + "attention.layer_norm_rms_epsilon", float),
        "tie_word_embeddings": "output.weight" not in tensors,
    }
    window = meta.get(a + "attention.sliding_window", int, 0)
    if window:  # llama.cpp: 0 = none (Phi-4)
        config["sliding_window"] = window
    if rope_dims != head_dim:  # as transformers' int(head_dim * partial_rotary_factor) gives it back
        factor = rope_dims / head_dim
        config["partial_rotary_factor"] = factor if int(head_dim * factor) == rope_dims else \
            math.nextafter(factor, 1.0)
    used = {"token_embd.weight", "output_norm.weight"}
    rope: dict[str, Any] = {"rope_type": "default", "rope_theta": meta.get(a + "rope.freq_base", float, 10000.0)}
    scaling = meta.get(a + "rope.scaling.type", str, "none")
    if "rope_factors_long.weight" in tensors or scaling == "longrope":
        rope.update(_longrope(meta, tensors, path, a, rope_dims, context))
        used |= {"rope_factors_long.weight", "rope_factors_short.weight"}
    elif scaling == "linear":
        rope.update(rope_type="linear", factor=meta.get(a + "rope.scaling.factor", float))
    elif scaling != "none":
        raise ValueError(f"{path}: rope scaling {scaling!r} is not supported (supported: none, linear, longrope)")
    config["rope_parameters"] = rope
    if family.multipliers:  # llama.cpp's names; an absent attention scale is 1 / sqrt(head_dim)
        config["attention_multiplier"] = meta.get(a + "attention.scale", float, 0.0) or 1 / math.sqrt(head_dim)
        for key, hf in (("embedding_scale", "embedding_multiplier"), ("residual_scale", "residual_multiplier"),
                        ("logit_scale", "logits_scaling")):
            value = meta.get(a + key, float, None)
            if value is not None:
                config[hf] = value
    if family.gguf_no_rope_interval:  # not stored: llama.cpp's fixed rule for the family
        config["no_rope_layer_interval"] = family.gguf_no_rope_interval
    if family.moe:  # llama.cpp always renormalises the chosen experts' weights
        config.update(num_experts=meta.size(a + "expert_count"), num_experts_per_tok=meta.size(a + "expert_used_count"),
                      moe_intermediate_size=meta.size(a + "expert_feed_forward_length"), norm_topk_prob=True)
    C, I, L = hidden, config["intermediate_size"], config["num_hidden_layers"]
    arrays = {"model.embed_tokens.weight": embed,
              "model.norm.weight": _tensor(tensors, "output_norm.weight", path, (C,))}
    if "output.weight" in tensors:
        arrays["lm_head.weight"] = _matrix(tensors, "output.weight", path, (vocab, C))
        used.add("output.weight")
    rope_freqs = None
    if "rope_freqs.weight" in tensors:  # Llama 3.1 scaling, stored as divisors of inv_freq
        rope_freqs = _tensor(tensors, "rope_freqs.weight", path, (rope_dims // 2,))
        used.add("rope_freqs.weight")
    q, kv = heads * head_dim, kv_heads * head_dim
    names = {"attn_norm": ("input_layernorm", (C,)), "ffn_norm": ("post_attention_layernorm", (C,)),
             "attn_q_norm": ("self_attn.q_norm", (head_dim,)), "attn_k_norm": ("self_attn.k_norm", (head_dim,)),
             "attn_output": ("self_attn.o_proj", (C, q)), "ffn_down": ("mlp.down_proj", (C, I))}
    optional = {"attn_q_norm", "attn_k_norm"}
    if "blk.0.attn_qkv.weight" in tensors:  # fused (Phi-3): split by family.fused later
        names.update({"attn_qkv": ("self_attn.qkv_proj", (q + 2 * kv, C))})
    else:
        names.update({"attn_q": ("self_attn.q_proj", (q, C)), "attn_k": ("self_attn.k_proj", (kv, C)),
                      "attn_v": ("self_attn.v_proj", (kv, C))})
    if "blk.0.ffn_gate.weight" in tensors or family.moe:
        names.update({"ffn_gate": ("mlp.gate_proj", (I, C)), "ffn_up": ("mlp.up_proj", (I, C))})
    else:  # fused gate | up, stored as ffn_up (Phi-3)
        names.update({"ffn_up": ("mlp.gate_up_proj", (2 * I, C))})
    permute = {"attn_q": heads, "attn_k": kv_heads} if family.gguf_permuted_qk else {}
    for layer in range(L):
        sparse = family.moe and f"blk.{layer}.ffn_gate_inp.weight" in tensors  # a router: experts
        if sparse:
            _experts(arrays, used, tensors, path, layer, config)
        for gg, (hf, shape) in names.items():
            if sparse and gg in ("ffn_gate", "ffn_up", "ffn_down"):
                continue
            for kind, kind_shape in (("weight", shape), ("bias", shape[:1])):
                src = f"blk.{layer}.{gg}.{kind}"
                if (kind == "bias" or gg in optional) and src not in tensors:
                    continue  # optional biases (attention_bias / mlp_bias models) and q/k norms
                heads_here = permute.get(gg, 0)
                if kind == "weight" and len(shape) == 2:
                    w = _matrix(tensors, src, path, kind_shape, permute_heads=heads_here)
                else:
                    w = _tensor(tensors, src, path, kind_shape)
                    w = _unpermute(w, heads_here) if heads_here else w
                arrays[f"model.layers.{layer}.{hf}.{kind}"] = w
                used.add(src)
    _check_no_extra(tensors, used, path)
    return GGUFModel(family, config, arrays, rope_freqs=rope_freqs)


def _experts(arrays: dict, used: set, tensors: dict, path: Path, layer: int, config: dict) -> None:
    """A mixture-of-experts layer's router (ffn_gate_inp, (E, C)) and its experts' 3-D
    matrices (ffn_{gate,up,down}_exps, (E, out, in)), which stay quantized: one (E, out, in)
    QuantizedTensor each, cut into per-expert matrices by the core."""
    E, C, Ie = config["num_experts"], config["hidden_size"], config["moe_intermediate_size"]
    p = f"blk.{layer}."
    arrays[f"model.layers.{layer}.mlp.gate.weight"] = _matrix(tensors, p + "ffn_gate_inp.weight", path, (E, C))
    used.add(p + "ffn_gate_inp.weight")
    for gg, hf, shape in (("ffn_gate_exps", "gate_proj", (E, Ie, C)), ("ffn_up_exps", "up_proj", (E, Ie, C)),
                          ("ffn_down_exps", "down_proj", (E, C, Ie))):
        arrays[f"model.layers.{layer}.mlp.experts.{hf}.weight"] = _stacked(tensors, p + gg + ".weight", path, shape)
        used.add(p + gg + ".weight")


def _stacked(tensors: dict, name: str, path: Path, shape: tuple) -> Any:
    """A 3-D tensor (count, out, in) of matrices for the core: quantized blocks as one
    QuantizedTensor (the file's bytes, in place; types without a kernel converted to Q8_0),
    or a float32 array."""
    t = _find(tensors, name, path, shape)
    qtype = t.tensor_type.name
    if qtype == "F32":
        return _tensor(tensors, name, path, shape)
    raw = t.data.reshape(shape[0] * shape[1], -1)  # one row of blocks per output of every matrix
    if not check_finite_scales(qtype, raw):
        raise ValueError(f"{path}: tensor {name!r} holds values that are not finite (a block scale is nan or inf)")
    if qtype not in PACKED_TYPES:
        return requantize(qtype, raw, shape)
    return QuantizedTensor(qtype, raw.reshape(-1), tuple(shape), mapped=True)


def _gemma(meta: _Metadata, tensors: dict, path: Path, family: Family) -> GGUFModel:
    """A Gemma 2 / Gemma 3 file as a Hugging Face config and tensors. llama.cpp's converter
    stores the norm weights as 1 + w (GGUFModel.norms_plus_one); what its files do not store
    is llama.cpp's fixed rule for the family (families.Family.gguf_swa_pattern and
    gguf_wide_query_layers; Gemma 3's local rotary base 10000 unless rope.freq_base_swa)."""
    a = family.gguf_architecture + "."
    hidden = meta.size(a + "embedding_length")
    heads = meta.size(a + "attention.head_count")
    kv_heads = meta.size(a + "attention.head_count_kv", heads)
    head_dim = meta.size(a + "attention.key_length", max(hidden // heads, 1))
    if heads % kv_heads:
        raise ValueError(f"{path}: attention.head_count = {heads} is not a multiple of head_count_kv = {kv_heads}")
    if meta.size(a + "attention.value_length", head_dim) != head_dim:
        raise ValueError(f"{path}: attention.value_length differs from key_length = {head_dim}")
    if meta.size(a + "rope.dimension_count", head_dim) != head_dim:
        raise ValueError(f"{path}: partial rotary embeddings are not supported for {family.name}")
    L = meta.size(a + "block_count")
    embed_shape = tuple(reversed(_find(tensors, "token_embd.weight", path, None).shape))
    if len(embed_shape) != 2 or embed_shape[1] != hidden:
        raise ValueError(f"{path}: token_embd.weight has shape {embed_shape}, expected (vocab, {hidden})")
    vocab, C = embed_shape[0], hidden
    config: dict[str, Any] = {
        "model_type": family.model_types[0],
        "vocab_size": vocab,
        "max_position_embeddings": meta.size(a + "context_length"),
        "hidden_size": hidden,
        "num_hidden_layers": L,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate_size": meta.size(a + "feed_forward_length"),
        "rms_norm_eps": meta.get(a + "attention.layer_norm_rms_epsilon", float),
        "hidden_activation": "gelu_pytorch_tanh",
        # llama.cpp: 1 / sqrt(hidden / heads) for the 27B shapes, else 1 / sqrt(head_dim)
        "query_pre_attn_scalar": hidden // heads if L == family.gguf_wide_query_layers else head_dim,
    }
    for key, hf in (("attn_logit_softcapping", "attn_logit_softcapping"),
                    ("final_logit_softcapping", "final_logit_softcapping")):
        cap = meta.get(a + key, float, 0.0)
        if cap:
            config[hf] = cap
    window = meta.get(a + "attention.sliding_window", int, 0)
    if window:
        pattern = _swa_pattern(meta, a, L, family, path)
        config.update(sliding_window=window,
                      layer_types=["sliding_attention" if s else "full_attention" for s in pattern])
    full: dict[str, Any] = {"rope_type": "default", "rope_theta": meta.get(a + "rope.freq_base", float, 10000.0)}
    scaling = meta.get(a + "rope.scaling.type", str, "none")
    if scaling == "linear":
        full.update(rope_type="linear", factor=meta.get(a + "rope.scaling.factor", float))
    elif scaling != "none":
        raise ValueError(f"{path}: rope scaling {scaling!r} is not supported for {family.name} (none, linear)")
    # llama.cpp: Gemma 2's sliding layers rotate as the others; Gemma 3's with base 10000
    # (or rope.freq_base_swa) and no scaling
    local = dict(full) if family.gguf_swa_pattern == 2 else {"rope_type": "default", "rope_theta": 10000.0}
    local["rope_theta"] = meta.get(a + "rope.freq_base_swa", float, local["rope_theta"])
    config["rope_parameters"] = {"full_attention": full, "sliding_attention": local}
    arrays: dict[str, Any] = {"model.embed_tokens.weight": _matrix(tensors, "token_embd.weight", path, embed_shape),
                              "model.norm.weight": _tensor(tensors, "output_norm.weight", path, (C,))}
    used = {"token_embd.weight", "output_norm.weight"}
    if "output.weight" in tensors:
        arrays["lm_head.weight"] = _matrix(tensors, "output.weight", path, (vocab, C))
        used.add("output.weight")
    I, q, kv = config["intermediate_size"], heads * head_dim, kv_heads * head_dim
    names = {"attn_norm": ("input_layernorm", (C,)), "post_attention_norm": ("post_attention_layernorm", (C,)),
             "ffn_norm": ("pre_feedforward_layernorm", (C,)), "post_ffw_norm": ("post_feedforward_layernorm", (C,)),
             "attn_q_norm": ("self_attn.q_norm", (head_dim,)), "attn_k_norm": ("self_attn.k_norm", (head_dim,)),
             "attn_q": ("self_attn.q_proj", (q, C)), "attn_k": ("self_attn.k_proj", (kv, C)),
             "attn_v": ("self_attn.v_proj", (kv, C)), "attn_output": ("self_attn.o_proj", (C, q)),
             "ffn_gate": ("mlp.gate_proj", (I, C)), "ffn_up": ("mlp.up_proj", (I, C)),
             "ffn_down": ("mlp.down_proj", (C, I))}
    for layer in range(L):
        for gg, (hf, shape) in names.items():
            src = f"blk.{layer}.{gg}.weight"
            if gg in ("attn_q_norm", "attn_k_norm") and src not in tensors:
                continue  # Gemma 3 only
            reader = _matrix if len(shape) == 2 else _tensor
            arrays[f"model.layers.{layer}.{hf}.weight"] = reader(tensors, src, path, shape)
            used.add(src)
    _check_no_extra(tensors, used, path)
    return GGUFModel(family, config, arrays, norms_plus_one=True)


def _swa_pattern(meta: _Metadata, a: str, layers: int, family: Family, path: Path) -> list[bool]:
    """Per layer, whether it attends over the sliding window: attention.sliding_window_pattern
    (a list of flags, or n: the last of every n layers global), else the family's n (llama.cpp)."""
    from gguf.constants import GGUFValueType

    from kvgen.loaders.gguf.metadata import INTEGER_TYPES, read_number_array

    key = a + "attention.sliding_window_pattern"
    stored = meta.reader.fields.get(key)
    if stored is not None and stored.type == GGUFValueType.ARRAY:  # a flag per layer
        try:
            flags = read_number_array(meta.reader, key, {GGUFValueType.BOOL} | INTEGER_TYPES, "flags")
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
        if len(flags) != layers:
            raise ValueError(f"{path}: {key} has {len(flags)} flags for {layers} layers")
        return [bool(f) for f in flags]
    n = meta.size(key, family.gguf_swa_pattern or 2)
    return [i % n < n - 1 for i in range(layers)]


def _longrope(meta: _Metadata, tensors: dict, path: Path, a: str, rope_dims: int, context: int) -> dict:
    """LongRoPE's rope_parameters (transformers' names) from a Phi-3 file: the factors from the
    rope_factors_long / _short tensors, the original context and the cos/sin attention factor."""
    factors = {}
    for which in ("long", "short"):
        t = _tensor(tensors, f"rope_factors_{which}.weight", path, (rope_dims // 2,))
        if not (t > 0).all():
            raise ValueError(f"{path}: rope_factors_{which}.weight holds factors that are not positive")
        factors[f"{which}_factor"] = [float(f) for f in t]
    original = meta.size(a + "rope.scaling.original_context_length", context)
    params: dict[str, Any] = {"rope_type": "longrope", **factors, "original_max_position_embeddings": original}
    attention = meta.get(a + "rope.scaling.attn_factor", float, None)
    if attention is not None:
        params["attention_factor"] = attention
    return params


def _gpt2(meta: _Metadata, tensors: dict, path: Path) -> GGUFModel:
    a = "gpt2."
    C = meta.size(a + "embedding_length")
    I = meta.size(a + "feed_forward_length", 4 * C)
    L = meta.size(a + "block_count")
    heads = meta.size(a + "attention.head_count")
    if C % heads:
        raise ValueError(f"{path}: embedding_length = {C} does not split into attention.head_count = {heads} heads")
    wte_shape = tuple(reversed(_find(tensors, "token_embd.weight", path, None).shape))
    if len(wte_shape) != 2 or wte_shape[1] != C:
        raise ValueError(f"{path}: token_embd.weight has shape {wte_shape}, expected (vocab, {C})")
    wte = _matrix(tensors, "token_embd.weight", path, wte_shape)
    config = {
        "model_type": "gpt2",
        "vocab_size": wte_shape[0],
        "n_positions": meta.size(a + "context_length"),
        "n_embd": C,
        "n_layer": L,
        "n_head": heads,
        "n_inner": I,
        "layer_norm_epsilon": meta.get(a + "attention.layer_norm_epsilon", float, 1e-5),
        "activation_function": "gelu_new",
    }
    arrays = {"wte.weight": wte,
              "wpe.weight": _tensor(tensors, "position_embd.weight", path, (config["n_positions"], C)),
              "ln_f.weight": _tensor(tensors, "output_norm.weight", path, (C,)),
              "ln_f.bias": _tensor(tensors, "output_norm.bias", path, (C,))}
    used = {"token_embd.weight", "position_embd.weight", "output_norm.weight", "output_norm.bias"}
    if "output.weight" in tensors:
        arrays["lm_head.weight"] = _matrix(tensors, "output.weight", path, wte_shape)
        used.add("output.weight")
    # GGUF name -> (HF name, GGUF [out, in] shape or None for vectors, transpose to [in, out])
    names = {"attn_norm": ("ln_1", None), "ffn_norm": ("ln_2", None), "attn_qkv": ("attn.c_attn", (3 * C, C)),
             "attn_output": ("attn.c_proj", (C, C)), "ffn_up": ("mlp.c_fc", (I, C)), "ffn_down": ("mlp.c_proj", (C, I))}
    for layer in range(L):
        for gg, (hf, shape) in names.items():
            out_dim = shape[0] if shape else C
            if shape:  # (out, in), as the core reads every matrix
                w = _matrix(tensors, f"blk.{layer}.{gg}.weight", path, shape)
            else:
                w = _tensor(tensors, f"blk.{layer}.{gg}.weight", path, (C,))
            arrays[f"h.{layer}.{hf}.weight"] = w
            arrays[f"h.{layer}.{hf}.bias"] = _tensor(tensors, f"blk.{layer}.{gg}.bias", path, (out_dim,))
            used.update({f"blk.{layer}.{gg}.weight", f"blk.{layer}.{gg}.bias"})
    _check_no_extra(tensors, used, path)
    return GGUFModel(family_of_gguf("gpt2", path), config, arrays)
