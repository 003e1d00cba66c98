// Sparse MoE MLP: routing (softmax, top-k), tokens grouped by expert, one pass per chosen
// expert, following transformers' Qwen3MoeTopKRouter and Qwen3MoeExperts (and GPT-OSS's
// GptOssTopKRouter and GptOssExperts, ERNIE 4.5's Ernie4_5_MoeTopKRouter where
// ExpertOptions and the tensors say so); the shared expert as Qwen3_5MoeSparseMoeBlock and
// Ernie4_5_MoeSparseMoeBlock add it.
#include "kvgen/models/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kvgen/errors.h"
#include "kvgen/limits.h"
#include "kvgen/ops/layer_ops.h"

namespace kvgen {

SparseMoe::SparseMoe(const ModelConfig& c, ExpertOptions options)
    : E_(c.experts), k_(c.experts_per_token), C_(c.hidden), Ie_(c.expert_intermediate), options_(options) {
  if (E_ < 1 || k_ < 1 || k_ > E_ || Ie_ < 1)
    throw ValueError("a mixture of experts needs 1 <= experts_per_token <= experts and an expert width");
  if (!std::isfinite(options_.swiglu_limit) || options_.swiglu_limit < 0.0f || !std::isfinite(options_.swiglu_alpha))
    throw ValueError("the experts' SwiGLU limit must be finite and not negative, and its alpha finite");
  if (!std::isfinite(options_.norm_min) || options_.norm_min < 0.0f)
    throw ValueError("the experts' norm_min = " + std::to_string(options_.norm_min) + " must be finite and not negative");
  if (options_.shared_expert_intermediate < 0 || options_.shared_expert_intermediate > limits::kMaxWidth)
    throw ValueError("the shared expert's width " + std::to_string(options_.shared_expert_intermediate) +
                     " is not in [0, " + std::to_string(limits::kMaxWidth) + "]");
  starts_.resize(E_ + 1);
  products_.reserve(std::max<int64_t>(2 * k_, 3));
  ranked_.resize(E_);
  score_.resize(E_);
}

bool SparseMoe::has_layer(const TensorMap& t, const std::string& prefix) { return t.has(prefix + "mlp.gate.weight"); }

SparseMoe::Layer SparseMoe::read(const TensorMap& t, const std::string& prefix) const {
  Layer w;
  w.router = t.linear(prefix + "mlp.gate.weight", E_, C_);
  if (t.has(prefix + "mlp.gate.bias")) w.router_bias = t.get(prefix + "mlp.gate.bias", {E_});
  if (t.has(prefix + "mlp.gate.expert_scale")) w.expert_scale = t.get(prefix + "mlp.gate.expert_scale", {E_});
  const auto experts = [&](const std::string& proj, int64_t out, int64_t in) {
    const std::string stacked = prefix + "mlp.experts." + proj + ".weight";
    if (t.has(stacked)) return t.stacked_linear(stacked, E_, out, in);
    std::vector<LinearWeight> each;
    for (int64_t e = 0; e < E_; ++e)
      each.push_back(t.linear(prefix + "mlp.experts." + std::to_string(e) + "." + proj + ".weight", out, in));
    return each;
  };
  const auto biases = [&](const std::string& proj, int64_t out) {
    std::vector<const float*> each;
    const std::string stacked = prefix + "mlp.experts." + proj + ".bias";
    if (t.has(stacked)) {
      const float* all = t.get(stacked, {E_, out});
      for (int64_t e = 0; e < E_; ++e) each.push_back(all + e * out);
    } else if (t.has(prefix + "mlp.experts.0." + proj + ".bias")) {
      for (int64_t e = 0; e < E_; ++e)
        each.push_back(t.get(prefix + "mlp.experts." + std::to_string(e) + "." + proj + ".bias", {out}));
    }
    return each;
  };
  w.gate = experts("gate_proj", Ie_, C_);
  w.up = experts("up_proj", Ie_, C_);
  w.down = experts("down_proj", C_, Ie_);
  w.gate_bias = biases("gate_proj", Ie_);
  w.up_bias = biases("up_proj", Ie_);
  w.down_bias = biases("down_proj", C_);
  if (t.has(prefix + "mlp.gate.e_score_correction_bias"))
    w.selection_bias = t.get(prefix + "mlp.gate.e_score_correction_bias", {E_});
  const int64_t Is = options_.shared_expert_intermediate;
  if (Is == 0 && t.has(prefix + "mlp.shared_expert.gate_proj.weight"))
    throw ValueError(prefix + "mlp.shared_expert.gate_proj.weight: the layer has a shared expert, but the config "
                     "gives it no width");
  if (Is > 0) {
    const std::string e = prefix + "mlp.shared_expert.";
    const auto bias = [&](const std::string& name, int64_t size) {
      return t.has(name) ? t.get(name, {size}) : nullptr;
    };
    Layer::Shared& s = w.shared;
    s.gate = t.linear(e + "gate_proj.weight", Is, C_);
    s.up = t.linear(e + "up_proj.weight", Is, C_);
    s.down = t.linear(e + "down_proj.weight", C_, Is);
    s.gate_bias = bias(e + "gate_proj.bias", Is);
    s.up_bias = bias(e + "up_proj.bias", Is);
    s.down_bias = bias(e + "down_proj.bias", C_);
    if (t.has(prefix + "mlp.shared_expert_gate.weight")) {
      s.scale = t.linear(prefix + "mlp.shared_expert_gate.weight", 1, C_);
      s.scale_bias = bias(prefix + "mlp.shared_expert_gate.bias", 1);
    }
  }
  return w;
}

void SparseMoe::reserve(int64_t n) {
  const auto grow = [n](xt::xtensor<float, 2>& buf, int64_t width) {
    if (static_cast<int64_t>(buf.shape(0)) >= n) return;
    buf = xt::xtensor<float, 2>::from_shape({static_cast<size_t>(n), static_cast<size_t>(width)});
  };
  grow(scratch_.router, E_);
  grow(scratch_.rows, C_);
  if (static_cast<int64_t>(scratch_.gate.shape(0)) < std::max(n, k_)) {  // for one token: a row per expert
    scratch_.gate = xt::xtensor<float, 2>::from_shape({static_cast<size_t>(std::max(n, k_)), static_cast<size_t>(Ie_)});
    scratch_.up = xt::xtensor<float, 2>::from_shape({static_cast<size_t>(std::max(n, k_)), static_cast<size_t>(Ie_)});
  }
  grow(scratch_.expert, C_);
  grow(scratch_.out, C_);
  if (static_cast<int64_t>(scratch_.expert.shape(0)) < k_)  // for one token: a row per expert
    scratch_.expert = xt::xtensor<float, 2>::from_shape({static_cast<size_t>(k_), static_cast<size_t>(C_)});
  if (options_.shared_expert_intermediate > 0) {
    grow(scratch_.shared_inner, options_.shared_expert_intermediate);
    grow(scratch_.shared_up, options_.shared_expert_intermediate);
    grow(scratch_.shared_scale, 1);
    grow(scratch_.shared_out, C_);
  }
  if (static_cast<int64_t>(chosen_.size()) < n * k_) {
    chosen_.resize(n * k_);
    weights_.resize(n * k_);
    order_.resize(n * k_);
    order_w_.resize(n * k_);
  }
}

const float* SparseMoe::forward(const float* h, int64_t n, const Layer& w, Projector& projector,
                                const float* route_input) {
  const float* r = route_input != nullptr ? route_input : h;
  float* out = scratch_.out.data();
  float* probs = scratch_.router.data();  // raw pointers from here on: the hot path
  float* rows = scratch_.rows.data();
  float* gate = scratch_.gate.data();
  float* up = scratch_.up.data();
  float* expert = scratch_.expert.data();
  // ---- routing: router logits (n, E), each token's top k and their weights ----
  if (n == 1 && w.router.reads_float(projector.activations())) {  // a few rows of floats: no parallel section
    w.router.multiply(probs, E_, r, C_, nullptr, 1, 0, w.router.units(), projector.activations());
    if (w.router_bias != nullptr) ops::add_inplace(probs, w.router_bias, E_);
  } else {
    projector.project(r, n, C_, {{&w.router, w.router_bias, probs, E_}});
  }
  route(probs, w.selection_bias, n, w.expert_scale);
  const auto bias = [](const std::vector<const float*>& b, int64_t e) { return b.empty() ? nullptr : b[e]; };
  if (n == 1) {  // one token: its experts' gate and up in one section, their downs in another
    products_.clear();
    for (int64_t j = 0; j < k_; ++j) {
      const int64_t e = chosen_[j];
      products_.push_back({&w.gate[e], bias(w.gate_bias, e), gate + j * Ie_, Ie_});
      products_.push_back({&w.up[e], bias(w.up_bias, e), up + j * Ie_, Ie_});
    }
    projector.project(h, 1, C_, products_);
    activate(gate, up, k_);
    products_.clear();  // row j of expert (k, C) = expert chosen_[j]'s down of row j of gate
    for (int64_t j = 0; j < k_; ++j)
      products_.push_back({&w.down[chosen_[j]], bias(w.down_bias, chosen_[j]), expert + j * C_, C_});
    projector.project_each(gate, Ie_, products_);
    std::fill(out, out + C_, 0.0f);
    for (int64_t e = 0; e < E_; ++e)  // ascending expert order, as transformers adds them
      for (int64_t j = 0; j < k_; ++j) {
        if (chosen_[j] != e) continue;
        const float* y = expert + j * C_;
        const float weight = weights_[j];
        for (int64_t c = 0; c < C_; ++c) out[c] += y[c] * weight;
      }
    if (options_.shared_expert_intermediate > 0) add_shared_expert(out, h, n, w, projector);
    return out;
  }
  // ---- the tokens of each expert, in token order (a counting sort) ----
  for (int64_t e = 0; e < E_; ++e) starts_[e + 1] += starts_[e];
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < k_; ++j) {
      const int64_t e = chosen_[t * k_ + j];
      const int64_t at = starts_[e]++;
      order_[at] = t;
      order_w_[at] = weights_[t * k_ + j];
    }
  for (int64_t e = E_; e > 0; --e) starts_[e] = starts_[e - 1];  // undo the advance of the fill
  starts_[0] = 0;
  // ---- each chosen expert over its tokens' rows; out (n, C) adds weight x its output ----
  std::fill(out, out + n * C_, 0.0f);
  for (int64_t e = 0; e < E_; ++e) {
    const int64_t first = starts_[e], m = starts_[e + 1] - first;
    if (m == 0) continue;  // not chosen: its weights are not read
    for (int64_t j = 0; j < m; ++j) std::memcpy(rows + j * C_, h + order_[first + j] * C_, sizeof(float) * C_);
    projector.project(rows, m, C_,
                      {{&w.gate[e], bias(w.gate_bias, e), gate, Ie_}, {&w.up[e], bias(w.up_bias, e), up, Ie_}});
    activate(gate, up, m);
    projector.project(gate, m, Ie_, {{&w.down[e], bias(w.down_bias, e), expert, C_}});
    for (int64_t j = 0; j < m; ++j) {
      float* o = out + order_[first + j] * C_;
      const float* y = expert + j * C_;
      const float weight = order_w_[first + j];
      for (int64_t c = 0; c < C_; ++c) o[c] += y[c] * weight;
    }
  }
  if (options_.shared_expert_intermediate > 0) add_shared_expert(out, h, n, w, projector);
  return out;
}

