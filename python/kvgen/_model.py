"""kvgen.Model: built-in models (GPT-2 and the families of kvgen.loaders.families: Llama, Qwen,
Gemma, Phi-3, Granite, SmolLM3, Qwen3-MoE) from Hugging Face checkpoint directories or GGUF
files, with their tokenizer and chat template.

Weights are NumPy arrays the C++ model reads in place or repacks: float32 matrices are used as
read; quantized GGUF matrices stay quantized (repacked into the kernels' tiles,
kvgen.loaders.quantize), as do float16 / bfloat16 ones (the F16 / BF16 kernels) unless ``dtype=``
quantizes them at load; norms and biases are float32. The tokenizer is a Hugging Face
``tokenizers.Tokenizer`` (tokenizer.json, or built from the GGUF metadata), the chat template is
rendered with jinja2 (kvgen.loaders.chat_template).
"""

from __future__ import annotations

import math
import operator
import os
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from kvgen import _core
from kvgen.families.capabilities import Capabilities, capabilities_of
from kvgen.loaders.checkpoint import (
    read_chat_template,
    read_config,
    read_tokenizer,
    read_weight_types,
    read_weights,
)
from kvgen.loaders.families import Family, family_of_config, split_fused
from kvgen.loaders.rope import rotary

# GPT-2 config values kvgen computes as transformers does; anything else is refused.
_GPT2_ACTIVATIONS = {"gelu_new", "gelu_pytorch_tanh", "gelu"}
_LLAMA_ACTIVATIONS = {"silu"}
_GEMMA_ACTIVATIONS = {"gelu_pytorch_tanh", "gelu_new"}  # the tanh GELU, under both names
# config key -> (value kvgen implements, what a different value means)
_REFUSED = {
    "gpt2": {"add_cross_attention": (False, "cross-attention (encoder-decoder GPT-2)")},
    "llama": {"pretraining_tp": (1, None)},  # numerics only: accepted either way
    "gemma": {"use_bidirectional_attention": (False, "bidirectional attention (an encoder)")},
}
_SENTINEL = "\u2063kvgen-end-of-turn\u2063"


def _check_config(arch: str, config: dict) -> None:
    if arch == "gpt2":
        key, default, allowed = "activation_function", "gelu_new", _GPT2_ACTIVATIONS
    elif arch == "gemma":
        key, default, allowed = "hidden_activation", "gelu_pytorch_tanh", _GEMMA_ACTIVATIONS
    else:
        key, default, allowed = "hidden_act", "silu", _LLAMA_ACTIVATIONS
    act = config.get(key)
    act = default if act is None else act
    if not isinstance(act, str) or act not in allowed:
        raise ValueError(f"{arch} config: {key}={act!r:.60} is not supported (supported: "
                         f"{', '.join(sorted(allowed))})")
    for k, (value, what) in _REFUSED[arch].items():
        if what and config.get(k) not in (None, value):
            raise ValueError(f"{arch} config: {k}={config[k]!r:.60} ({what}) is not supported")


# ---- typed reads of config values: a wrong type is a TypeError, a value out of range a
# ValueError, each naming the key; sizes and limits are then checked by the C++
# ModelConfig.validate() ----

_INT64 = (-2**63, 2**63 - 1)


def _describe(value: Any) -> str:
    return f"{repr(value)[:60]} ({type(value).__name__})"


def _present(config: dict, key: str) -> bool:
    return config.get(key) is not None


def _int(config: dict, key: str) -> int:
    """config[key]: a Python int (bool, float and str are refused) that fits in 64 bits."""
    if not _present(config, key):
        raise ValueError(f"model config has no '{key}'")
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"model config: {key} must be an integer, got {_describe(value)}")
    if not _INT64[0] <= value <= _INT64[1]:
        raise ValueError(f"model config: {key} = {str(value)[:40]} does not fit in 64 bits")
    return value


def _int_or(config: dict, key: str, fallback: int) -> int:
    """config[key], or fallback when it is absent or None."""
    return _int(config, key) if _present(config, key) else fallback


def _positive(config: dict, key: str) -> int:
    """config[key], at least 1 (a head count that later divides a width)."""
    value = _int(config, key)
    if value < 1:
        raise ValueError(f"model config: {key} = {value} must be positive")
    return value


def _epsilon(config: dict, key: str) -> Optional[float]:
    """config[key] as a finite, non-negative float32 value; None when absent."""
    if not _present(config, key):
        return None
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"model config: {key} must be a number, got {_describe(value)}")
    try:
        with np.errstate(over="ignore"):
            epsilon = float(np.float32(value))
    except OverflowError:  # an int beyond float64
        epsilon = math.inf
    if not math.isfinite(epsilon) or epsilon < 0:
        raise ValueError(f"model config: {key} = {value!r} must be a finite, non-negative float32")
    return epsilon


def _bool(config: dict, key: str) -> Optional[bool]:
    """config[key], True or False; None when absent."""
    if not _present(config, key):
        return None
    value = config[key]
    if not isinstance(value, bool):
        raise TypeError(f"model config: {key} must be true or false, got {_describe(value)}")
    return value


def _given(**options: Any) -> dict:
    """The options a config sets: the rest keep the C++ structs' defaults."""
    return {name: value for name, value in options.items() if value is not None}


