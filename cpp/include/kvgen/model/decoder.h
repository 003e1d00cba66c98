// DecoderModel: the forward loop every built-in decoder-only architecture shares. It
// checks the request (context overflow, token ids), lays the new tokens of all chunks
// out as one (n, C) batch, runs the architecture's embedding and blocks over it, keeps
// the cache lengths, and projects the last (or every) position onto the vocabulary.
// An architecture (gpt2.h, llama.h) supplies only embed / block / final_norm and uses
// attend() for the cached causal attention.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/model/attention.h"
#include "kvgen/model/linear_weight.h"
#include "kvgen/model/model.h"
#include "kvgen/model/projector.h"
#include "kvgen/model/tensors.h"

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
  // Validates the config (ModelConfig::validate) before the architecture reads its
  // tensors or allocates anything sized by it.
  explicit DecoderModel(ModelConfig config) : config_(std::move(config)) { config_.validate(); }

  // The new tokens of one forward call, chunk after chunk.
  struct Batch {
    const std::vector<RowTokens>* chunks = nullptr;
    std::vector<int64_t> starts;     // (chunks) cached length of each chunk's row
    std::vector<int64_t> positions;  // (n) position of every token
    std::vector<int64_t> tokens;     // (n) token ids
    int64_t n = 0;
    int64_t end = 0;                 // one past the largest position (<= context_length)
    int64_t max_scores = 0;          // attention scratch: max over chunks of count * (start + count)
    int64_t max_count = 0;           // the longest chunk
    int64_t min_count = 0;           // the shortest chunk
    bool any_by_tokens = false;      // some chunk is attended token by token
    bool any_in_blocks = false;      // some chunk is attended in query blocks
  };

  // Called once per forward, after the request checks and before embed: grows the
  // architecture's scratch (grow_rows) and position tables to what this batch needs.
  // Nothing is allocated later in the forward, and nothing at all once the largest
  // batch (the prefill, as a rule) has been seen; position tables are sized by the
  // positions generations use, not by the declared context.
  virtual void reserve(const Batch& batch) = 0;
  // x (n, C): the input embeddings of the batch's tokens.
  virtual void embed(float* x, const Batch& batch) = 0;
  // One residual block over x (n, C) in place; writes the layer's keys/values.
  virtual void block(int64_t layer, float* x, const Batch& batch, KVCache& cache) = 0;
  // out (m, C) = the final norm of x (m, C).
  virtual void final_norm(float* out, const float* x, int64_t m) = 0;

  // Writes k, v (n, kv_heads * head_dim; row strides ldk, ldv) into the cache at the
  // tokens' positions, then out (n, heads * head_dim) = causal attention of q (n, heads *
  // head_dim; row stride ldq) over each chunk's row, scores scaled by `scale` and, when
  // softcap > 0, soft-capped (attention.h). A layer with a sliding window (ModelConfig::
  // window) sees only its window, and its ring of slots is written and read a block of
  // tokens at a time, so that no key is overwritten before the tokens that see it have.
  void attend(float* out, const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v, int64_t ldv,
              int64_t layer, const Batch& batch, KVCache& cache, float scale, float softcap = 0.0f);

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
    LinearWeight w;     // (out, in)
    const float* bias;  // (out) or null
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

  ModelConfig config_;
  LinearWeight lm_head_;  // (vocab, C), set by the architecture
  float final_logit_softcap_ = 0.0f;  // > 0: logits = cap * tanh(logits / cap) (Gemma 2), set by the architecture
  Projector projector_;   // runs every product (the pool is held for each forward)

 private:
  // attend() for chunks of at most kTokenByTokenAttention tokens, whose keys and values
  // are in the cache: every token's attention cut into items of one kv head and one block
  // of positions (attention.h) that the threads share, then merged token by token.
  void attend_tokens(float* out, const float* q, int64_t ldq, int64_t layer, const Batch& batch, KVCache& cache,
                     const AttentionOptions& options);

  // The final-logit soft-cap over rows of logits (rows, vocab; row stride ld).
  void softcap_logits(float* logits, int64_t rows, int64_t ld) const;

  // attend's items of work (per block of a sliding window's ring): rows [i0, i1) of chunk ci,
  // whose rows start at o in the batch, cut at positions that are multiples of kPrefillChunk.
  struct QueryBlock {
    size_t ci;
    int64_t o, i0, i1;
  };

  // Scratch of the shared loop, n = the batch's tokens (reserved in forward).
  struct Scratch {
    std::vector<QueryBlock> query_blocks;  // attend's; its capacity kept across passes
    xt::xtensor<float, 2> x;       // (n, C) the residual stream
    xt::xtensor<float, 2> normed;  // (n, C) final norm of the rows the LM head reads
    xt::xtensor<float, 1> scores;  // (threads, Batch::max_scores) each thread's attention probabilities
    xt::xtensor<float, 1> kv;      // (threads, 2, Batch::end, head_dim) a prefill's keys, values as floats (half cache)
    xt::xtensor<float, 1> padded;  // (threads, 2, kPrefillChunk, heads * head_dim) a padded query block's queries, outputs
    xt::xtensor<float, 1> parts;   // (items, block_part_floats) decode: each item's partial attention
    xt::xtensor<float, 1> attention;  // (threads, block_scratch_floats) decode: each thread's scratch
    std::vector<int64_t> first_item;  // (n + 1) decode: each token's first item
    std::vector<int64_t> token_row;   // (n) decode: each token's cache row
    xt::xtensor<float, 2> logits;  // (chunks, vocab) LM head output when rows are out of order
  };

  Batch batch_;
  Scratch scratch_;
  int64_t weight_bytes_ = 0;
  bool int8_weights_ = false;  // some weight multiplies int8 activations outside exact mode
};

}  // namespace kvgen
