// Sparse mixture-of-experts MLP, as transformers' Qwen3MoeSparseMoeBlock computes it: a
// router (experts, C) gives each token softmax probabilities over the experts, the top
// experts_per_token are kept (renormalised to sum to 1 when norm_topk_prob), and the
// token's output is the sum over its chosen experts, in ascending expert order, of
// weight x the expert's SwiGLU MLP. Each expert runs once per forward over the rows of
// the tokens that chose it, so only the chosen experts' weights are read. Expert
// matrices are float32 or quantized like any projection (linear_weight.h): GGUF's 3-D
// expert tensors are cut into one packed matrix per expert, never expanded to float.
// GPT-OSS's variant (ExpertOptions, GptOssTopKRouter and GptOssExperts): the router has a
// bias and softmaxes its top-k logits among themselves, the experts have biases and a
// clamped SwiGLU. ERNIE 4.5's (Ernie4_5_MoeTopKRouter, DeepSeek-V3's e_score_correction_bias):
// a selection bias added to the probabilities to choose the top k, the weights taken
// without it and renormalised over max(sum, norm_min). A shared expert (a SwiGLU MLP every
// token runs: Qwen3.5-MoE's, scaled by sigmoid(shared_expert_gate(h)); ERNIE 4.5's
// shared_experts, unscaled) is added to the routed experts' sum where ExpertOptions give
// its width.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/runtime/linear_weight.h"
#include "kvgen/runtime/model_config.h"
#include "kvgen/runtime/projector.h"
#include "kvgen/runtime/tensors.h"

namespace kvgen {

// How a mixture routes and what its experts compute (the tensors say the rest: biases are
// used where present).
struct ExpertOptions {
  // Renormalise each token's top-k softmax probabilities to sum to 1 (Qwen3-MoE's norm_topk_prob).
  bool norm_topk_prob = false;
  // Choose the top k router logits first, then softmax them among themselves (GPT-OSS's
  // router); else softmax over all the experts, then the top k.
  bool softmax_after_top_k = false;
  // > 0: the experts' clamped SwiGLU (GPT-OSS): gate = min(gate, limit), up = clamp(up,
  // -limit, limit), act = (up + 1) * gate * sigmoid(swiglu_alpha * gate); 0: silu(gate) * up.
  float swiglu_limit = 0.0f;
  float swiglu_alpha = 1.0f;
  // With norm_topk_prob: the weights' sum is taken as at least norm_min (ERNIE 4.5's
  // moe_norm_min, transformers' clamp); 0: the sum itself.
  float norm_min = 0.0f;
  // > 0: every sparse layer has a shared expert this wide (mlp.shared_expert.*), added to
  // the routed experts' output, scaled per token by sigmoid(mlp.shared_expert_gate(h))
  // where that (1, C) gate exists; 0: none.
  int64_t shared_expert_intermediate = 0;
  // The experts' activation gelu_tanh(gate) * up (Gemma 4's experts) instead of silu(gate) * up.
  bool gelu_tanh = false;
};

class SparseMoe {
 public:
  // The router and experts of one layer (E = experts, Ie = expert_intermediate).
  struct Layer {
    LinearWeight router;                   // (E, C)
    const float* router_bias = nullptr;    // (E) or null
    std::vector<LinearWeight> gate, up;    // E x (Ie, C)
    std::vector<LinearWeight> down;        // E x (C, Ie)
    // each expert's biases, E x (Ie) for gate and up, E x (C) for down; empty: none
    std::vector<const float*> gate_bias, up_bias, down_bias;
    // (E) added to the router's probabilities to choose the top k, not to the weights; or null
    const float* selection_bias = nullptr;
    // the shared expert (ExpertOptions::shared_expert_intermediate = Is > 0), or all empty
    struct Shared {
      LinearWeight gate, up;  // (Is, C)
      LinearWeight down;      // (C, Is)
      const float *gate_bias = nullptr, *up_bias = nullptr;  // (Is) or null
      const float* down_bias = nullptr;                      // (C) or null
      LinearWeight scale;     // (1, C) shared_expert_gate: sigmoid of it scales the expert's output; or empty
      const float* scale_bias = nullptr;                     // (1) or null
    } shared;
    // (E) each expert's routing weight multiplied by its scale after the top k (Gemma 4's
    // router.per_expert_scale: prefix + "mlp.gate.expert_scale"), or null
    const float* expert_scale = nullptr;
  };

