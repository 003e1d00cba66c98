"""Gemma 2 (Gemma2ForCausalLM), and the translation Gemma 3 reuses: embeddings scaled by
sqrt(hidden), GeGLU, norms after attention and after the MLP, attention and final-logit
soft-capping, sliding-window attention on alternate layers, a query scale from the config.
Computed by the core's "gemma" model.

llama.cpp's converter stores the RMSNorm weights as 1 + w (transformers' Gemma norms compute
x * (1 + w)); its files do not store the sliding-window pattern when it is the family's (a
sliding layer, then every ``gguf_swa_pattern``-th a global one), nor the query scale
(llama.cpp: 1 / sqrt(hidden / heads) for the 27B shapes, of ``gguf_wide_query_layers`` layers,
else 1 / sqrt(head_dim)), nor Gemma 3's local rotary base when it is 10000.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from kvgen import _core
from kvgen.families.config_values import checked_window, epsilon, given, layer_windows, number
from kvgen.families.family import Family, GGUFModel
from kvgen.families.llama import read_sizes
from kvgen.loaders.gguf.model import GGUFContents
from kvgen.loaders.rope import rope_parameters, rotary


def gemma_rope(config: dict, head_dim: int) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Gemma's rotary frequencies: of the full-attention layers and of the sliding-window ones
    (None: the same). transformers 5 writes them per layer type in ``rope_parameters``; older
    Gemma 3 configs give the local base as ``rope_local_base_freq``."""
    params = config.get("rope_parameters")
    if isinstance(params, dict) and ("full_attention" in params or "sliding_attention" in params):
        full = _rotary({"rope_parameters": params.get("full_attention") or {}}, head_dim)
        local = params.get("sliding_attention")
        return full, None if local is None else _rotary({"rope_parameters": local}, head_dim)
    full = _rotary(config, head_dim)
    local_base = number(config, "rope_local_base_freq")
    if local_base is None:
        return full, None
    return full, _rotary({"rope_parameters": {"rope_type": "default", "rope_theta": local_base}}, head_dim)


def _rotary(config: dict, head_dim: int) -> np.ndarray:
    """The inverse frequencies of a rotary embedding the Gemma core computes: without a cos/sin
    attention factor (YaRN's, LongRoPE's) or a second set of frequencies."""
    rope = rotary(config, head_dim)
    if rope.attention_factor != 1.0 or rope.inv_freq_long is not None:
        kind = rope_parameters(config)["rope_type"]
        raise ValueError(f"rope scaling {kind!r} is not supported for Gemma (its cos/sin attention factor or its long "
                         "frequencies)")
    return rope.inv_freq


