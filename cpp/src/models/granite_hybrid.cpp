// Granite 4.0's hybrid (granite_hybrid.h), following transformers' modeling_granitemoehybrid.py:
// hyperparameters (GraniteHybridOptions), tensors (Layer), and the forward pass over the shared
// builders (decoder.h) with the Mamba-2 kernels (mamba2.h, causal_conv.h) over the KV cache's
// state (state_cache.h), chunk by chunk.
#include "kvgen/models/granite_hybrid.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/models/causal_conv.h"
#include "kvgen/models/decoder.h"
#include "kvgen/models/mamba2.h"
#include "kvgen/ops/layer_ops.h"

namespace kvgen {
namespace {

class GraniteHybrid : public DecoderModel {
 public:
  GraniteHybrid(ModelConfig config, GraniteHybridOptions options, const TensorMap& t);
  // a verification chunk's Mamba-2 states are copied token by token (RowTokens::checkpoints)
  bool token_checkpoints() const override { return any_recurrent_layer(); }

 protected:
  void reserve(const ForwardPass& b) override;
  void embed(float* x, const ForwardPass& b) override;
  void block(int64_t layer, float* x, const ForwardPass& b, KVCache& cache) override;
  void final_norm(float* out, const float* x, int64_t m) override;

 private:
  // A Mamba-2 layer (GraniteMoeHybridMambaLayer); D = heads x head_dim, conv = D + 2 G N.
  struct Mamba {
    Linear in;                    // (D + conv + heads, C) in_proj: z | x B C | dt
    const float* conv_w;          // (conv, kernel) the depthwise conv1d's weight
    const float* conv_b;          // (conv) or null (mamba_conv_bias)
    const float* a_log;           // (heads) A = -exp(A_log)
    const float* d;               // (heads) the D skip
    const float* dt_bias;         // (heads)
    const float* norm;            // (D) the gated group RMSNorm's weight
    Linear out;                   // (C, D) out_proj
  };
  struct Layer {
    const float* input_norm;  // (C)
    bool mamba;               // a Mamba-2 layer (else attention)
    Mamba m;
    AttentionWeights attn;    // q (H hd, C), k and v (KV hd, C), o (C, H hd)
    const float* post_norm;   // (C)
    int64_t experts = -1;     // >= 0: the layer's mixture of experts (read_experts), beside the shared MLP
    MlpWeights shared;        // gate and up (I, C), down (C, I): shared_mlp
  };

  // h (n, C) = the Mamba-2 mixer of h (n, C), each chunk over its row's state of `layer`.
  void mamba_branch(float* h, const Mamba& w, int64_t layer, const ForwardPass& b, KVCache& cache);

