// Llama-family decoder as Hugging Face's LlamaForCausalLM computes it: token embeddings,
// pre-RMSNorm blocks with rotary position embeddings on queries and keys, grouped-query
// attention (kv_heads <= heads; the cache holds kv_heads), SwiGLU MLP, final RMSNorm,
// LM head tied to the embeddings or separate. Weights use Hugging Face names and the
// Linear layout [out, in], float32 or quantized (linear_weight.h); the GGUF loader renames
// and un-permutes its tensors to these.
#pragma once

#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/model/decoder.h"
#include "kvgen/model/tensors.h"

namespace kvgen {

struct LlamaOptions {
  float rms_norm_eps = 1e-6f;
  // (head_dim / 2) rotary inverse frequencies, scaling already applied (the facade
  // computes them as transformers' rope init functions do).
  std::vector<float> inv_freq;
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
  struct Linear {
    LinearWeight w;     // (out, in)
    const float* bias;  // (out) or null
  };
  struct Layer {
    const float* attn_norm;  // (C)
    Linear q, k, v, o;       // q (H hd, C), k and v (KV hd, C), o (C, H hd)
    const float* mlp_norm;   // (C)
    Linear gate, up, down;   // gate and up (I, C), down (C, I)
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
  };
  void reserve_positions(int64_t end);

  LlamaOptions options_;
  LinearWeight embed_;     // (vocab, C), read a row per token
  const float* norm_;      // (C)
  std::vector<Layer> layers_;
  // (positions, head_dim / 2): rotary cos/sin of the positions used so far, extended by
  // reserve_positions; never longer than context_length.
  std::vector<float> cos_, sin_;
  Scratch scratch_;
};

}  // namespace kvgen
