// Llama-family decoder as Hugging Face's LlamaForCausalLM computes it: token embeddings,
// pre-RMSNorm blocks with rotary position embeddings on queries and keys, grouped-query
// attention (kv_heads <= heads; the cache holds kv_heads), SwiGLU MLP, final RMSNorm,
// LM head tied to the embeddings or separate. Weights use Hugging Face names and the
// Linear layout [out, in]; the GGUF loader renames and un-permutes its tensors to these.
#pragma once

#include <cstdint>
#include <vector>

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
  void reserve_positions(int64_t end) override;
  void embed(float* x, const Batch& batch) override;
  void block(int64_t layer, float* x, const Batch& batch, KVCache& cache) override;
  void final_norm(float* out, const float* x, int64_t m) override;

 private:
  struct Linear {
    const float* w;     // (out, in)
    const float* bias;  // (out) or null
  };
  struct Layer {
    const float* attn_norm;  // (C)
    Linear q, k, v, o;       // q (H hd, C), k and v (KV hd, C), o (C, H hd)
    const float* mlp_norm;   // (C)
    Linear gate, up, down;   // gate and up (I, C), down (C, I)
  };
  LlamaOptions options_;
  const float* embed_;     // (vocab, C)
  const float* norm_;      // (C)
  std::vector<Layer> layers_;
  // (positions, head_dim / 2): rotary cos/sin of the positions used so far, extended by
  // reserve_positions; never longer than context_length.
  std::vector<float> cos_, sin_;
};

}  // namespace kvgen
