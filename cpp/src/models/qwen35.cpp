// Qwen3.5 (qwen35.h), following transformers' modeling_qwen3_5.py: hyperparameters
// (Qwen35Options), tensors (Layer), and the forward pass over the shared builders
// (decoder.h) with the Gated DeltaNet kernels (gated_delta_net.h, causal_conv.h).
//
// Rotary positions: transformers' Qwen3_5TextRotaryEmbedding is multimodal (mrope_section
// splits the frequencies between temporal, height and width positions, interleaved). For text
// the three position ids are the same token position, so every section rotates by that one
// position and the recomposition changes nothing: the ordinary rotary table of the token
// positions is what it computes (tests/families/test_qwen3_5.py checks it).
#include "kvgen/models/qwen35.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/limits.h"
#include "kvgen/models/causal_conv.h"
#include "kvgen/models/decoder.h"
#include "kvgen/models/gated_delta_net.h"
#include "kvgen/ops/layer_ops.h"

namespace kvgen {
namespace {

class Qwen35 : public DecoderModel {
 public:
  // target: null for the model; for its multi-token-prediction head, the model whose
  // embedding and LM head it shares (qwen35.h: make_qwen35_mtp).
  Qwen35(ModelConfig config, Qwen35Options options, const TensorMap& t, const Qwen35* target = nullptr);
  bool reads_input_hidden() const override { return mtp_; }
  bool token_checkpoints() const override { return any_recurrent_layer(); }

 protected:
  void reserve(const ForwardPass& b) override;
  void embed(float* x, const ForwardPass& b) override;
  void block(int64_t layer, float* x, const ForwardPass& b, KVCache& cache) override;
  void final_norm(float* out, const float* x, int64_t m) override;

 private:
  // A gated full-attention layer's projections.
  struct Attention {
    Linear q;                 // (2 H hd, C): per head, hd query rows then hd gate rows
    Linear k, v;              // (KV hd, C)
    Linear o;                 // (C, H hd)
    const float* q_norm;      // (hd), 1 + w
    const float* k_norm;      // (hd), 1 + w
  };
  // A Gated DeltaNet layer's projections and parameters.
  struct DeltaNet {
    Linear qkv;               // (conv, C) q | k | v before the convolution
    Linear z;                 // (Hv dv, C) the output gate
    Linear b;                 // (Hv, C) beta = sigmoid(b)
    Linear a;                 // (Hv, C) the decay's input
    const float* conv_w;      // (conv, kernel)
    const float* conv_b;      // (conv) or null
    const float* a_log;       // (Hv)
    const float* dt_bias;     // (Hv)
    const float* norm;        // (dv) the gated RMSNorm's weight (plain w)
    Linear out;               // (C, Hv dv)
  };
  struct Layer {
    const float* attn_norm;   // (C), 1 + w
    bool recurrent;
    Attention attn;
    DeltaNet delta;
    const float* mlp_norm;    // (C), 1 + w
    MlpWeights mlp;           // the SwiGLU MLP; empty where the layer has experts
    int64_t experts = -1;     // >= 0: the layer's mixture of experts (read_experts) instead of the MLP
  };

  // A norm weight as the model multiplies it: w + norm_offset (1 + w in float32, as torch).
  const float* norm_weight(const TensorMap& t, const std::string& name, int64_t size);
  void attention_branch(float* h, const Attention& w, int64_t layer, const ForwardPass& b, KVCache& cache);
  void delta_branch(float* h, const DeltaNet& w, int64_t layer, const ForwardPass& b, KVCache& cache);

  Qwen35Options options_;
  int64_t rotary_dim_;
  float attention_scale_;
  RecurrentLayerShape shape_;  // every recurrent layer's (checked equal)
  int64_t key_heads_ = 0;
  // The key heads the delta rule reads: key_heads_, or value heads when the value heads are
  // tiled (each given its key head's q and k, so that the rule's grouped reading fits).
  int64_t query_heads_ = 0;
  LinearWeight embed_;
  const float* norm_;
  // The multi-token-prediction head (mtp_): each token's input is fc([enorm(embedding) |
  // hnorm(hidden)]), hidden the target's final-normed state at the position before it.
  bool mtp_ = false;
  Linear fc_;                    // (C, 2 C)
  const float* embed_norm_ = nullptr;   // (C), 1 + w
  const float* hidden_norm_ = nullptr;  // (C), 1 + w
  std::vector<Layer> layers_;
  std::vector<float> norms_;   // the norm weights plus the offset (capacity reserved up front)
  RotaryTable rotary_;

