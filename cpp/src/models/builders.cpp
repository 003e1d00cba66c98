// The builders a family's block is made of (decoder.h): embedding rows, norms, residual
// adds, the attention branch, the (gated) MLP and the mixture of experts, each following
// the transformers module it stands for (LlamaRMSNorm, nn.LayerNorm, LlamaAttention,
// LlamaMLP / Gemma2MLP / GPT2MLP, Qwen3MoeSparseMoeBlock).
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/models/decoder.h"
#include "kvgen/ops/layer_ops.h"

namespace kvgen {

void DecoderModel::reserve_builders(const ForwardPass& b) {
  const int64_t n = b.n, C = config_.hidden, I = std::max(config_.intermediate, widest_mlp_);
  const int64_t H = config_.heads, KV = config_.max_kv_heads(), hd = config_.max_head_dim();
  grow_rows(builder_.branch, n, C);
  if (layout_.fused_qkv) {
    grow_rows(builder_.q, n, (H + 2 * KV) * hd);
  } else {
    grow_rows(builder_.q, n, H * hd);
    grow_rows(builder_.k, n, KV * hd);
    grow_rows(builder_.v, n, KV * hd);
  }
  grow_rows(builder_.att, n, H * hd);
  grow_rows(builder_.inner, n, I);
  if (layout_.gated_mlp) grow_rows(builder_.up, n, I);
  if (experts_) experts_->reserve(n);
}

void DecoderModel::embed_tokens(float* x, const LinearWeight& table, const ForwardPass& b, float scale) {
  const int64_t C = config_.hidden;
  for (int64_t i = 0; i < b.n; ++i) table.row(b.tokens[i], x + i * C);
  if (scale != 1.0f) ops::scale_inplace(x, scale, b.n * C);
}

void DecoderModel::rms_norm(float* out, const float* x, const float* weight, int64_t n, int64_t width, float eps) {
  rows_in_parallel(n, width, [&](int64_t r0, int64_t r1) {
    ops::rmsnorm(out + r0 * width, x + r0 * width, weight, r1 - r0, width, eps);
  });
}

void DecoderModel::layer_norm(float* out, const float* x, const float* weight, const float* bias, int64_t n,
                              int64_t width, float eps) {
  rows_in_parallel(n, width, [&](int64_t r0, int64_t r1) {
    ops::layernorm(out + r0 * width, x + r0 * width, weight, bias, r1 - r0, width, eps);
  });
}

const float* DecoderModel::rms_norm_or_pass(float* out, const float* x, const float* weight, int64_t n, int64_t width,
                                            float eps) {
  if (weight == nullptr) return x;
  rms_norm(out, x, weight, n, width, eps);
  return out;
}

void DecoderModel::add_residual(float* x, const float* h, int64_t n, int64_t width, float scale) {
  rows_in_parallel(n, width, [&](int64_t r0, int64_t r1) {
    if (scale == 1.0f)
      ops::add_inplace(x + r0 * width, h + r0 * width, (r1 - r0) * width);
    else
      ops::add_scaled_inplace(x + r0 * width, h + r0 * width, scale, (r1 - r0) * width);
  });
}

void DecoderModel::attention(float* out, const float* h, const AttentionWeights& w, const AttentionParams& params,
                             int64_t layer, const ForwardPass& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden;
  const int64_t H = config_.heads, KV = config_.kv_heads_of(layer), hd = config_.head_dim_of(layer);
  const bool fused = w.qkv.w.out() > 0;
  // a layer that reads another layer's keys and values (ModelConfig::kv_source) projects none
  const bool own_kv = config_.kv_source(layer) == layer;
  if (fused != layout_.fused_qkv) throw std::logic_error("attention weights do not match the model's BlockLayout");
  float* q = builder_.q.data();  // (n, H hd), row stride ldq
  float *k, *v;                  // (n, KV hd) each, row strides ldk, ldv
  int64_t ldq = H * hd, ldk = KV * hd, ldv = KV * hd;
  if (fused) {  // q | k | v: column blocks of one row
    ldq = ldk = ldv = (H + 2 * KV) * hd;
    k = q + H * hd;
    v = k + KV * hd;
    projector_.project(h, n, C, {{&w.qkv.w, w.qkv.bias, q, ldq}});
  } else if (!own_kv) {
    k = v = nullptr;
    projector_.project(h, n, C, {{&w.q.w, w.q.bias, q, ldq}});
  } else if (w.values_from_keys) {  // v = the key projection, before the keys' norm and rotation
    k = builder_.k.data();
    v = builder_.v.data();
    projector_.project(h, n, C, {{&w.q.w, w.q.bias, q, ldq}, {&w.k.w, w.k.bias, k, ldk}});
    std::copy_n(k, n * ldk, v);
  } else {
    k = builder_.k.data();
    v = builder_.v.data();
    projector_.project(h, n, C, {{&w.q.w, w.q.bias, q, ldq}, {&w.k.w, w.k.bias, k, ldk}, {&w.v.w, w.v.bias, v, ldv}});
  }
  if (w.v_norm != nullptr && own_kv)  // each head of v RMS-normed
    rows_in_parallel(n, KV * hd, [&](int64_t r0, int64_t r1) {
      ops::rmsnorm(v + r0 * ldv, v + r0 * ldv, w.v_norm, (r1 - r0) * KV, hd, params.norm_eps);
    });
  const int64_t KVk = own_kv ? KV : 0;  // the heads of k to norm and rotate
  if (w.q_norm != nullptr || params.rotary != nullptr) {  // per token: each head of q and k normed, then rotated
    const float* cos = params.rotary != nullptr ? params.rotary->cos.data() : nullptr;
    const float* sin = params.rotary != nullptr ? params.rotary->sin.data() : nullptr;
    rows_in_parallel(n, (H + KVk) * hd, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; w.q_norm != nullptr && r < r1; ++r) {  // over each head's head_dim values, or all heads'
        if (w.qk_norm_across_heads) {
          ops::rmsnorm(q + r * ldq, q + r * ldq, w.q_norm, 1, H * hd, params.norm_eps);
          ops::rmsnorm(k + r * ldk, k + r * ldk, w.k_norm, 1, KV * hd, params.norm_eps);
          continue;
        }
        ops::rmsnorm(q + r * ldq, q + r * ldq, w.q_norm, H, hd, params.norm_eps);
        if (KVk > 0) ops::rmsnorm(k + r * ldk, k + r * ldk, w.k_norm, KV, hd, params.norm_eps);
      }
      if (params.rotary != nullptr) {
        const int64_t* positions = b.positions.data() + r0;
        ops::rope(q + r0 * ldq, ldq, r1 - r0, H, hd, params.rotary_dim, positions, cos, sin);
        if (KVk > 0) ops::rope(k + r0 * ldk, ldk, r1 - r0, KV, hd, params.rotary_dim, positions, cos, sin);
      }
    });
  }
  float* att = builder_.att.data();  // (n, H hd)
  attend(att, q, ldq, k, ldk, v, ldv, layer, b, cache, params.scale, params.softcap, w.sinks);
  projector_.project(att, n, H * hd, {{&w.o.w, w.o.bias, out, C}});
}

