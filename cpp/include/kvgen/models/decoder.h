// DecoderModel: the forward loop every built-in decoder-only family shares, and the
// builders its blocks are made of. The loop checks the request (context overflow, token
// ids), lays the new tokens of all chunks out as one (n, C) batch, runs the family's
// embedding and blocks over it, keeps the cache lengths, and projects the last (or every)
// position onto the vocabulary, or hands out the final-normed hidden states of the chunks
// that ask for them (RowTokens::hidden: embeddings). A family (models/<family>.cpp) supplies embed / block /
// final_norm, written top to bottom from the builders (builders.cpp): norms, residual
// adds, the attention branch, the (gated) MLP, the mixture of experts; as llama.cpp's
// src/models/<family>.cpp builds on llama-graph.cpp's build_norm / build_attn / build_ffn.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/models/moe.h"
#include "kvgen/runtime/attention.h"
#include "kvgen/runtime/linear_weight.h"
#include "kvgen/runtime/model.h"
#include "kvgen/runtime/projector.h"
#include "kvgen/runtime/tensors.h"

namespace kvgen {

class DecoderModel : public Model {
 public:
  const ModelConfig& config() const override { return config_; }
  Activations activations() const override { return projector_.activations(); }
  void set_activations(Activations activations) override { projector_.set_activations(activations); }
  int64_t weight_bytes() const override { return weight_bytes_; }
  KVType kv_type() const override {
    if (kv_choice_) return *kv_choice_;
    return int8_weights_ && activations() != Activations::Float ? KVType::Float16 : KVType::Float32;
  }
  void forward(const std::vector<RowTokens>& chunks, KVCache& cache, float* logits, bool all_positions) final;

 protected:
  // What the builders' scratch is shaped for: attention weights fused into one qkv matrix
  // (else q, k and v apart), an MLP with a gate (else plain).
  struct BlockLayout {
    bool fused_qkv = false;
    bool gated_mlp = true;
  };
  // Validates the config (ModelConfig::validate) before the family reads its tensors or
  // allocates anything sized by it.
  DecoderModel(ModelConfig config, BlockLayout layout) : config_(std::move(config)), layout_(layout) {
    config_.validate();
  }

  // The new tokens of one forward call, chunk after chunk.
  struct ForwardPass {
    const std::vector<RowTokens>* chunks = nullptr;
    std::vector<int64_t> starts;     // (chunks) cached length of each chunk's row
    std::vector<int64_t> positions;  // (n) position of every token
    std::vector<int64_t> tokens;     // (n) token ids
    int64_t n = 0;
    int64_t end = 0;                 // one past the largest position (<= context_length)
    int64_t max_scores = 0;          // attention scratch: max over the chunks in query blocks of count * (start + count)
    int64_t max_count = 0;           // the longest chunk
    int64_t min_count = 0;           // the shortest chunk
    bool any_by_tokens = false;      // some chunk is attended token by token (in some layer)
    bool any_in_blocks = false;      // some chunk is attended in query blocks (in some layer)
  };

  // Called once per forward, after the request checks and before embed: grows the
  // family's own scratch (grow_rows) and position tables to what this batch needs (the
  // builders' scratch is grown just before, by reserve_builders).
  // Nothing is allocated later in the forward, and nothing at all once the largest
  // batch (the prefill, as a rule) has been seen; position tables are sized by the
  // positions generations use, not by the declared context.
  virtual void reserve(const ForwardPass& batch) = 0;
  // x (n, C): the input embeddings of the batch's tokens.
  virtual void embed(float* x, const ForwardPass& batch) = 0;
  // One residual block over x (n, C) in place; writes the layer's keys/values.
  virtual void block(int64_t layer, float* x, const ForwardPass& batch, KVCache& cache) = 0;
  // out (m, C) = the final norm of x (m, C).
  virtual void final_norm(float* out, const float* x, int64_t m) = 0;

  // Writes k, v (n, kv_heads * head_dim; row strides ldk, ldv) into the cache at the
  // tokens' positions, then out (n, heads * head_dim) = causal attention of q (n, heads *
  // head_dim; row stride ldq) over each chunk's row, scores scaled by `scale` and, when
  // softcap > 0, soft-capped (attention.h). A layer with a sliding window (ModelConfig::
  // window) sees only its window, and its ring of slots is written and read a block of
  // tokens at a time, so that no key is overwritten before the tokens that see it have.
  // sinks (heads) or null: the layer's attention sinks (AttentionOptions::sinks).
  void attend(float* out, const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v, int64_t ldv,
              int64_t layer, const ForwardPass& batch, KVCache& cache, float scale, float softcap = 0.0f,
              const float* sinks = nullptr);