  GraniteHybridOptions options_;
  RecurrentLayerShape shape_;  // every Mamba-2 layer's (checked equal)
  int64_t inner_ = 0;          // D = heads x head_dim
  int64_t projected_ = 0;      // in_proj's rows: D + conv + heads
  LinearWeight embed_;         // (vocab, C), read a row per token
  const float* norm_;          // (C)
  std::vector<Layer> layers_;
  RotaryTable rotary_;         // (positions, hd / 2) each, extended by reserve; unused without rotary
  // scratch, n = the batch's tokens (reserve)
  xt::xtensor<float, 2> zxbcdt_;  // (n, D + conv + heads) in_proj's output
  xt::xtensor<float, 2> xbc_;     // (n, conv) x | B | C, contiguous: the convolution's input
  xt::xtensor<float, 2> conv_;    // (n, conv) silu(conv1d(x | B | C))
  xt::xtensor<float, 2> y_;       // (n, D) the scan's output
  xt::xtensor<float, 2> normed_;  // (n, D) the gated norm's output, out_proj's input
};

GraniteHybrid::GraniteHybrid(ModelConfig config, GraniteHybridOptions options, const TensorMap& t)
    : DecoderModel(std::move(config), {.fused_qkv = false, .gated_mlp = true}), options_(std::move(options)) {
  const int64_t C = config_.hidden, V = config_.vocab_size, I = config_.intermediate;
  const int64_t H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim, L = config_.layers;
  // ---- hyperparameters ----
  const char* model = "Granite 4";
  check_finite(model, options_.rms_norm_eps, "rms_norm_eps");
  check_finite(model, options_.embedding_multiplier, "embedding_multiplier");
  check_finite(model, options_.residual_multiplier, "residual_multiplier");
  check_finite(model, options_.attention_multiplier, "attention_multiplier");
  check_finite(model, options_.logit_scale, "the logit scale (1 / logits_scaling)");
  if (!options_.inv_freq.empty() && static_cast<int64_t>(options_.inv_freq.size()) != hd / 2)
    throw ValueError("Granite 4: " + std::to_string(options_.inv_freq.size()) +
                     " rotary frequencies for head_dim " + std::to_string(hd) + " (need head_dim / 2, or none)");
  for (float f : options_.inv_freq)
    if (!std::isfinite(f)) throw ValueError("Granite 4: a rotary inverse frequency is " + std::to_string(f));
  if (config_.recurrent_layers.empty())
    throw ValueError("Granite 4: recurrent_layers must give every layer's state shape (zeros for attention layers)");
  // ---- the Mamba-2 layers' state shapes against their heads ----
  const int64_t G = options_.mamba_groups;
  bool any_mamba = false;
  for (int64_t l = 0; l < L; ++l) {
    if (!config_.recurrent(l)) continue;
    const RecurrentLayerShape& s = config_.recurrent_layers[l];
    const std::string where = "Granite 4 layer " + std::to_string(l) + ": ";
    if (s.heads < 1 || s.key_dim < 1 || s.value_dim < 1 || s.conv_kernel < 1)
      throw ValueError(where + "a Mamba-2 state needs heads, head_dim, d_state and a kernel of at least 1");
    if (G < 1 || s.heads % G != 0)
      throw ValueError(where + "mamba_n_heads = " + std::to_string(s.heads) +
                       " is not a positive multiple of mamba_n_groups = " + std::to_string(G));
    if (s.conv_channels != s.heads * s.key_dim + 2 * G * s.value_dim)
      throw ValueError(where + "its state of " + std::to_string(s.conv_channels) +
                       " convolution channels does not match heads x head_dim + 2 x groups x d_state (" +
                       std::to_string(s.heads) + " x " + std::to_string(s.key_dim) + " + 2 x " + std::to_string(G) +
                       " x " + std::to_string(s.value_dim) + ")");
    if (any_mamba && (s.conv_channels != shape_.conv_channels || s.conv_kernel != shape_.conv_kernel ||
                      s.heads != shape_.heads || s.key_dim != shape_.key_dim || s.value_dim != shape_.value_dim))
      throw ValueError(where + "its Mamba-2 state shape differs from the other Mamba-2 layers'");
    shape_ = s;
    any_mamba = true;
  }
  inner_ = shape_.heads * shape_.key_dim;
  projected_ = inner_ + shape_.conv_channels + shape_.heads;
  const int64_t conv = shape_.conv_channels, Hm = shape_.heads;
  // ---- tensors ----
  embed_ = read_matrix(t, "model.embed_tokens.weight", V, C);
  norm_ = read_vector(t, "model.norm.weight", C);
  lm_head_ = t.has("lm_head.weight") ? read_matrix(t, "lm_head.weight", V, C) : embed_;
  if (config_.experts > 0) use_experts({.softmax_after_top_k = true});  // a softmax over the top-k logits
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const std::string where = "Granite 4 layer " + std::to_string(l) + ": ";
    Layer w{};
    w.mamba = config_.recurrent(l);
    const char* other = w.mamba ? "self_attn.q_proj.weight" : "mamba.in_proj.weight";
    if (t.has(p + other))
      throw ValueError(where + "the layer pattern makes it " + (w.mamba ? "a Mamba-2" : "an attention") +
                       " layer but the file has " + p + other);
    w.input_norm = read_vector(t, p + "input_layernorm.weight", C);
    if (w.mamba) {
      Mamba& m = w.m;
      const std::string q = p + "mamba.";
      m.in = read_linear(t, q + "in_proj", projected_, C);
      m.conv_w = t.get(q + "conv1d.weight", {conv, shape_.conv_kernel});
      count_weight(conv * shape_.conv_kernel);
      m.conv_b = t.has(q + "conv1d.bias") ? read_vector(t, q + "conv1d.bias", conv) : nullptr;
      m.a_log = read_vector(t, q + "A_log", Hm);
      m.d = read_vector(t, q + "D", Hm);
      m.dt_bias = read_vector(t, q + "dt_bias", Hm);
      m.norm = read_vector(t, q + "norm.weight", inner_);
      m.out = read_linear(t, q + "out_proj", C, inner_);
    } else {
      w.attn.q = read_linear(t, p + "self_attn.q_proj", H * hd, C);
      w.attn.k = read_linear(t, p + "self_attn.k_proj", KV * hd, C);
      w.attn.v = read_linear(t, p + "self_attn.v_proj", KV * hd, C);
      w.attn.o = read_linear(t, p + "self_attn.o_proj", C, H * hd);
    }
    w.post_norm = read_vector(t, p + "post_attention_layernorm.weight", C);
    w.experts = read_experts(t, p);
    if (config_.experts > 0 && w.experts < 0)
      throw ValueError(where + "num_local_experts = " + std::to_string(config_.experts) +
                       " but the layer has no router (" + p + "mlp.gate.weight)");
    w.shared = {read_linear(t, p + "shared_mlp.gate_proj", I, C), read_linear(t, p + "shared_mlp.up_proj", I, C),
                read_linear(t, p + "shared_mlp.down_proj", C, I)};
    layers_.push_back(std::move(w));
  }
}

void GraniteHybrid::reserve(const ForwardPass& b) {
  if (!options_.inv_freq.empty()) extend_rotary(rotary_, options_.inv_freq, 1.0f, b.end);
  if (shape_.heads == 0) return;  // no Mamba-2 layer
  grow_rows(zxbcdt_, b.n, projected_);
  grow_rows(xbc_, b.n, shape_.conv_channels);
  grow_rows(conv_, b.n, shape_.conv_channels);
  grow_rows(y_, b.n, inner_);
  grow_rows(normed_, b.n, inner_);
}

void GraniteHybrid::embed(float* x, const ForwardPass& b) {
  embed_tokens(x, embed_, b, options_.embedding_multiplier);  // x (n, C)
}

void GraniteHybrid::block(int64_t l, float* x, const ForwardPass& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden;
  const float eps = options_.rms_norm_eps, residual = options_.residual_multiplier;
  const Layer& w = layers_[l];
  float* h = branch();  // (n, C) a residual branch: its normed input, then its output
  // mixer: x (n, C) += residual x (mamba(rmsnorm(x)) or attention(rmsnorm(x)))
  rms_norm(h, x, w.input_norm, n, C, eps);
  if (w.mamba)
    mamba_branch(h, w.m, l, b, cache);
  else
    attention(h, h, w.attn,
              {.scale = options_.attention_multiplier,
               .rotary = options_.inv_freq.empty() ? nullptr : &rotary_,
               .rotary_dim = config_.head_dim},
              l, b, cache);
  add_residual(x, h, n, C, residual);
  // feed-forward: x (n, C) += residual x (experts(h) + shared_mlp(h)), h = rmsnorm(x); or the shared MLP alone
  rms_norm(h, x, w.post_norm, n, C, eps);
  const float* routed = w.experts >= 0 ? experts(h, w.experts, n) : nullptr;  // (n, C), before h is overwritten
  mlp(h, h, w.shared, Activation::SiLU, n);
  if (routed != nullptr) add_residual(h, routed, n, C);  // the experts' output plus the shared MLP's
  add_residual(x, h, n, C, residual);
}

void GraniteHybrid::mamba_branch(float* h, const Mamba& w, int64_t layer, const ForwardPass& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden;
  const int64_t D = inner_, conv = shape_.conv_channels, Hm = shape_.heads, N = shape_.value_dim;
  const int64_t G = options_.mamba_groups, W = projected_;
  float *zxbcdt = zxbcdt_.data(), *xbc = xbc_.data(), *conv_out = conv_.data(), *y = y_.data();
  float* normed = normed_.data();
  projector_.project(h, n, C, {{&w.in.w, w.in.bias, zxbcdt, W}});  // z | x B C | dt per token
  for (int64_t r = 0; r < n; ++r) std::memcpy(xbc + r * conv, zxbcdt + r * W + D, conv * sizeof(float));
  StateCache* state = cache.state();
  if (state == nullptr) throw std::logic_error("Granite 4: a Mamba-2 layer needs the cache's state");
  int64_t o = 0;  // the chunk's first row in the batch
  for (const RowTokens& chunk : *b.chunks) {
    recurrent_pieces(chunk, o, layer, *state, [&](int64_t r0, int64_t r1) {
      // causal conv1d + SiLU from the row's window, which then holds the piece's last inputs
      causal_conv1d(conv_out + r0 * conv, state->conv(layer, chunk.row), xbc + r0 * conv, w.conv_w, w.conv_b,
                    /*silu=*/true, r1 - r0, conv, shape_.conv_kernel);
      const float* xs = conv_out + r0 * conv;  // x (piece, D), then B, C (piece, G N), row stride conv
      mamba2_scan(y + r0 * D, D, state->recurrent(layer, chunk.row), xs, xs + D, xs + D + G * N, conv,
                  zxbcdt + r0 * W + D + conv, W, w.a_log, w.dt_bias, w.d,
                  {.tokens = r1 - r0, .heads = Hm, .head_dim = shape_.key_dim, .state_size = N, .groups = G});
    });
    o += chunk.count;
  }
  // norm(y * silu(z)) per group of channels, then the output projection
  mamba2_gated_norm(normed, y, D, zxbcdt, W, w.norm, options_.rms_norm_eps, n, D, G);
  projector_.project(normed, n, D, {{&w.out.w, w.out.bias, h, C}});
}

void GraniteHybrid::final_norm(float* out, const float* x, int64_t m) {
  rms_norm(out, x, norm_, m, config_.hidden, options_.rms_norm_eps);
  // the LM head is linear: scaling its input scales the logits (logits / logits_scaling)
  if (options_.logit_scale != 1.0f) ops::scale_inplace(out, options_.logit_scale, m * config_.hidden);
}

}  // namespace

std::unique_ptr<Model> make_granite_hybrid(ModelConfig config, GraniteHybridOptions options,
                                           const TensorMap& tensors) {
  return std::make_unique<GraniteHybrid>(std::move(config), std::move(options), tensors);
}

}  // namespace kvgen