void SparseMoe::add_shared_expert(float* out, const float* h, int64_t n, const Layer& w, Projector& projector) {
  const int64_t Is = options_.shared_expert_intermediate;
  const Layer::Shared& s = w.shared;
  float* inner = scratch_.shared_inner.data();  // (n, Is)
  float* up = scratch_.shared_up.data();        // (n, Is)
  float* scale = scratch_.shared_scale.data();  // (n, 1)
  float* y = scratch_.shared_out.data();        // (n, C)
  products_.clear();
  products_.push_back({&s.gate, s.gate_bias, inner, Is});
  products_.push_back({&s.up, s.up_bias, up, Is});
  const bool scaled = s.scale.out() > 0;
  if (scaled) products_.push_back({&s.scale, s.scale_bias, scale, 1});
  projector.project(h, n, C_, products_);
  ops::silu_mul(inner, up, n * Is);
  projector.project(inner, n, Is, {{&s.down, s.down_bias, y, C_}});
  for (int64_t r = 0; r < n; ++r) {  // transformers' order: routed + sigmoid(gate) * shared, or routed + shared
    const float factor = scaled ? 1.0f / (1.0f + std::exp(-scale[r])) : 1.0f;
    float* o = out + r * C_;
    const float* e = y + r * C_;
    for (int64_t c = 0; c < C_; ++c) o[c] = o[c] + factor * e[c];
  }
}