  // Runs f(r0, r1) over row ranges that cover [0, n) of a row-wise step over (n, width)
  // values (norms, rope, activations, residual adds): on the pool's threads where the rows
  // hold enough values to pay for a section (a prefill), else at once on this thread (a
  // decode step's row: less than a microsecond of work).
  template <class F>
  void rows_in_parallel(int64_t n, int64_t width, F&& f) {
    constexpr int64_t kMinValues = 16384;  // per item of work
    const int64_t items = std::min<int64_t>(n, n * width / kMinValues);
    if (items < 2 || projector_.threads() == 1) {
      f(int64_t{0}, n);
      return;
    }
    projector_.pool().for_each(items, [&](int64_t i, int) { f(n * i / items, n * (i + 1) / items); }, "rows", width);
  }

  // A recurrent layer's step(r0, r1) over the batch rows [o, o + chunk.count) of one chunk:
  // in one piece, or, for a verification chunk (RowTokens::checkpoints), token by token as
  // decode steps run them, the layer's state of the chunk's row copied after each token but
  // the last (whose state is the row's own after the pass).
  template <class F>
  static void recurrent_pieces(const RowTokens& chunk, int64_t o, int64_t layer, StateCache& state, F&& step) {
    if (chunk.checkpoints < 0) {
      step(o, o + chunk.count);
      return;
    }
    for (int64_t i = 0; i < chunk.count; ++i) {
      step(o + i, o + i + 1);
      if (i + 1 < chunk.count) state.snapshot_layer(layer, chunk.row, chunk.checkpoints + i);
    }
  }

  // Whether some layer keeps a recurrent state (ModelConfig::recurrent).
  bool any_recurrent_layer() const {
    for (int64_t l = 0; l < config_.layers; ++l)
      if (config_.recurrent(l)) return true;
    return false;
  }

  // Makes buf (rows, width) hold at least `rows` rows: reallocates (contents lost) only
  // when it has fewer, so a scratch buffer keeps the largest batch's size and the decode
  // steps after a prefill do not allocate. Rows past the batch's n are stale.
  static void grow_rows(xt::xtensor<float, 2>& buf, int64_t rows, int64_t width);

  // Counts a weight toward weight_bytes() (architectures call it for every tensor they read).
  void count_weight(const LinearWeight& w) {
    weight_bytes_ += w.bytes();
    int8_weights_ = int8_weights_ || w.reads_int8(Activations::Int8TwoLevel);
  }
  void count_weight(int64_t floats) { weight_bytes_ += 4 * floats; }

  // A projection: its weights and an optional bias.
  struct Linear {
    LinearWeight w;               // (out, in); empty (out() == 0) where a layer has none
    const float* bias = nullptr;  // (out) or null
  };
  // Tensors of t, shape-checked (TensorMap) and counted toward weight_bytes(): a float32
  // vector (size), a matrix (out, in), and a projection (name.weight and, where present,
  // name.bias).
  const float* read_vector(const TensorMap& t, const std::string& name, int64_t size);
  LinearWeight read_matrix(const TensorMap& t, const std::string& name, int64_t out, int64_t in);
  Linear read_linear(const TensorMap& t, const std::string& name, int64_t out, int64_t in);
  // ValueError "<model>: <what> is <value>" unless value is finite.
  static void check_finite(const char* model, float value, const char* what);

  // Rotary cos/sin of the positions used so far, (positions, inv_freq.size()) each.
  struct RotaryTable {
    std::vector<float> cos, sin;
  };
  // Extends table to positions [0, end) as transformers computes them: the angle is the
  // float32 product position * inv_freq, its cos/sin taken in double, then times factor in
  // float32 (LongRoPE's attention factor, else 1). Positions already computed are kept.
  static void extend_rotary(RotaryTable& table, const std::vector<float>& inv_freq, float factor, int64_t end);

  // ---- builders (builders.cpp): the pieces of a block ----
  // Each runs over the batch's n rows. Row-wise steps (norms, rotary, activations, residual
  // adds) run on the pool's threads where the rows pay for it (rows_in_parallel), and every
  // product of one input in one parallel section of the projector.

