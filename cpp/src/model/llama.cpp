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
  const int64_t H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim, L = config_.layers;
  rotary_dim_ = options_.rotary_dim == 0 ? hd : options_.rotary_dim;
  if (rotary_dim_ < 2 || rotary_dim_ > hd || rotary_dim_ % 2)
    throw ValueError("Llama: rotary_dim = " + std::to_string(rotary_dim_) + " must be even and within head_dim " +
                     std::to_string(hd));
  for (const auto* freqs : {&options_.inv_freq, &options_.inv_freq_long}) {
    if (freqs == &options_.inv_freq_long && freqs->empty()) continue;
    if (static_cast<int64_t>(freqs->size()) != rotary_dim_ / 2)
      throw ValueError("Llama: " + std::to_string(freqs->size()) + " rotary frequencies for rotary_dim " +
                       std::to_string(rotary_dim_) + " (need rotary_dim / 2)");
    for (float f : *freqs)
      if (!std::isfinite(f)) throw ValueError("Llama: a rotary inverse frequency is " + std::to_string(f) +
                                              " (check rope_theta and the rope scaling parameters)");
  }
  if (!options_.inv_freq_long.empty() && options_.original_context < 1)
    throw ValueError("Llama: long rotary frequencies need original_context >= 1");
  if (!options_.rope_layers.empty() && static_cast<int64_t>(options_.rope_layers.size()) != L)
    throw ValueError("Llama: rope_layers has " + std::to_string(options_.rope_layers.size()) + " entries for " +
                     std::to_string(L) + " layers");
  check_finite("Llama", options_.rope_attention_factor, "the rotary attention factor");
  check_finite("Llama", options_.embedding_multiplier, "embedding_multiplier");
  check_finite("Llama", options_.residual_multiplier, "residual_multiplier");
  check_finite("Llama", options_.attention_scale, "the attention scale");
  check_finite("Llama", options_.logit_scale, "the logit scale");
  attention_scale_ =
      options_.attention_scale != 0.0f ? options_.attention_scale : 1.0f / std::sqrt(static_cast<float>(hd));
  const auto optional_vector = [&](const std::string& name, int64_t size) {
    return t.has(name) ? read_vector(t, name, size) : nullptr;
  };
  embed_ = read_matrix(t, "model.embed_tokens.weight", V, C);
  norm_ = read_vector(t, "model.norm.weight", C);
  lm_head_ = t.has("lm_head.weight") ? read_matrix(t, "lm_head.weight", V, C) : embed_;
  if (config_.experts > 0) moe_ = std::make_unique<SparseMoe>(config_, options_.norm_topk_prob);
  for (int64_t l = 0; l < config_.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const bool sparse = moe_ && SparseMoe::has_layer(t, p);  // a mixture of experts instead of the MLP
    layers_.push_back({read_vector(t, p + "input_layernorm.weight", C),
                       read_linear(t, p + "self_attn.q_proj", H * hd, C),
                       read_linear(t, p + "self_attn.k_proj", KV * hd, C),
                       read_linear(t, p + "self_attn.v_proj", KV * hd, C),
                       read_linear(t, p + "self_attn.o_proj", C, H * hd),
                       read_vector(t, p + "post_attention_layernorm.weight", C),
                       sparse ? Linear{} : read_linear(t, p + "mlp.gate_proj", I, C),
                       sparse ? Linear{} : read_linear(t, p + "mlp.up_proj", I, C),
                       sparse ? Linear{} : read_linear(t, p + "mlp.down_proj", C, I)});
    Layer& layer = layers_.back();
    if (sparse) {
      layer.moe = static_cast<int64_t>(moe_layers_.size());
      moe_layers_.push_back(moe_->read(t, p));
      const SparseMoe::Layer& m = moe_layers_.back();
      count_weight(m.router);
      for (const auto* experts : {&m.gate, &m.up, &m.down})
        for (const LinearWeight& e : *experts) count_weight(e);
    }
    layer.q_norm = optional_vector(p + "self_attn.q_norm.weight", hd);
    layer.k_norm = optional_vector(p + "self_attn.k_norm.weight", hd);
    if ((layer.q_norm == nullptr) != (layer.k_norm == nullptr))
      throw ValueError("layer " + std::to_string(l) + " has a norm of the queries or of the keys, not both");
    layer.rope = options_.rope_layers.empty() || options_.rope_layers[l] != 0;
  }
}

