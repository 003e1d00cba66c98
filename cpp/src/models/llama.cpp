// Llama and the families like it (llama.h), following transformers' modeling_llama.py:
// hyperparameters (LlamaOptions), tensors (Layer), and the forward pass over the shared
// builders (decoder.h).
#include "kvgen/models/llama.h"

#include <cmath>
#include <string>
#include <tuple>

#include "kvgen/errors.h"
#include "kvgen/models/decoder.h"
#include "kvgen/ops/layer_ops.h"

namespace kvgen {
namespace {

class Llama : public DecoderModel {
 public:
  Llama(ModelConfig config, LlamaOptions options, const TensorMap& t);

 protected:
  void reserve(const ForwardPass& b) override;
  void embed(float* x, const ForwardPass& b) override;
  void block(int64_t layer, float* x, const ForwardPass& b, KVCache& cache) override;
  void final_norm(float* out, const float* x, int64_t m) override;

 private:
  // The norms of a branch, each (C) or null where the layer has none: before it (a pre-norm,
  // Llama's), after it (a post-norm: OLMo 2 has only these, GLM-4 both), at least one.
  struct Layer {
    const float* attn_norm;       // (C) input_layernorm, or null
    const float* post_attn_norm;  // (C) post_self_attn_layernorm, or null
    AttentionWeights attn;        // q (H hd, C), k and v (KV hd, C), o (C, H hd); q/k norms or null
    const float* mlp_norm;        // (C) post_attention_layernorm, or null
    const float* post_mlp_norm;   // (C) post_mlp_layernorm, or null
    MlpWeights mlp;               // gate and up (I, C), down (C, I); empty where experts replace it
    int64_t experts = -1;    // >= 0: the layer's mixture of experts (read_experts) instead of the MLP
    bool rope = true;        // whether the layer rotates q and k
    bool sliding_rope = false;  // it rotates with inv_freq_sliding
  };

