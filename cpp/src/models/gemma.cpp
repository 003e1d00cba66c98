// Gemma 2 and Gemma 3 (gemma.h), following transformers' modeling_gemma2.py and
// modeling_gemma3.py: hyperparameters (GemmaOptions), tensors (Layer), and the forward pass
// over the shared builders (decoder.h), the same as Llama's but for the norms after each
// branch, GeGLU and the soft-caps; Gemma 4 (modeling_gemma4.py) adds per-layer embeddings,
// per-layer key/value shapes and shared keys and values, value norms and layer scalars.
#include "kvgen/models/gemma.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kvgen/errors.h"
#include "kvgen/limits.h"
#include "kvgen/models/decoder.h"
#include "kvgen/ops/layer_ops.h"
#include "kvgen/ops/vector_math.h"

namespace kvgen {
namespace {

class Gemma : public DecoderModel {
 public:
  Gemma(ModelConfig config, GemmaOptions options, const TensorMap& t);

 protected:
  void reserve(const ForwardPass& b) override;
  void embed(float* x, const ForwardPass& b) override;
  void block(int64_t layer, float* x, const ForwardPass& b, KVCache& cache) override;
  void final_norm(float* out, const float* x, int64_t m) override;

 private:
  struct Layer {
    const float *attn_norm, *post_attn_norm;  // (C) each, the offset added
    AttentionWeights attn;                    // q (H hd, C), k and v (KV hd, C), o (C, H hd); q/k norms (hd) or null
    const float *mlp_norm, *post_mlp_norm;    // (C) each, the offset added
    MlpWeights mlp;                           // gate and up (I, C), down (C, I)
    bool local_rope;                          // rotates with inv_freq_local
    // per-layer embeddings (PLE): gate (P, C), projection (C, P), its post-norm (C); empty without
    Linear ple_gate, ple_proj;
    const float* ple_norm = nullptr;
    float scalar = 1.0f;                      // the block's output times this (layer_scalar)
    // a mixture of experts beside the MLP (Gemma 4's enable_moe_block): its index (-1: none),
    // the norms after the MLP, before and after the experts (C), the router's input scale (C)
    int64_t experts = -1;
    const float *post_mlp_norm_1 = nullptr, *pre_experts_norm = nullptr, *post_experts_norm = nullptr;
    const float* router_scale = nullptr;
  };
  // The mixture of experts beside layer l's MLP: h (n, C), the MLP's output, becomes
  // norm_1(h) + norm_post(experts(norm_pre(x))), routed on rmsnorm(x) * scale / sqrt(C)
  // (Gemma4TextDecoderLayer, Gemma4TextRouter).
  void add_experts(const Layer& w, float* h, const float* x, int64_t n);
  struct ExpertScratch {
    xt::xtensor<float, 2> route;  // (n, C) the router's input
    xt::xtensor<float, 2> input;  // (n, C) the experts' input, then their normed output
  };
  ExpertScratch moe_;
  // Per-layer embeddings: the table (per_layer_vocab, L P) read a row per token, the projection
  // of the token embeddings (L P, C) and its norm (P).
  struct PerLayerEmbeddings {
    RowTable table;
    Linear proj;
    const float* norm = nullptr;
    xt::xtensor<float, 2> inputs;  // (n, L P) each token's per-layer inputs, for the blocks
    xt::xtensor<float, 2> projected;  // (n, L P) the projection of the token embeddings
    xt::xtensor<float, 2> gate;    // (n, P) a block's gated per-layer input
  };
  // The per-layer residual of block l: x (n, C) += norm(proj(gelu_tanh(gate(x)) * inputs_l)).
  void add_per_layer_input(int64_t l, float* x, const ForwardPass& b);
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
  std::vector<float> ones_;   // (largest head_dim) the value norm's weight
  PerLayerEmbeddings ple_;
};

Gemma::Gemma(ModelConfig config, GemmaOptions options, const TensorMap& t)
    : DecoderModel(std::move(config), {.fused_qkv = false, .gated_mlp = true}), options_(std::move(options)) {
  const int64_t C = config_.hidden, V = config_.vocab_size, I = config_.intermediate;
  const int64_t H = config_.heads, hd = config_.head_dim, L = config_.layers;
  const int64_t P = options_.per_layer_hidden;
  // ---- hyperparameters ----
  for (const auto* freqs : {&options_.inv_freq, &options_.inv_freq_local})
    for (float f : *freqs)
      if (!std::isfinite(f)) throw ValueError("Gemma: a rotary inverse frequency is " + std::to_string(f));
  for (int64_t l = 0; l < L; ++l) {  // each layer's rotary frequencies cover its head_dim
    const bool local = config_.window(l) > 0 && !options_.inv_freq_local.empty();
    const auto& freqs = local ? options_.inv_freq_local : options_.inv_freq;
    if (static_cast<int64_t>(freqs.size()) != config_.head_dim_of(l) / 2)
      throw ValueError("Gemma: " + std::to_string(freqs.size()) + " rotary frequencies for layer " +
                       std::to_string(l) + "'s head_dim " + std::to_string(config_.head_dim_of(l)) +
                       " (need head_dim / 2)");
  }
  if (!options_.layer_intermediate.empty() && static_cast<int64_t>(options_.layer_intermediate.size()) != L)
    throw ValueError("Gemma: " + std::to_string(options_.layer_intermediate.size()) + " MLP widths for " +
                     std::to_string(L) + " layers");
  for (int64_t w : options_.layer_intermediate) {
    if (w < 1 || w > limits::kMaxWidth) throw ValueError("Gemma: an MLP width is " + std::to_string(w));
    widest_mlp_ = std::max(widest_mlp_, w);
  }
  if (P < 0 || P > limits::kMaxWidth || (P > 0 && (options_.per_layer_vocab < 1 ||
                                                   options_.per_layer_vocab > limits::kMaxVocab)))
    throw ValueError("Gemma: per-layer embeddings of width " + std::to_string(P) + " over " +
                     std::to_string(options_.per_layer_vocab) + " tokens are outside kvgen's limits");
  limits::checked_mul(limits::checked_mul(L, P, "Gemma: layers x hidden_size_per_layer_input"),
                      std::max<int64_t>(options_.per_layer_vocab, 1), "Gemma: the per-layer embedding table");
  ones_.assign(std::max(config_.max_head_dim(), C), 1.0f);
  if (config_.experts > 0) use_experts({.norm_topk_prob = true, .gelu_tanh = true});
  check_finite("Gemma", options_.norm_offset, "the norm offset");
  check_finite("Gemma", options_.embed_scale, "the embedding scale");
  check_finite("Gemma", options_.attention_scale, "the attention scale");
  check_finite("Gemma", options_.attn_softcap, "attn_logit_softcapping");
  check_finite("Gemma", options_.final_softcap, "final_logit_softcapping");
  attention_scale_ =
      options_.attention_scale != 0.0f ? options_.attention_scale : 1.0f / std::sqrt(static_cast<float>(hd));
  final_logit_softcap_ = options_.final_softcap;
  global_.inv_freq = options_.inv_freq;
  local_.inv_freq = options_.inv_freq_local.empty() ? options_.inv_freq : options_.inv_freq_local;
  if (options_.norm_offset != 0.0f)  // every norm, at most
    norms_.reserve(L * (8 * C + 2 * config_.max_head_dim()) + C + P);
  // ---- tensors (q/k norms and projection biases where present) ----
  embed_ = read_matrix(t, "model.embed_tokens.weight", V, C);
  norm_ = norm_weight(t, "model.norm.weight", C);
  lm_head_ = t.has("lm_head.weight") ? read_matrix(t, "lm_head.weight", V, C) : embed_;
  if (P > 0) {
    // left in the file's mapping, a row read per token: not counted in weight_bytes()
    ple_.table = t.row_table("model.embed_tokens_per_layer.weight", options_.per_layer_vocab, L * P);
    ple_.proj = read_linear(t, "model.per_layer_model_projection", L * P, C);
    ple_.norm = norm_weight(t, "model.per_layer_projection_norm.weight", P);
  }
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const int64_t KVl = config_.kv_heads_of(l), hdl = config_.head_dim_of(l);
    const bool own_kv = config_.kv_source(l) == l;
    const int64_t Il = options_.layer_intermediate.empty() ? I : options_.layer_intermediate[l];
    const bool qk_norm = t.has(p + "self_attn.q_norm.weight") || t.has(p + "self_attn.k_norm.weight");
    Layer w;
    w.attn_norm = norm_weight(t, p + "input_layernorm.weight", C);
    w.post_attn_norm = norm_weight(t, p + "post_attention_layernorm.weight", C);
    w.attn.q = read_linear(t, p + "self_attn.q_proj", H * hdl, C);
    if (own_kv) {  // a layer that reads another's keys and values has no k/v projections
      w.attn.k = read_linear(t, p + "self_attn.k_proj", KVl * hdl, C);
      // no v_proj: the values are the key projection (attention_k_eq_v)
      w.attn.values_from_keys = !t.has(p + "self_attn.v_proj.weight");
      if (!w.attn.values_from_keys) w.attn.v = read_linear(t, p + "self_attn.v_proj", KVl * hdl, C);
      if (options_.value_norm) w.attn.v_norm = ones_.data();
    }
    w.attn.o = read_linear(t, p + "self_attn.o_proj", C, H * hdl);
    w.attn.q_norm = qk_norm ? norm_weight(t, p + "self_attn.q_norm.weight", hdl) : nullptr;
    w.attn.k_norm = qk_norm && own_kv ? norm_weight(t, p + "self_attn.k_norm.weight", hdl) : nullptr;
    w.mlp_norm = norm_weight(t, p + "pre_feedforward_layernorm.weight", C);
    w.post_mlp_norm = norm_weight(t, p + "post_feedforward_layernorm.weight", C);
    w.mlp = {read_linear(t, p + "mlp.gate_proj", Il, C), read_linear(t, p + "mlp.up_proj", Il, C),
             read_linear(t, p + "mlp.down_proj", C, Il)};
    w.local_rope = config_.window(l) > 0 && !options_.inv_freq_local.empty();
    if (P > 0) {
      w.ple_gate = read_linear(t, p + "per_layer_input_gate", P, C);
      w.ple_proj = read_linear(t, p + "per_layer_projection", C, P);
      w.ple_norm = norm_weight(t, p + "post_per_layer_input_norm.weight", C);
    }
    w.experts = read_experts(t, p);
    if (w.experts >= 0) {
      w.post_mlp_norm_1 = norm_weight(t, p + "post_feedforward_layernorm_1.weight", C);
      w.pre_experts_norm = norm_weight(t, p + "pre_feedforward_layernorm_2.weight", C);
      w.post_experts_norm = norm_weight(t, p + "post_feedforward_layernorm_2.weight", C);
      w.router_scale = read_vector(t, p + "router.scale", C);
    }
    if (t.has(p + "layer_scalar")) {
      w.scalar = read_vector(t, p + "layer_scalar", 1)[0];
      check_finite("Gemma", w.scalar, "a layer_scalar");
    }
    layers_.push_back(std::move(w));
  }
}

const float* Gemma::norm_weight(const TensorMap& t, const std::string& name, int64_t size) {
  const float* w = t.get(name, {size});
  count_weight(size);
  if (options_.norm_offset == 0.0f) return w;
  const size_t at = norms_.size();  // capacity reserved by the constructor: earlier pointers stay valid
  for (int64_t i = 0; i < size; ++i) norms_.push_back(options_.norm_offset + w[i]);  // 1 + w in float32, as torch
  return norms_.data() + at;
}

void Gemma::reserve(const ForwardPass& b) {
  extend_rotary(global_.table, global_.inv_freq, 1.0f, b.end);
  if (!options_.inv_freq_local.empty()) extend_rotary(local_.table, local_.inv_freq, 1.0f, b.end);
  if (config_.experts > 0) {
    grow_rows(moe_.route, b.n, config_.hidden);
    grow_rows(moe_.input, b.n, config_.hidden);
  }
  if (options_.per_layer_hidden > 0) {
    grow_rows(ple_.inputs, b.n, config_.layers * options_.per_layer_hidden);
    grow_rows(ple_.projected, b.n, config_.layers * options_.per_layer_hidden);
    grow_rows(ple_.gate, b.n, options_.per_layer_hidden);
  }
}

void Gemma::embed(float* x, const ForwardPass& b) {
  embed_tokens(x, embed_, b, options_.embed_scale);  // x (n, C), times sqrt(hidden)
  const int64_t n = b.n, C = config_.hidden, P = options_.per_layer_hidden, LP = config_.layers * P;
  if (P == 0) return;
  // per-layer inputs (n, L, P) = (norm(proj(x) / sqrt(C)) + table rows * sqrt(P)) / sqrt(2)
  // (Gemma4TextModel.get_per_layer_inputs and project_per_layer_inputs)
  float* in = ple_.inputs.data();        // (n, L P) the table's rows, then the inputs
  float* projected = ple_.projected.data();  // (n, L P)
  for (int64_t r = 0; r < n; ++r) ple_.table.row(b.tokens[r], in + r * LP);  // a row per token, never the table
  projector_.project(x, n, C, {{&ple_.proj.w, ple_.proj.bias, projected, LP}});
  // the scales as transformers' float32 values of hidden ** -0.5, sqrt(P) and 2 ** -0.5
  const float proj_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(C)));
  const float table_scale = static_cast<float>(std::sqrt(static_cast<double>(P)));
  const float mix = static_cast<float>(1.0 / std::sqrt(2.0));
  rows_in_parallel(n, LP, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* p = projected + r * LP;
      float* y = in + r * LP;
      for (int64_t i = 0; i < LP; ++i) p[i] *= proj_scale;
      ops::rmsnorm(p, p, ple_.norm, config_.layers, P, options_.rms_norm_eps);
      for (int64_t i = 0; i < LP; ++i) y[i] = (p[i] + y[i] * table_scale) * mix;
    }
  });
}

