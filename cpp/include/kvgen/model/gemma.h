// Gemma 2 and Gemma 3 (text) decoders as transformers' Gemma2ForCausalLM and
// Gemma3ForCausalLM compute them: token embeddings times sqrt(hidden), blocks with an
// RMSNorm before and after both the attention and the MLP (Gemma's norm is x * (1 + w)),
// GeGLU MLP (tanh GELU), grouped-query attention with the query scale from the config,
// optionally tanh soft-capped scores and logits (Gemma 2), per-head RMSNorm of q and k
// where the tensors exist (Gemma 3), and sliding-window layers (ModelConfig::layer_windows)
// that may rotate with their own rotary base (Gemma 3's rope_local_base_freq).
// Every difference comes from facts the loaders read from the file, none from a name.
#pragma once

#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/model/decoder.h"
#include "kvgen/model/tensors.h"

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
};

class Gemma : public DecoderModel {
 public:
  // Checks every tensor's presence and shape; q/k norms and projection biases are used
  // where present.
  Gemma(ModelConfig config, GemmaOptions options, const TensorMap& tensors);

 protected:
  void reserve(const Batch& batch) override;
  void embed(float* x, const Batch& batch) override;
  void block(int64_t layer, float* x, const Batch& batch, KVCache& cache) override;
  void final_norm(float* out, const float* x, int64_t m) override;

 private:
  struct Layer {
    const float *attn_norm, *post_attn_norm;  // (C) each, the offset added
    Linear q, k, v, o;                        // q (H hd, C), k and v (KV hd, C), o (C, H hd)
    const float *q_norm, *k_norm;             // (hd) per-head norms of q and k, or null
    const float *mlp_norm, *post_mlp_norm;    // (C) each
    Linear gate, up, down;                    // gate and up (I, C), down (C, I)
    bool local_rope;                          // rotates with inv_freq_local
  };
  struct Scratch {
    xt::xtensor<float, 2> branch;  // (n, C) a residual branch: its normed input, then its output
    xt::xtensor<float, 2> q;       // (n, H hd) queries, normed and rotated
    xt::xtensor<float, 2> k;       // (n, KV hd) keys, on their way into the cache
    xt::xtensor<float, 2> v;       // (n, KV hd) values, on their way into the cache
    xt::xtensor<float, 2> att;     // (n, H hd) attention output, heads side by side
    xt::xtensor<float, 2> gate;    // (n, I) gate projection, then gelu(gate) * up
    xt::xtensor<float, 2> up;      // (n, I) up projection
  };
  struct Rotary {
    std::vector<float> inv_freq;  // (head_dim / 2)
    RotaryTable table;            // (positions, head_dim / 2) each, extended by reserve
  };
  // A norm weight (size) with the offset added: the tensor in place when the offset is 0,
  // else a copy in norms_ (reserved to its final size first, so pointers stay valid).
  const float* norm_weight(const TensorMap& t, const std::string& name, int64_t size);

  GemmaOptions options_;
  float attention_scale_;
  LinearWeight embed_;  // (vocab, C), read a row per token
  const float* norm_;   // (C) final norm, the offset added
  std::vector<Layer> layers_;
  std::vector<float> norms_;  // every norm weight plus the offset, when the offset is not 0
  Rotary global_, local_;
  Scratch scratch_;
};

}  // namespace kvgen
