// StateCache: the fixed-size recurrent state of every recurrent layer for `rows`
// sequences, beside the KV cache of a hybrid model (Gated DeltaNet in Qwen3.5 and
// Qwen3-Next, LFM2's short convolutions, Mamba-2). Per row and recurrent layer it holds
//   the convolution window: (conv_channels, conv_kernel - 1), the last inputs of the
//     causal depthwise convolution, oldest first (transformers keeps the same layout);
//   the recurrent matrix: (heads, key_dim, value_dim) (none for a layer with heads = 0).
// Everything is float32, as transformers keeps it. Its size does not depend on the
// context: a decode step reads and writes a constant amount.
// Operations mirror the KV cache's (kv_cache.h): reorder rows by parent (beam search),
// copy a row to another (n > 1 shares the prompt's state), reset a row, and snapshots
// (a numbered spare copy of a row's state: the state at a verified position for
// speculative rollback, or at a chunk boundary for the prefix cache), taken and restored.
// A snapshot slot's memory is allocated when the slot is first written, so the slots no
// request uses (an engine reserves up to 5 per slot: the prefix cache's and speculation's)
// cost no memory.
// Rows live in blocks that the row points to (physical_), so a permutation of beams
// copies nothing; a parent's extra children copy the parent's block.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace kvgen {

// The state one recurrent layer keeps per row (sizes read from the model's file).
struct RecurrentLayerShape {
  int64_t conv_channels = 0;  // channels of the causal depthwise convolution (0: none)
  int64_t conv_kernel = 0;    // its kernel width (the window keeps conv_kernel - 1 inputs)
  int64_t heads = 0;          // heads of the recurrent matrix (0: none, as LFM2's short convolution)
  int64_t key_dim = 0;        // (heads, key_dim, value_dim)
  int64_t value_dim = 0;
};

class StateCache {
 public:
  // The most bytes a StateCache may take (rows, layers and snapshots together): a file
  // that declares absurd widths gets a ValueError naming the sizes, not an allocation.
  static constexpr int64_t kMaxBytes = int64_t{1} << 37;  // 128 GiB
  // The most snapshot slots.
  static constexpr int64_t kMaxSnapshots = int64_t{1} << 16;

  // ValueError when a size is negative, above kvgen's limits (limits.h) or the total
  // above kMaxBytes. The state starts at zero (transformers' initial state).
  StateCache(std::vector<RecurrentLayerShape> layers, int64_t rows, int64_t snapshots = 0);

  int64_t rows() const { return static_cast<int64_t>(physical_.size()); }
  int64_t layers() const { return static_cast<int64_t>(layers_.size()); }
  int64_t snapshots() const { return snapshots_; }
  const RecurrentLayerShape& shape(int64_t layer) const { return layers_[layer]; }

  // Floats of one row's convolution window and recurrent matrix of `layer`.
  int64_t conv_floats(int64_t layer) const { return conv_floats_[layer]; }
  int64_t recurrent_floats(int64_t layer) const { return recurrent_floats_[layer]; }
  // Floats of one row's whole state (every layer).
  int64_t row_floats() const { return row_floats_; }

  // (conv_channels, conv_kernel - 1) window and (heads, key_dim, value_dim) matrix of
  // (layer, row). A pointer stays valid until the next reorder.
  float* conv(int64_t layer, int64_t row) { return block(physical_[row]) + conv_offset_[layer]; }
  float* recurrent(int64_t layer, int64_t row) { return block(physical_[row]) + recurrent_offset_[layer]; }

  // Row r takes the state of row parents[r] (before the call), for every r; ValueError
  // when a parent is outside [0, rows). A row whose parent has no earlier child takes
  // its parent's block without a copy; the other children copy it into blocks nobody took.
  void reorder(const int64_t* parents);
  // Row dst becomes a copy of row src.
  void copy_row(int64_t src, int64_t dst);
  // Row `row` back to the initial (zero) state.
  void reset(int64_t row);
  // Snapshot slot `slot` takes a copy of row's state; restore copies it back to a row
  // (any row: a prefix-cache snapshot starts another sequence). ValueError for a slot
  // outside [0, snapshots) or a restore of a slot never taken.
  void snapshot(int64_t row, int64_t slot);
  void restore(int64_t slot, int64_t row);
  // Snapshot slot `slot` takes a copy of one layer's state of row (a per-token checkpoint,
  // written layer by layer during a forward pass: RowTokens::checkpoints). The same checks.
  void snapshot_layer(int64_t layer, int64_t row, int64_t slot);

  // Bytes the cache may hold: its rows and every snapshot slot once written (bytes_for).
  int64_t bytes() const { return (rows() + snapshots_) * row_floats_ * static_cast<int64_t>(sizeof(float)); }
  // Bytes allocated now: the rows and the snapshot slots written so far.
  int64_t held_bytes() const {
    return (rows() + taken_count_) * row_floats_ * static_cast<int64_t>(sizeof(float));
  }
  // Bytes a cache of these sizes takes, with the same checks as the constructor.
  static int64_t bytes_for(const std::vector<RecurrentLayerShape>& layers, int64_t rows, int64_t snapshots = 0);

 private:
  float* block(int64_t b) { return data_.data() + b * row_floats_; }
  void check_row(int64_t row, const char* what) const;
  void check_slot(int64_t slot) const;

  std::vector<RecurrentLayerShape> layers_;
  std::vector<int64_t> conv_floats_, recurrent_floats_;  // (layer) per row
  std::vector<int64_t> conv_offset_, recurrent_offset_;  // (layer) within a row's block
  int64_t row_floats_ = 0;
  int64_t snapshots_ = 0;
  std::vector<int64_t> physical_;   // (rows) the block each row's state lives in
  std::vector<float> data_;         // (rows, row_floats): the row blocks
  // (snapshots) each slot's copy of a row's state (row_floats), allocated at its first
  // write (null: never written)
  std::vector<std::unique_ptr<float[]>> snapshot_data_;
  int64_t taken_count_ = 0;  // slots written
};

}  // namespace kvgen
