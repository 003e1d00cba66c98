// Gemma 2 and Gemma 3 (text) decoders as transformers' Gemma2ForCausalLM and
// Gemma3ForCausalLM compute them: token embeddings times sqrt(hidden), blocks with an
// RMSNorm before and after both the attention and the MLP (Gemma's norm is x * (1 + w)),
// GeGLU MLP (tanh GELU), grouped-query attention with the query scale from the config,
// optionally tanh soft-capped scores and logits (Gemma 2), per-head RMSNorm of q and k
// where the tensors exist (Gemma 3), and sliding-window layers (ModelConfig::layer_windows)
// that may rotate with their own rotary base (Gemma 3's rope_local_base_freq).
// Gemma 4 (Gemma4ForCausalLM) adds, each where the file has it: a head_dim and kv heads of
// the full-attention layers' own and layers that read an earlier layer's keys and values
// (ModelConfig::kv_layers), values RMS-normed without a weight, values that are the key
// projection (a layer without v_proj: attention_k_eq_v), per-layer embeddings (PLE: a
// second embedding table whose row per token, with a projection of the token's embedding,
// feeds a gated residual at the end of every block), a scalar per layer, and MLPs of their
// own width per layer (the double-wide MLP of the KV-shared layers).
// Every difference comes from facts the loaders read from the file, none from a name.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kvgen/runtime/model.h"
#include "kvgen/runtime/model_config.h"
#include "kvgen/runtime/tensors.h"

namespace kvgen {

struct GemmaOptions {
  float rms_norm_eps = 1e-6f;
  // Added to every RMSNorm weight (Gemma normalises by 1 + w): 1 for Hugging Face
  // checkpoints; 0 for GGUF files, whose converter stores 1 + w.
  float norm_offset = 1.0f;
  float embed_scale = 1.0f;      // multiplies the token embeddings (sqrt(hidden), as the model computes it)
  float attention_scale = 0.0f;  // query-key scale (query_pre_attn_scalar ** -0.5); 0: 1 / sqrt(head_dim)
  float attn_softcap = 0.0f;     // > 0: attention scores soft-capped (attn_logit_softcapping)
  float final_softcap = 0.0f;    // > 0: logits soft-capped (final_logit_softcapping)
  // (head_dim / 2) rotary inverse frequencies, scaling applied, of the full-attention
  // layers and of the sliding-window layers (empty: inv_freq for every layer).
  std::vector<float> inv_freq;
  std::vector<float> inv_freq_local;
  bool value_norm = false;          // values RMS-normed per head without a weight (Gemma 4's v_norm)
  // > 0: per-layer embeddings (PLE) of this width per layer (hidden_size_per_layer_input), from
  // a table of per_layer_vocab rows (vocab_size_per_layer_input)
  int64_t per_layer_hidden = 0;
  int64_t per_layer_vocab = 0;
  std::vector<int64_t> layer_intermediate;  // (layers) MLP width of each layer, or empty: ModelConfig::intermediate
};

// A Gemma 2 / 3 model over `tensors`, every one checked for presence and shape against
// config (ValueError naming what is wrong); q/k norms and projection biases are used
// where present. The model reads float32 tensors in place: they must outlive it.
std::unique_ptr<Model> make_gemma(ModelConfig config, GemmaOptions options, const TensorMap& tensors);

}  // namespace kvgen
