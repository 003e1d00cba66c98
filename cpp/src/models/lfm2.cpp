// LFM2 (lfm2.h), following transformers' modeling_lfm2.py: hyperparameters (Lfm2Options),
// tensors (Layer), and the forward pass over the shared builders (decoder.h), its gated short
// convolutions over the KV cache's state (state_cache.h) chunk by chunk.
#include "kvgen/models/lfm2.h"

#include <cmath>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/models/decoder.h"
#include "kvgen/models/short_conv.h"

namespace kvgen {
namespace {

class Lfm2 : public DecoderModel {
 public:
  Lfm2(ModelConfig config, Lfm2Options options, const TensorMap& t);
  // a verification chunk's windows are copied token by token (RowTokens::checkpoints)
  bool token_checkpoints() const override { return any_recurrent_layer(); }

 protected:
  void reserve(const ForwardPass& b) override;
  void embed(float* x, const ForwardPass& b) override;
  void block(int64_t layer, float* x, const ForwardPass& b, KVCache& cache) override;
  void final_norm(float* out, const float* x, int64_t m) override;

 private:
  // A gated short convolution (Lfm2ShortConv).
  struct ShortConv {
    Linear in;                    // (3 C, C) in_proj: B | C | x
    const float* weight;          // (C, L) the depthwise kernel (conv.conv.weight)
    const float* bias = nullptr;  // (C) or null (conv_bias)
    Linear out;                   // (C, C) out_proj
  };
  struct Layer {
    const float* operator_norm;  // (C)
    bool conv;                   // a short convolution (else attention)
    AttentionWeights attn;       // q (H hd, C), k and v (KV hd, C), out_proj (C, H hd); q/k norms (hd)
    ShortConv short_conv;
    const float* ffn_norm;  // (C)
    MlpWeights mlp;         // w1 (gate) and w3 (up) (I, C), w2 (down) (C, I)
  };

  // out (n, C) = the short convolution of h (n, C) over each chunk's row's window of `layer`.
  void convolve(float* out, const float* h, const ShortConv& w, int64_t layer, const ForwardPass& b, KVCache& cache);