@dataclass(frozen=True)
class GemmaFamily(Family):
    """A family the core's Gemma model computes."""

    core = "gemma"
    activation = ("hidden_activation", "gelu_pytorch_tanh", frozenset({"gelu_pytorch_tanh", "gelu_new"}))
    refused = {"use_bidirectional_attention": (False, "bidirectional attention (an encoder)")}

    # a sliding layer, then every n-th a global one: transformers' default sliding_window_pattern
    # (configs without layer_types) and llama.cpp's rule for files that do not store it
    gguf_swa_pattern: int = 2
    # llama.cpp scales the queries by 1 / sqrt(hidden / heads) in models of this many layers
    gguf_wide_query_layers: Optional[int] = None
    # llama.cpp rotates the sliding layers as the global ones (True: Gemma 2), or with base 10000
    # (or rope.freq_base_swa) and no scaling (False: Gemma 3)
    gguf_local_rope_as_global: bool = True

    # ---- a Hugging Face config ----

    def layer_windows(self, config: dict, layers: int) -> list[int]:
        """Per layer, the sliding window (0 for a full-attention layer), from the config's
        ``layer_types`` or, in configs written before it, transformers' default pattern (a
        full-attention layer every ``sliding_window_pattern``-th)."""
        window = config.get("sliding_window")
        if window is None:
            return [0] * layers
        window = checked_window(window)
        types = config.get("layer_types")
        if types is None:
            pattern = config.get("sliding_window_pattern", self.gguf_swa_pattern)
            if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 1:
                raise ValueError(f"model config: sliding_window_pattern = {pattern!r:.40} must be a positive integer")
            types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)]
        return layer_windows(types, layers, window)

    def sizes(self, config: dict) -> "_core._ModelConfig":
        read = read_sizes(config)
        sizes = _core._ModelConfig(architecture=self.core, **read,
                                   layer_windows=self.layer_windows(config, read["layers"]))
        sizes.validate()
        return sizes

    def options(self, config: dict, sizes: "_core._ModelConfig", norms_plus_one: bool) -> "_core._GemmaOptions":
        """The core options from the config keys Gemma2/Gemma3's transformers classes read.
        norms_plus_one: the file stores the norm weights as 1 + w (llama.cpp's converter)."""
        inv_freq, local = gemma_rope(config, sizes.head_dim)
        scalar = number(config, "query_pre_attn_scalar")
        if scalar is not None and scalar <= 0:
            raise ValueError(f"model config: query_pre_attn_scalar = {scalar!r} must be positive")
        caps = {}
        for key, option in (("attn_logit_softcapping", "attn_softcap"), ("final_logit_softcapping", "final_softcap")):
            cap = number(config, key)
            if cap is not None and cap <= 0:
                raise ValueError(f"model config: {key} = {cap!r} must be positive (or null)")
            caps[option] = cap
        # transformers scales the embeddings by the float32 value of sqrt(hidden) (as llama.cpp)
        return _core._GemmaOptions(inv_freq=inv_freq, inv_freq_local=local,
                                   norm_offset=0.0 if norms_plus_one else 1.0,
                                   embed_scale=float(np.float32(math.sqrt(sizes.hidden))), **given(
            rms_norm_eps=epsilon(config, "rms_norm_eps"),
            attention_scale=None if scalar is None else float(np.float32(scalar ** -0.5)), **caps))

    def build_core(self, config: dict, arrays: dict, *, activations: str = "int8x2",
                   rope_freqs: Optional[np.ndarray] = None, norms_plus_one: bool = False) -> "_core._Model":
        self.check_config(config)
        sizes = self.sizes(config)
        return _core._Model.gemma(sizes, self.options(config, sizes, norms_plus_one), arrays,
                                  activations=activations)

    # ---- a GGUF file ----

    def swa_pattern(self, gguf: GGUFContents, a: str, layers: int) -> list[bool]:
        """Per layer, whether it attends over the sliding window: attention.sliding_window_pattern
        (a list of flags, or n: the last of every n layers global), else the family's n."""
        key = a + "attention.sliding_window_pattern"
        flags = gguf.flags(key, layers)
        if flags is not None:
            return flags
        n = gguf.size(key, self.gguf_swa_pattern)
        return [i % n < n - 1 for i in range(layers)]

    def from_gguf(self, gguf: GGUFContents) -> GGUFModel:
        path = gguf.path
        a = self.gguf_architecture + "."
        hidden, heads, kv_heads, head_dim = gguf.attention_shape(self.gguf_architecture)
        if gguf.size(a + "attention.value_length", head_dim) != head_dim:
            raise ValueError(f"{path}: attention.value_length differs from key_length = {head_dim}")
        if gguf.size(a + "rope.dimension_count", head_dim) != head_dim:
            raise ValueError(f"{path}: partial rotary embeddings are not supported for {self.name}")
        L = gguf.size(a + "block_count")
        embed_shape = gguf.embedding_shape(hidden)
        vocab, C = embed_shape[0], hidden
        config: dict[str, Any] = {
            "model_type": self.model_types[0],
            "vocab_size": vocab,
            "max_position_embeddings": gguf.size(a + "context_length"),
            "hidden_size": hidden,
            "num_hidden_layers": L,
            "num_attention_heads": heads,
            "num_key_value_heads": kv_heads,
            "head_dim": head_dim,
            "intermediate_size": gguf.size(a + "feed_forward_length"),
            "rms_norm_eps": gguf.get(a + "attention.layer_norm_rms_epsilon", float),
            "hidden_activation": "gelu_pytorch_tanh",
            # llama.cpp: 1 / sqrt(hidden / heads) for the 27B shapes, else 1 / sqrt(head_dim)
            "query_pre_attn_scalar": hidden // heads if L == self.gguf_wide_query_layers else head_dim,
        }
        for key, hf in (("attn_logit_softcapping", "attn_logit_softcapping"),
                        ("final_logit_softcapping", "final_logit_softcapping")):
            cap = gguf.get(a + key, float, 0.0)
            if cap:
                config[hf] = cap
        window = gguf.get(a + "attention.sliding_window", int, 0)
        if window:
            pattern = self.swa_pattern(gguf, a, L)
            config.update(sliding_window=window,
                          layer_types=["sliding_attention" if s else "full_attention" for s in pattern])
        full: dict[str, Any] = {"rope_type": "default", "rope_theta": gguf.get(a + "rope.freq_base", float, 10000.0)}
        scaling = gguf.get(a + "rope.scaling.type", str, "none")
        if scaling == "linear":
            full.update(rope_type="linear", factor=gguf.get(a + "rope.scaling.factor", float))
        elif scaling != "none":
            raise ValueError(f"{path}: rope scaling {scaling!r} is not supported for {self.name} (none, linear)")
        local = dict(full) if self.gguf_local_rope_as_global else {"rope_type": "default", "rope_theta": 10000.0}
        local["rope_theta"] = gguf.get(a + "rope.freq_base_swa", float, local["rope_theta"])
        config["rope_parameters"] = {"full_attention": full, "sliding_attention": local}
        arrays: dict[str, Any] = {"model.embed_tokens.weight": gguf.matrix("token_embd.weight", embed_shape),
                                  "model.norm.weight": gguf.vector("output_norm.weight", (C,))}
        used = {"token_embd.weight", "output_norm.weight"}
        if "output.weight" in gguf.tensors:
            arrays["lm_head.weight"] = gguf.matrix("output.weight", (vocab, C))
            used.add("output.weight")
        I, q, kv = config["intermediate_size"], heads * head_dim, kv_heads * head_dim
        names = gguf_layer_names(C, q, kv, head_dim, I)
        for layer in range(L):
            for gg, (hf, shape) in names.items():
                src = f"blk.{layer}.{gg}.weight"
                if gg in ("attn_q_norm", "attn_k_norm") and src not in gguf.tensors:
                    continue  # Gemma 3 only
                arrays[f"model.layers.{layer}.{hf}.weight"] = (gguf.matrix(src, shape) if len(shape) == 2
                                                               else gguf.vector(src, shape))
                used.add(src)
        gguf.check_all_used(used)
        return GGUFModel(self, config, arrays, norms_plus_one=True)


