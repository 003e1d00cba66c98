// GPT-2 (gpt2.h), following transformers' modeling_gpt2.py: hyperparameters (GPT2Options),
// tensors (Layer), and the forward pass over the shared builders (decoder.h).
#include "kvgen/models/gpt2.h"

#include <cmath>
#include <string>

#include "kvgen/models/decoder.h"

namespace kvgen {
namespace {

class GPT2 : public DecoderModel {
 public:
  GPT2(ModelConfig config, GPT2Options options, const TensorMap& t);

 protected:
  void reserve(const ForwardPass&) override {}
  void embed(float* x, const ForwardPass& b) override;
  void block(int64_t layer, float* x, const ForwardPass& b, KVCache& cache) override;
  void final_norm(float* out, const float* x, int64_t m) override;

 private:
  struct Layer {
    const float *ln1_g, *ln1_b;  // (C) each
    AttentionWeights attn;       // qkv (3C, C) fused q | k | v and its bias, o (C, C) and its bias
    const float *ln2_g, *ln2_b;  // (C) each
    MlpWeights mlp;              // up = c_fc (I, C), down = c_proj (C, I), with biases; no gate
  };

  GPT2Options options_;
  LinearWeight wte_;  // (vocab, C), read a row per token
  const float* wpe_;  // (context, C)
  const float *lnf_g_, *lnf_b_;
  std::vector<Layer> layers_;
};

// "transformer.h.0.ln_1.weight" or "h.0.ln_1.weight" (the original checkpoints).
std::string resolve(const TensorMap& t, const std::string& name) {
  return t.has("transformer." + name) ? "transformer." + name : name;
}

GPT2::GPT2(ModelConfig config, GPT2Options options, const TensorMap& t)
    : DecoderModel(std::move(config), {.fused_qkv = true, .gated_mlp = false}), options_(options) {
  const int64_t C = config_.hidden, V = config_.vocab_size, I = config_.intermediate;
  // ---- tensors (every bias required; names with or without "transformer.") ----
  const auto vector = [&](const std::string& name, int64_t size) { return read_vector(t, resolve(t, name), size); };
  // every matrix stored (out, in): the loaders transpose Conv1D's (in, out)
  const auto matrix = [&](const std::string& name, int64_t out, int64_t in) {
    return read_matrix(t, resolve(t, name), out, in);
  };
  const auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    return Linear{matrix(name + ".weight", out, in), vector(name + ".bias", out)};
  };
  wte_ = matrix("wte.weight", V, C);
  wpe_ = t.get(resolve(t, "wpe.weight"), {config_.context_length, C});
  count_weight(config_.context_length * C);
  lnf_g_ = vector("ln_f.weight", C);
  lnf_b_ = vector("ln_f.bias", C);
  lm_head_ = t.has("lm_head.weight") ? read_matrix(t, "lm_head.weight", V, C) : wte_;
  for (int64_t l = 0; l < config_.layers; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    Layer w;
    w.ln1_g = vector(p + "ln_1.weight", C);
    w.ln1_b = vector(p + "ln_1.bias", C);
    w.attn.qkv = linear(p + "attn.c_attn", 3 * C, C);
    w.attn.o = linear(p + "attn.c_proj", C, C);
    w.ln2_g = vector(p + "ln_2.weight", C);
    w.ln2_b = vector(p + "ln_2.bias", C);
    w.mlp.up = linear(p + "mlp.c_fc", I, C);
    w.mlp.down = linear(p + "mlp.c_proj", C, I);
    layers_.push_back(std::move(w));
  }
}

void GPT2::embed(float* x, const ForwardPass& b) {
  const int64_t C = config_.hidden;
  embed_tokens(x, wte_, b);  // x (n, C) = token embedding + learned position embedding
  for (int64_t i = 0; i < b.n; ++i) {
    const float* pe = wpe_ + b.positions[i] * C;  // (C)
    float* xi = x + i * C;
    for (int64_t c = 0; c < C; ++c) xi[c] += pe[c];
  }
}

void GPT2::block(int64_t l, float* x, const ForwardPass& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden;
  const float eps = options_.layer_norm_epsilon;
  const Layer& w = layers_[l];
  float* h = branch();  // (n, C) a residual branch: its normed input, then its output
  // attention: x (n, C) += c_proj(attention(c_attn(layernorm(x))))
  float scale = options_.scale_attn_weights ? 1.0f / std::sqrt(static_cast<float>(config_.head_dim)) : 1.0f;
  if (options_.scale_attn_by_inverse_layer_idx) scale /= static_cast<float>(l + 1);
  layer_norm(h, x, w.ln1_g, w.ln1_b, n, C, eps);
  attention(h, h, w.attn, {.scale = scale}, l, b, cache);
  add_residual(x, h, n, C);
  // GELU MLP: x (n, C) += c_proj(gelu(c_fc(layernorm(x))))
  layer_norm(h, x, w.ln2_g, w.ln2_b, n, C, eps);
  mlp(h, h, w.mlp, options_.exact_gelu ? Activation::GeluErf : Activation::GeluTanh, n);
  add_residual(x, h, n, C);
}

void GPT2::final_norm(float* out, const float* x, int64_t m) {
  layer_norm(out, x, lnf_g_, lnf_b_, m, config_.hidden, options_.layer_norm_epsilon);
}

}  // namespace

std::unique_ptr<Model> make_gpt2(ModelConfig config, GPT2Options options, const TensorMap& tensors) {
  return std::make_unique<GPT2>(std::move(config), options, tensors);
}

}  // namespace kvgen