  LlamaOptions options_;
  int64_t rotary_dim_;     // options_.rotary_dim, or head_dim
  float attention_scale_;  // options_.attention_scale, or 1 / sqrt(head_dim)
  LinearWeight embed_;     // (vocab, C), read a row per token
  const float* norm_;      // (C)
  std::vector<Layer> layers_;
  // (positions, rotary_dim / 2) each, times the attention factor, extended by reserve;
  // never longer than context_length. long_: LongRoPE only.
  RotaryTable short_, long_;
  RotaryTable sliding_;  // inv_freq_sliding's, of the sliding-window layers (when set)
  const RotaryTable* rotary_ = &short_;  // the table of the current forward call (reserve)
};

Llama::Llama(ModelConfig config, LlamaOptions options, const TensorMap& t)
    : DecoderModel(std::move(config), {.fused_qkv = false, .gated_mlp = true}), options_(std::move(options)) {
  const int64_t C = config_.hidden, V = config_.vocab_size, I = config_.intermediate;
  const int64_t H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim, L = config_.layers;
  // ---- hyperparameters ----
  rotary_dim_ = options_.rotary_dim == 0 ? hd : options_.rotary_dim;
  if (rotary_dim_ < 2 || rotary_dim_ > hd || rotary_dim_ % 2)
    throw ValueError("Llama: rotary_dim = " + std::to_string(rotary_dim_) + " must be even and within head_dim " +
                     std::to_string(hd));
  for (const auto* freqs : {&options_.inv_freq, &options_.inv_freq_long, &options_.inv_freq_sliding}) {
    if (freqs != &options_.inv_freq && freqs->empty()) continue;
    if (static_cast<int64_t>(freqs->size()) != rotary_dim_ / 2)
      throw ValueError("Llama: " + std::to_string(freqs->size()) + " rotary frequencies for rotary_dim " +
                       std::to_string(rotary_dim_) + " (need rotary_dim / 2)");
    for (float f : *freqs)
      if (!std::isfinite(f)) throw ValueError("Llama: a rotary inverse frequency is " + std::to_string(f) +
                                              " (check rope_theta and the rope scaling parameters)");
  }
  if (!options_.inv_freq_long.empty() && !options_.inv_freq_sliding.empty())
    throw ValueError("Llama: LongRoPE's frequencies and the sliding layers' own frequencies are not supported "
                     "together");
  if (!options_.inv_freq_long.empty() && options_.original_context < 1)
    throw ValueError("Llama: long rotary frequencies need original_context >= 1");
  if (!options_.rope_layers.empty() && static_cast<int64_t>(options_.rope_layers.size()) != L)
    throw ValueError("Llama: rope_layers has " + std::to_string(options_.rope_layers.size()) + " entries for " +
                     std::to_string(L) + " layers");
  check_finite("Llama", options_.rope_attention_factor, "the rotary attention factor");
  check_finite("Llama", options_.rope_attention_factor_sliding, "the sliding layers' rotary attention factor");
  check_finite("Llama", options_.embedding_multiplier, "embedding_multiplier");
  check_finite("Llama", options_.residual_multiplier, "residual_multiplier");
  check_finite("Llama", options_.attention_scale, "the attention scale");
  check_finite("Llama", options_.logit_scale, "the logit scale");
  attention_scale_ =
      options_.attention_scale != 0.0f ? options_.attention_scale : 1.0f / std::sqrt(static_cast<float>(hd));
  // ---- tensors (optional biases and q/k norms where present) ----
  const auto optional_vector = [&](const std::string& name, int64_t size) {
    return t.has(name) ? read_vector(t, name, size) : nullptr;
  };
  embed_ = read_matrix(t, "model.embed_tokens.weight", V, C);
  norm_ = read_vector(t, "model.norm.weight", C);
  lm_head_ = t.has("lm_head.weight") ? read_matrix(t, "lm_head.weight", V, C) : embed_;
  lm_head_bias_ = optional_vector("lm_head.bias", V);  // ERNIE 4.5 MoE's with use_bias
  if (lm_head_bias_ != nullptr && options_.logit_scale != 1.0f)
    throw ValueError("Llama: a logit scale with an LM head bias is not supported");
  if (config_.experts > 0) use_experts(options_.experts);
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    Layer w;
    w.attn_norm = optional_vector(p + "input_layernorm.weight", C);
    w.post_attn_norm = optional_vector(p + "post_self_attn_layernorm.weight", C);
    w.attn.q = read_linear(t, p + "self_attn.q_proj", H * hd, C);
    w.attn.k = read_linear(t, p + "self_attn.k_proj", KV * hd, C);
    w.attn.v = read_linear(t, p + "self_attn.v_proj", KV * hd, C);
    w.attn.o = read_linear(t, p + "self_attn.o_proj", C, H * hd);
    w.mlp_norm = optional_vector(p + "post_attention_layernorm.weight", C);
    w.post_mlp_norm = optional_vector(p + "post_mlp_layernorm.weight", C);
    for (const auto& [before, after, names] :
         {std::tuple{w.attn_norm, w.post_attn_norm, "input_layernorm or post_self_attn_layernorm"},
          std::tuple{w.mlp_norm, w.post_mlp_norm, "post_attention_layernorm or post_mlp_layernorm"}})
      if (before == nullptr && after == nullptr)
        throw ValueError("missing tensor: " + p + "{" + names + "}.weight (a branch with no norm before or after it)");
    w.experts = read_experts(t, p);  // a mixture of experts instead of the MLP where the layer has a router
    if (w.experts < 0)
      w.mlp = {read_linear(t, p + "mlp.gate_proj", I, C), read_linear(t, p + "mlp.up_proj", I, C),
               read_linear(t, p + "mlp.down_proj", C, I)};
    // q/k norms per head (hd), or over the whole projection (H hd, KV hd: OLMo 2), as their sizes say
    const std::vector<int64_t> q_norm_shape = t.shape(p + "self_attn.q_norm.weight");
    w.attn.qk_norm_across_heads = !q_norm_shape.empty() && q_norm_shape != std::vector<int64_t>{hd};
    const bool across = w.attn.qk_norm_across_heads;
    const int64_t q_norm = across ? H * hd : hd, k_norm = across ? KV * hd : hd;
    w.attn.q_norm = optional_vector(p + "self_attn.q_norm.weight", q_norm);
    w.attn.k_norm = optional_vector(p + "self_attn.k_norm.weight", k_norm);
    w.attn.sinks = optional_vector(p + "self_attn.sinks", H);
    if ((w.attn.q_norm == nullptr) != (w.attn.k_norm == nullptr))
      throw ValueError("layer " + std::to_string(l) + " has a norm of the queries or of the keys, not both");
    w.rope = options_.rope_layers.empty() || options_.rope_layers[l] != 0;
    w.sliding_rope = config_.window(l) > 0 && !options_.inv_freq_sliding.empty();
    layers_.push_back(std::move(w));
  }
}

void Llama::reserve(const ForwardPass& b) {
  // LongRoPE: transformers takes the long frequencies for a call whose positions pass original_context
  const bool use_long = !options_.inv_freq_long.empty() && b.end > options_.original_context;
  rotary_ = use_long ? &long_ : &short_;
  extend_rotary(use_long ? long_ : short_, use_long ? options_.inv_freq_long : options_.inv_freq,
                options_.rope_attention_factor, b.end);
  if (!options_.inv_freq_sliding.empty())
    extend_rotary(sliding_, options_.inv_freq_sliding, options_.rope_attention_factor_sliding, b.end);
}

void Llama::embed(float* x, const ForwardPass& b) {
  embed_tokens(x, embed_, b, options_.embedding_multiplier);  // x (n, C)
}

void Llama::block(int64_t l, float* x, const ForwardPass& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden;
  const float eps = options_.rms_norm_eps, residual = options_.residual_multiplier;
  const Layer& w = layers_[l];
  float* h = branch();  // (n, C) a residual branch: its normed input, then its output
  // attention: x (n, C) += post(attention(pre(x))), pre = rmsnorm where the layer has it (else x), post likewise
  const float* in = rms_norm_or_pass(h, x, w.attn_norm, n, C, eps);
  attention(h, in, w.attn,
            {.scale = attention_scale_,
             .rotary = !w.rope ? nullptr : w.sliding_rope ? &sliding_ : rotary_,
             .rotary_dim = rotary_dim_,
             .norm_eps = eps},
            l, b, cache);
  add_residual(x, rms_norm_or_pass(h, h, w.post_attn_norm, n, C, eps), n, C, residual);
  // MLP: x (n, C) += post(down(silu(gate(h)) * up(h))), h = pre(x); or the mixture of experts of h
  in = rms_norm_or_pass(h, x, w.mlp_norm, n, C, eps);
  const float* out = h;  // (n, C)
  if (w.experts >= 0)
    out = experts(in, w.experts, n);
  else
    mlp(h, in, w.mlp, Activation::SiLU, n);
  add_residual(x, rms_norm_or_pass(h, out, w.post_mlp_norm, n, C, eps), n, C, residual);
}

void Llama::final_norm(float* out, const float* x, int64_t m) {
  rms_norm(out, x, norm_, m, config_.hidden, options_.rms_norm_eps);
  // the LM head is linear: scaling its input scales the logits
  if (options_.logit_scale != 1.0f) ops::scale_inplace(out, options_.logit_scale, m * config_.hidden);
}

}  // namespace

std::unique_ptr<Model> make_llama(ModelConfig config, LlamaOptions options, const TensorMap& tensors) {
  return std::make_unique<Llama>(std::move(config), std::move(options), tensors);
}

}  // namespace kvgen
