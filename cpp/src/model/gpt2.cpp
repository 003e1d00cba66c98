// GPT-2 forward pass, following transformers' modeling_gpt2.py.
#include "kvgen/model/gpt2.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kvgen/errors.h"
#include "kvgen/model/kernels.h"

namespace kvgen {
namespace {

// "transformer.h.0.ln_1.weight" or "h.0.ln_1.weight" (the original checkpoints).
std::string resolve(const TensorMap& t, const std::string& name) {
  return t.has("transformer." + name) ? "transformer." + name : name;
}

}  // namespace

GPT2::GPT2(ModelConfig config, GPT2Options options, const TensorMap& t)
    : DecoderModel(std::move(config)), options_(options) {
  const int64_t C = config_.hidden, V = config_.vocab_size, I = config_.intermediate;
  const auto get = [&](const std::string& name, std::vector<int64_t> shape) {
    count_weight(shape.size() == 1 ? shape[0] : shape[0] * shape[1]);
    return t.get(resolve(t, name), shape);
  };
  // Conv1D matrices: float32 stored (in, out); quantized ones (out, in).
  const auto matrix = [&](const std::string& name, int64_t out, int64_t in, DenseLayout layout) {
    LinearWeight w = t.linear(resolve(t, name), out, in, layout);
    count_weight(w);
    return w;
  };
  wte_ = matrix("wte.weight", V, C, DenseLayout::OutIn);
  wpe_ = get("wpe.weight", {config_.context_length, C});
  lnf_g_ = get("ln_f.weight", {C});
  lnf_b_ = get("ln_f.bias", {C});
  lm_head_ = t.has("lm_head.weight") ? matrix("lm_head.weight", V, C, DenseLayout::OutIn) : wte_;
  for (int64_t l = 0; l < config_.layers; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    layers_.push_back({get(p + "ln_1.weight", {C}), get(p + "ln_1.bias", {C}),
                       matrix(p + "attn.c_attn.weight", 3 * C, C, DenseLayout::InOut), get(p + "attn.c_attn.bias", {3 * C}),
                       matrix(p + "attn.c_proj.weight", C, C, DenseLayout::InOut), get(p + "attn.c_proj.bias", {C}),
                       get(p + "ln_2.weight", {C}), get(p + "ln_2.bias", {C}),
                       matrix(p + "mlp.c_fc.weight", I, C, DenseLayout::InOut), get(p + "mlp.c_fc.bias", {I}),
                       matrix(p + "mlp.c_proj.weight", C, I, DenseLayout::InOut), get(p + "mlp.c_proj.bias", {C})});
  }
}

void GPT2::reserve(const Batch& b) {
  const int64_t n = b.n, C = config_.hidden, I = config_.intermediate;
  grow_rows(scratch_.branch, n, C);
  grow_rows(scratch_.qkv, n, 3 * C);
  grow_rows(scratch_.att, n, C);
  grow_rows(scratch_.mlp, n, I);
}

void GPT2::embed(float* x, const Batch& b) {
  const int64_t C = config_.hidden;
  for (int64_t i = 0; i < b.n; ++i) {  // token + learned position embedding
    const float* pe = wpe_ + b.positions[i] * C;
    float* xi = x + i * C;
    wte_.row(b.tokens[i], xi);
    for (int64_t c = 0; c < C; ++c) xi[c] += pe[c];
  }
}

void GPT2::block(int64_t l, float* x, const Batch& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden, I = config_.intermediate;
  const Layer& w = layers_[l];
  float* h = scratch_.branch.data();  // raw pointers from here on: the hot path
  float* qkv = scratch_.qkv.data();
  float* att = scratch_.att.data();
  float* mlp = scratch_.mlp.data();
  const int64_t ld_qkv = static_cast<int64_t>(scratch_.qkv.shape(1));  // q, k and v are column blocks of one row
  // attention
  kernels::layernorm(h, x, w.ln1_g, w.ln1_b, n, C, options_.layer_norm_epsilon);
  projector_.project(h, n, C, {{&w.attn_w, w.attn_b, qkv, ld_qkv}});
  float scale = options_.scale_attn_weights ? 1.0f / std::sqrt(static_cast<float>(config_.head_dim)) : 1.0f;
  if (options_.scale_attn_by_inverse_layer_idx) scale /= static_cast<float>(l + 1);
  attend(att, qkv, ld_qkv, qkv + C, ld_qkv, qkv + 2 * C, ld_qkv, l, b, cache, scale);
  projector_.project(att, n, C, {{&w.proj_w, w.proj_b, h, C}});
  kernels::add_inplace(x, h, n * C);
  // GELU MLP
  kernels::layernorm(h, x, w.ln2_g, w.ln2_b, n, C, options_.layer_norm_epsilon);
  projector_.project(h, n, C, {{&w.fc_w, w.fc_b, mlp, I}});
  if (options_.exact_gelu)
    kernels::gelu_erf(mlp, n * I);
  else
    kernels::gelu_tanh(mlp, n * I);
  projector_.project(mlp, n, I, {{&w.fc_proj_w, w.fc_proj_b, h, C}});
  kernels::add_inplace(x, h, n * C);
}

void GPT2::final_norm(float* out, const float* x, int64_t m) {
  kernels::layernorm(out, x, lnf_g_, lnf_b_, m, config_.hidden, options_.layer_norm_epsilon);
}

}  // namespace kvgen