void DecoderModel::mlp(float* out, const float* h, const MlpWeights& w, Activation act, int64_t n) {
  const int64_t C = config_.hidden, I = w.up.w.out();
  const bool gated = w.gate.w.out() > 0;
  if (gated != layout_.gated_mlp) throw std::logic_error("MLP weights do not match the model's BlockLayout");
  if (act == Activation::SiLU && !gated) throw std::logic_error("a plain SiLU MLP has no kernel");
  float* inner = builder_.inner.data();  // (n, I)
  float* up = builder_.up.data();        // (n, I), gated only
  if (gated)
    projector_.project(h, n, C, {{&w.gate.w, w.gate.bias, inner, I}, {&w.up.w, w.up.bias, up, I}});
  else
    projector_.project(h, n, C, {{&w.up.w, w.up.bias, inner, I}});
  rows_in_parallel(n, I, [&](int64_t r0, int64_t r1) {  // inner = act(inner), times up when gated
    float* a = inner + r0 * I;
    const float* u = up + r0 * I;
    const int64_t size = (r1 - r0) * I;
    if (act == Activation::SiLU && gated) {
      ops::silu_mul(a, u, size);
      return;
    }
    if (act == Activation::GeluTanh)
      ops::gelu_tanh(a, size);
    else
      ops::gelu_erf(a, size);
    if (gated)
      for (int64_t i = 0; i < size; ++i) a[i] *= u[i];
  });
  projector_.project(inner, n, I, {{&w.down.w, w.down.bias, out, C}});
}

void DecoderModel::use_experts(ExpertOptions options) {
  experts_ = std::make_unique<SparseMoe>(config_, options);
}

int64_t DecoderModel::read_experts(const TensorMap& t, const std::string& prefix) {
  if (!experts_ || !SparseMoe::has_layer(t, prefix)) return -1;
  expert_layers_.push_back(experts_->read(t, prefix));
  const SparseMoe::Layer& m = expert_layers_.back();
  count_weight(m.router);
  for (const auto* experts : {&m.gate, &m.up, &m.down})
    for (const LinearWeight& e : *experts) count_weight(e);
  if (m.router_bias != nullptr) count_weight(config_.experts);
  if (m.selection_bias != nullptr) count_weight(config_.experts);
  for (const LinearWeight* shared : {&m.shared.gate, &m.shared.up, &m.shared.down, &m.shared.scale})
    if (shared->out() > 0) count_weight(*shared);
  for (const float* bias : {m.shared.gate_bias, m.shared.up_bias})
    if (bias != nullptr) count_weight(m.shared.gate.out());
  if (m.shared.down_bias != nullptr) count_weight(config_.hidden);
  if (m.shared.scale_bias != nullptr) count_weight(1);
  if (m.expert_scale != nullptr) count_weight(config_.experts);
  count_weight(static_cast<int64_t>(m.gate_bias.size() + m.up_bias.size()) * config_.expert_intermediate +
               static_cast<int64_t>(m.down_bias.size()) * config_.hidden);
  return static_cast<int64_t>(expert_layers_.size()) - 1;
}

const float* DecoderModel::experts(const float* h, int64_t index, int64_t n, const float* route) {
  return experts_->forward(h, n, expert_layers_[index], projector_, route);
}

}  // namespace kvgen