def _gpt2_config(config: dict) -> "_core._ModelConfig":
    vocab_size, context_length = _positive(config, "vocab_size"), _positive(config, "n_positions")
    hidden, layers, heads = _positive(config, "n_embd"), _positive(config, "n_layer"), _positive(config, "n_head")
    # transformers' default MLP width, saturated: a hidden size that large is refused by
    # validate() (n_embd above its limit) before the width is looked at
    intermediate = _int_or(config, "n_inner", min(4 * hidden, _INT64[1]))
    return _core._ModelConfig(architecture="gpt2", vocab_size=vocab_size, context_length=context_length,
                              hidden=hidden, layers=layers, heads=heads, kv_heads=heads, head_dim=hidden // heads,
                              intermediate=intermediate)


def _llama_config(config: dict, arch: str = "llama", family: Optional[Family] = None) -> "_core._ModelConfig":
    vocab_size, context_length = _positive(config, "vocab_size"), _positive(config, "max_position_embeddings")
    hidden, layers = _positive(config, "hidden_size"), _positive(config, "num_hidden_layers")
    heads = _positive(config, "num_attention_heads")
    kv_heads = _int_or(config, "num_key_value_heads", heads)
    head_dim = _int_or(config, "head_dim", hidden // heads)
    intermediate = _positive(config, "intermediate_size")
    extra: dict[str, Any] = {}
    if arch == "gemma":
        extra["layer_windows"] = _gemma_windows(config, layers, family)
    elif family is not None and family.sliding_layers is not None:
        windows = _llama_windows(config, layers, family)
        if windows is not None:
            extra["layer_windows"] = windows
    if family is not None and family.moe:
        # transformers 5 writes num_local_experts (num_experts is its alias)
        experts_key = "num_local_experts" if _present(config, "num_local_experts") else "num_experts"
        extra.update(experts=_positive(config, experts_key),
                     experts_per_token=_positive(config, "num_experts_per_tok"),
                     expert_intermediate=_positive(config, "moe_intermediate_size"))
    return _core._ModelConfig(architecture=arch, vocab_size=vocab_size, context_length=context_length,
                              hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                              intermediate=intermediate, **extra)


def _gemma_windows(config: dict, layers: int, family: Optional[Family]) -> list[int]:
    """Per layer, Gemma's sliding window (0 for a full-attention layer), from the config's
    ``layer_types`` or, in configs written before it, transformers' default pattern (a
    full-attention layer every ``sliding_window_pattern``-th: 2 for Gemma 2, 6 for Gemma 3)."""
    window = config.get("sliding_window")
    if window is None:
        return [0] * layers
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"model config: sliding_window = {window!r:.40} must be a positive integer")
    types = config.get("layer_types")
    if types is None:
        default = family.gguf_swa_pattern if family is not None and family.gguf_swa_pattern else 2
        pattern = config.get("sliding_window_pattern", default)
        if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 1:
            raise ValueError(f"model config: sliding_window_pattern = {pattern!r:.40} must be a positive integer")
        types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)]
    if not isinstance(types, list) or len(types) != layers or not set(types) <= {"sliding_attention",
                                                                                "full_attention"}:
        raise ValueError(f"model config: layer_types must name 'sliding_attention' or 'full_attention' for each of "
                         f"the {layers} layers, got {types!r:.80}")
    return [window if t == "sliding_attention" else 0 for t in types]


def _llama_windows(config: dict, layers: int, family: Family) -> Optional[list[int]]:
    """Per layer, the sliding window of a Llama-like family (0: full attention), as its
    transformers class applies ``sliding_window`` (Family.sliding_layers); None: no window.

    - "all" (Phi3Config, MistralConfig): every layer, whenever ``sliding_window`` is set.
    - "max_window_layers" (Qwen2Config, Qwen3Config): the window counts only with
      ``use_sliding_window`` true; then the layers ``layer_types`` names "sliding_attention",
      or, in configs without it, the layers from ``max_window_layers`` (default 28) on.
    - "layer_types" (SmolLM3Config): the layers ``layer_types`` names "sliding_attention" (the
      mask SmolLM3Model gives them, whatever ``use_sliding_window`` says), or, in configs without
      it, the rotary-free layers when ``use_sliding_window`` is true and ``sliding_window`` set."""
    rule = family.sliding_layers
    window = config.get("sliding_window")
    types = config.get("layer_types")
    if rule == "max_window_layers" and config.get("use_sliding_window") is not True:
        window = None
    if rule == "layer_types":
        if types is None:
            if config.get("use_sliding_window") is not True or window is None:
                return None
            rope = _rope_layers(family, config, layers) or [1] * layers
            types = ["full_attention" if r else "sliding_attention" for r in rope]
        elif isinstance(types, list) and "sliding_attention" not in types:
            return None
        elif window is None:  # transformers: "Could not find a `sliding_window` argument in the config"
            raise ValueError("model config: layer_types names sliding_attention layers but sliding_window is not set")
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"model config: sliding_window = {window!r:.40} must be a positive integer")
    if rule == "all":
        return [window] * layers
    if types is None:
        first = _int_or(config, "max_window_layers", 28)
        if first < 0:
            raise ValueError(f"model config: max_window_layers = {first} must not be negative")
        types = ["sliding_attention" if i >= first else "full_attention" for i in range(layers)]
    if not isinstance(types, list) or len(types) != layers or not set(types) <= {"sliding_attention",
                                                                                "full_attention"}:
        raise ValueError(f"model config: layer_types must name 'sliding_attention' or 'full_attention' for each of "
                         f"the {layers} layers, got {types!r:.80}")
    return [window if t == "sliding_attention" else 0 for t in types]


