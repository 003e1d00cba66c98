"""Model families: which families kvgen runs, how a file says which one it holds, and what
each one changes in the core model that runs it.

A family is recognised from facts in the file, never from a model's name: a Hugging Face
directory's ``config.json`` ``model_type``, a GGUF file's ``general.architecture``. Everything
else is read from the file's own keys and tensors by the loaders (kvgen._model for the
config, kvgen.loaders.gguf.model for GGUF files): head_dim (``head_dim`` /
``attention.key_length``), the rotary width (``partial_rotary_factor`` /
``rope.dimension_count``), rope scaling, biases and q/k norms (present or not), multipliers.
The table below only holds what the file does not say: which core model computes the
family, how llama.cpp's converter stored its tensors, and which config keys the family's
transformers class reads at all (a Llama config's stray ``embedding_multiplier`` means
nothing to LlamaForCausalLM, so kvgen ignores it there too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class Family:
    """One model family kvgen runs."""

    name: str                 # as kvgen names it (Model.family, kvgen info)
    core: str                 # the C++ model that computes it: "llama", "gemma" or "gpt2"
    model_types: tuple[str, ...]  # config.json model_type values
    gguf_architecture: str    # GGUF general.architecture
    transformers_class: str   # the reference class kvgen equals
    differs: str              # what differs from Llama, in a few words (README, kvgen info)
    # llama.cpp's converter permuted the q/k rows so that rotary pairs are adjacent (its
    # "norm" rope layout); kvgen rotates pairs (i, i + d/2) and undoes it. Families with
    # llama.cpp's "neox" layout are stored as transformers stores them.
    gguf_permuted_qk: bool = False
    # Config keys of the family's transformers class that set a core option (see kvgen._model).
    multipliers: bool = False      # Granite's embedding / residual / attention multipliers, logits_scaling
    no_rope_layers: bool = False   # SmolLM3's per-layer rotary switch
    # HF tensor suffix of a fused matrix -> the (suffix, share) parts it splits into by rows,
    # share in units of the config sizes ("q", "kv", "i"); see split_fused.
    fused: dict = field(default_factory=dict)
    # llama.cpp's fixed rule for a fact its GGUF files do not store: SmolLM3 files rotate no
    # layer whose index + 1 is a multiple of this (transformers' no_rope_layer_interval default).
    gguf_no_rope_interval: Optional[int] = None
    # Mixture of experts (Qwen3-MoE): the layers with a router run their experts; llama.cpp
    # always renormalises the chosen experts' weights (its files do not store norm_topk_prob).
    moe: bool = False
    # Gemma: llama.cpp's converter stores the RMSNorm weights as 1 + w (transformers' Gemma
    # norms compute x * (1 + w)); its files do not store Gemma 3's local rotary base when it is
    # 10000, nor the sliding-window pattern when it is the family's (a sliding layer, then every
    # gguf_swa_pattern-th a global one), nor the query scale (llama.cpp: 1 / sqrt(hidden / heads)
    # for the 27B shapes, of gguf_wide_query_layers layers, else 1 / sqrt(head_dim)).
    gguf_swa_pattern: Optional[int] = None
    gguf_wide_query_layers: Optional[int] = None
    # Which layers of a Llama-like family attend over ``sliding_window``, as its transformers
    # class places it (kvgen._model._llama_windows): "all" (Phi-3, Mistral: every layer, whenever
    # the config has a window), "max_window_layers" (Qwen2, Qwen3: only with use_sliding_window,
    # the layers layer_types names, by default those from max_window_layers on) or "layer_types"
    # (SmolLM3: the layers layer_types names, by default the rotary-free ones when
    # use_sliding_window is set). None: a window shorter than the context is refused.
    sliding_layers: Optional[str] = None


_LLAMA_DIFFERS = "Llama itself: RMSNorm, rotary embeddings, grouped-query attention, SwiGLU"

FAMILIES: tuple[Family, ...] = (
    Family("gpt2", "gpt2", ("gpt2",), "gpt2", "GPT2LMHeadModel",
           "learned positions, LayerNorm, fused qkv, GELU (not Llama-like)"),
    Family("llama", "llama", ("llama",), "llama", "LlamaForCausalLM", _LLAMA_DIFFERS,
           gguf_permuted_qk=True),
    # llama.cpp's converter writes Mistral checkpoints as "llama" files, without the window
    # (llama.cpp runs them with full attention): a "llama" GGUF file is read as Llama.
    Family("mistral", "llama", ("mistral",), "llama", "MistralForCausalLM",
           "Llama with sliding-window attention on every layer (sliding_window)", gguf_permuted_qk=True,
           sliding_layers="all"),
    Family("qwen2", "llama", ("qwen2",), "qwen2", "Qwen2ForCausalLM",
           "q/k/v biases; large rope theta", gguf_permuted_qk=False, sliding_layers="max_window_layers"),
    Family("qwen3", "llama", ("qwen3",), "qwen3", "Qwen3ForCausalLM",
           "per-head RMSNorm of q and k before the rotary embedding; head_dim apart from hidden / heads",
           sliding_layers="max_window_layers"),
    Family("granite", "llama", ("granite",), "granite", "GraniteForCausalLM",
           "embedding, residual and attention multipliers, logit divisor", gguf_permuted_qk=True, multipliers=True),
    Family("smollm3", "llama", ("smollm3",), "smollm3", "SmolLM3ForCausalLM",
           "no rotary embedding on every 4th layer; optional sliding-window layers (layer_types)",
           gguf_permuted_qk=True, no_rope_layers=True, gguf_no_rope_interval=4, sliding_layers="layer_types"),
    Family("qwen3moe", "llama", ("qwen3_moe",), "qwen3moe", "Qwen3MoeForCausalLM",
           "as Qwen3, with a softmax top-k router over experts instead of the MLP (3-D expert tensors in GGUF)",
           moe=True),
    Family("gemma2", "gemma", ("gemma2",), "gemma2", "Gemma2ForCausalLM",
           "embeddings scaled by sqrt(hidden); GeGLU; norms after attention and MLP; attention and final-logit "
           "soft-capping; sliding-window attention on alternate layers; query scale from the config",
           gguf_swa_pattern=2, gguf_wide_query_layers=46),
    Family("gemma3", "gemma", ("gemma3_text",), "gemma3", "Gemma3ForCausalLM",
           "as Gemma 2 without soft-capping, plus q/k norms; 5 sliding-window layers to 1 global one, the "
           "sliding ones with their own rotary base", gguf_swa_pattern=6, gguf_wide_query_layers=62),
    Family("phi3", "llama", ("phi3",), "phi3", "Phi3ForCausalLM",
           "fused qkv and gate/up matrices; partial rotary; LongRoPE short/long factors", sliding_layers="all",
           fused={"self_attn.qkv_proj": (("self_attn.q_proj", "q"), ("self_attn.k_proj", "kv"),
                                         ("self_attn.v_proj", "kv")),
                  "mlp.gate_up_proj": (("mlp.gate_proj", "i"), ("mlp.up_proj", "i"))}),
)

_BY_MODEL_TYPE = {t: f for f in FAMILIES for t in f.model_types}
_BY_GGUF: dict[str, Family] = {}
for _family in FAMILIES:  # the first family of an architecture reads its files (llama, not mistral)
    _BY_GGUF.setdefault(_family.gguf_architecture, _family)


def supported() -> str:
    """The families kvgen runs, for error messages."""
    return ", ".join(f.name for f in FAMILIES)


def family_of_config(config: dict, where: object) -> Family:
    """The family of a Hugging Face config dict (its model_type); ValueError naming the
    value and ``where`` (the directory) and listing the supported families otherwise."""
    model_type = config.get("model_type")
    family = _BY_MODEL_TYPE.get(model_type) if isinstance(model_type, str) else None
    if family is None:
        raise ValueError(f"{where}: model_type={model_type!r:.60} is not supported (kvgen runs: "
                         f"{', '.join(_BY_MODEL_TYPE)})")
    return family


def family_of_gguf(architecture: str, where: object) -> Family:
    """The family of a GGUF ``general.architecture``; ValueError naming it otherwise."""
    family = _BY_GGUF.get(architecture)
    if family is None:
        raise ValueError(f"{where}: GGUF architecture {architecture!r:.60} is not supported (kvgen runs: "
                         f"{', '.join(_BY_GGUF)})")
    return family


def split_fused(family: Family, arrays: dict, sizes: dict[str, int]) -> dict:
    """``arrays`` with the family's fused matrices (and their biases) split by rows into the
    separate Llama names the core reads. A split is a view of the same memory: float arrays
    as row slices, quantized or 16-bit ones (kvgen.loaders.quantize.QuantizedTensor) as
    slices of their rows of blocks. ``sizes``: "q" = heads x head_dim, "kv" = kv_heads x
    head_dim, "i" = the MLP width. ValueError naming a tensor whose rows do not add up."""
    if not family.fused:
        return arrays
    from kvgen.loaders.quantize import split_rows

    out = {}
    for name, w in arrays.items():
        stem, _, kind = name.rpartition(".")
        fused = next((f for f in family.fused if stem.endswith(f)), None)
        if fused is None:
            out[name] = w
            continue
        prefix = stem[: -len(fused)]
        parts = family.fused[fused]
        rows = [sizes[share] for _, share in parts]
        for (part, _), piece in zip(parts, split_rows(w, rows, name)):
            out[f"{prefix}{part}.{kind}"] = piece
    return out
