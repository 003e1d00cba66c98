// Candidates: the tokens of one row still in play, as a view over preallocated
// buffers. Dense (every token, values in the row itself) until a filter keeps a subset;
// sparse after (ids + logits in workspace buffers), with a `sorted` flag so that later
// filters do not sort again. Also the Workspace that owns those buffers, and RowContext,
// the token history that history-reading processors see.
#pragma once

#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

namespace kvgen {

// What a processor may read about the row besides its logits. Processors hold no
// state: everything that depends on the past comes through here.
struct RowContext {
  const int64_t* history = nullptr;  // (history_len) prompt + generated tokens
  int64_t history_len = 0;
  int64_t prompt_len = 0;            // leading tokens of history that are the prompt
  // (ceil(vocab / 32)) constrained decoding: bit t % 32 of word t / 32 set when token t is
  // allowed (llguidance's bitmask layout); nullptr: every token allowed.
  const uint32_t* allowed = nullptr;
  // The key of the row's random draws (seed, sequence, step): processors that draw
  // (XTC) use their own Philox lane of it, so the row's draws do not depend on the batch.
  uint64_t seed = 0, sequence = 0, step = 0;
  float mirostat_mu = 0.0f;          // mirostat's current maximum surprise (bits) for the row
};

// Scratch memory for processing one row at a time, sized once for the largest
// vocabulary seen so that the per-token path never allocates.
class Workspace {
 public:
  void reserve(int64_t vocab);
  int64_t capacity() const { return static_cast<int64_t>(ids_a.size()); }

  xt::xtensor<int32_t, 1> ids_a, ids_b;     // (vocab) candidate ids, double-buffered
  xt::xtensor<float, 1> vals_a, vals_b;     // (vocab) candidate logits, double-buffered
  xt::xtensor<float, 1> weights;            // (vocab) exp(logit - max) of the candidates
  xt::xtensor<float, 1> keys;               // (vocab) selection keys (smaller = kept first)
  xt::xtensor<int32_t, 1> chosen;           // (vocab) positions a filter keeps
  xt::xtensor<int32_t, 1> positions;        // (vocab) sort permutation / selection scratch
  xt::xtensor<int32_t, 1> buckets;          // (vocab) histogram bucket of each candidate
  xt::xtensor<float, 1> select_values;      // (vocab + 2 * blocks) scratch of selection::kth_largest
  xt::xtensor<uint32_t, 1> counts;          // (vocab) per-token counts, kept all-zero between uses
  std::vector<int32_t> touched;             // tokens whose count is non-zero
  std::vector<int64_t> repeats;             // (history) DRY: repeat length ending at each position
  std::vector<double> bucket_mass;          // (kBuckets) histogram of weights
  std::vector<int32_t> bucket_count;        // (kBuckets)
};

class Candidates {
 public:
  // Starts dense over `row` (vocab floats, processed in place).
  Candidates(float* row, int64_t vocab, Workspace& ws)
      : row_(row), vocab_(vocab), ws_(&ws), size_(vocab) {}

  float* row() const { return row_; }
  int64_t vocab() const { return vocab_; }
  int64_t size() const { return size_; }
  bool dense() const { return dense_; }
  bool sorted() const { return sorted_; }

  // Values of the candidates: the row while dense, the kept logits after.
  float* values() const { return dense_ ? row_ : vals_; }
  // Ids of the candidates; nullptr while dense (id == position).
  const int32_t* ids() const { return dense_ ? nullptr : ids_; }
  int32_t id_at(int64_t pos) const { return dense_ ? static_cast<int32_t>(pos) : ids_[pos]; }

  // Keeps the candidates at `positions[0..count)` (positions into the current view),
  // in that order; `sorted` says whether that order is by descending logit.
  void keep(const int32_t* positions, int64_t count, bool sorted);

  // Keeps the first `count` sparse candidates.
  void truncate(int64_t count) { size_ = count < size_ ? count : size_; }

  // Sorts sparse candidates by descending logit (a dense row is made sparse first).
  void sort_descending();

  // Writes the candidates back into the row: kept logits in place, -inf elsewhere.
  void materialize();

  // materialize(), then view every token again (for processors that rewrite the row).
  void make_dense();

 private:
  float* row_;
  int64_t vocab_;
  Workspace* ws_;
  int64_t size_;
  bool dense_ = true;
  bool sorted_ = false;
  bool in_a_ = false;         // which of the double buffers holds the candidates
  int32_t* ids_ = nullptr;
  float* vals_ = nullptr;
};

}  // namespace kvgen