def _model_config(arch: str, config: dict, family: Optional[Family] = None) -> "_core._ModelConfig":
    """The sizes of a Hugging Face config dict, validated (ValueError naming the key)
    before anything they size is computed (the rotary frequencies, from head_dim)."""
    sizes = _gpt2_config(config) if arch == "gpt2" else _llama_config(config, arch, family)
    sizes.validate()
    return sizes


def _gpt2_options(config: dict) -> "_core._GPT2Options":
    # activation_function is one of _GPT2_ACTIVATIONS (_check_config): "gelu" is erf's
    return _core._GPT2Options(exact_gelu=config.get("activation_function") == "gelu", **_given(
        layer_norm_epsilon=_epsilon(config, "layer_norm_epsilon"),
        scale_attn_weights=_bool(config, "scale_attn_weights"),
        scale_attn_by_inverse_layer_idx=_bool(config, "scale_attn_by_inverse_layer_idx")))


def _number(config: dict, key: str) -> Optional[float]:
    """config[key] as a finite float32 value; None when absent."""
    if not _present(config, key):
        return None
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"model config: {key} = {value!r:.60} must be a finite number")
    with np.errstate(over="ignore"):
        single = float(np.float32(value))
    if not math.isfinite(single):
        raise ValueError(f"model config: {key} = {value!r:.60} does not fit in float32")
    return single


def _rope_layers(family: Family, config: dict, layers: int) -> Optional[list[int]]:
    """Per layer, 1 where it applies the rotary embedding (SmolLM3's no_rope_layers, or
    transformers' rule from no_rope_layer_interval); None: every layer."""
    if not family.no_rope_layers:
        return None
    flags = config.get("no_rope_layers")
    if flags is None:
        interval = _positive(config, "no_rope_layer_interval") if _present(config, "no_rope_layer_interval") else 4
        return [int((i + 1) % interval != 0) for i in range(layers)]
    if not isinstance(flags, list) or len(flags) != layers or not all(f in (0, 1) and not isinstance(f, float)
                                                                      for f in flags):
        raise ValueError(f"model config: no_rope_layers must list 0 or 1 for each of the {layers} layers, got "
                         f"{flags!r:.80}")
    return [int(f) for f in flags]


def _check_window(config: dict, context: int) -> None:
    """Sliding-window attention that would bind within the context is refused (these
    families run full attention); a window at least as long as the context changes nothing."""
    window = config.get("sliding_window")
    layer_types = config.get("layer_types")
    sliding = window is not None and config.get("use_sliding_window", True) is not False
    if isinstance(layer_types, list) and "sliding_attention" not in layer_types and "use_sliding_window" in config:
        sliding = False
    if sliding and (isinstance(window, bool) or not isinstance(window, int) or window < context):
        raise ValueError(f"model config: sliding_window = {window!r:.40} is shorter than the context "
                         f"({context} positions): sliding-window attention is not supported for this family")


def _llama_options(family: Family, config: dict, sizes: "_core._ModelConfig",
                   rope_freqs: Optional[np.ndarray]) -> "_core._LlamaOptions":
    """The core options of a Llama-like family, from the config keys its transformers class
    reads. rope_freqs: a GGUF file's rope_freqs tensor, dividing the computed frequencies."""
    if family.sliding_layers is None:
        _check_window(config, sizes.context_length)
    rope = rotary(config, sizes.head_dim, partial=family.name == "phi3")
    freq = rope.inv_freq
    if rope_freqs is not None:
        if rope_freqs.shape != freq.shape:
            raise ValueError(f"rope_freqs has {rope_freqs.size} values for {freq.size} rotary frequencies")
        freq = np.ascontiguousarray(freq / rope_freqs.astype(np.float32), dtype=np.float32)
    options: dict[str, Any] = dict(rms_norm_eps=_epsilon(config, "rms_norm_eps"), rope_layers=_rope_layers(
        family, config, sizes.layers))
    if rope.dim != sizes.head_dim:
        options["rotary_dim"] = rope.dim
    if rope.inv_freq_long is not None:
        options.update(inv_freq_long=rope.inv_freq_long, original_context=rope.original_context,
                       rope_attention_factor=rope.attention_factor)
    if family.multipliers:  # transformers' GraniteConfig defaults: 1.0 each
        divisor = _number(config, "logits_scaling")
        if divisor == 0:
            raise ValueError("model config: logits_scaling must not be 0")
        options.update(embedding_multiplier=_number(config, "embedding_multiplier"),
                       residual_multiplier=_number(config, "residual_multiplier"),
                       attention_scale=_number(config, "attention_multiplier") or 1.0,
                       logit_scale=None if divisor is None else 1.0 / divisor)
    if family.moe:
        options["norm_topk_prob"] = _bool(config, "norm_topk_prob")
    return _core._LlamaOptions(inv_freq=freq, **_given(**options))