  struct Scratch {
    xt::xtensor<float, 2> qg, q, gate, k, v, att;      // attention: (n, 2 H hd), (n, H hd) x2, (n, KV hd) x2, (n, H hd)
    xt::xtensor<float, 2> mixed, conv, z, a, beta_in;  // DeltaNet: (n, conv) x2, (n, Hv dv), (n, Hv) x2
    xt::xtensor<float, 2> g, beta;                     // (n, Hv)
    xt::xtensor<float, 2> dq, dk, dv, core;            // (n, Hq dk) x2 (query_heads_), (n, Hv dv) x2
    xt::xtensor<float, 2> pair;                        // MTP head: (n, 2 C) [enorm(embedding) | hnorm(hidden)]
  } s_;
};

Qwen35::Qwen35(ModelConfig config, Qwen35Options options, const TensorMap& t, const Qwen35* target)
    : DecoderModel(std::move(config), {.fused_qkv = false, .gated_mlp = true}),
      options_(std::move(options)),
      mtp_(target != nullptr) {
  const int64_t C = config_.hidden, V = config_.vocab_size, I = config_.intermediate;
  const int64_t H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim, L = config_.layers;
  // ---- hyperparameters ----
  rotary_dim_ = options_.rotary_dim == 0 ? hd : options_.rotary_dim;
  if (rotary_dim_ < 2 || rotary_dim_ > hd || rotary_dim_ % 2)
    throw ValueError("Qwen3.5: rotary_dim = " + std::to_string(rotary_dim_) + " must be even and within head_dim " +
                     std::to_string(hd));
  if (static_cast<int64_t>(options_.inv_freq.size()) != rotary_dim_ / 2)
    throw ValueError("Qwen3.5: " + std::to_string(options_.inv_freq.size()) + " rotary frequencies for rotary_dim " +
                     std::to_string(rotary_dim_) + " (need rotary_dim / 2)");
  for (float f : options_.inv_freq)
    if (!std::isfinite(f)) throw ValueError("Qwen3.5: a rotary inverse frequency is " + std::to_string(f));
  check_finite("Qwen3.5", options_.rms_norm_eps, "rms_norm_eps");
  check_finite("Qwen3.5", options_.norm_offset, "the norm offset");
  if (options_.chunk_size < 1) throw ValueError("Qwen3.5: chunk_size must be at least 1");
  if (options_.shared_expert_intermediate < 0 || options_.shared_expert_intermediate > limits::kMaxWidth)
    throw ValueError("Qwen3.5: shared_expert_intermediate_size = " + std::to_string(options_.shared_expert_intermediate) +
                     " is not in [0, " + std::to_string(limits::kMaxWidth) + "]");
  if (options_.shared_expert_intermediate > 0 && config_.experts == 0)
    throw ValueError("Qwen3.5: a shared expert needs a mixture of experts (num_experts)");
  if (config_.experts > 0)
    use_experts({.norm_topk_prob = options_.norm_topk_prob,
                 .shared_expert_intermediate = options_.shared_expert_intermediate});
  attention_scale_ = 1.0f / std::sqrt(static_cast<float>(hd));
  if (config_.recurrent_layers.empty())
    throw ValueError("Qwen3.5: recurrent_layers must give every layer's state shape (zeros for attention layers)");
  // ---- the recurrent layers' state shapes against their heads ----
  key_heads_ = options_.linear_key_heads;
  bool any_recurrent = false;
  for (int64_t l = 0; l < L; ++l) {
    if (!config_.recurrent(l)) continue;
    const RecurrentLayerShape& s = config_.recurrent_layers[l];
    const std::string where = "Qwen3.5 layer " + std::to_string(l) + ": ";
    if (any_recurrent && (s.conv_channels != shape_.conv_channels || s.conv_kernel != shape_.conv_kernel ||
                          s.heads != shape_.heads || s.key_dim != shape_.key_dim || s.value_dim != shape_.value_dim))
      throw ValueError(where + "its recurrent state shape differs from the other linear-attention layers'");
    if (key_heads_ < 1 || s.heads < 1 || s.heads % key_heads_ != 0)
      throw ValueError(where + "linear_num_value_heads = " + std::to_string(s.heads) +
                       " is not a positive multiple of linear_num_key_heads = " + std::to_string(key_heads_));
    if (s.key_dim < 1 || s.value_dim < 1 || s.conv_kernel < 1 ||
        s.conv_channels != 2 * key_heads_ * s.key_dim + s.heads * s.value_dim)
      throw ValueError(where + "its state of " + std::to_string(s.conv_channels) +
                       " convolution channels does not match 2 x key heads x key_dim + value heads x value_dim (" +
                       std::to_string(key_heads_) + ", " + std::to_string(s.key_dim) + ", " + std::to_string(s.heads) +
                       ", " + std::to_string(s.value_dim) + ")");
    shape_ = s;
    any_recurrent = true;
  }
  query_heads_ = options_.value_heads_tiled ? shape_.heads : key_heads_;
  // ---- tensors ----
  norms_.reserve(L * (2 * C + 2 * hd) + 3 * C);  // every (1 + w) norm, at most: pointers into it stay valid
  if (mtp_) {  // the head's own tensors (mtp.*); the embedding and LM head are the target's, shared
    if (target->config_.hidden != C || target->config_.vocab_size != V)
      throw ValueError("Qwen3.5 MTP head: its hidden size and vocabulary must be its model's");
    for (int64_t l = 0; l < L; ++l)
      if (config_.recurrent(l))
        throw ValueError("Qwen3.5 MTP head: its layers are full-attention layers, not recurrent ones");
    embed_ = target->embed_;
    lm_head_ = target->lm_head_;
    norm_ = norm_weight(t, "mtp.norm.weight", C);
    fc_ = read_linear(t, "mtp.fc", C, 2 * C);
    embed_norm_ = norm_weight(t, "mtp.pre_fc_norm_embedding.weight", C);
    hidden_norm_ = norm_weight(t, "mtp.pre_fc_norm_hidden.weight", C);
  } else {
    embed_ = read_matrix(t, "model.embed_tokens.weight", V, C);
    norm_ = norm_weight(t, "model.norm.weight", C);
    lm_head_ = t.has("lm_head.weight") ? read_matrix(t, "lm_head.weight", V, C) : embed_;
  }
  const int64_t conv = shape_.conv_channels, Hv = shape_.heads, dk = shape_.key_dim, dv = shape_.value_dim;
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = (mtp_ ? "mtp.layers." : "model.layers.") + std::to_string(l) + ".";
    Layer w{};
    w.recurrent = config_.recurrent(l);
    const bool has_linear = t.has(p + "linear_attn.in_proj_qkv.weight");
    const bool has_attention = t.has(p + "self_attn.q_proj.weight");
    if (w.recurrent != has_linear || w.recurrent == has_attention)
      throw ValueError("Qwen3.5 layer " + std::to_string(l) + ": the layer pattern makes it " +
                       (w.recurrent ? "a linear-attention" : "a full-attention") + " layer, but its tensors are " +
                       (has_linear && has_attention ? "of both kinds"
                        : has_linear                ? "linear attention's"
                        : has_attention             ? "full attention's"
                                                    : "missing"));
    w.attn_norm = norm_weight(t, p + "input_layernorm.weight", C);
    if (w.recurrent) {
      DeltaNet& d = w.delta;
      const std::string q = p + "linear_attn.";
      d.qkv = read_linear(t, q + "in_proj_qkv", conv, C);
      d.z = read_linear(t, q + "in_proj_z", Hv * dv, C);
      d.b = read_linear(t, q + "in_proj_b", Hv, C);
      d.a = read_linear(t, q + "in_proj_a", Hv, C);
      d.conv_w = t.get(q + "conv1d.weight", {conv, shape_.conv_kernel});
      count_weight(conv * shape_.conv_kernel);
      d.conv_b = t.has(q + "conv1d.bias") ? read_vector(t, q + "conv1d.bias", conv) : nullptr;
      d.a_log = read_vector(t, q + "A_log", Hv);
      d.dt_bias = read_vector(t, q + "dt_bias", Hv);
      d.norm = read_vector(t, q + "norm.weight", dv);
      d.out = read_linear(t, q + "out_proj", C, Hv * dv);
    } else {
      Attention& a = w.attn;
      a.q = read_linear(t, p + "self_attn.q_proj", 2 * H * hd, C);
      a.k = read_linear(t, p + "self_attn.k_proj", KV * hd, C);
      a.v = read_linear(t, p + "self_attn.v_proj", KV * hd, C);
      a.o = read_linear(t, p + "self_attn.o_proj", C, H * hd);
      a.q_norm = norm_weight(t, p + "self_attn.q_norm.weight", hd);
      a.k_norm = norm_weight(t, p + "self_attn.k_norm.weight", hd);
    }
    w.mlp_norm = norm_weight(t, p + "post_attention_layernorm.weight", C);
    // a mixture of experts (and its gated shared expert, moe.h) instead of the MLP where the layer has a router
    w.experts = read_experts(t, p);
    if (w.experts < 0) {
      w.mlp = {read_linear(t, p + "mlp.gate_proj", I, C), read_linear(t, p + "mlp.up_proj", I, C),
               read_linear(t, p + "mlp.down_proj", C, I)};
    } else if (options_.shared_expert_intermediate > 0 && !t.has(p + "mlp.shared_expert_gate.weight")) {
      throw ValueError("missing tensor: " + p + "mlp.shared_expert_gate.weight (Qwen3.5's shared expert is gated)");
    }
    layers_.push_back(std::move(w));
  }
}

const float* Qwen35::norm_weight(const TensorMap& t, const std::string& name, int64_t size) {
  const float* w = read_vector(t, name, size);
  if (options_.norm_offset == 0.0f) return w;
  const size_t at = norms_.size();
  for (int64_t i = 0; i < size; ++i) norms_.push_back(options_.norm_offset + w[i]);
  return norms_.data() + at;
}

void Qwen35::reserve(const ForwardPass& b) {
  extend_rotary(rotary_, options_.inv_freq, 1.0f, b.end);
  const int64_t n = b.n, H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim;
  grow_rows(s_.qg, n, 2 * H * hd);
  for (auto* buf : {&s_.q, &s_.gate, &s_.att}) grow_rows(*buf, n, H * hd);
  grow_rows(s_.k, n, KV * hd);
  grow_rows(s_.v, n, KV * hd);
  if (mtp_) grow_rows(s_.pair, n, 2 * config_.hidden);
  if (shape_.heads == 0) return;  // no recurrent layer
  const int64_t conv = shape_.conv_channels, Hv = shape_.heads;
  grow_rows(s_.mixed, n, conv);
  grow_rows(s_.conv, n, conv);
  for (auto* buf : {&s_.z, &s_.core, &s_.dv}) grow_rows(*buf, n, Hv * shape_.value_dim);
  for (auto* buf : {&s_.a, &s_.beta_in, &s_.g, &s_.beta}) grow_rows(*buf, n, Hv);
  grow_rows(s_.dq, n, query_heads_ * shape_.key_dim);
  grow_rows(s_.dk, n, query_heads_ * shape_.key_dim);
}

void Qwen35::embed(float* x, const ForwardPass& b) {
  embed_tokens(x, embed_, b);  // x (n, C)
  if (!mtp_) return;
  // the MTP head: x = fc([enorm(embedding) | hnorm(hidden)]), the hidden state of each token's
  // chunk beside its embedding
  const int64_t n = b.n, C = config_.hidden;
  const float eps = options_.rms_norm_eps;
  float* pair = s_.pair.data();  // (n, 2 C)
  for (size_t ci = 0, o = 0; ci < b.chunks->size(); o += (*b.chunks)[ci].count, ++ci) {
    const RowTokens& c = (*b.chunks)[ci];
    for (int64_t i = 0; i < c.count; ++i) {
      std::memcpy(pair + (o + i) * 2 * C, x + (o + i) * C, C * sizeof(float));
      std::memcpy(pair + (o + i) * 2 * C + C, c.input_hidden + i * C, C * sizeof(float));
    }
  }
  rows_in_parallel(n, 2 * C, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      ops::rmsnorm(pair + r * 2 * C, pair + r * 2 * C, embed_norm_, 1, C, eps);
      ops::rmsnorm(pair + r * 2 * C + C, pair + r * 2 * C + C, hidden_norm_, 1, C, eps);
    }
  });
  projector_.project(pair, n, 2 * C, {{&fc_.w, fc_.bias, x, C}});
}