void Llama::reserve_positions(int64_t end) {
  const bool use_long = !options_.inv_freq_long.empty() && end > options_.original_context;
  rotary_ = use_long ? &long_ : &short_;
  extend_rotary(use_long ? long_ : short_, use_long ? options_.inv_freq_long : options_.inv_freq,
         options_.rope_attention_factor, end);
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
  if (moe_) {
    moe_->reserve(n);
    grow_rows(scratch_.moe_out, n, C);
  }
}

void Llama::embed(float* x, const Batch& b) {
  const int64_t C = config_.hidden;
  for (int64_t i = 0; i < b.n; ++i) embed_.row(b.tokens[i], x + i * C);
  if (options_.embedding_multiplier != 1.0f) kernels::scale_inplace(x, options_.embedding_multiplier, b.n * C);
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
  const float eps = options_.rms_norm_eps;
  rows_in_parallel(n, C, [&](int64_t r0, int64_t r1) {
    kernels::rmsnorm(h + r0 * C, x + r0 * C, w.attn_norm, r1 - r0, C, eps);
  });
  projector_.project(h, n, C, {{&w.q.w, w.q.bias, q, H * hd}, {&w.k.w, w.k.bias, k, KV * hd},
                               {&w.v.w, w.v.bias, v, KV * hd}});
  if (w.q_norm != nullptr || w.rope) {  // per token: each head's q and k normed over its head_dim values, rotated
    const float* cos = rotary_->cos.data();
    const float* sin = rotary_->sin.data();
    rows_in_parallel(n, (H + KV) * hd, [&](int64_t r0, int64_t r1) {
      float* qr = q + r0 * H * hd;
      float* kr = k + r0 * KV * hd;
      if (w.q_norm != nullptr) {
        kernels::rmsnorm(qr, qr, w.q_norm, (r1 - r0) * H, hd, eps);
        kernels::rmsnorm(kr, kr, w.k_norm, (r1 - r0) * KV, hd, eps);
      }
      if (w.rope) {
        kernels::rope(qr, H * hd, r1 - r0, H, hd, rotary_dim_, b.positions.data() + r0, cos, sin);
        kernels::rope(kr, KV * hd, r1 - r0, KV, hd, rotary_dim_, b.positions.data() + r0, cos, sin);
      }
    });
  }
  attend(att, q, H * hd, k, KV * hd, v, KV * hd, l, b, cache, attention_scale_);
  projector_.project(att, n, H * hd, {{&w.o.w, w.o.bias, h, C}});
  rows_in_parallel(n, C, [&](int64_t r0, int64_t r1) {
    add_branch(x + r0 * C, h + r0 * C, (r1 - r0) * C);
    kernels::rmsnorm(h + r0 * C, x + r0 * C, w.mlp_norm, r1 - r0, C, eps);
  });
  if (w.moe >= 0) {  // a sparse mixture of experts instead of the MLP
    float* moe_out = scratch_.moe_out.data();
    moe_->forward(moe_out, h, n, moe_layers_[w.moe], projector_);
    add_branch(x, moe_out, n * C);
    return;
  }
  // SwiGLU MLP: down(silu(gate(h)) * up(h))
  projector_.project(h, n, C, {{&w.gate.w, w.gate.bias, gate, I}, {&w.up.w, w.up.bias, up, I}});
  rows_in_parallel(n, I, [&](int64_t r0, int64_t r1) { kernels::silu_mul(gate + r0 * I, up + r0 * I, (r1 - r0) * I); });
  projector_.project(gate, n, I, {{&w.down.w, w.down.bias, h, C}});
  rows_in_parallel(n, C, [&](int64_t r0, int64_t r1) { add_branch(x + r0 * C, h + r0 * C, (r1 - r0) * C); });
}

void Llama::add_branch(float* x, const float* h, int64_t size) const {
  if (options_.residual_multiplier == 1.0f)
    kernels::add_inplace(x, h, size);
  else
    kernels::add_scaled_inplace(x, h, options_.residual_multiplier, size);
}

void Llama::final_norm(float* out, const float* x, int64_t m) {
  kernels::rmsnorm(out, x, norm_, m, config_.hidden, options_.rms_norm_eps);
  // the LM head is linear: scaling its input scales the logits
  if (options_.logit_scale != 1.0f) kernels::scale_inplace(out, options_.logit_scale, m * config_.hidden);
}

}  // namespace kvgen
