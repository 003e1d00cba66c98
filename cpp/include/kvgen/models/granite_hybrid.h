// Granite 4.0's hybrid as Hugging Face's GraniteMoeHybridForCausalLM computes it (transformers'
// modeling_granitemoehybrid.py): token embeddings times embedding_multiplier; pre-RMSNorm
// blocks whose mixer is either a Mamba-2 layer (in_proj to the gate z, x | B | C and dt; a
// causal depthwise conv1d with SiLU over x | B | C; the selective state-space scan with grouped
// B and C and the D skip; the gated group RMSNorm norm(y * silu(z)); out_proj; mamba2.h) or
// grouped-query attention scaled by attention_multiplier, with or without rotary embeddings
// (position_embedding_type); then a feed-forward that is a mixture of experts (a softmax over
// the router's top-k logits, moe.h) plus a shared SwiGLU MLP, or the shared MLP alone; each
// branch times residual_multiplier before it is added; the final RMSNorm; the logits divided by
// logits_scaling; the LM head tied to the embeddings or separate.
//
// Which layers are Mamba-2 is ModelConfig::recurrent_layers: for a Mamba-2 layer
// (conv_channels, conv_kernel, heads, key_dim, value_dim) = (heads x head_dim + 2 x groups x
// d_state, mamba_d_conv, mamba_n_heads, mamba_d_head, mamba_d_state), so that the state's
// matrix is (heads, head_dim, d_state) as transformers keeps it; zeros for an attention layer.
// The shared MLP is ModelConfig::intermediate wide (shared_intermediate_size), each expert
// expert_intermediate (intermediate_size).
// Weights use Hugging Face names and the Linear layout [out, in], float32 or quantized
// (linear_weight.h), the fused ones split by the facade (kvgen.families.granite4): the shared
// MLP's input_linear into shared_mlp.gate_proj / up_proj, output_linear as down_proj; the
// experts' router and matrices under Qwen3-MoE's names (mlp.gate, mlp.experts.*); conv1d.weight
// is (channels, kernel).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kvgen/runtime/model.h"
#include "kvgen/runtime/model_config.h"
#include "kvgen/runtime/tensors.h"

namespace kvgen {

struct GraniteHybridOptions {
  float rms_norm_eps = 1e-6f;  // every RMSNorm's, the gated one's too (rms_norm_eps)
  // (head_dim / 2) rotary inverse frequencies of the attention layers; empty: no rotary
  // embedding (position_embedding_type other than "rope", as Granite 4.0 ships).
  std::vector<float> inv_freq;
  float embedding_multiplier = 1.0f;  // scales the token embeddings
  float residual_multiplier = 1.0f;   // scales each branch before it is added
  float attention_multiplier = 1.0f;  // the query-key scale (attention_multiplier)
  float logit_scale = 1.0f;           // scales the logits (1 / logits_scaling)
  int64_t mamba_groups = 1;           // mamba_n_groups: B and C are shared by heads / groups heads
};

// A Granite 4.0 hybrid model over `tensors`, every one checked for presence and shape against
// config (ValueError naming the layer and tensor that is wrong, or the layer whose state shape
// does not match its heads); projection and convolution biases are used where present, the
// experts where the layer has a router. Float32 tensors are read in place: they must outlive
// the model.
std::unique_ptr<Model> make_granite_hybrid(ModelConfig config, GraniteHybridOptions options,
                                           const TensorMap& tensors);

}  // namespace kvgen