void Gemma::add_per_layer_input(int64_t l, float* x, const ForwardPass& b) {
  const int64_t n = b.n, C = config_.hidden, P = options_.per_layer_hidden;
  const Layer& w = layers_[l];
  float* gate = ple_.gate.data();  // (n, P) gelu_tanh(gate(x)) * the layer's inputs
  float* h = branch();             // (n, C)
  projector_.project(x, n, C, {{&w.ple_gate.w, w.ple_gate.bias, gate, P}});
  rows_in_parallel(n, P, [&](int64_t r0, int64_t r1) {
    ops::gelu_tanh(gate + r0 * P, (r1 - r0) * P);
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t i = 0; i < P; ++i) gate[r * P + i] *= ple_.inputs(r, l * P + i);
  });
  projector_.project(gate, n, P, {{&w.ple_proj.w, w.ple_proj.bias, h, C}});
  rms_norm(h, h, w.ple_norm, n, C, options_.rms_norm_eps);
  add_residual(x, h, n, C);
}

void Gemma::block(int64_t l, float* x, const ForwardPass& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden, hd = config_.head_dim_of(l);
  const float eps = options_.rms_norm_eps;
  const Layer& w = layers_[l];
  float* h = branch();  // (n, C) a residual branch: its normed input, then its output
  // attention: x (n, C) += rmsnorm(attention(rmsnorm(x))), scores soft-capped (Gemma 2)
  rms_norm(h, x, w.attn_norm, n, C, eps);
  attention(h, h, w.attn,
            {.scale = attention_scale_, .softcap = options_.attn_softcap,
             .rotary = &(w.local_rope ? local_ : global_).table, .rotary_dim = hd, .norm_eps = eps},
            l, b, cache);
  rms_norm(h, h, w.post_attn_norm, n, C, eps);
  add_residual(x, h, n, C);
  // GeGLU MLP: x (n, C) += rmsnorm(down(gelu_tanh(gate(h)) * up(h))), h = rmsnorm(x)
  rms_norm(h, x, w.mlp_norm, n, C, eps);
  mlp(h, h, w.mlp, Activation::GeluTanh, n);
  if (w.experts >= 0) add_experts(w, h, x, n);
  rms_norm(h, h, w.post_mlp_norm, n, C, eps);
  add_residual(x, h, n, C);
  if (options_.per_layer_hidden > 0) add_per_layer_input(l, x, b);  // Gemma 4's PLE
  if (w.scalar != 1.0f) ops::scale_inplace(x, w.scalar, n * C);
}

