// Llama-family decoder as Hugging Face's LlamaForCausalLM computes it: token embeddings,
// pre-RMSNorm blocks with rotary position embeddings on queries and keys, grouped-query
// attention (kv_heads <= heads; the cache holds kv_heads), SwiGLU MLP, final RMSNorm,
// LM head tied to the embeddings or separate. Weights use Hugging Face names and the
// Linear layout [out, in], float32 or quantized (linear_weight.h); the loaders rename,
// un-permute and split (fused qkv / gate_up) their tensors to these.
//
// The families that differ from Llama only in these facts run here too, each fact read
// from the file by the loaders (kvgen/loaders/families.py), none from a family name:
// - q/k/v (and MLP) biases where the tensors exist (Qwen2);
// - per-head RMSNorm of q and k before the rotary embedding where self_attn.q_norm /
//   k_norm exist (Qwen3);
// - partial rotary embeddings (rotary_dim < head_dim), LongRoPE's short / long
//   frequencies and its cos/sin attention factor (Phi-3);
// - layers without rotary embeddings (SmolLM3's rope_layers);
// - embedding, residual, attention and logit multipliers (Granite);
// - a sparse mixture of experts instead of the MLP in the layers that have a router
//   (Qwen3-MoE, moe.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/model/decoder.h"
#include "kvgen/model/moe.h"
#include "kvgen/model/tensors.h"

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
  // (layers) nonzero where the layer applies the rotary embedding; empty: every layer.
  std::vector<uint8_t> rope_layers;
  float embedding_multiplier = 1.0f;  // scales the token embeddings
  float residual_multiplier = 1.0f;   // scales each block's branch before it is added
  float attention_scale = 0.0f;       // query-key scale; 0: 1 / sqrt(head_dim)
  float logit_scale = 1.0f;           // scales the logits (1 / Granite's logits_scaling)
  // Mixture of experts (ModelConfig::experts > 0): renormalise each token's top-k routing
  // probabilities to sum to 1 (Qwen3-MoE's norm_topk_prob).
  bool norm_topk_prob = false;
};

class Llama : public DecoderModel {
 public:
  // Checks every tensor's presence and shape; optional biases (q/k/v/o_proj.bias,
  // gate/up/down_proj.bias) are used where present.
  Llama(ModelConfig config, LlamaOptions options, const TensorMap& tensors);

 protected:
  void reserve(const Batch& batch) override;
  void embed(float* x, const Batch& batch) override;
  void block(int64_t layer, float* x, const Batch& batch, KVCache& cache) override;
  void final_norm(float* out, const float* x, int64_t m) override;

 private:
  struct Layer {
    const float* attn_norm;  // (C)
    Linear q, k, v, o;       // q (H hd, C), k and v (KV hd, C), o (C, H hd)
    const float* mlp_norm;   // (C)
    Linear gate, up, down;   // gate and up (I, C), down (C, I)
    const float* q_norm = nullptr;  // (hd) per-head RMSNorm of the queries, or null
    const float* k_norm = nullptr;  // (hd) per-head RMSNorm of the keys, or null
    bool rope = true;               // whether the layer rotates q and k
    int64_t moe = -1;               // >= 0: its mixture of experts (moe_layers_) replaces gate, up, down
  };
  // Scratch of one block, reused by every layer; n = the batch's tokens (see reserve).
  struct Scratch {
    xt::xtensor<float, 2> branch;  // (n, C) a residual branch: its normed input, then its output
    xt::xtensor<float, 2> q;       // (n, H hd) queries, rotated
    xt::xtensor<float, 2> k;       // (n, KV hd) keys, rotated, on their way into the cache
    xt::xtensor<float, 2> v;       // (n, KV hd) values, on their way into the cache
    xt::xtensor<float, 2> att;     // (n, H hd) attention output, heads side by side
    xt::xtensor<float, 2> gate;    // (n, I) gate projection, then silu(gate) * up
    xt::xtensor<float, 2> up;      // (n, I) up projection
    xt::xtensor<float, 2> moe_out; // (n, C) a mixture of experts' output
  };
  void reserve_positions(int64_t end);
  void add_branch(float* x, const float* h, int64_t size) const;  // x += h, times residual_multiplier

  LlamaOptions options_;
  int64_t rotary_dim_;     // options_.rotary_dim, or head_dim
  float attention_scale_;  // options_.attention_scale, or 1 / sqrt(head_dim)
  LinearWeight embed_;     // (vocab, C), read a row per token
  const float* norm_;      // (C)
  std::vector<Layer> layers_;
  // (positions, rotary_dim / 2) each, times the attention factor, extended by reserve_positions;
  // never longer than context_length. long_: LongRoPE only.
  RotaryTable short_, long_;
  const RotaryTable* rotary_ = &short_;  // the table of the current forward call (reserve)
  Scratch scratch_;
  std::unique_ptr<SparseMoe> moe_;             // routing and scratch of the sparse layers, when experts > 0
  std::vector<SparseMoe::Layer> moe_layers_;  // the sparse layers' routers and experts
};

}  // namespace kvgen
