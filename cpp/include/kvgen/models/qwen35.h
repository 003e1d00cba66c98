// Qwen3.5 decoder as transformers' Qwen3_5ForCausalLM computes it (modeling_qwen3_5.py): a
// hybrid of Gated DeltaNet layers (linear attention with a recurrent state, gated_delta_net.h,
// after a causal conv1d with SiLU over the fused q/k/v, causal_conv.h) and gated
// full-attention layers (the q projection twice as wide, its second half per head a sigmoid
// gate on the attention output; q/k RMSNorm per head; partial rotary embeddings), each
// followed by a SwiGLU MLP, or (Qwen3.5-MoE, Qwen3-Next: the layers whose tensors have a
// router, mlp.gate.weight) a sparse mixture of experts (moe.h: softmax top-k) plus a shared
// SwiGLU expert scaled by sigmoid(shared_expert_gate(h)). Every RMSNorm but the DeltaNet's gated one computes
// x_normed * (1 + w) (Qwen3_5RMSNorm; norm_offset, 0 where the file stores 1 + w).
//
// Which layers are recurrent, and the state each keeps, is ModelConfig::recurrent_layers:
// (conv_channels = 2 key_heads key_dim + value_heads value_dim, conv_kernel, value_heads,
// key_dim, value_dim). A recurrent layer runs over each chunk of the batch from its row's
// state (KVCache::state()): the chunked delta rule for a prefill chunk, the recurrent form for
// a one-token step, as transformers does.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kvgen/runtime/model.h"
#include "kvgen/runtime/model_config.h"
#include "kvgen/runtime/tensors.h"

namespace kvgen {

struct Qwen35Options {
  float rms_norm_eps = 1e-6f;
  // (rotary_dim / 2) rotary inverse frequencies (the facade computes them as transformers).
  std::vector<float> inv_freq;
  // Leading dimensions of each attention head that rotate (partial_rotary_factor); 0: all.
  int64_t rotary_dim = 0;
  // Added to the weights of the (1 + w) RMSNorms: 1 for transformers' checkpoints, 0 for
  // llama.cpp's files (its converter stores 1 + w).
  float norm_offset = 1.0f;
  // Key heads of the Gated DeltaNet layers (linear_num_key_heads); the value heads are the
  // recurrent layers' heads.
  int64_t linear_key_heads = 0;
  // The Gated DeltaNet's value heads are ordered tiled over the key heads (value head h reads
  // key head h % key_heads: llama.cpp's converter reorders them so) instead of grouped by key
  // head (h / (value_heads / key_heads): transformers' order).
  bool value_heads_tiled = false;
  // Tokens per chunk of the chunked delta rule (transformers' 64).
  int64_t chunk_size = 64;
  // The mixture of experts (ModelConfig::experts > 0): whether the chosen experts' weights are
  // renormalised to sum to 1, and the shared expert's width (shared_expert_intermediate_size;
  // 0: no shared expert).
  bool norm_topk_prob = true;
  int64_t shared_expert_intermediate = 0;
};

// A Qwen3.5 model over `tensors` (Hugging Face names of Qwen3_5ForCausalLM; conv1d weights
// (conv_channels, conv_kernel); a sparse layer's router mlp.gate.weight, its experts as
// SparseMoe::read reads them, and its shared expert mlp.shared_expert.{gate,up,down}_proj.weight
// and mlp.shared_expert_gate.weight (1, C)), every one checked for presence and shape against config
// (ValueError naming the layer for a layer whose tensors do not match its kind or whose state
// shape does not match its heads). Float32 tensors are read in place: they must outlive it.
std::unique_ptr<Model> make_qwen35(ModelConfig config, Qwen35Options options, const TensorMap& tensors);

// The multi-token-prediction head of a Qwen3.5 / Qwen3-Next checkpoint (its mtp.* tensors), as
// vLLM's Qwen3NextMultiTokenPredictor and llama.cpp's qwen35 MTP graph compute it: the token at
// position i + 1 and the target's final-normed hidden state at position i (RowTokens::
// input_hidden) make x = fc([enorm(embedding) | hnorm(hidden)]) (mtp.fc (C, 2 C),
// mtp.pre_fc_norm_embedding, mtp.pre_fc_norm_hidden), then config.layers gated full-attention
// decoder layers (mtp.layers.<l>.*, with an MLP or experts as the model's layers), the norm
// mtp.norm, and the target's LM head: the logits of the token at position i + 2, and (as
// RowTokens::hidden) the head's own final-normed state for the next draft position. The head
// keeps its own KV cache (config.layers layers, no recurrent state). target: the Qwen3.5 model
// whose embedding and LM head it shares (ValueError otherwise); it must outlive the head.
std::unique_ptr<Model> make_qwen35_mtp(ModelConfig config, Qwen35Options options, const TensorMap& tensors,
                                       const Model& target);

}  // namespace kvgen
