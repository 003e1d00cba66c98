// LFM2 as Hugging Face's Lfm2ForCausalLM computes it (transformers' modeling_lfm2.py): token
// embeddings; pre-RMSNorm blocks whose mixer is either grouped-query attention with per-head
// RMSNorm of q and k (q_layernorm / k_layernorm) and rotary embeddings, or a gated short
// convolution (in_proj to B, C and x; y = C * conv(B * x), a causal depthwise convolution of
// kernel conv_L_cache whose window is the layer's recurrent state; out_proj); each followed by
// a SwiGLU feed-forward (w2(silu(w1(h)) * w3(h))); the final RMSNorm (embedding_norm); the LM
// head tied to the embeddings or separate.
//
// Which layers convolve is ModelConfig::recurrent_layers: (hidden, conv_L_cache, 0, 0, 0) for
// a convolution layer, zeros for an attention layer. The convolution windows live in the KV
// cache's state (KVCache::state()), per layer and row; attention layers keep keys and values.
// Weights use Hugging Face names and the Linear layout [out, in], float32 or quantized
// (linear_weight.h); conv.conv.weight is (hidden, L_cache) (the facade drops its middle axis of 1).
#pragma once

#include <memory>
#include <vector>

#include "kvgen/runtime/model.h"
#include "kvgen/runtime/model_config.h"
#include "kvgen/runtime/tensors.h"

namespace kvgen {

struct Lfm2Options {
  float norm_eps = 1e-5f;  // every RMSNorm's (norm_eps)
  // (head_dim / 2) rotary inverse frequencies, scaling already applied (kvgen.loaders.rope).
  std::vector<float> inv_freq;
};

// An LFM2 model over `tensors`, every one checked for presence and shape against config
// (ValueError naming the layer and tensor that is wrong); the convolution and projection
// biases are used where present (conv_bias). Float32 tensors are read in place: they must
// outlive the model.
std::unique_ptr<Model> make_lfm2(ModelConfig config, Lfm2Options options, const TensorMap& tensors);

}  // namespace kvgen
