// Llama-family decoder as Hugging Face's LlamaForCausalLM computes it: token embeddings,
// pre-RMSNorm blocks with rotary position embeddings on queries and keys, grouped-query
// attention (kv_heads <= heads; the cache holds kv_heads), SwiGLU MLP, final RMSNorm,
// LM head tied to the embeddings or separate. Weights use Hugging Face names and the
// Linear layout [out, in], float32 or quantized (linear_weight.h); the loaders rename,
// un-permute and split (fused qkv / gate_up) their tensors to these.
//
// The families that differ from Llama only in these facts run here too, each fact read
// from the file by the loaders (kvgen/families/), none from a family name:
// - q/k/v (and MLP) biases where the tensors exist (Qwen2);
// - per-head RMSNorm of q and k before the rotary embedding where self_attn.q_norm /
//   k_norm exist (Qwen3), or one RMSNorm over each whole projection where their sizes are
//   heads x head_dim (OLMo 2);
// - the norms of each branch where their tensors exist: before it (input_layernorm,
//   post_attention_layernorm: Llama's), after it (post_self_attn_layernorm,
//   post_mlp_layernorm), or both (GLM-4); every branch has one at least;
// - partial rotary embeddings (rotary_dim < head_dim), LongRoPE's short / long
//   frequencies and its cos/sin attention factor (Phi-3);
// - rotary frequencies of the sliding-window layers' own (OLMo 3);
// - layers without rotary embeddings (SmolLM3's rope_layers);
// - embedding, residual, attention and logit multipliers (Granite);
// - a sparse mixture of experts instead of the MLP in the layers that have a router
//   (Qwen3-MoE, moe.h; GPT-OSS's router and clamped SwiGLU, ERNIE 4.5's selection bias
//   and shared experts: ExpertOptions and the tensors);
// - an LM head bias where lm_head.bias exists (ERNIE 4.5 MoE with use_bias);
// - attention sinks where self_attn.sinks exist (GPT-OSS, attention.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kvgen/models/moe.h"
#include "kvgen/runtime/model.h"
#include "kvgen/runtime/model_config.h"
#include "kvgen/runtime/tensors.h"

namespace kvgen {

struct LlamaOptions {
  float rms_norm_eps = 1e-6f;
  // (rotary_dim / 2) rotary inverse frequencies, scaling already applied (the facade
  // computes them as transformers' rope init functions do).
  std::vector<float> inv_freq;
  // Leading dimensions of each head that rotate (pairs i and i + rotary_dim / 2, as
  // transformers' rotate_half); the rest pass through. 0: all of head_dim.
  int64_t rotary_dim = 0;
  // LongRoPE: (rotary_dim / 2) frequencies used instead of inv_freq by a forward call
  // whose positions reach beyond original_context (transformers decides per call, from
  // the largest position); empty: inv_freq always.
  std::vector<float> inv_freq_long;
  int64_t original_context = 0;
  float rope_attention_factor = 1.0f;  // multiplies cos and sin (LongRoPE, YaRN)
  // (rotary_dim / 2) the frequencies of the sliding-window layers (ModelConfig::window > 0)
  // where the config sets them apart from the full layers' (OLMo 3: YaRN on the full layers
  // only), with their own cos/sin factor; empty: inv_freq on every layer.
  std::vector<float> inv_freq_sliding;
  float rope_attention_factor_sliding = 1.0f;
  // (layers) nonzero where the layer applies the rotary embedding; empty: every layer.
  std::vector<uint8_t> rope_layers;
  float embedding_multiplier = 1.0f;  // scales the token embeddings
  float residual_multiplier = 1.0f;   // scales each block's branch before it is added
  float attention_scale = 0.0f;       // query-key scale; 0: 1 / sqrt(head_dim)
  float logit_scale = 1.0f;           // scales the logits (1 / Granite's logits_scaling)
  // Mixture of experts (ModelConfig::experts > 0): how it routes and its activation (moe.h).
  ExpertOptions experts;
};

// A Llama-family model over `tensors`, every one checked for presence and shape against
// config (ValueError naming what is wrong); optional biases (q/k/v/o_proj.bias,
// gate/up/down_proj.bias), q/k norms, attention sinks and routers are used where present. The model reads float32 tensors in place: they must outlive it.
std::unique_ptr<Model> make_llama(ModelConfig config, LlamaOptions options, const TensorMap& tensors);

}  // namespace kvgen
