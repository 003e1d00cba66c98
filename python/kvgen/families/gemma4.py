"""Gemma 4 (Gemma4ForCausalLM, and the text model of Gemma4ForConditionalGeneration): Gemma 3's
block (norms before and after attention and MLP, GeGLU, q/k norms, sliding and full-attention
layers) computed by the core's "gemma" model, with what Gemma 4 adds, each read from the config:

- the full-attention layers' own head_dim (``global_head_dim``, or ``per_layer_config``) and kv
  heads (``num_global_key_value_heads`` where ``attention_k_eq_v``), rotated by the
  ``proportional`` rotary embedding (the first ``partial_rotary_factor`` of each head's
  frequencies, the rest not rotating); the sliding layers by the default one;
- the last ``num_kv_shared_layers`` layers attend over the keys and values of the last earlier
  layer of their kind and keep none (``ModelConfig.kv_sources``);
- values RMS-normed without a weight; values that are the key projection where a layer has no
  ``v_proj`` (``attention_k_eq_v``); attention scores unscaled (scale 1);
- per-layer embeddings (``hidden_size_per_layer_input`` > 0: the E models);
- a ``layer_scalar`` per layer, MLPs twice as wide on the KV-shared layers
  (``use_double_wide_mlp``), the final logits soft-capped.

- a mixture of experts beside the MLP in every layer (``enable_moe_block``, the 26B-A4B: a
  softmax router over all experts on a scaled RMSNorm of the block's input, top-k renormalised,
  times a scale per expert; GeGLU experts; norms after the MLP, before and after the experts),
  from directories and llama.cpp's files.

The norms are plain RMSNorms (x * w, no 1 + w as Gemma 2 and 3). Bidirectional attention over
every token is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from kvgen import _core
from kvgen.families.config_values import checked_window, epsilon, given, integer_or, layer_windows, number, positive
from kvgen.families.family import GGUFModel
from kvgen.families.gemma2 import GemmaFamily, gguf_layer_names
from kvgen.families.llama import read_sizes
from kvgen.loaders.gguf.model import GGUFContents
from kvgen.loaders.quantize import QuantizedTensor
from kvgen.loaders.rope import inv_freq as rope_inv_freq


def layer_types(config: dict, layers: int) -> list[str]:
    """Per layer, ``sliding_attention`` or ``full_attention``: the config's ``layer_types`` or
    transformers' default (every 6th layer full), the last layer full either way (as
    Gemma4TextConfig forces it)."""
    types = config.get("layer_types")
    if types is None:
        types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(layers)]
    if not isinstance(types, list) or len(types) != layers or \
            any(t not in ("sliding_attention", "full_attention") for t in types):
        raise ValueError(f"model config: layer_types must list {layers} of sliding_attention / full_attention, got "
                         f"{types!r:.80}")
    return [*types[:-1], "full_attention"]


def kv_sources(types: list[str], shared: int) -> list[int]:
    """Per layer, the layer whose keys and values it attends over (Gemma4TextConfig's
    kv_sharing_modes): the last ``shared`` layers read the last earlier layer of their kind."""
    layers = len(types)
    if not 0 <= shared < layers:
        raise ValueError(f"model config: num_kv_shared_layers = {shared} must be in [0, num_hidden_layers = {layers})")
    first = layers - shared
    sources = list(range(layers))
    for i in range(first, layers):
        earlier = [j for j in range(first) if types[j] == types[i]]
        if not earlier:
            raise ValueError(f"model config: layer {i} ({types[i]}) shares the keys and values of an earlier "
                             f"{types[i]} layer, and there is none among the first {first}")
        sources[i] = earlier[-1]
    return sources


def proportional_inv_freq(head_dim: int, params: dict) -> np.ndarray:
    """transformers' ``proportional`` rotary frequencies: (head_dim / 2), the first
    int(partial_rotary_factor * head_dim // 2) as the default rope's over head_dim, the rest 0
    (not rotating), all divided by ``factor``; in float32 as torch computes them."""
    factor = params.get("partial_rotary_factor", 1.0)
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 <= factor <= 1:
        raise ValueError(f"model config: partial_rotary_factor = {factor!r:.60} must be in [0, 1]")
    angles = int(factor * head_dim // 2)
    base = np.float32(params.get("rope_theta", 10000.0))
    exponents = np.arange(0, 2 * angles, 2, dtype=np.int64).astype(np.float32) / np.float32(head_dim)
    with np.errstate(all="ignore"):
        freq = np.concatenate([np.float32(1.0) / (base ** exponents), np.zeros(head_dim // 2 - angles, np.float32)])
        freq = freq / np.float32(params.get("factor", 1.0))
    if not np.all(np.isfinite(freq)):
        raise ValueError(f"model config: rope_parameters {params!r:.80} give non-finite rotary frequencies")
    return np.ascontiguousarray(freq, dtype=np.float32)


def _rotary(params: Any, head_dim: int) -> np.ndarray:
    if not isinstance(params, dict):
        raise ValueError(f"model config: rope_parameters per layer type must be objects, got {params!r:.60}")
    if params.get("rope_type", "default") == "proportional":
        return proportional_inv_freq(head_dim, params)
    if params.get("rope_type", "default") not in ("default", "linear"):
        raise ValueError(f"rope scaling {params.get('rope_type')!r:.40} is not supported for Gemma 4 (default, "
                         "linear, proportional)")
    return rope_inv_freq(head_dim, params)


@dataclass(frozen=True)
class Gemma4Family(GemmaFamily):
    """Gemma 4's translation into the core's "gemma" model."""

    refused = {"use_bidirectional_attention": ("vision", "bidirectional attention over every token")}

    def shapes(self, config: dict, read: dict) -> tuple[list[str], list[int], list[int]]:
        """Per layer: its kind, kv heads and head_dim (the full-attention layers' own where the
        config gives them: ``per_layer_config``, else ``global_head_dim`` and, where
        ``attention_k_eq_v``, ``num_global_key_value_heads``)."""
        L = read["layers"]
        types = layer_types(config, L)
        kv = [read["kv_heads"]] * L
        hd = [read["head_dim"]] * L
        per_layer = config.get("per_layer_config")
        if isinstance(per_layer, dict):
            for key, over in per_layer.items():
                if not (isinstance(key, str) and key.isdigit() and int(key) < L) or not isinstance(over, dict):
                    continue  # transformers keys it by layer index (and by layer type, which it derives)
                hd[int(key)] = over.get("head_dim", hd[int(key)])
                kv[int(key)] = over.get("num_key_value_heads", kv[int(key)])
        else:
            global_hd = integer_or(config, "global_head_dim", 512)
            global_kv = config.get("num_global_key_value_heads") if config.get("attention_k_eq_v", True) else None
            for i, t in enumerate(types):
                if t == "full_attention":
                    hd[i] = global_hd
                    kv[i] = read["kv_heads"] if global_kv is None else positive(config, "num_global_key_value_heads")
        for v in (*hd, *kv):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"model config: a layer's head_dim or num_key_value_heads is {v!r:.40}")
        return types, kv, hd

    def sizes(self, config: dict) -> "_core._ModelConfig":
        read = read_sizes(config)
        types, kv, hd = self.shapes(config, read)
        window = checked_window(config.get("sliding_window") or 0) if "sliding_attention" in types else 0
        moe = bool(config.get("enable_moe_block"))
        experts = dict(experts=positive(config, "num_experts"), experts_per_token=positive(config, "top_k_experts"),
                       expert_intermediate=positive(config, "moe_intermediate_size")) if moe else {}
        sizes = _core._ModelConfig(architecture=self.core, **read, **experts,
                                   layer_windows=layer_windows(types, read["layers"], window) if window else [],
                                   layer_kv_heads=kv, layer_head_dims=hd,
                                   kv_sources=kv_sources(types, integer_or(config, "num_kv_shared_layers", 0)))
        sizes.validate()
        return sizes

    def checkpoint_arrays(self, config: dict, arrays: dict, dtype: Optional[str]) -> dict:
        """The mixture of experts (``enable_moe_block``) in the names the core's experts read: the
        router's projection and per-expert scale as ``mlp.gate.weight`` / ``.expert_scale``, the
        fused (experts, 2 x width, hidden) ``gate_up_proj`` cut into each expert's gate and up rows
        (views) and ``down_proj`` into each expert's matrix."""
        if config.get("enable_moe_block"):
            arrays = dict(arrays)
            for name in [n for n in arrays if n.endswith(".experts.gate_up_proj")]:
                p = name[: -len("experts.gate_up_proj")]
                gate_up, down = np.asarray(arrays.pop(name)), np.asarray(arrays.pop(p + "experts.down_proj"))
                width = gate_up.shape[1] // 2
                for e in range(gate_up.shape[0]):
                    arrays[f"{p}mlp.experts.{e}.gate_proj.weight"] = gate_up[e, :width]
                    arrays[f"{p}mlp.experts.{e}.up_proj.weight"] = gate_up[e, width:]
                    arrays[f"{p}mlp.experts.{e}.down_proj.weight"] = down[e]
                arrays[p + "mlp.gate.weight"] = arrays.pop(p + "router.proj.weight")
                arrays[p + "mlp.gate.expert_scale"] = arrays.pop(p + "router.per_expert_scale")
        return super().checkpoint_arrays(config, arrays, dtype)

    def options(self, config: dict, sizes: "_core._ModelConfig", norms_plus_one: bool) -> "_core._GemmaOptions":
        params = config.get("rope_parameters") or {}
        if not isinstance(params, dict):
            raise ValueError(f"model config: rope_parameters must be an object, got {params!r:.60}")
        types = layer_types(config, sizes.layers)
        full_hd = sizes.layer_head_dims[types.index("full_attention")]
        full = _rotary(params.get("full_attention") or {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                         "rope_theta": 1_000_000.0}, full_hd)
        local = None
        if "sliding_attention" in types:
            local_hd = sizes.layer_head_dims[types.index("sliding_attention")]
            local = _rotary(params.get("sliding_attention") or {"rope_type": "default", "rope_theta": 10_000.0},
                            local_hd)
        cap = number(config, "final_logit_softcapping")
        if cap is not None and cap <= 0:
            raise ValueError(f"model config: final_logit_softcapping = {cap!r} must be positive (or null)")
        P = integer_or(config, "hidden_size_per_layer_input", 0) or 0
        I = sizes.intermediate
        shared_from = sizes.layers - integer_or(config, "num_kv_shared_layers", 0)
        wide = bool(config.get("use_double_wide_mlp"))
        return _core._GemmaOptions(
            inv_freq=full, inv_freq_local=local, norm_offset=0.0, attention_scale=1.0, value_norm=True,
            embed_scale=float(np.float32(math.sqrt(sizes.hidden))),
            per_layer_hidden=P, per_layer_vocab=positive(config, "vocab_size_per_layer_input") if P else 0,
            layer_intermediate=[2 * I if wide and i >= shared_from else I for i in range(sizes.layers)],
            **given(rms_norm_eps=epsilon(config, "rms_norm_eps"), final_softcap=cap))

    # ---- a GGUF file (llama.cpp's convert_hf_to_gguf.py, Gemma4Model) ----

    def from_gguf(self, gguf: GGUFContents) -> GGUFModel:
        """llama.cpp's converter writes the full-attention layers' head_dim as key_length and the
        sliding ones' as key_length_swa, the kv heads and MLP widths per layer (arrays), the layer
        kinds as sliding_window_pattern flags, the shared layers' count, the per-layer embeddings'
        width, the norms as they are (no 1 + w), and the proportional rotary as the full head_dim
        with a frequency divisor per pair (rope_freqs: 1 for a rotating pair, 1e30 for the rest)."""
        path = gguf.path
        a = self.gguf_architecture + "."
        hidden, heads, L = gguf.size(a + "embedding_length"), gguf.size(a + "attention.head_count"), \
            gguf.size(a + "block_count")
        kv = _layer_sizes(gguf, a + "attention.head_count_kv", L)
        ffn = _layer_sizes(gguf, a + "feed_forward_length", L)
        full_hd, swa_hd = gguf.size(a + "attention.key_length"), gguf.size(a + "attention.key_length_swa")
        for key, expected in (("attention.value_length", full_hd), ("attention.value_length_swa", swa_hd),
                              ("rope.dimension_count", full_hd), ("rope.dimension_count_swa", swa_hd)):
            if gguf.size(a + key, expected) != expected:
                raise ValueError(f"{path}: {a + key} differs from the head_dim {expected} kvgen computes it with")
        sliding = gguf.flags(a + "attention.sliding_window_pattern", L)
        if sliding is None:
            raise ValueError(f"{path}: GGUF metadata has no {a}attention.sliding_window_pattern (per layer flags)")
        types = ["sliding_attention" if f else "full_attention" for f in sliding]
        shared = gguf.get(a + "attention.shared_kv_layers", int, 0)
        P = gguf.get(a + "embedding_length_per_layer_input", int, 0)
        vocab, C = gguf.embedding_shape(hidden)
        swa_kv = next((kv[i] for i, t in enumerate(types) if t == "sliding_attention"), kv[0])
        first_shared = L - shared
        wide = any(ffn[i] != ffn[0] for i in range(L))
        if wide and ffn != [ffn[0] if i < first_shared else 2 * ffn[0] for i in range(L)]:
            raise ValueError(f"{path}: {a}feed_forward_length = {ffn[:8]} is neither one width nor twice it on the "
                             "shared layers (use_double_wide_mlp)")
        # the full layers' rotary: the frequencies divided by 1 rotate, those divided by 1e30 do not
        pairs = full_hd // 2
        divisors = gguf.vector("rope_freqs.weight", (pairs,)) if "rope_freqs.weight" in gguf.tensors \
            else np.ones(pairs, np.float32)
        rotating = int(np.sum(divisors == 1.0))
        if not (np.all(divisors[:rotating] == 1.0) and np.all(divisors[rotating:] >= 1e29)):
            raise ValueError(f"{path}: rope_freqs.weight is not 1 for the first pairs and 1e30 for the rest (the "
                             "proportional rotary embedding)")
        config: dict[str, Any] = {
            "model_type": self.model_types[0], "vocab_size": vocab,
            "max_position_embeddings": gguf.size(a + "context_length"), "hidden_size": hidden,
            "num_hidden_layers": L, "num_attention_heads": heads, "num_key_value_heads": swa_kv,
            "head_dim": swa_hd, "intermediate_size": ffn[0], "use_double_wide_mlp": wide,
            "per_layer_config": {str(i): {"head_dim": full_hd, "num_key_value_heads": kv[i]}
                                 for i, t in enumerate(types) if t == "full_attention"},
            "layer_types": types, "num_kv_shared_layers": shared,
            "rms_norm_eps": gguf.get(a + "attention.layer_norm_rms_epsilon", float),
            "hidden_size_per_layer_input": P,
            "rope_parameters": {
                "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 2 * rotating / full_hd,
                                   "rope_theta": gguf.get(a + "rope.freq_base", float, 1_000_000.0)},
                "sliding_attention": {"rope_type": "default",
                                      "rope_theta": gguf.get(a + "rope.freq_base_swa", float, 10_000.0)}},
        }
        if "sliding_attention" in types:
            config["sliding_window"] = gguf.size(a + "attention.sliding_window")
        E = gguf.get(a + "expert_count", int, 0)
        if E:
            config.update(enable_moe_block=True, num_experts=gguf.size(a + "expert_count"),
                          top_k_experts=gguf.size(a + "expert_used_count"),
                          moe_intermediate_size=gguf.size(a + "expert_feed_forward_length"))
        cap = gguf.get(a + "final_logit_softcapping", float, 0.0)
        if cap:
            config["final_logit_softcapping"] = cap
        arrays: dict[str, Any] = {"model.embed_tokens.weight": gguf.matrix("token_embd.weight", (vocab, C)),
                                  "model.norm.weight": gguf.vector("output_norm.weight", (C,))}
        used = {"token_embd.weight", "output_norm.weight", "rope_freqs.weight"}
        if "output.weight" in gguf.tensors:
            arrays["lm_head.weight"] = gguf.matrix("output.weight", (vocab, C))
            used.add("output.weight")
        if P:
            rows = gguf.shape("per_layer_token_embd.weight")[0]
            config["vocab_size_per_layer_input"] = rows
            for gg, hf, shape in (("per_layer_token_embd", "embed_tokens_per_layer", (rows, L * P)),
                                  ("per_layer_model_proj", "per_layer_model_projection", (L * P, C)),
                                  ("per_layer_proj_norm", "per_layer_projection_norm", (P,))):
                arrays[f"model.{hf}.weight"] = gguf.matrix(gg + ".weight", shape) if len(shape) == 2 \
                    else gguf.vector(gg + ".weight", shape)
                used.add(gg + ".weight")
        for layer in range(L):
            hd = full_hd if types[layer] == "full_attention" else swa_hd
            q, k, I = heads * hd, kv[layer] * hd, ffn[layer]
            names = {**gguf_layer_names(C, q, k, hd, I), "layer_output_scale": ("layer_scalar", (1,)),
                     "inp_gate": ("per_layer_input_gate", (P, C)), "proj": ("per_layer_projection", (C, P)),
                     "post_norm": ("post_per_layer_input_norm", (C,)),
                     "post_ffw_norm_1": ("post_feedforward_layernorm_1", (C,)),
                     "pre_ffw_norm_2": ("pre_feedforward_layernorm_2", (C,)),
                     "post_ffw_norm_2": ("post_feedforward_layernorm_2", (C,))}
            for gg, (hf, shape) in names.items():
                src = f"blk.{layer}.{gg}.weight"
                if src not in gguf.tensors:
                    continue  # the core asks for what the layer needs, by name
                name = f"model.layers.{layer}.{hf}" + ("" if hf == "layer_scalar" else ".weight")
                arrays[name] = gguf.matrix(src, shape) if len(shape) == 2 else gguf.vector(src, shape)
                used.add(src)
            if E:
                _gguf_experts(gguf, arrays, used, layer, config)
        gguf.check_all_used(used)
        return GGUFModel(self, config, arrays)


