"""GPT-2 (GPT2LMHeadModel): learned positions, LayerNorm, a fused qkv matrix, GELU. Not
Llama-like: computed by the core's own GPT-2 model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from kvgen import _core
from kvgen.families.config_values import INT64, boolean, epsilon, given, integer_or, positive
from kvgen.families.family import Family, GGUFModel
from kvgen.loaders.gguf.model import GGUFContents


def options(config: dict) -> "_core._GPT2Options":
    """GPT-2's core options from the config keys GPT2LMHeadModel reads."""
    # activation_function is one of the supported ones (check_config): "gelu" is erf's
    return _core._GPT2Options(exact_gelu=config.get("activation_function") == "gelu", **given(
        layer_norm_epsilon=epsilon(config, "layer_norm_epsilon"),
        scale_attn_weights=boolean(config, "scale_attn_weights"),
        scale_attn_by_inverse_layer_idx=boolean(config, "scale_attn_by_inverse_layer_idx")))


def conv1d_to_linear(arrays: dict) -> dict:
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


@dataclass(frozen=True)
class GPT2Family(Family):
    """GPT-2's translation: config.json's n_* keys, GGUF's gpt2.* keys."""

    core = "gpt2"
    activation = ("activation_function", "gelu_new", frozenset({"gelu_new", "gelu_pytorch_tanh", "gelu"}))
    refused = {"add_cross_attention": (False, "cross-attention (encoder-decoder GPT-2)")}

    def sizes(self, config: dict) -> "_core._ModelConfig":
        vocab_size, context_length = positive(config, "vocab_size"), positive(config, "n_positions")
        hidden, layers, heads = positive(config, "n_embd"), positive(config, "n_layer"), positive(config, "n_head")
        # transformers' default MLP width, saturated: a hidden size that large is refused by
        # validate() (n_embd above its limit) before the width is looked at
        intermediate = integer_or(config, "n_inner", min(4 * hidden, INT64[1]))
        sizes = _core._ModelConfig(architecture="gpt2", vocab_size=vocab_size, context_length=context_length,
                                   hidden=hidden, layers=layers, heads=heads, kv_heads=heads,
                                   head_dim=hidden // heads, intermediate=intermediate)
        sizes.validate()
        return sizes

    def checkpoint_arrays(self, config: dict, arrays: dict, dtype: Optional[str]) -> dict:
        return super().checkpoint_arrays(config, conv1d_to_linear(arrays), dtype)

    def build_core(self, config: dict, arrays: dict, *, activations: str = "int8x2",
                   rope_freqs: Optional[np.ndarray] = None, norms_plus_one: bool = False) -> "_core._Model":
        self.check_config(config)
        sizes = self.sizes(config)
        return _core._Model.gpt2(sizes, options(config), arrays, activations=activations)

    def from_gguf(self, gguf: GGUFContents) -> GGUFModel:
        """GPT-2's Conv1D weights are stored transposed in GGUF ([out, in]): the layout the core
        reads (a checkpoint's [in, out] ones are transposed to it, conv1d_to_linear)."""
        a = "gpt2."
        C = gguf.size(a + "embedding_length")
        I = gguf.size(a + "feed_forward_length", 4 * C)
        L = gguf.size(a + "block_count")
        heads = gguf.size(a + "attention.head_count")
        if C % heads:
            raise ValueError(f"{gguf.path}: embedding_length = {C} does not split into attention.head_count = "
                             f"{heads} heads")
        wte_shape = gguf.embedding_shape(C)
        wte = gguf.matrix("token_embd.weight", wte_shape)
        config = {
            "model_type": "gpt2",
            "vocab_size": wte_shape[0],
            "n_positions": gguf.size(a + "context_length"),
            "n_embd": C,
            "n_layer": L,
            "n_head": heads,
            "n_inner": I,
            "layer_norm_epsilon": gguf.get(a + "attention.layer_norm_epsilon", float, 1e-5),
            "activation_function": "gelu_new",
        }
        arrays = {"wte.weight": wte,
                  "wpe.weight": gguf.vector("position_embd.weight", (config["n_positions"], C)),
                  "ln_f.weight": gguf.vector("output_norm.weight", (C,)),
                  "ln_f.bias": gguf.vector("output_norm.bias", (C,))}
        used = {"token_embd.weight", "position_embd.weight", "output_norm.weight", "output_norm.bias"}
        if "output.weight" in gguf.tensors:
            arrays["lm_head.weight"] = gguf.matrix("output.weight", wte_shape)
            used.add("output.weight")
        # GGUF name -> (HF name, GGUF [out, in] shape or None for vectors)
        names = {"attn_norm": ("ln_1", None), "ffn_norm": ("ln_2", None), "attn_qkv": ("attn.c_attn", (3 * C, C)),
                 "attn_output": ("attn.c_proj", (C, C)), "ffn_up": ("mlp.c_fc", (I, C)),
                 "ffn_down": ("mlp.c_proj", (C, I))}
        for layer in range(L):
            for gg, (hf, shape) in names.items():
                out_dim = shape[0] if shape else C
                if shape:  # (out, in), as the core reads every matrix
                    w = gguf.matrix(f"blk.{layer}.{gg}.weight", shape)
                else:
                    w = gguf.vector(f"blk.{layer}.{gg}.weight", (C,))
                arrays[f"h.{layer}.{hf}.weight"] = w
                arrays[f"h.{layer}.{hf}.bias"] = gguf.vector(f"blk.{layer}.{gg}.bias", (out_dim,))
                used.update({f"blk.{layer}.{gg}.weight", f"blk.{layer}.{gg}.bias"})
        gguf.check_all_used(used)
        return GGUFModel(self, config, arrays)


FAMILY = GPT2Family("gpt2", ("gpt2",), "gpt2", "GPT2LMHeadModel",
                    "learned positions, LayerNorm, fused qkv, GELU (not Llama-like)")
