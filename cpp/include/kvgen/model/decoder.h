// DecoderModel: the forward loop every built-in decoder-only architecture shares. It
// checks the request (context overflow, token ids), lays the new tokens of all chunks
// out as one (n, C) batch, runs the architecture's embedding and blocks over it, keeps
// the cache lengths, and projects the last (or every) position onto the vocabulary.
// An architecture (gpt2.h, llama.h) supplies only embed / block / final_norm and uses
// attend() for the cached causal attention.
#pragma once

#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/model/model.h"

namespace kvgen {

class DecoderModel : public Model {
 public:
  const ModelConfig& config() const override { return config_; }
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
    int64_t max_scores = 0;          // attention scratch: max over chunks of count * (start + count)
  };

  // Called once per forward, after the request checks and before embed: the batch uses
  // positions below `end` (<= context_length). Position tables grow here, so they are
  // sized by what generations use, not by the declared context.
  virtual void reserve_positions(int64_t end) { (void)end; }
  // x (n, C): the input embeddings of the batch's tokens.
  virtual void embed(float* x, const Batch& batch) = 0;
  // One residual block over x (n, C) in place; writes the layer's keys/values.
  virtual void block(int64_t layer, float* x, const Batch& batch, KVCache& cache) = 0;
  // out (m, C) = the final norm of x (m, C).
  virtual void final_norm(float* out, const float* x, int64_t m) = 0;

  // Writes k, v (n, kv_heads * head_dim; row strides ldk, ldv) into the cache at the
  // tokens' positions, then out (n, heads * head_dim) = causal attention of q (n, heads *
  // head_dim; row stride ldq) over each chunk's row.
  void attend(float* out, const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v, int64_t ldv,
              int64_t layer, const Batch& batch, KVCache& cache, float scale);

  // A float buffer of at least n floats, kept between calls (slot: the architecture's own
  // numbering, 0..15); grows, never shrinks, so hot calls do not allocate.
  float* scratch(int slot, int64_t n);

  ModelConfig config_;
  const float* lm_head_ = nullptr;  // (vocab, C), set by the architecture

 private:
  Batch batch_;
  std::vector<xt::xtensor<float, 1>> buffers_ = std::vector<xt::xtensor<float, 1>>(20);
};

}  // namespace kvgen