void Qwen35::block(int64_t l, float* x, const ForwardPass& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden;
  const float eps = options_.rms_norm_eps;
  const Layer& w = layers_[l];
  float* h = branch();  // (n, C) the residual branch: its normed input, then its output
  // token mixer: x (n, C) += attention(rmsnorm(x)) or gated_deltanet(rmsnorm(x))
  rms_norm(h, x, w.attn_norm, n, C, eps);
  if (w.recurrent)
    delta_branch(h, w.delta, l, b, cache);
  else
    attention_branch(h, w.attn, l, b, cache);
  add_residual(x, h, n, C);
  // MLP: x (n, C) += down(silu(gate(h)) * up(h)), h = rmsnorm(x); or the experts of h
  rms_norm(h, x, w.mlp_norm, n, C, eps);
  const float* out = h;  // (n, C)
  if (w.experts >= 0)
    out = experts(h, w.experts, n);  // the routed experts' output plus sigmoid(shared_gate(h)) * the shared expert's
  else
    mlp(h, h, w.mlp, Activation::SiLU, n);
  add_residual(x, out, n, C);
}

void Qwen35::attention_branch(float* h, const Attention& w, int64_t layer, const ForwardPass& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden;
  const int64_t H = config_.heads, KV = config_.kv_heads, hd = config_.head_dim;
  float *qg = s_.qg.data(), *q = s_.q.data(), *gate = s_.gate.data(), *k = s_.k.data(), *v = s_.v.data();
  projector_.project(h, n, C, {{&w.q.w, w.q.bias, qg, 2 * H * hd}, {&w.k.w, w.k.bias, k, KV * hd},
                               {&w.v.w, w.v.bias, v, KV * hd}});
  const float* cos = rotary_.cos.data();
  const float* sin = rotary_.sin.data();
  rows_in_parallel(n, (2 * H + KV) * hd, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      // each head's [query | gate] apart (transformers' view(..., heads, 2 hd) and chunk)
      for (int64_t head = 0; head < H; ++head) {
        const float* src = qg + r * 2 * H * hd + head * 2 * hd;
        std::memcpy(q + (r * H + head) * hd, src, hd * sizeof(float));
        std::memcpy(gate + (r * H + head) * hd, src + hd, hd * sizeof(float));
      }
      ops::rmsnorm(q + r * H * hd, q + r * H * hd, w.q_norm, H, hd, options_.rms_norm_eps);
      ops::rmsnorm(k + r * KV * hd, k + r * KV * hd, w.k_norm, KV, hd, options_.rms_norm_eps);
    }
    const int64_t* positions = b.positions.data() + r0;
    ops::rope(q + r0 * H * hd, H * hd, r1 - r0, H, hd, rotary_dim_, positions, cos, sin);
    ops::rope(k + r0 * KV * hd, KV * hd, r1 - r0, KV, hd, rotary_dim_, positions, cos, sin);
  });
  float* att = s_.att.data();  // (n, H hd)
  attend(att, q, H * hd, k, KV * hd, v, KV * hd, layer, b, cache, attention_scale_);
  rows_in_parallel(n, H * hd, [&](int64_t r0, int64_t r1) {  // att *= sigmoid(gate), row by row (see delta_branch)
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t i = r * H * hd; i < (r + 1) * H * hd; ++i) att[i] *= 1.0f / (1.0f + std::exp(-gate[i]));
  });
  projector_.project(att, n, H * hd, {{&w.o.w, w.o.bias, h, C}});
}