void SparseMoe::route(float* logits, const float* selection_bias, int64_t n, const float* expert_scale) {
  std::fill(starts_.begin(), starts_.end(), 0);
  if (!options_.softmax_after_top_k) ops::softmax_rows(logits, n, E_, nullptr);  // probabilities (n, E)
  for (int64_t t = 0; t < n; ++t) {
    const float* p = logits + t * E_;
    const float* score = p;  // what chooses the experts: p, or p + the selection bias (ERNIE 4.5)
    if (selection_bias != nullptr) {
      for (int64_t e = 0; e < E_; ++e) score_[e] = p[e] + selection_bias[e];
      score = score_.data();
    }
    for (int64_t e = 0; e < E_; ++e) ranked_[e] = e;
    // the k largest, ties to the lower index
    std::partial_sort(ranked_.begin(), ranked_.begin() + k_, ranked_.end(), [score](int64_t a, int64_t b) {
      return score[a] > score[b] || (score[a] == score[b] && a < b);
    });
    float* weight = weights_.data() + t * k_;
    for (int64_t j = 0; j < k_; ++j) {
      chosen_[t * k_ + j] = ranked_[j];
      weight[j] = p[ranked_[j]];
      ++starts_[ranked_[j] + 1];
    }
    if (options_.softmax_after_top_k) {  // softmax of the chosen logits (the first is their max)
      float sum = 0.0f;
      for (int64_t j = 0; j < k_; ++j) sum += weight[j] = std::exp(weight[j] - p[ranked_[0]]);
      for (int64_t j = 0; j < k_; ++j) weight[j] /= sum;
    } else if (options_.norm_topk_prob) {
      float sum = 0.0f;
      for (int64_t j = 0; j < k_; ++j) sum += weight[j];
      sum = std::max(sum, options_.norm_min);
      for (int64_t j = 0; j < k_; ++j) weight[j] /= sum;
    }
    if (expert_scale != nullptr)
      for (int64_t j = 0; j < k_; ++j) weight[j] *= expert_scale[ranked_[j]];
  }
}

void SparseMoe::activate(float* gate, const float* up, int64_t m) const {
  const int64_t size = m * Ie_;
  if (options_.gelu_tanh) {
    ops::gelu_tanh(gate, size);
    for (int64_t i = 0; i < size; ++i) gate[i] *= up[i];
    return;
  }
  if (options_.swiglu_limit <= 0.0f) {
    ops::silu_mul(gate, up, size);
    return;
  }
  const float limit = options_.swiglu_limit, alpha = options_.swiglu_alpha;
  for (int64_t i = 0; i < size; ++i) {  // GptOssExperts._apply_gate
    const float g = std::min(gate[i], limit), u = std::clamp(up[i], -limit, limit);
    const float sigmoid = 1.0f / (1.0f + std::exp(-(g * alpha)));
    gate[i] = (u + 1.0f) * (g * sigmoid);
  }
}

}  // namespace kvgen