  SparseMoe(const ModelConfig& config, ExpertOptions options);

  // The layer whose tensors start with `prefix` ("model.layers.3."): the router
  // prefix + "mlp.gate.weight" (and its .bias where present), and each expert's
  // gate/up/down either as 3-D tensors prefix + "mlp.experts.gate_proj.weight" (E, out, in),
  // as GGUF stores them, or as one matrix per expert, prefix +
  // "mlp.experts.<e>.gate_proj.weight", as Hugging Face checkpoints do; their biases where
  // present, as 2-D tensors prefix + "mlp.experts.gate_proj.bias" (E, out) or one vector per
  // expert; the selection bias prefix + "mlp.gate.e_score_correction_bias" (E) where present;
  // with a shared expert, prefix + "mlp.shared_expert.{gate,up,down}_proj.weight" (and biases)
  // and its gate prefix + "mlp.shared_expert_gate.weight" where present. ValueError naming a
  // missing or misshapen tensor.
  Layer read(const TensorMap& t, const std::string& prefix) const;
  // Whether the layer under `prefix` is sparse (has a router).
  static bool has_layer(const TensorMap& t, const std::string& prefix);

  // Grows the scratch to n tokens (the decoder's reserve; nothing is allocated later).
  void reserve(int64_t n);
  // The MoE MLP of h (n, C): a pointer to its output (n, C), valid until the next call.
  // route (n, C): what the router reads, where it differs from h (Gemma 4's), else null.
  const float* forward(const float* h, int64_t n, const Layer& w, Projector& projector,
                       const float* route = nullptr);

 private:
  struct Scratch {
    xt::xtensor<float, 2> router;    // (n, E) router logits, then probabilities
    xt::xtensor<float, 2> rows;      // (n, C) the rows of the tokens that chose the expert at hand
    // (max(n, k), Ie) its gate projection (then silu(gate) * up) and up projection; for one
    // token, row j holds its j-th expert's
    xt::xtensor<float, 2> gate, up;
    xt::xtensor<float, 2> expert;    // (max(n, k), C) its output; for one token, row j its j-th expert's
    xt::xtensor<float, 2> out;       // (n, C) the mixture's output: the weighted sum of the chosen experts'
    // the shared expert's (n, Is) gate projection (then silu(gate) * up) and up projection,
    // (n, 1) its gate's logits, (n, C) its output
    xt::xtensor<float, 2> shared_inner, shared_up, shared_scale, shared_out;
  };
  // routing: chosen_ and weights_ of the n tokens from their router logits (n, E), the
  // selection bias (E, or null) and each expert's scale after the top k (E, or null)
  void route(float* logits, const float* selection_bias, int64_t n, const float* expert_scale);
  // out (n, C) += the shared expert's output of h (n, C), scaled by sigmoid of its gate where it has one
  void add_shared_expert(float* out, const float* h, int64_t n, const Layer& w, Projector& projector);
  // gate (m, Ie) = the expert activation of gate and up (m, Ie) (SwiGLU, or the clamped one)
  void activate(float* gate, const float* up, int64_t m) const;

  int64_t E_, k_, C_, Ie_;
  ExpertOptions options_;
  Scratch scratch_;
  std::vector<int64_t> chosen_;   // (n, k) experts each token chose, by falling probability
  std::vector<float> weights_;    // (n, k) their routing weights
  std::vector<int64_t> order_;    // (n * k) token indices grouped by expert, in token order
  std::vector<float> order_w_;    // (n * k) the routing weight of each entry of order_
  std::vector<int64_t> starts_;   // (E + 1) where each expert's tokens start in order_
  std::vector<int64_t> ranked_;   // (E) expert indices, for the top-k selection
  std::vector<float> score_;      // (E) one token's selection scores: probabilities plus selection bias
  std::vector<Product> products_; // (2 k) one token's gate and up products of all its experts, then (k) their downs
};

}  // namespace kvgen
