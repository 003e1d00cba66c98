// GPT-2 forward pass, following transformers' modeling_gpt2.py.
#include "kvgen/model/gpt2.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kvgen/errors.h"
#include "kvgen/model/attention.h"
#include "kvgen/model/kernels.h"

namespace kvgen {
namespace {

// "transformer.h.0.ln_1.weight" or "h.0.ln_1.weight" (the original checkpoints).
std::string resolve(const TensorMap& t, const std::string& name) {
  return t.has("transformer." + name) ? "transformer." + name : name;
}

}  // namespace

GPT2::GPT2(ModelConfig config, GPT2Options options, const TensorMap& t) : config_(std::move(config)), options_(options) {
  const int64_t C = config_.hidden, V = config_.vocab_size, I = config_.intermediate;
  if (C % config_.heads != 0)
    throw ValueError("GPT-2 config: n_embd = " + std::to_string(C) + " is not a multiple of n_head = " +
                     std::to_string(config_.heads));
  const auto get = [&t](const std::string& name, std::vector<int64_t> shape) {
    return t.get(resolve(t, name), shape);
  };
  wte_ = get("wte.weight", {V, C});
  wpe_ = get("wpe.weight", {config_.context_length, C});
  lnf_g_ = get("ln_f.weight", {C});
  lnf_b_ = get("ln_f.bias", {C});
  lm_head_ = t.has("lm_head.weight") ? t.get("lm_head.weight", {V, C}) : wte_;
  for (int64_t l = 0; l < config_.layers; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    layers_.push_back({get(p + "ln_1.weight", {C}), get(p + "ln_1.bias", {C}), get(p + "attn.c_attn.weight", {C, 3 * C}),
                       get(p + "attn.c_attn.bias", {3 * C}), get(p + "attn.c_proj.weight", {C, C}),
                       get(p + "attn.c_proj.bias", {C}), get(p + "ln_2.weight", {C}), get(p + "ln_2.bias", {C}),
                       get(p + "mlp.c_fc.weight", {C, I}), get(p + "mlp.c_fc.bias", {I}),
                       get(p + "mlp.c_proj.weight", {I, C}), get(p + "mlp.c_proj.bias", {C})});
  }
}

void GPT2::reserve(int64_t tokens, int64_t scores) {
  const int64_t C = config_.hidden;
  const auto grow = [](xt::xtensor<float, 1>& buf, int64_t n) {
    if (static_cast<int64_t>(buf.size()) < n) buf = xt::xtensor<float, 1>::from_shape({static_cast<size_t>(n)});
  };
  grow(x_, tokens * C);
  grow(h_, tokens * C);
  grow(qkv_, tokens * 3 * C);
  grow(att_, tokens * C);
  grow(mlp_, tokens * config_.intermediate);
  grow(scores_, scores);
}

void GPT2::forward(const std::vector<RowTokens>& chunks, KVCache& cache, float* logits, bool all_positions) {
  const int64_t C = config_.hidden, V = config_.vocab_size, H = config_.heads, hd = config_.head_dim;
  const int64_t I = config_.intermediate;
  // ---- checks, before any work ----
  int64_t n = 0, max_scores = 0;
  for (const RowTokens& c : chunks) {
    const int64_t start = cache.length(c.row);
    if (start + c.count > cache.max_context() || start + c.count > config_.context_length) {
      throw ValueError("context overflow: row " + std::to_string(c.row) + " would reach position " +
                       std::to_string(start + c.count) + ", beyond the " +
                       std::to_string(std::min(cache.max_context(), config_.context_length)) + " positions available");
    }
    for (int64_t i = 0; i < c.count; ++i)
      if (c.tokens[i] < 0 || c.tokens[i] >= V)
        throw ValueError("token id " + std::to_string(c.tokens[i]) + " is outside the vocabulary [0, " +
                         std::to_string(V) + ")");
    n += c.count;
    max_scores = std::max(max_scores, c.count * (start + c.count));
  }
  reserve(n, max_scores);
  float *x = x_.data(), *h = h_.data(), *qkv = qkv_.data(), *att = att_.data(), *mlp = mlp_.data();

  // ---- embeddings: x (n, C) ----
  std::vector<int64_t>& starts = starts_;
  starts.resize(chunks.size());
  for (size_t ci = 0, o = 0; ci < chunks.size(); o += chunks[ci].count, ++ci) {
    starts[ci] = cache.length(chunks[ci].row);
    for (int64_t i = 0; i < chunks[ci].count; ++i) {
      float* xi = x + (o + i) * C;
      const float* te = wte_ + chunks[ci].tokens[i] * C;
      const float* pe = wpe_ + (starts[ci] + i) * C;
      for (int64_t c = 0; c < C; ++c) xi[c] = te[c] + pe[c];
    }
  }

  // ---- blocks ----
  for (int64_t l = 0; l < config_.layers; ++l) {
    const Layer& w = layers_[l];
    kernels::layernorm(h, x, w.ln1_g, w.ln1_b, n, C, options_.layer_norm_epsilon);
    kernels::linear(qkv, h, w.attn_w, w.attn_b, n, 3 * C, C);  // (n, 3C): q | k | v
    float scale = options_.scale_attn_weights ? 1.0f / std::sqrt(static_cast<float>(hd)) : 1.0f;
    if (options_.scale_attn_by_inverse_layer_idx) scale /= static_cast<float>(l + 1);
    for (size_t ci = 0, o = 0; ci < chunks.size(); o += chunks[ci].count, ++ci) {
      const RowTokens& c = chunks[ci];
      for (int64_t i = 0; i < c.count; ++i) {  // keys and values into the cache, by position
        const float* row = qkv + (o + i) * 3 * C;
        for (int64_t head = 0; head < H; ++head) {
          std::memcpy(cache.keys(l, c.row, head) + (starts[ci] + i) * hd, row + C + head * hd, sizeof(float) * hd);
          std::memcpy(cache.values(l, c.row, head) + (starts[ci] + i) * hd, row + 2 * C + head * hd,
                      sizeof(float) * hd);
        }
      }
      causal_attention(att + o * C, C, qkv + o * 3 * C, 3 * C, cache, l, c.row, starts[ci], c.count, H, H, hd, scale,
                       scores_.data());
    }
    kernels::linear(h, att, w.proj_w, w.proj_b, n, C, C);
    kernels::add_inplace(x, h, n * C);
    kernels::layernorm(h, x, w.ln2_g, w.ln2_b, n, C, options_.layer_norm_epsilon);
    kernels::linear(mlp, h, w.fc_w, w.fc_b, n, I, C);
    if (options_.exact_gelu)
      kernels::gelu_erf(mlp, n * I);
    else
      kernels::gelu_tanh(mlp, n * I);
    kernels::linear(h, mlp, w.fc_proj_w, w.fc_proj_b, n, C, I);
    kernels::add_inplace(x, h, n * C);
  }
  for (size_t ci = 0; ci < chunks.size(); ++ci) cache.set_length(chunks[ci].row, starts[ci] + chunks[ci].count);

  // ---- final norm and LM head ----
  if (all_positions) {
    kernels::layernorm(h, x, lnf_g_, lnf_b_, n, C, options_.layer_norm_epsilon);
    kernels::matmul(logits, h, lm_head_, n, V, C, true);
    return;
  }
  for (size_t ci = 0, o = 0; ci < chunks.size(); o += chunks[ci].count, ++ci) {
    const float* last = x + (o + chunks[ci].count - 1) * C;
    kernels::layernorm(h + ci * C, last, lnf_g_, lnf_b_, 1, C, options_.layer_norm_epsilon);
  }
  // one GEMM for every chunk's last token, then each row of logits to its cache row
  const int64_t m = static_cast<int64_t>(chunks.size());
  bool rows_in_order = true;
  for (int64_t ci = 0; ci < m; ++ci) rows_in_order = rows_in_order && chunks[ci].row == chunks[0].row + ci;
  if (rows_in_order) {
    kernels::matmul(logits + chunks[0].row * V, h, lm_head_, m, V, C, true);
    return;
  }
  if (static_cast<int64_t>(logits_.size()) < m * V) logits_ = xt::xtensor<float, 1>::from_shape({static_cast<size_t>(m * V)});
  kernels::matmul(logits_.data(), h, lm_head_, m, V, C, true);
  for (int64_t ci = 0; ci < m; ++ci)
    std::memcpy(logits + chunks[ci].row * V, logits_.data() + ci * V, sizeof(float) * V);
}

}  // namespace kvgen