void Gemma::add_experts(const Layer& w, float* h, const float* x, int64_t n) {
  const int64_t C = config_.hidden;
  const float eps = options_.rms_norm_eps;
  const float root = static_cast<float>(1.0 / std::sqrt(static_cast<double>(C)));  // hidden ** -0.5
  float* route = moe_.route.data();
  float* in = moe_.input.data();
  rms_norm(h, h, w.post_mlp_norm_1, n, C, eps);
  rms_norm(route, x, ones_.data(), n, C, eps);  // the router's norm has no weight
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < C; ++c) route[r * C + c] = route[r * C + c] * w.router_scale[c] * root;
  rms_norm(in, x, w.pre_experts_norm, n, C, eps);
  const float* out = experts(in, w.experts, n, route);
  rms_norm(in, out, w.post_experts_norm, n, C, eps);
  add_residual(h, in, n, C);
}

void Gemma::final_norm(float* out, const float* x, int64_t m) {
  rms_norm(out, x, norm_, m, config_.hidden, options_.rms_norm_eps);
}

}  // namespace

std::unique_ptr<Model> make_gemma(ModelConfig config, GemmaOptions options, const TensorMap& tensors) {
  return std::make_unique<Gemma>(std::move(config), std::move(options), tensors);
}

}  // namespace kvgen
