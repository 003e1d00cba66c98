// Llama forward pass, following transformers' modeling_llama.py.
#include "kvgen/model/llama.h"

#include <cmath>
#include <cstring>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/model/kernels.h"

namespace kvgen {

Llama::Llama(ModelConfig config, LlamaOptions options, const TensorMap& t)
    : DecoderModel(std::move(config)), options_(std::move(options)) {
  const int64_t C = config_.hidden, V = config_.vocab_size, I = config_.intermediate;
  const int64_t H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim;
  if (static_cast<int64_t>(options_.inv_freq.size()) != hd / 2)
    throw ValueError("Llama: " + std::to_string(options_.inv_freq.size()) + " rotary frequencies for head_dim " +
                     std::to_string(hd) + " (need head_dim / 2)");
  for (float f : options_.inv_freq)
    if (!std::isfinite(f)) throw ValueError("Llama: a rotary inverse frequency is " + std::to_string(f) +
                                            " (check rope_theta and the rope scaling parameters)");
  const auto vector = [&](const std::string& name, int64_t size) {
    count_weight(size);
    return t.get(name, {size});
  };
  const auto matrix = [&](const std::string& name, int64_t out, int64_t in) {
    LinearWeight w = t.linear(name, out, in, DenseLayout::OutIn);
    count_weight(w);
    return w;
  };
  const auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    const std::string bias = name + ".bias";
    return Linear{matrix(name + ".weight", out, in), t.has(bias) ? vector(bias, out) : nullptr};
  };
  embed_ = matrix("model.embed_tokens.weight", V, C);
  norm_ = vector("model.norm.weight", C);
  lm_head_ = t.has("lm_head.weight") ? matrix("lm_head.weight", V, C) : embed_;
  for (int64_t l = 0; l < config_.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    layers_.push_back({vector(p + "input_layernorm.weight", C),
                       linear(p + "self_attn.q_proj", H * hd, C),
                       linear(p + "self_attn.k_proj", KV * hd, C),
                       linear(p + "self_attn.v_proj", KV * hd, C),
                       linear(p + "self_attn.o_proj", C, H * hd),
                       vector(p + "post_attention_layernorm.weight", C),
                       linear(p + "mlp.gate_proj", I, C),
                       linear(p + "mlp.up_proj", I, C),
                       linear(p + "mlp.down_proj", C, I)});
  }
}

void Llama::reserve_positions(int64_t end) {
  // cos/sin as transformers computes them: the angle is the float32 product position *
  // inv_freq, its cos/sin taken in double. Positions already computed are kept.
  const int64_t half = config_.head_dim / 2;
  const int64_t have = static_cast<int64_t>(cos_.size()) / half;
  if (end <= have) return;
  cos_.resize(end * half);
  sin_.resize(end * half);
  for (int64_t p = have; p < end; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(p) * options_.inv_freq[i];
      cos_[p * half + i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      sin_[p * half + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
}

void Llama::reserve(const Batch& b) {
  const int64_t n = b.n, C = config_.hidden, I = config_.intermediate;
  const int64_t H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim;
  reserve_positions(b.end);
  grow_rows(scratch_.branch, n, C);
  grow_rows(scratch_.q, n, H * hd);
  grow_rows(scratch_.k, n, KV * hd);
  grow_rows(scratch_.v, n, KV * hd);
  grow_rows(scratch_.att, n, H * hd);
  grow_rows(scratch_.gate, n, I);
  grow_rows(scratch_.up, n, I);
}

void Llama::embed(float* x, const Batch& b) {
  const int64_t C = config_.hidden;
  for (int64_t i = 0; i < b.n; ++i) embed_.row(b.tokens[i], x + i * C);
}

void Llama::block(int64_t l, float* x, const Batch& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden, I = config_.intermediate;
  const int64_t H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim;
  const Layer& w = layers_[l];
  float* h = scratch_.branch.data();  // raw pointers from here on: the hot path
  float* q = scratch_.q.data();
  float* k = scratch_.k.data();
  float* v = scratch_.v.data();
  float* att = scratch_.att.data();
  float* gate = scratch_.gate.data();
  float* up = scratch_.up.data();
  // attention: q, k and v of one normed input in one parallel section
  kernels::rmsnorm(h, x, w.attn_norm, n, C, options_.rms_norm_eps);
  projector_.project(h, n, C, {{&w.q.w, w.q.bias, q, H * hd}, {&w.k.w, w.k.bias, k, KV * hd},
                               {&w.v.w, w.v.bias, v, KV * hd}});
  kernels::rope(q, H * hd, n, H, hd, b.positions.data(), cos_.data(), sin_.data());
  kernels::rope(k, KV * hd, n, KV, hd, b.positions.data(), cos_.data(), sin_.data());
  attend(att, q, H * hd, k, KV * hd, v, KV * hd, l, b, cache, 1.0f / std::sqrt(static_cast<float>(hd)));
  projector_.project(att, n, H * hd, {{&w.o.w, w.o.bias, h, C}});
  kernels::add_inplace(x, h, n * C);
  // SwiGLU MLP: down(silu(gate(h)) * up(h))
  kernels::rmsnorm(h, x, w.mlp_norm, n, C, options_.rms_norm_eps);
  projector_.project(h, n, C, {{&w.gate.w, w.gate.bias, gate, I}, {&w.up.w, w.up.bias, up, I}});
  kernels::silu_mul(gate, up, n * I);
  projector_.project(gate, n, I, {{&w.down.w, w.down.bias, h, C}});
  kernels::add_inplace(x, h, n * C);
}

void Llama::final_norm(float* out, const float* x, int64_t m) {
  kernels::rmsnorm(out, x, norm_, m, config_.hidden, options_.rms_norm_eps);
}

}  // namespace kvgen