  // (n, C) the block's residual branch (a family's block works in it: the branch's normed
  // input, then its output), valid for the current forward.
  float* branch() { return builder_.branch.data(); }
  // x (n, C) = the rows of `table` (vocab, C) of the batch's tokens, times scale unless it is 1.
  void embed_tokens(float* x, const LinearWeight& table, const ForwardPass& batch, float scale = 1.0f);
  // out (n, width) = RMSNorm of x (n, width) with weight (width): x / sqrt(mean(x^2) + eps) * weight.
  // out may be x.
  void rms_norm(float* out, const float* x, const float* weight, int64_t n, int64_t width, float eps);
  // out (n, width) = LayerNorm of x (n, width) with weight and bias (width). out may be x.
  void layer_norm(float* out, const float* x, const float* weight, const float* bias, int64_t n, int64_t width,
                  float eps);
  // A norm a block may or may not have (a pre-norm, a post-norm): out (n, width) = RMSNorm of x
  // with weight, returned; with no weight (null: the block has no such norm, as OLMo 2 has no
  // pre-norms and Llama no post-norms), x itself, unchanged. out may be x.
  const float* rms_norm_or_pass(float* out, const float* x, const float* weight, int64_t n, int64_t width,
                                float eps);
  // x (n, width) += h (n, width), h times scale first unless it is 1 (Granite's residual multiplier).
  void add_residual(float* x, const float* h, int64_t n, int64_t width, float scale = 1.0f);

  // The projections of an attention layer: q, k and v apart, or fused in one matrix.
  struct AttentionWeights {
    Linear q, k, v;   // q (H hd, C), k and v (KV hd, C); empty when qkv is set
    Linear qkv;       // (H hd + 2 KV hd, C) q | k | v in one matrix (GPT-2's c_attn), or empty
    Linear o;         // (C, H hd)
    const float* q_norm = nullptr;  // (hd) per-head RMSNorm of the queries, or null
    const float* k_norm = nullptr;  // (hd) per-head RMSNorm of the keys, set with q_norm
    // q_norm (H hd) and k_norm (KV hd) normalise the whole projection, all heads together
    // (OLMo 2), rather than each head apart
    bool qk_norm_across_heads = false;
    const float* sinks = nullptr;   // (H) attention sinks, a learned logit per query head (attention.h), or null
    const float* v_norm = nullptr;  // (hd) per-head RMSNorm of the values, or null (Gemma 4: all ones)
    bool values_from_keys = false;  // v is k's projection before its norm and rotation (attention_k_eq_v); v empty
  };
  // How a layer attends.
  struct AttentionParams {
    float scale = 1.0f;                   // scores = scale * q . k
    float softcap = 0.0f;                 // > 0: scores soft-capped (attention.h)
    const RotaryTable* rotary = nullptr;  // (positions, rotary_dim / 2) cos, sin; null: no rotary embedding
    int64_t rotary_dim = 0;               // leading dimensions of each head that rotate
    float norm_eps = 0.0f;                // of q_norm and k_norm
  };
  // out (n, C) = the attention branch of h (n, C), its normed input: q, k and v projected in
  // one parallel section, each head of q and k (or each whole projection:
  // qk_norm_across_heads) RMS-normed (where w has the norms) and
  // rotated (where params.rotary is set), values normed (where w has v_norm), keys and values
  // written to the cache at the tokens' positions, cached causal attention (attend), output
  // projection. The layer's own kv heads and head_dim (ModelConfig::kv_layers); a layer that
  // reads another layer's keys and values projects only q. out may be h.
  void attention(float* out, const float* h, const AttentionWeights& w, const AttentionParams& params,
                 int64_t layer, const ForwardPass& batch, KVCache& cache);

  enum class Activation { SiLU, GeluTanh, GeluErf };  // silu; "gelu_new" / gelu_pytorch_tanh; "gelu"
  // The projections of an MLP: gated (gate set) or plain.
  struct MlpWeights {
    Linear gate;  // (I, C), or empty: a plain MLP
    Linear up;    // (I, C) (GPT-2's c_fc)
    Linear down;  // (C, I) (GPT-2's c_proj)
  };
  // out (n, C) = down(act(gate(h)) * up(h)) of h (n, C) (SwiGLU, GeGLU), gate and up in one
  // parallel section; without gate, down(act(up(h))). out may be h.
  void mlp(float* out, const float* h, const MlpWeights& w, Activation act, int64_t n);

  // Gives the model a sparse mixture of experts (ModelConfig::experts > 0; moe.h), before
  // any read_experts.
  void use_experts(ExpertOptions options);
  // The experts of the layer under `prefix` where it has a router (SparseMoe::has_layer),
  // counted toward weight_bytes(): their index for experts(); -1 where the layer has none
  // or the model no mixture.
  int64_t read_experts(const TensorMap& t, const std::string& prefix);
  // The mixture of experts `index` of h (n, C): a pointer to its output (n, C), valid until
  // the next call. route (n, C): the router's input where it is not h (SparseMoe::forward), or null.
  const float* experts(const float* h, int64_t index, int64_t n, const float* route = nullptr);