def _gguf_experts(gguf: GGUFContents, arrays: dict, used: set, layer: int, config: dict) -> None:
    """A layer's experts as llama.cpp's converter writes them: the router (ffn_gate_inp, (E, C)),
    its input scale (ffn_gate_inp.scale, (C)), the per-expert scale (ffn_down_exps.scale, (E)),
    gate and up fused per expert (ffn_gate_up_exps, (E, 2 x width, C): cut into each expert's
    rows, views that stay quantized) and the downs (ffn_down_exps, (E, C, width))."""
    E, C, Ie = config["num_experts"], config["hidden_size"], config["moe_intermediate_size"]
    p, hf = f"blk.{layer}.", f"model.layers.{layer}."
    arrays[hf + "mlp.gate.weight"] = gguf.matrix(p + "ffn_gate_inp.weight", (E, C))
    arrays[hf + "router.scale"] = gguf.vector(p + "ffn_gate_inp.scale", (C,))
    arrays[hf + "mlp.gate.expert_scale"] = gguf.vector(p + "ffn_down_exps.scale", (E,))
    arrays[hf + "mlp.experts.down_proj.weight"] = gguf.stacked(p + "ffn_down_exps.weight", (E, C, Ie))
    gate_up = gguf.stacked(p + "ffn_gate_up_exps.weight", (E, 2 * Ie, C))
    for e in range(E):
        for proj, first in (("gate_proj", 0), ("up_proj", Ie)):
            arrays[f"{hf}mlp.experts.{e}.{proj}.weight"] = _expert_rows(gate_up, e, first, Ie)
    used.update(p + n for n in ("ffn_gate_inp.weight", "ffn_gate_inp.scale", "ffn_down_exps.scale",
                                "ffn_down_exps.weight", "ffn_gate_up_exps.weight"))