void Qwen35::delta_branch(float* h, const DeltaNet& w, int64_t layer, const ForwardPass& b, KVCache& cache) {
  const int64_t n = b.n, C = config_.hidden;
  const int64_t conv = shape_.conv_channels, K = shape_.conv_kernel, Hv = shape_.heads, Hk = key_heads_;
  const int64_t Hq = query_heads_;
  const int64_t dk = shape_.key_dim, dv = shape_.value_dim;
  float *mixed = s_.mixed.data(), *conv_out = s_.conv.data(), *z = s_.z.data();
  float *a = s_.a.data(), *braw = s_.beta_in.data(), *g = s_.g.data(), *beta = s_.beta.data();
  float *dq = s_.dq.data(), *dkk = s_.dk.data(), *dvv = s_.dv.data(), *core = s_.core.data();
  projector_.project(h, n, C, {{&w.qkv.w, w.qkv.bias, mixed, conv}, {&w.z.w, w.z.bias, z, Hv * dv},
                               {&w.b.w, w.b.bias, braw, Hv}, {&w.a.w, w.a.bias, a, Hv}});
  // the gates token by token: the vectorized exp of a longer run would round some of a row's
  // values otherwise than its own, and a row's result would depend on the batch beside it
  for (int64_t r = 0; r < n; ++r)
    gated_delta_gates(g + r * Hv, beta + r * Hv, a + r * Hv, braw + r * Hv, w.a_log, w.dt_bias, 1, Hv);
  StateCache* state = cache.state();
  if (state == nullptr) throw std::logic_error("Qwen3.5: a recurrent layer needs the cache's state");
  const DeltaRuleShape rule_shape{.tokens = 0, .key_heads = Hq, .value_heads = Hv, .key_dim = dk, .value_dim = dv};
  int64_t o = 0;  // the chunk's first row in the batch
  const auto split = [&](int64_t r) {  // q | k | v of token r, each contiguous over the chunk
    const float* src = conv_out + r * conv;
    for (int64_t head = 0; head < Hq; ++head) {  // tiled value heads: head h takes key head h % Hk
      const int64_t from = head % Hk;
      std::memcpy(dq + (r * Hq + head) * dk, src + from * dk, dk * sizeof(float));
      std::memcpy(dkk + (r * Hq + head) * dk, src + (Hk + from) * dk, dk * sizeof(float));
    }
    std::memcpy(dvv + r * Hv * dv, src + 2 * Hk * dk, Hv * dv * sizeof(float));
  };
  for (size_t ci = 0; ci < b.chunks->size(); ++ci) {
    const RowTokens& chunk = (*b.chunks)[ci];
    float* window = state->conv(layer, chunk.row);
    float* rec = state->recurrent(layer, chunk.row);
    recurrent_pieces(chunk, o, layer, *state, [&](int64_t r0, int64_t r1) {
      // causal conv1d + SiLU from the row's window, which then holds the piece's last inputs
      causal_conv1d(conv_out + r0 * conv, window, mixed + r0 * conv, w.conv_w, w.conv_b, true, r1 - r0, conv, K);
      for (int64_t r = r0; r < r1; ++r) split(r);
      // The delta rule in pieces that end at multiples of kPrefillChunk from the row's start, as
      // the engine cuts prompts: a row's state then does not depend on how its prompt was fed
      // (in one pass or a chunk per pass beside other rows), bit for bit. A one-token piece (a
      // decode step, a verification chunk's token) takes the recurrent form, as transformers
      // does; a longer one the chunked form.
      for (int64_t r = r0; r < r1;) {
        const int64_t position = b.starts[ci] + (r - o);
        const int64_t end = std::min(r1, r + kPrefillChunk - position % kPrefillChunk);
        DeltaRuleShape s = rule_shape;
        s.tokens = end - r;
        if (s.tokens == 1)
          gated_delta_rule_recurrent(core + r * Hv * dv, rec, dq + r * Hq * dk, dkk + r * Hq * dk, dvv + r * Hv * dv,
                                     g + r * Hv, beta + r * Hv, true, s);
        else
          gated_delta_rule_chunked(core + r * Hv * dv, rec, dq + r * Hq * dk, dkk + r * Hq * dk, dvv + r * Hv * dv,
                                   g + r * Hv, beta + r * Hv, true, s, options_.chunk_size);
        r = end;
      }
    });
    o += chunk.count;
  }
  // the gated RMSNorm per value head: norm(core) * silu(z), then the output projection
  gated_rms_norm(core, core, z, w.norm, options_.rms_norm_eps, n * Hv, dv);
  projector_.project(core, n, Hv * dv, {{&w.out.w, w.out.bias, h, C}});
}

void Qwen35::final_norm(float* out, const float* x, int64_t m) {
  rms_norm(out, x, norm_, m, config_.hidden, options_.rms_norm_eps);
}

}  // namespace

std::unique_ptr<Model> make_qwen35(ModelConfig config, Qwen35Options options, const TensorMap& tensors) {
  return std::make_unique<Qwen35>(std::move(config), std::move(options), tensors);
}

std::unique_ptr<Model> make_qwen35_mtp(ModelConfig config, Qwen35Options options, const TensorMap& tensors,
                                       const Model& target) {
  const auto* model = dynamic_cast<const Qwen35*>(&target);
  if (model == nullptr || model->reads_input_hidden())
    throw ValueError("a Qwen3.5 MTP head's target must be a Qwen3.5 model (not another head)");
  return std::make_unique<Qwen35>(std::move(config), std::move(options), tensors, model);
}

}  // namespace kvgen