  ModelConfig config_;
  LinearWeight lm_head_;  // (vocab, C), set by the architecture
  const float* lm_head_bias_ = nullptr;  // (vocab) added to the logits, or null; set by the architecture
  float final_logit_softcap_ = 0.0f;  // > 0: logits = cap * tanh(logits / cap) (Gemma 2), set by the architecture
  int64_t widest_mlp_ = 0;  // the widest MLP where a layer's exceeds ModelConfig::intermediate (Gemma 4's double-wide)
  Projector projector_;   // runs every product (the pool is held for each forward)

 private:
  // attend() for the chunks it attends token by token (every chunk, or where the layer attends
  // in query blocks, the chunks of at most kTokenByTokenAttention tokens: decoder.cpp's
  // query_blocks), whose keys and values are in the cache: every token's attention cut into items
  // of one kv head and one block of positions (attention.h) that the threads share, then merged
  // token by token.
  void attend_tokens(float* out, const float* q, int64_t ldq, int64_t layer, const ForwardPass& batch, KVCache& cache,
                     const AttentionOptions& options, bool in_query_blocks);

  // attend_tokens' unit of tokens: tokens [o0, o1) of the batch (of chunk ci), at most
  // kTokenByTokenAttention, which share each block's keys and values; `first`: the index of
  // its first token among its round's.
  struct Piece {
    size_t ci;
    int64_t o0, o1, first;
  };

  // The final-logit soft-cap over rows of logits (rows, vocab; row stride ld).
  void softcap_logits(float* logits, int64_t rows, int64_t ld) const;

  // attend's items of work (per block of a sliding window's ring): rows [i0, i1) of chunk ci,
  // whose rows start at o in the batch, cut at positions that are multiples of kPrefillChunk.
  struct QueryBlock {
    size_t ci;
    int64_t o, i0, i1;
  };

  // Grows the builders' scratch to the batch (forward calls it before reserve).
  void reserve_builders(const ForwardPass& batch);

  // Scratch of the builders, n = the batch's tokens (reserve_builders).
  struct BuilderScratch {
    xt::xtensor<float, 2> branch; // (n, C) a residual branch (branch())
    xt::xtensor<float, 2> q;      // (n, H hd) queries; with fused weights (n, H hd + 2 KV hd): q | k | v
    xt::xtensor<float, 2> k;      // (n, KV hd) keys, on their way into the cache (unfused weights)
    xt::xtensor<float, 2> v;      // (n, KV hd) values, on their way into the cache (unfused weights)
    xt::xtensor<float, 2> att;    // (n, H hd) attention output, heads side by side
    xt::xtensor<float, 2> inner;  // (n, I) gate projection, then act(gate) * up; plain MLP: act(up)
    xt::xtensor<float, 2> up;     // (n, I) up projection (gated MLP)
  };

  // Scratch of the shared loop, n = the batch's tokens (reserved in forward).
  struct Scratch {
    std::vector<QueryBlock> query_blocks;  // attend's; its capacity kept across passes
    xt::xtensor<float, 2> x;       // (n, C) the residual stream
    xt::xtensor<float, 2> normed;  // (n, C) final norm of the rows the LM head reads
    xt::xtensor<float, 1> scores;  // (threads, ForwardPass::max_scores) each thread's attention probabilities
    xt::xtensor<float, 1> kv;      // (threads, 2, ForwardPass::end, head_dim) a prefill's keys, values as floats (half cache)
    xt::xtensor<float, 1> padded;  // (threads, 2, kPrefillChunk, heads * head_dim) a padded query block's queries, outputs
    xt::xtensor<float, 1> parts;   // (parts, block_part_floats) attend_tokens: a round's partial attention
    xt::xtensor<float, 1> attention;  // (threads, block_scratch_floats) attend_tokens: each thread's scratch
    std::vector<Piece> pieces;        // attend_tokens' pieces
    std::vector<int64_t> first_item;  // (a round's tokens + 1) attend_tokens: each token's first part
    std::vector<int64_t> piece_item;  // (a round's pieces + 1) attend_tokens: each piece's first item
    xt::xtensor<float, 2> logits;  // (chunks, vocab) LM head output when rows are out of order
  };

  ForwardPass batch_;
  Scratch scratch_;
  BuilderScratch builder_;
  BlockLayout layout_;
  std::unique_ptr<SparseMoe> experts_;          // routing and scratch of the sparse layers (use_experts)
  std::vector<SparseMoe::Layer> expert_layers_; // the sparse layers' routers and experts (read_experts)
  int64_t weight_bytes_ = 0;
  bool int8_weights_ = false;  // some weight multiplies int8 activations outside exact mode
};

}  // namespace kvgen