def _expert_rows(w: Any, e: int, first: int, count: int) -> Any:
    """Rows [first, first + count) of expert e's matrix in a stacked (E, out, in) tensor (a float
    array or a QuantizedTensor of one row of blocks per output), as a view."""
    if not isinstance(w, QuantizedTensor):
        return w[e, first:first + count]
    E, out, inner = w.shape
    blocks = w.data.reshape(E * out, -1)[e * out + first: e * out + first + count]
    return QuantizedTensor(w.type, blocks.reshape(-1), (count, inner), w.mapped)


def _layer_sizes(gguf: GGUFContents, key: str, layers: int) -> list[int]:
    """Per layer, a size a GGUF file stores as an array of one per layer or a scalar for all."""
    from gguf.constants import GGUFValueType

    from kvgen.loaders.gguf.metadata import INTEGER_TYPES, read_number_array

    stored = gguf.reader.fields.get(key)
    if stored is None or stored.type != GGUFValueType.ARRAY:
        return [gguf.size(key)] * layers
    try:
        sizes = [int(v) for v in read_number_array(gguf.reader, key, set(INTEGER_TYPES), "sizes")]
    except ValueError as e:
        raise ValueError(f"{gguf.path}: {e}") from None
    if len(sizes) != layers or any(v < 1 for v in sizes):
        raise ValueError(f"{gguf.path}: {key} = {sizes[:8]} must hold a positive size for each of {layers} layers")
    return sizes


FAMILY = Gemma4Family("gemma4", ("gemma4_text",), "gemma4", "Gemma4ForCausalLM",
                      "as Gemma 3, plus per-layer embeddings, keys and values shared by the last layers, a head_dim "
                      "and kv heads of the full-attention layers' own with proportional rotary, values normed (or "
                      "the key projection), a scalar per layer, final-logit soft-capping; experts beside the MLP "
                      "(the MoE variant)")
