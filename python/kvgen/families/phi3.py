"""Phi-3 (Phi3ForCausalLM): fused qkv and gate/up matrices (split by rows, as views), a partial
rotary embedding, LongRoPE's short and long factors, a sliding window on every layer."""

from __future__ import annotations

from kvgen.families.llama import LlamaFamily

FAMILY = LlamaFamily("phi3", ("phi3",), "phi3", "Phi3ForCausalLM",
                     "fused qkv and gate/up matrices; partial rotary; LongRoPE short/long factors",
                     sliding_layers="all", partial_rotary=True,
                     fused={"self_attn.qkv_proj": (("self_attn.q_proj", "q"), ("self_attn.k_proj", "kv"),
                                                   ("self_attn.v_proj", "kv")),
                            "mlp.gate_up_proj": (("mlp.gate_proj", "i"), ("mlp.up_proj", "i"))})
