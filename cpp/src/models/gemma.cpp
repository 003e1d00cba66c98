// Gemma 2 and Gemma 3 (gemma.h), following transformers' modeling_gemma2.py and
// modeling_gemma3.py: hyperparameters (GemmaOptions), tensors (Layer), and the forward pass
// over the shared builders (decoder.h), the same as Llama's but for the norms after each
// branch, GeGLU and the soft-caps.
#include "kvgen/models/gemma.h"

#include <cmath>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/models/decoder.h"

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
  };
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
};

Gemma::Gemma(ModelConfig config, GemmaOptions options, const TensorMap& t)
    : DecoderModel(std::move(config), {.fused_qkv = false, .gated_mlp = true}), options_(std::move(options)) {
  const int64_t C = config_.hidden, V = config_.vocab_size, I = config_.intermediate;
  const int64_t H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim, L = config_.layers;
  // ---- hyperparameters ----
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
  // ---- tensors (q/k norms and projection biases where present) ----
  embed_ = read_matrix(t, "model.embed_tokens.weight", V, C);
  norm_ = norm_weight(t, "model.norm.weight", C);
  lm_head_ = t.has("lm_head.weight") ? read_matrix(t, "lm_head.weight", V, C) : embed_;
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const bool qk_norm = t.has(p + "self_attn.q_norm.weight") || t.has(p + "self_attn.k_norm.weight");
    Layer w;
    w.attn_norm = norm_weight(t, p + "input_layernorm.weight", C);
    w.post_attn_norm = norm_weight(t, p + "post_attention_layernorm.weight", C);
    w.attn.q = read_linear(t, p + "self_attn.q_proj", H * hd, C);
    w.attn.k = read_linear(t, p + "self_attn.k_proj", KV * hd, C);
    w.attn.v = read_linear(t, p + "self_attn.v_proj", KV * hd, C);
    w.attn.o = read_linear(t, p + "self_attn.o_proj", C, H * hd);
    w.attn.q_norm = qk_norm ? norm_weight(t, p + "self_attn.q_norm.weight", hd) : nullptr;
    w.attn.k_norm = qk_norm ? norm_weight(t, p + "self_attn.k_norm.weight", hd) : nullptr;
    w.mlp_norm = norm_weight(t, p + "pre_feedforward_layernorm.weight", C);
    w.post_mlp_norm = norm_weight(t, p + "post_feedforward_layernorm.weight", C);
    w.mlp = {read_linear(t, p + "mlp.gate_proj", I, C), read_linear(t, p + "mlp.up_proj", I, C),
             read_linear(t, p + "mlp.down_proj", C, I)};
    w.local_rope = config_.window(l) > 0 && !options_.inv_freq_local.empty();
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
}

void Gemma::embed(float* x, const ForwardPass& b) {
  embed_tokens(x, embed_, b, options_.embed_scale);  // x (n, C), times sqrt(hidden)
}

void Gemma::block(int64_t l, float* x, const ForwardPass& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden, hd = config_.head_dim;
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
  rms_norm(h, h, w.post_mlp_norm, n, C, eps);
  add_residual(x, h, n, C);
}

void Gemma::final_norm(float* out, const float* x, int64_t m) {
  rms_norm(out, x, norm_, m, config_.hidden, options_.rms_norm_eps);
}

}  // namespace

std::unique_ptr<Model> make_gemma(ModelConfig config, GemmaOptions options, const TensorMap& tensors) {
  return std::make_unique<Gemma>(std::move(config), std::move(options), tensors);
}

}  // namespace kvgen