FAMILY = GemmaFamily("gemma2", ("gemma2",), "gemma2", "Gemma2ForCausalLM",
                     "embeddings scaled by sqrt(hidden); GeGLU; norms after attention and MLP; attention and "
                     "final-logit soft-capping; sliding-window attention on alternate layers; query scale from the "
                     "config", gguf_swa_pattern=2, gguf_wide_query_layers=46)


def gguf_layer_names(C: int, q: int, kv: int, head_dim: int, intermediate: int) -> dict[str, tuple[str, tuple]]:
    """A Gemma layer's llama.cpp tensor names (``blk.N.<name>.weight``) -> (its transformers name
    under ``model.layers.N.``, shape): the four norms, q/k norms, attention and MLP, for q and
    kv projection widths, head_dim and the MLP's ``intermediate`` width."""
    I = intermediate  # noqa: E741
    return {"attn_norm": ("input_layernorm", (C,)), "post_attention_norm": ("post_attention_layernorm", (C,)),
            "ffn_norm": ("pre_feedforward_layernorm", (C,)), "post_ffw_norm": ("post_feedforward_layernorm", (C,)),
            "attn_q_norm": ("self_attn.q_norm", (head_dim,)), "attn_k_norm": ("self_attn.k_norm", (head_dim,)),
            "attn_q": ("self_attn.q_proj", (q, C)), "attn_k": ("self_attn.k_proj", (kv, C)),
            "attn_v": ("self_attn.v_proj", (kv, C)), "attn_output": ("self_attn.o_proj", (C, q)),
            "ffn_gate": ("mlp.gate_proj", (I, C)), "ffn_up": ("mlp.up_proj", (I, C)),
            "ffn_down": ("mlp.down_proj", (C, I))}
