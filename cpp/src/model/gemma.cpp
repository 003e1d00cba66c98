// Gemma 2 / Gemma 3 forward pass, following transformers' modeling_gemma2.py and
// modeling_gemma3.py.
#include "kvgen/model/gemma.h"

#include <cmath>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/model/kernels.h"

namespace kvgen {
Gemma::Gemma(ModelConfig config, GemmaOptions options, const TensorMap& t)
    : DecoderModel(std::move(config)), options_(std::move(options)) {
  const int64_t C = config_.hidden, V = config_.vocab_size, I = config_.intermediate;
  const int64_t H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim, L = config_.layers;
  for (const auto* freqs : {&options_.inv_freq, &options_.inv_freq_local}) {
    if (freqs == &options_.inv_freq_local && freqs->empty()) continue;
    if (static_cast<int64_t>(freqs->size()) != hd / 2)
      throw ValueError("Gemma: " + std::to_string(freqs->size()) + " rotary frequencies for head_dim " +
                       std::to_string(hd) + " (need head_dim / 2)");
    for (float f : *freqs)
      if (!std::isfinite(f)) throw ValueError("Gemma: a rotary inverse frequency is " + std::to_string(f));
  }
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
  if (options_.norm_offset != 0.0f) norms_.reserve(L * (4 * C + 2 * hd) + C);  // every norm, at most

  embed_ = read_matrix(t, "model.embed_tokens.weight", V, C);
  norm_ = norm_weight(t, "model.norm.weight", C);
  lm_head_ = t.has("lm_head.weight") ? read_matrix(t, "lm_head.weight", V, C) : embed_;
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const bool qk_norm = t.has(p + "self_attn.q_norm.weight") || t.has(p + "self_attn.k_norm.weight");
    layers_.push_back({norm_weight(t, p + "input_layernorm.weight", C),
                       norm_weight(t, p + "post_attention_layernorm.weight", C),
                       read_linear(t, p + "self_attn.q_proj", H * hd, C),
                       read_linear(t, p + "self_attn.k_proj", KV * hd, C),
                       read_linear(t, p + "self_attn.v_proj", KV * hd, C),
                       read_linear(t, p + "self_attn.o_proj", C, H * hd),
                       qk_norm ? norm_weight(t, p + "self_attn.q_norm.weight", hd) : nullptr,
                       qk_norm ? norm_weight(t, p + "self_attn.k_norm.weight", hd) : nullptr,
                       norm_weight(t, p + "pre_feedforward_layernorm.weight", C),
                       norm_weight(t, p + "post_feedforward_layernorm.weight", C),
                       read_linear(t, p + "mlp.gate_proj", I, C),
                       read_linear(t, p + "mlp.up_proj", I, C),
                       read_linear(t, p + "mlp.down_proj", C, I),
                       config_.window(l) > 0 && !options_.inv_freq_local.empty()});
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

void Gemma::reserve(const Batch& b) {
  const int64_t n = b.n, C = config_.hidden, I = config_.intermediate;
  const int64_t H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim;
  extend_rotary(global_.table, global_.inv_freq, 1.0f, b.end);
  if (!options_.inv_freq_local.empty()) extend_rotary(local_.table, local_.inv_freq, 1.0f, b.end);
  grow_rows(scratch_.branch, n, C);
  grow_rows(scratch_.q, n, H * hd);
  grow_rows(scratch_.k, n, KV * hd);
  grow_rows(scratch_.v, n, KV * hd);
  grow_rows(scratch_.att, n, H * hd);
  grow_rows(scratch_.gate, n, I);
  grow_rows(scratch_.up, n, I);
}

void Gemma::embed(float* x, const Batch& b) {
  const int64_t C = config_.hidden;
  for (int64_t i = 0; i < b.n; ++i) embed_.row(b.tokens[i], x + i * C);
  kernels::scale_inplace(x, options_.embed_scale, b.n * C);
}

void Gemma::block(int64_t l, float* x, const Batch& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden, I = config_.intermediate;
  const int64_t H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim;
  const float eps = options_.rms_norm_eps;
  const Layer& w = layers_[l];
  float* h = scratch_.branch.data();  // raw pointers from here on: the hot path
  float* q = scratch_.q.data();
  float* k = scratch_.k.data();
  float* v = scratch_.v.data();
  float* att = scratch_.att.data();
  float* gate = scratch_.gate.data();
  float* up = scratch_.up.data();
  // attention: norm, q/k/v, per-head q/k norms, rotary, cached attention, o, post-norm
  kernels::rmsnorm(h, x, w.attn_norm, n, C, eps);
  projector_.project(h, n, C, {{&w.q.w, w.q.bias, q, H * hd}, {&w.k.w, w.k.bias, k, KV * hd},
                               {&w.v.w, w.v.bias, v, KV * hd}});
  if (w.q_norm != nullptr) {  // each head's q and k normed over its head_dim values
    kernels::rmsnorm(q, q, w.q_norm, n * H, hd, eps);
    kernels::rmsnorm(k, k, w.k_norm, n * KV, hd, eps);
  }
  const RotaryTable& rope = (w.local_rope ? local_ : global_).table;
  kernels::rope(q, H * hd, n, H, hd, hd, b.positions.data(), rope.cos.data(), rope.sin.data());
  kernels::rope(k, KV * hd, n, KV, hd, hd, b.positions.data(), rope.cos.data(), rope.sin.data());
  attend(att, q, H * hd, k, KV * hd, v, KV * hd, l, b, cache, attention_scale_, options_.attn_softcap);
  projector_.project(att, n, H * hd, {{&w.o.w, w.o.bias, h, C}});
  kernels::rmsnorm(h, h, w.post_attn_norm, n, C, eps);
  kernels::add_inplace(x, h, n * C);
  // GeGLU MLP: down(gelu_tanh(gate(h)) * up(h)), normed before and after
  kernels::rmsnorm(h, x, w.mlp_norm, n, C, eps);
  projector_.project(h, n, C, {{&w.gate.w, w.gate.bias, gate, I}, {&w.up.w, w.up.bias, up, I}});
  kernels::gelu_tanh(gate, n * I);
  for (int64_t i = 0; i < n * I; ++i) gate[i] *= up[i];
  projector_.project(gate, n, I, {{&w.down.w, w.down.bias, h, C}});
  kernels::rmsnorm(h, h, w.post_mlp_norm, n, C, eps);
  kernels::add_inplace(x, h, n * C);
}

void Gemma::final_norm(float* out, const float* x, int64_t m) {
  kernels::rmsnorm(out, x, norm_, m, config_.hidden, options_.rms_norm_eps);
}

}  // namespace kvgen
