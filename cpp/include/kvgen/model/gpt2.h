// GPT-2 as Hugging Face's GPT2LMHeadModel computes it: token + learned position
// embeddings, pre-LayerNorm blocks with fused QKV (Conv1D weights stored [in, out]),
// causal multi-head attention, GELU MLP, final LayerNorm, LM head tied to the token
// embeddings (or a separate lm_head.weight). Matrices are float32 (Hugging Face's Conv1D
// layout) or quantized ([out, in] blocks, from GGUF files or quantized at load).
#pragma once

#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/model/decoder.h"
#include "kvgen/model/tensors.h"

namespace kvgen {

struct GPT2Options {
  float layer_norm_epsilon = 1e-5f;
  bool scale_attn_weights = true;               // divide scores by sqrt(head_dim)
  bool scale_attn_by_inverse_layer_idx = false; // and by (layer + 1)
  bool exact_gelu = false;                      // "gelu" (erf) instead of "gelu_new" (tanh)
};

class GPT2 : public DecoderModel {
 public:
  // Checks every tensor's presence and shape (names with or without "transformer.").
  GPT2(ModelConfig config, GPT2Options options, const TensorMap& tensors);

 protected:
  void reserve(const Batch& batch) override;
  void embed(float* x, const Batch& batch) override;
  void block(int64_t layer, float* x, const Batch& batch, KVCache& cache) override;
  void final_norm(float* out, const float* x, int64_t m) override;

 private:
  struct Layer {
    const float *ln1_g, *ln1_b;
    LinearWeight attn_w;  // (3C, C) fused q | k | v
    const float* attn_b;
    LinearWeight proj_w;  // (C, C)
    const float *proj_b, *ln2_g, *ln2_b;
    LinearWeight fc_w;    // (I, C)
    const float* fc_b;
    LinearWeight fc_proj_w;  // (C, I)
    const float* fc_proj_b;
  };
  // Scratch of one block, reused by every layer; n = the batch's tokens (see reserve).
  struct Scratch {
    xt::xtensor<float, 2> branch;  // (n, C) a residual branch: its normed input, then its output
    xt::xtensor<float, 2> qkv;     // (n, 3C) fused projection: q | k | v, each C wide
    xt::xtensor<float, 2> att;     // (n, C) attention output, heads side by side
    xt::xtensor<float, 2> mlp;     // (n, I) c_fc output, then its GELU
  };

  GPT2Options options_;
  LinearWeight wte_;      // (vocab, C), read a row per token
  const float* wpe_;      // (context, C)
  const float *lnf_g_, *lnf_b_;
  std::vector<Layer> layers_;
  Scratch scratch_;
};

}  // namespace kvgen