  Lfm2Options options_;
  int64_t kernel_ = 0;  // the convolution layers' conv_L_cache
  LinearWeight embed_;  // (vocab, C), read a row per token
  const float* norm_;   // (C) embedding_norm
  std::vector<Layer> layers_;
  RotaryTable rotary_;  // (positions, hd / 2) each, extended by reserve
  // scratch, n = the batch's tokens (reserve)
  xt::xtensor<float, 2> bcx_;  // (n, 3 C) in_proj's output: B | C | x per token
  xt::xtensor<float, 2> bx_;   // (n, C) B * x, the convolution's input
  xt::xtensor<float, 2> y_;    // (n, C) C * conv(B * x), out_proj's input
};

Lfm2::Lfm2(ModelConfig config, Lfm2Options options, const TensorMap& t)
    : DecoderModel(std::move(config), {.fused_qkv = false, .gated_mlp = true}), options_(std::move(options)) {
  const int64_t C = config_.hidden, V = config_.vocab_size, I = config_.intermediate;
  const int64_t H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim, L = config_.layers;
  // ---- hyperparameters ----
  check_finite("LFM2", options_.norm_eps, "norm_eps");
  if (static_cast<int64_t>(options_.inv_freq.size()) != hd / 2)
    throw ValueError("LFM2: " + std::to_string(options_.inv_freq.size()) + " rotary frequencies for head_dim " +
                     std::to_string(hd) + " (need head_dim / 2)");
  for (float f : options_.inv_freq)
    if (!std::isfinite(f)) throw ValueError("LFM2: a rotary inverse frequency is " + std::to_string(f));
  if (config_.recurrent_layers.empty())
    throw ValueError("LFM2: the config names no layer kinds (recurrent_layers: per layer, a convolution or not)");
  for (int64_t l = 0; l < L; ++l) {
    if (!config_.recurrent(l)) continue;
    const RecurrentLayerShape& s = config_.recurrent_layers[l];
    const std::string layer = "LFM2 layer " + std::to_string(l) + ": ";
    if (s.conv_channels != C)
      throw ValueError(layer + "the convolution has " + std::to_string(s.conv_channels) + " channels, hidden_size is " +
                       std::to_string(C));
    if (s.conv_kernel < 1 || s.heads != 0 || s.key_dim != 0 || s.value_dim != 0)
      throw ValueError(layer + "a short convolution keeps a window of conv_L_cache >= 1 and no recurrent matrix");
    if (kernel_ != 0 && s.conv_kernel != kernel_)
      throw ValueError(layer + "conv_L_cache = " + std::to_string(s.conv_kernel) + " differs from an earlier layer's " +
                       std::to_string(kernel_));
    kernel_ = s.conv_kernel;
  }
  // ---- tensors ----
  embed_ = read_matrix(t, "model.embed_tokens.weight", V, C);
  norm_ = read_vector(t, "model.embedding_norm.weight", C);
  lm_head_ = t.has("lm_head.weight") ? read_matrix(t, "lm_head.weight", V, C) : embed_;
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    Layer w;
    w.operator_norm = read_vector(t, p + "operator_norm.weight", C);
    w.conv = config_.recurrent(l);
    const char* other = w.conv ? "self_attn.q_proj.weight" : "conv.in_proj.weight";
    if (t.has(p + other))
      throw ValueError("LFM2 layer " + std::to_string(l) + ": the config makes it " +
                       (w.conv ? "a convolution" : "an attention layer") + " but the file has " + p + other);
    if (w.conv) {
      w.short_conv.in = read_linear(t, p + "conv.in_proj", 3 * C, C);
      w.short_conv.weight = t.get(p + "conv.conv.weight", {C, kernel_});
      count_weight(C * kernel_);
      w.short_conv.bias = t.has(p + "conv.conv.bias") ? read_vector(t, p + "conv.conv.bias", C) : nullptr;
      w.short_conv.out = read_linear(t, p + "conv.out_proj", C, C);
    } else {
      w.attn.q = read_linear(t, p + "self_attn.q_proj", H * hd, C);
      w.attn.k = read_linear(t, p + "self_attn.k_proj", KV * hd, C);
      w.attn.v = read_linear(t, p + "self_attn.v_proj", KV * hd, C);
      w.attn.o = read_linear(t, p + "self_attn.out_proj", C, H * hd);
      w.attn.q_norm = read_vector(t, p + "self_attn.q_layernorm.weight", hd);
      w.attn.k_norm = read_vector(t, p + "self_attn.k_layernorm.weight", hd);
    }
    w.ffn_norm = read_vector(t, p + "ffn_norm.weight", C);
    w.mlp = {read_linear(t, p + "feed_forward.w1", I, C), read_linear(t, p + "feed_forward.w3", I, C),
             read_linear(t, p + "feed_forward.w2", C, I)};
    layers_.push_back(std::move(w));
  }
}

void Lfm2::reserve(const ForwardPass& b) {
  extend_rotary(rotary_, options_.inv_freq, 1.0f, b.end);
  if (kernel_ > 0) {
    grow_rows(bcx_, b.n, 3 * config_.hidden);
    grow_rows(bx_, b.n, config_.hidden);
    grow_rows(y_, b.n, config_.hidden);
  }
}

void Lfm2::embed(float* x, const ForwardPass& b) {
  embed_tokens(x, embed_, b);  // x (n, C)
}

void Lfm2::convolve(float* out, const float* h, const ShortConv& w, int64_t layer, const ForwardPass& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden;
  float* bcx = bcx_.data();  // (n, 3 C)
  float* bx = bx_.data();    // (n, C)
  float* y = y_.data();      // (n, C)
  projector_.project(h, n, C, {{&w.in.w, w.in.bias, bcx, 3 * C}});
  // each chunk continues its row's window: chunk after chunk, as laid out in the batch
  int64_t o = 0;
  for (const RowTokens& chunk : *b.chunks) {
    float* window = cache.state()->conv(layer, chunk.row);  // (C, L - 1)
    recurrent_pieces(chunk, o, layer, *cache.state(), [&](int64_t r0, int64_t r1) {
      short_conv(y + r0 * C, window, bx + r0 * C, bcx + r0 * 3 * C, w.weight, w.bias, r1 - r0, C, kernel_);
    });
    o += chunk.count;
  }
  projector_.project(y, n, C, {{&w.out.w, w.out.bias, out, C}});
}

void Lfm2::block(int64_t l, float* x, const ForwardPass& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden;
  const float eps = options_.norm_eps;
  const Layer& w = layers_[l];
  float* h = branch();  // (n, C) a residual branch: its normed input, then its output
  // mixer: x (n, C) += conv(rmsnorm(x)) or attention(rmsnorm(x))
  rms_norm(h, x, w.operator_norm, n, C, eps);
  if (w.conv)
    convolve(h, h, w.short_conv, l, b, cache);
  else
    attention(h, h, w.attn,
              {.scale = 1.0f / std::sqrt(static_cast<float>(config_.head_dim)), .rotary = &rotary_,
               .rotary_dim = config_.head_dim, .norm_eps = eps},
              l, b, cache);
  add_residual(x, h, n, C);
  // feed-forward: x (n, C) += w2(silu(w1(h)) * w3(h)), h = rmsnorm(x)
  rms_norm(h, x, w.ffn_norm, n, C, eps);
  mlp(h, h, w.mlp, Activation::SiLU, n);
  add_residual(x, h, n, C);
}

void Lfm2::final_norm(float* out, const float* x, int64_t m) {
  rms_norm(out, x, norm_, m, config_.hidden, options_.norm_eps);
}

}  // namespace

std::unique_ptr<Model> make_lfm2(ModelConfig config, Lfm2Options options, const TensorMap& tensors) {
  return std::make_unique<Lfm2>(std::move(config), std::move(options), tensors);
}

}  // namespace kvgen