def _gemma_rope(config: dict, head_dim: int) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Gemma's rotary frequencies: of the full-attention layers and of the sliding-window ones
    (None: the same). transformers 5 writes them per layer type in ``rope_parameters``; older
    Gemma 3 configs give the local base as ``rope_local_base_freq``."""
    params = config.get("rope_parameters")
    if isinstance(params, dict) and ("full_attention" in params or "sliding_attention" in params):
        full = rotary({"rope_parameters": params.get("full_attention") or {}}, head_dim)
        local = params.get("sliding_attention")
        return full.inv_freq, None if local is None else rotary({"rope_parameters": local}, head_dim).inv_freq
    full = rotary(config, head_dim)
    local_base = _number(config, "rope_local_base_freq")
    if local_base is None:
        return full.inv_freq, None
    return full.inv_freq, rotary({"rope_parameters": {"rope_type": "default", "rope_theta": local_base}},
                                 head_dim).inv_freq


def _gemma_options(config: dict, sizes: "_core._ModelConfig", norms_plus_one: bool) -> "_core._GemmaOptions":
    """Gemma's core options from the config keys Gemma2/Gemma3's transformers classes read.
    norms_plus_one: the file stores the norm weights as 1 + w (llama.cpp's converter)."""
    inv_freq, local = _gemma_rope(config, sizes.head_dim)
    scalar = _number(config, "query_pre_attn_scalar")
    if scalar is not None and scalar <= 0:
        raise ValueError(f"model config: query_pre_attn_scalar = {scalar!r} must be positive")
    caps = {}
    for key, option in (("attn_logit_softcapping", "attn_softcap"), ("final_logit_softcapping", "final_softcap")):
        cap = _number(config, key)
        if cap is not None and cap <= 0:
            raise ValueError(f"model config: {key} = {cap!r} must be positive (or null)")
        caps[option] = cap
    # transformers scales the embeddings by the float32 value of sqrt(hidden) (as llama.cpp)
    return _core._GemmaOptions(inv_freq=inv_freq, inv_freq_local=local, norm_offset=0.0 if norms_plus_one else 1.0,
                               embed_scale=float(np.float32(math.sqrt(sizes.hidden))), **_given(
        rms_norm_eps=_epsilon(config, "rms_norm_eps"),
        attention_scale=None if scalar is None else float(np.float32(scalar ** -0.5)), **caps))


def _build_core(family: Family, config: dict, arrays: dict, rope_freqs: Optional[np.ndarray] = None, *,
                activations: str = "int8x2", norms_plus_one: bool = False) -> "_core._Model":
    """The C++ model of ``family`` over ``arrays`` (Hugging Face names; float32 arrays or
    kvgen.loaders.quantize.QuantizedTensor), from a Hugging Face config dict (a directory's
    config.json or kvgen.loaders.gguf.model's translation). norms_plus_one: a GGUF file's
    Gemma norm weights, stored as 1 + w."""
    arch = family.core
    _check_config(arch, config)
    sizes = _model_config(arch, config, family)
    if arch == "gpt2":
        return _core._Model.gpt2(sizes, _gpt2_options(config), arrays, activations=activations)
    if arch == "gemma":
        return _core._Model.gemma(sizes, _gemma_options(config, sizes, norms_plus_one), arrays,
                                  activations=activations)
    arrays = split_fused(family, arrays, {"q": sizes.heads * sizes.head_dim, "kv": sizes.kv_heads * sizes.head_dim,
                                          "i": sizes.intermediate})
    return _core._Model.llama(sizes, _llama_options(family, config, sizes, rope_freqs), arrays,
                              activations=activations)


def _long_rope_context(family: str, config: dict, core: "_core._Model") -> int:
    """The original context of a Llama-like model with LongRoPE's short and long factors
    (rope_parameters' original_max_position_embeddings), 0 for any other model. transformers
    computes a forward call with the long factors when its positions reach past it, and its
    Phi-3 ``generate`` recomputes the whole sequence when generation crosses it."""
    if core.architecture != "llama" or not isinstance(config, dict):
        return 0
    head_dim = config.get("head_dim") or core.hidden_size // core.num_heads
    rope = rotary(config, head_dim, partial=family == "phi3")
    return rope.original_context if rope.inv_freq_long is not None else 0


ACTIVATIONS = ("int8x2", "int8", "float")


def _conv1d_to_linear(arrays: dict) -> dict:
    """GPT-2's Conv1D matrices, stored (in, out), transposed to the (out, in) layout the core
    reads every matrix in (one copy at load; each thread then reads contiguous rows); its
    position embeddings as float32 (the core reads them so, from a 16-bit checkpoint too)."""
    from kvgen.loaders.quantize import GPT2_CONV1D, QuantizedTensor, to_float32

    def linear(name: str, w: Any) -> Any:
        if name.endswith("wpe.weight"):
            return to_float32(w)
        if len(w.shape) != 2 or not name.endswith(GPT2_CONV1D):
            return w
        if isinstance(w, QuantizedTensor):  # 16-bit: transpose the halves
            halves = np.ascontiguousarray(w.data.view(np.uint16).reshape(w.shape).T)
            return QuantizedTensor(w.type, halves.reshape(-1).view(np.uint8), tuple(reversed(w.shape)))
        return np.ascontiguousarray(w.T)

    return {name: linear(name, w) for name, w in arrays.items()}


KV_CACHE_DTYPES = ("auto", "float32", "float16", "int8")


def _kv_cache_dtype(activations: str, kv_cache_dtype: str) -> str:
    """Model.load's ``kv_cache_dtype``, checked against the activations mode: exact mode
    (float activations) keeps float32 keys and values, so a lossy cache is refused."""
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        raise ValueError(f"kv_cache_dtype={kv_cache_dtype!r:.60} is not one of {', '.join(map(repr, KV_CACHE_DTYPES))}")
    if activations == "float" and kv_cache_dtype in ("float16", "int8"):
        raise ValueError(f"exact=True (float activations) keeps float32 keys and values; kv_cache_dtype="
                         f"{kv_cache_dtype!r} would round them (use 'auto' or 'float32', or drop exact)")
    return kv_cache_dtype


def _activations(exact: bool, activations: Optional[str]) -> str:
    """The activations mode from Model.load's ``exact`` / ``activations`` arguments."""
    if not isinstance(exact, bool):
        raise TypeError(f"exact must be a bool, got {exact!r:.60}")
    if activations is None:
        return "float" if exact else "int8x2"
    if activations not in ACTIVATIONS:
        raise ValueError(f"activations={activations!r:.60} is not one of {', '.join(map(repr, ACTIVATIONS))}")
    if exact and activations != "float":
        raise ValueError(f"exact=True asks for float activations, activations={activations!r} for int8 ones")
    return activations


def _token_id(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < 2**63:
        raise ValueError(f"model config: {key} must hold non-negative integer token ids, got {value!r:.60}")
    return int(value)


def _token_ids(config: dict, key: str) -> Union[int, list, None]:
    """config[key]: None, a token id or a list of them (ValueError naming the key otherwise)."""
    value = config.get(key)
    if isinstance(value, (list, tuple)):
        return [_token_id(v, key) for v in value]
    return None if value is None else _token_id(value, key)


def _first_id(value: Union[int, list, None]) -> Optional[int]:
    if isinstance(value, list):
        return value[0] if value else None
    return value


def _looks_like_hub_id(path: Path) -> bool:
    """``owner/name`` as on the Hugging Face Hub: two parts, relative, no file suffix."""
    parts = path.parts
    return len(parts) == 2 and not path.is_absolute() and not path.suffix and not parts[0].startswith(".")


def _not_found_message(path: Path) -> str:
    message = (f"{path}: no such file or directory (kvgen.Model.load takes a Hugging Face model directory or a "
               ".gguf file)")
    if _looks_like_hub_id(path):
        message += (f". kvgen loads local files and does not download: {str(path)!r} looks like a Hugging Face Hub "
                    f"id; get a local copy with `huggingface-cli download {path.as_posix()} --local-dir DIR` or "
                    f"huggingface_hub.snapshot_download({path.as_posix()!r}, local_dir=DIR), then Model.load(DIR)")
    return message


class Model:
    """A built-in model with its tokenizer, loaded with ``Model.load(path)``.

    ``path`` is a Hugging Face directory (config.json + safetensors in float32, float16 or
    bfloat16) or a GGUF file, of one of the families in ``kvgen.loaders.families`` (gpt2,
    llama, qwen2, qwen3, qwen3moe, gemma2, gemma3, granite, smollm3, phi3).
    ``forward(input_ids)`` gives raw logits; ``kvgen.Generator(model, config)`` generates
    with it (KV-cached, prefill in 32-token chunks); ``apply_chat_template(messages)``
    formats a conversation.
    """

    def __init__(self, core: "_core._Model", config: dict, path: Optional[Path], tokenizer: Any = None, *,
                 bos_token_id: Optional[int] = None, eos_token_id: Union[int, list, None] = None,
                 chat_template: Optional[str] = None, bos_token: Optional[str] = None,
                 eos_token: Optional[str] = None, description: str = "", family: Optional[str] = None,
                 tensor_types: Optional[dict[str, int]] = None):
        self._core = core
        self.family = family or core.architecture  # the model family (kvgen.loaders.families)
        self.tensor_types = dict(tensor_types or {})  # the file's tensors by type: {"Q4_K": 120, "F32": 49}
        self.config = config
        self.path = path
        self.tokenizer = tokenizer
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        self.chat_template = chat_template
        self.bos_token, self.eos_token = bos_token, eos_token
        self.description = description
        # LongRoPE's switch (0: none): a sequence longer than this many positions is computed
        # with the long factors from its first position on (kvgen.generation.engine)
        self._long_rope_context = _long_rope_context(self.family, config, core)
        # what the engine may do with it (kvgen.families.capabilities): it never reads the config
        self.capabilities: Capabilities = capabilities_of(
            sliding_window=bool(isinstance(config, dict) and config.get("sliding_window")),
            long_rope_context=self._long_rope_context)
        self._token_strings: Optional[list[str]] = None
        if chat_template is not None:
            self._probe_chat_template()

    @classmethod
    def load(cls, path: Union[str, os.PathLike], *, dtype: Optional[str] = None, exact: bool = False,
             activations: Optional[str] = None, kv_cache_dtype: str = "auto") -> "Model":
        """Loads a Hugging Face model directory or a GGUF file (see the class docstring).

        A GGUF file's quantized matrices stay quantized in memory and are computed on
        directly. ``dtype="q8_0"`` or ``"q4_0"`` quantizes a directory's float matrices the
        same way at load (GGUF files keep their own types). ``exact=True`` is
        ``activations="float"``; see ``Model.activations`` for the modes.
        ``kv_cache_dtype`` is what the KV cache stores keys and values as (see
        ``Model.kv_cache_dtype``): ``"int8"`` takes half the memory of the default and reads
        half the bytes per decode step at long context, at a small loss of fidelity;
        exact mode accepts only ``"auto"`` and ``"float32"`` (ValueError otherwise).
        """
        mode = _activations(exact, activations)
        kv = _kv_cache_dtype(mode, kv_cache_dtype)
        model = cls._load_path(Path(path), dtype, mode)
        model._core.kv_cache_dtype = kv
        return model

    @classmethod
    def _load_path(cls, p: Path, dtype: Optional[str], mode: str) -> "Model":
        if p.is_dir():
            return cls._load_directory(p, dtype, mode)
        if not p.exists():
            raise FileNotFoundError(_not_found_message(p))
        from kvgen.loaders.gguf.model import is_gguf

        if not is_gguf(p):
            raise ValueError(f"{p}: not a GGUF file (no GGUF magic) and not a model directory")
        if dtype is not None:
            raise ValueError(f"{p}: dtype={dtype!r} applies to Hugging Face directories; a GGUF file's tensors keep "
                             "the types they were saved with")
        return cls._load_gguf(p, mode)

    @classmethod
    def _load_directory(cls, directory: Path, dtype: Optional[str], activations: str) -> "Model":
        config = read_config(directory)
        family = family_of_config(config, directory)
        try:
            arrays = read_weights(directory)
            if family.core == "gpt2":
                arrays = _conv1d_to_linear(arrays)
            if dtype is not None:
                from kvgen.loaders.quantize import quantize_checkpoint

                sizes = _model_config(family.core, config, family) if family.core == "llama" else None
                if sizes is not None:  # fused matrices split before they are quantized
                    arrays = split_fused(family, arrays, {"q": sizes.heads * sizes.head_dim,
                                                          "kv": sizes.kv_heads * sizes.head_dim,
                                                          "i": sizes.intermediate})
                arrays = quantize_checkpoint(family.core, arrays, dtype)
            core = _build_core(family, config, arrays, activations=activations)
        except (ValueError, TypeError) as e:
            if str(directory) in str(e):
                raise
            raise type(e)(f"{directory}: {e}") from None
        tokenizer = read_tokenizer(directory)
        bos, eos = _token_ids(config, "bos_token_id"), _token_ids(config, "eos_token_id")
        return cls(core, config, directory, tokenizer, bos_token_id=_first_id(bos), eos_token_id=eos,
                   chat_template=read_chat_template(directory), family=family.name,
                   tensor_types=read_weight_types(directory))

    @classmethod
    def _load_gguf(cls, path: Path, activations: str) -> "Model":
        from kvgen.loaders.gguf.model import read_gguf

        g = read_gguf(path)
        core = _build_core(g.family, g.config, g.arrays, rope_freqs=g.rope_freqs, activations=activations,
                           norms_plus_one=g.norms_plus_one)
        g.arrays = {}  # the quantized blocks were repacked: let the file's map go
        t = g.tokenizer
        types = ", ".join(f"{n} x{k}" for n, k in g.metadata.get("tensor_types", {}).items())
        description = f"{g.metadata.get('name') or path.name} ({types})"
        facts = dict(description=description, family=g.family.name, tensor_types=g.metadata.get("tensor_types"))
        if t is None:
            return cls(core, g.config, path, **facts)
        return cls(core, g.config, path, t.tokenizer, bos_token_id=t.bos_token_id, eos_token_id=t.eos_token_id,
                   chat_template=t.chat_template, bos_token=t.bos_token, eos_token=t.eos_token, **facts)

    def forward(self, input_ids) -> np.ndarray:
        """Logits [rows, length, vocab] for ``input_ids`` [rows, length] (or one 1-D row).

        The array is a new one that the caller owns (the forward pass writes into it, no
        copy is made): later calls, from this thread or others, never change it. A token id
        outside [0, vocab_size) is a ValueError naming its position and value.
        """
        return self._core.forward(input_ids)

    @property
    def architecture(self) -> str:
        """The core model that computes it: "gpt2", "llama" (every Llama-like family,
        Qwen3-MoE included) or "gemma" (Gemma 2 and 3); ``family`` names the family."""
        return self._core.architecture

    @property
    def activations(self) -> str:
        """What quantized matrices multiply (settable at any time; float32, F16 and BF16
        weights always meet float activations):

        - ``"int8x2"`` (the default): activations quantized to int8 per 32-value block in
          two levels, the second quantizing the first one's rounding error, so each value
          keeps about 15 bits, with integer dot products. Decode as fast as one level (it is
          bound by the weight bytes); on SmolLM2, over a 1,100-token text, the argmax equals
          transformers' at all positions but one near-tie and perplexity is within 0.01%.
          Prefill and batches of many rows, which are bound by arithmetic, do twice the
          integer work (with AVX-512 the two levels share one pass and one scaling per block).
        - ``"int8"``: one level (llama.cpp's arithmetic): the fastest prefill and batches;
          the argmax differs from transformers' at about 4% of positions.
        - ``"float"`` (``exact=True``): float32 activations, transformers' computation on
          the dequantized weights up to summation order; about 0.6x the decode speed.
        """
        return self._core.activations

    @activations.setter
    def activations(self, value: str) -> None:
        self._set_activations(_activations(False, value))

    def _set_activations(self, mode: str) -> None:
        """Switches the activations mode, refused where the KV cache's dtype does not allow it."""
        _kv_cache_dtype(mode, self.kv_cache_dtype)
        self._core.activations = mode

    @property
    def kv_cache_dtype(self) -> str:
        """What the KV cache stores keys and values as (read-only; ``Model.load``'s
        ``kv_cache_dtype``):

        - ``"auto"`` (the default): IEEE half with int8 activations on quantized weights,
          float32 in exact mode and for float weights.
        - ``"float32"``, ``"float16"``: that type whatever the activations.
        - ``"int8"``: int8 with one float scale per position and KV head (max|x| / 127,
          round to nearest): a quarter of float32's bytes plus 4 bytes per 64-128 values,
          half the default's memory and half the bytes a decode step reads per cached
          position. Lossy: see the README's KV cache section for its fidelity
          (llama.cpp's ``--cache-type-k/-v q8_0``, vLLM's ``kv_cache_dtype``).
        """
        return self._core.kv_cache_dtype

    @property
    def exact(self) -> bool:
        """Exact mode: ``activations == "float"``. Setting True selects float activations,
        False the default two-level int8 ones."""
        return self._core.activations == "float"

    @exact.setter
    def exact(self, value: bool) -> None:
        self._set_activations(_activations(value, None))

    @property
    def weight_bytes(self) -> int:
        """Bytes of the weights the model holds, quantized matrices at their packed size:
        about what one decode step reads."""
        return self._core.weight_bytes

    @property
    def vocab_size(self) -> int:
        """Size of the output vocabulary."""
        return self._core.vocab_size

    @property
    def context_length(self) -> int:
        """Positions the model supports (prompt + generated tokens)."""
        return self._core.context_length

    def kv_cache_bytes(self, rows: int, positions: int) -> int:
        """Bytes of a KV cache for ``rows`` sequences of ``positions`` tokens."""
        return self._core.kv_cache_bytes(rows, positions)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids of ``text``; ``add_special_tokens`` adds BOS where the tokenizer does."""
        return self._need_tokenizer().encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        """Text of token ids: integers in [0, vocab_size) (ValueError naming the first
        other id; TypeError for a non-integer)."""
        tokenizer = self._need_tokenizer()
        return tokenizer.decode([self._checked_id(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def _checked_id(self, token) -> int:
        if isinstance(token, (bool, np.bool_)):
            raise TypeError(f"decode: token id {token!r} is a bool, not an integer")
        try:
            i = operator.index(token)
        except TypeError:
            raise TypeError(f"decode: token id {token!r:.60} is not an integer") from None
        if not 0 <= i < self.vocab_size:
            raise ValueError(f"decode: token id {i} is outside the vocabulary [0, {self.vocab_size})")
        return i

    def token_strings(self) -> list[str]:
        """The text of every token id, for stop strings (computed once)."""
        if self._token_strings is None:
            tok = self._need_tokenizer()
            self._token_strings = [tok.decode([i], skip_special_tokens=False) for i in range(self.vocab_size)]
        return self._token_strings

    def apply_chat_template(self, messages: Sequence[dict], add_generation_prompt: bool = True, **extra) -> str:
        """The prompt text for a conversation (a list of {"role", "content"} dicts), rendered
        with the model's chat template as transformers' ``apply_chat_template(tokenize=False)``."""
        from kvgen.loaders.chat_template import render_chat

        # a str stays one (the check says to pass a list of messages), not a list of characters
        given: Any = messages if isinstance(messages, str) else list(messages)
        return render_chat(self._need_chat_template(), given, add_generation_prompt=add_generation_prompt,
                           bos_token=self.bos_token, eos_token=self.eos_token, **extra)

    def _probe_chat_template(self) -> None:
        """Renders the chat template once (the end-of-turn probe's conversation): a template
        past the rendering limits (time, memory, size, recursion, compiling included:
        kvgen.loaders.chat_template) is a ValueError at load, not a hang; other errors, and
        limits that only a longer conversation reaches, fail the chat that meets them."""
        from kvgen.loaders.chat_template import ChatTemplateLimitError, render_chat

        try:
            render_chat(self.chat_template, [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": _SENTINEL}],
                        add_generation_prompt=False, bos_token=self.bos_token, eos_token=self.eos_token)
        except ChatTemplateLimitError as e:
            raise ValueError(f"{self.path}: the chat template exceeds kvgen's rendering limits ({e})") from None
        except (ValueError, TypeError):
            pass

    def encode_chat(self, messages: Sequence[dict], add_generation_prompt: bool = True, *,
                    special_tokens_in_content: bool = False, **extra) -> list[int]:
        """The token ids of a conversation rendered with the chat template (no BOS added).

        Only the template's own text becomes special tokens: text from the caller (a message's
        content, name or tool calls, the tools, ...) that spells a special token (``<|im_end|>``)
        is encoded as plain text, so that a user cannot forge a turn of another role. The
        rendering tracks which characters came from the caller (``render_chat_spans``); the
        whole text is encoded as transformers' ``apply_chat_template(tokenize=True)`` does, and
        when a special token of that encoding touches the caller's text, the caller's spans are
        encoded apart as plain text instead. ``special_tokens_in_content=True`` encodes the
        whole rendered text as it is, special-token text in contents included."""
        from kvgen.loaders.chat_template import render_chat_spans

        given: Any = messages if isinstance(messages, str) else list(messages)
        rendered = render_chat_spans(self._need_chat_template(), given, add_generation_prompt=add_generation_prompt,
                                     bos_token=self.bos_token, eos_token=self.eos_token, **extra)
        tokenizer = self._need_tokenizer()
        text, spans = rendered.text, rendered.user_spans
        whole = tokenizer.encode(text, add_special_tokens=False)
        if special_tokens_in_content or not self._special_token_in_spans(whole.ids, whole.offsets, spans):
            return whole.ids
        plain = self._plain_text_tokenizer()
        ids: list[int] = []
        at = 0
        for start, end in spans:
            if start > at:
                ids += tokenizer.encode(text[at:start], add_special_tokens=False).ids
            ids += plain.encode(text[start:end], add_special_tokens=False).ids
            at = end
        if at < len(text):
            ids += tokenizer.encode(text[at:], add_special_tokens=False).ids
        return ids

    def _special_token_in_spans(self, ids: Sequence[int], offsets: Sequence[tuple[int, int]],
                                spans: Sequence[tuple[int, int]]) -> bool:
        """Whether any special token among ``ids`` (at character ``offsets``) overlaps one of
        the sorted, disjoint ``spans``."""
        import bisect

        if not spans:
            return False
        specials = self._special_token_ids()
        starts = [a for a, _ in spans]
        for token, (start, end) in zip(ids, offsets):
            if token in specials:
                i = bisect.bisect_right(starts, max(start, end - 1)) - 1
                if i >= 0 and spans[i][1] > start and end > spans[i][0]:
                    return True
        return False

    def _special_token_ids(self) -> frozenset:
        """The ids of the tokenizer's special added tokens (those a user must not forge)."""
        if getattr(self, "_special_ids", None) is None:
            decoder = self._need_tokenizer().get_added_tokens_decoder()
            self._special_ids = frozenset(i for i, token in decoder.items() if token.special)
        return self._special_ids

    def _plain_text_tokenizer(self) -> Any:
        """A copy of the tokenizer that encodes special-token text as plain text."""
        if getattr(self, "_plain_tokenizer", None) is None:
            from tokenizers import Tokenizer

            plain = Tokenizer.from_str(self._need_tokenizer().to_str())
            plain.encode_special_tokens = True
            self._plain_tokenizer = plain
        return self._plain_tokenizer

    @property
    def end_of_turn_token_id(self) -> Optional[int]:
        """The special token the chat template puts after an assistant reply (e.g.
        ``<|im_end|>``), found by rendering a reply (once per template); the EOS id when the
        template ends turns with plain text; None without a chat template."""
        if self.chat_template is None or self.tokenizer is None:
            return None
        key = (self.chat_template, self.bos_token, self.eos_token, self.eos_token_id)
        cached = getattr(self, "_end_of_turn", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        from kvgen.loaders.chat_template import render_chat

        text = render_chat(self.chat_template, [{"role": "user", "content": "hi"},
                                                {"role": "assistant", "content": _SENTINEL}],
                           add_generation_prompt=False, bos_token=self.bos_token, eos_token=self.eos_token)
        after = text[text.find(_SENTINEL) + len(_SENTINEL):] if _SENTINEL in text else ""
        specials = {tok.content: i for i, tok in self.tokenizer.get_added_tokens_decoder().items() if tok.special}
        matches = [s for s in specials if s and after.lstrip(" ").startswith(s)]
        found = specials[max(matches, key=len)] if matches else _first_id(self.eos_token_id)
        self._end_of_turn = (key, found)
        return found

    def _need_tokenizer(self):
        if self.tokenizer is None:
            raise ValueError(f"{self.path}: the model has no tokenizer; pass token ids instead of text")
        return self.tokenizer

    def _need_chat_template(self) -> str:
        if self.chat_template is None:
            raise ValueError(f"{self.path}: the model has no chat template (tokenizer.chat_template in GGUF, "
                             "chat_template in tokenizer_config.json)")
        return self.chat_template

    def __repr__(self) -> str:
        c = self._core
        return (f"Model({self.family}, layers={c.num_layers}, hidden={c.hidden_size}, heads={c.num_heads}, "
                f"kv_heads={c.num_kv_heads}, vocab={c.vocab_size}, context={c.context_length}, "
                f"tokenizer={self.tokenizer is not None}, chat_template={self.chat_template is not None}, "
                f"kv_cache_dtype={self.kv_cache_dtype!r}, path={str(self.path)!r})")
