// GPT-2 as Hugging Face's GPT2LMHeadModel computes it: token + learned position
// embeddings, pre-LayerNorm blocks with fused QKV (Conv1D weights, which checkpoints store
// [in, out], are handed in [out, in] like every other matrix: the loaders transpose them),
// causal multi-head attention, GELU MLP, final LayerNorm, LM head tied to the token
// embeddings (or a separate lm_head.weight). Matrices are float32 or quantized (from GGUF
// files or quantized at load).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kvgen/runtime/model.h"
#include "kvgen/runtime/model_config.h"
#include "kvgen/runtime/tensors.h"

namespace kvgen {

struct GPT2Options {
  float layer_norm_epsilon = 1e-5f;
  bool scale_attn_weights = true;               // divide scores by sqrt(head_dim)
  bool scale_attn_by_inverse_layer_idx = false; // and by (layer + 1)
  bool exact_gelu = false;                      // "gelu" (erf) instead of "gelu_new" (tanh)
};

// A GPT-2 over `tensors`, every one checked for presence and shape against config (names
// with or without "transformer."; ValueError naming what is wrong). The model reads float32 tensors in place: they must outlive it.
std::unique_ptr<Model> make_gpt2(ModelConfig config, GPT2Options options, const TensorMap& tensors);

}  // namespace kvgen
