// StateCache: the recurrent layers' per-row state (state_cache.h).
#include "kvgen/runtime/state_cache.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "kvgen/errors.h"
#include "kvgen/limits.h"

namespace kvgen {
namespace {

// The widest convolution kernel accepted (models use 2 to 4).
constexpr int64_t kMaxConvKernel = 1024;

void check_size(const std::string& what, int64_t value, int64_t limit) {
  if (value < 0) throw ValueError(what + " = " + std::to_string(value) + " must not be negative");
  limits::check_at_most(what, value, limit);
}

int64_t add_checked(int64_t a, int64_t b, const char* what) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) throw ValueError(std::string(what) + ": the size overflows");
  return out;
}

// Floats of one row's state: (conv, recurrent) of one layer, checked.
std::pair<int64_t, int64_t> layer_floats(const RecurrentLayerShape& s, int64_t layer) {
  const std::string name = "recurrent layer " + std::to_string(layer) + " ";
  check_size(name + "conv_channels", s.conv_channels, limits::kMaxWidth);
  check_size(name + "conv_kernel", s.conv_kernel, kMaxConvKernel);
  check_size(name + "heads", s.heads, limits::kMaxHeads);
  check_size(name + "key_dim", s.key_dim, limits::kMaxWidth);
  check_size(name + "value_dim", s.value_dim, limits::kMaxWidth);
  if (s.conv_channels > 0 && s.conv_kernel < 1)
    throw ValueError(name + "has " + std::to_string(s.conv_channels) + " conv channels and conv_kernel = " +
                     std::to_string(s.conv_kernel) + " (must be at least 1)");
  const int64_t conv = limits::checked_mul(s.conv_channels, std::max<int64_t>(s.conv_kernel - 1, 0), "state cache");
  const int64_t rec = limits::checked_mul(limits::checked_mul(s.heads, s.key_dim, "state cache"), s.value_dim,
                                          "state cache");
  return {conv, rec};
}

}  // namespace

int64_t StateCache::bytes_for(const std::vector<RecurrentLayerShape>& layers, int64_t rows, int64_t snapshots) {
  check_size("recurrent layers", static_cast<int64_t>(layers.size()), limits::kMaxLayers);
  check_size("state cache rows", rows, limits::kMaxRows);
  check_size("state cache snapshots", snapshots, kMaxSnapshots);
  int64_t per_row = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto [conv, rec] = layer_floats(layers[l], static_cast<int64_t>(l));
    per_row = add_checked(add_checked(per_row, conv, "state cache"), rec, "state cache");
  }
  const int64_t bytes = limits::checked_mul(limits::checked_mul(per_row, rows + snapshots, "state cache"),
                                            sizeof(float), "state cache");
  if (bytes > kMaxBytes)
    throw ValueError("the recurrent state cache would take " + std::to_string(bytes) + " bytes (" +
                     std::to_string(rows) + " rows and " + std::to_string(snapshots) + " snapshots of " +
                     std::to_string(per_row) + " floats), above kvgen's limit of " + std::to_string(kMaxBytes));
  return bytes;
}

StateCache::StateCache(std::vector<RecurrentLayerShape> layers, int64_t rows, int64_t snapshots)
    : layers_(std::move(layers)), snapshots_(snapshots) {
  bytes_for(layers_, rows, snapshots);  // every size checked before allocating
  for (size_t l = 0; l < layers_.size(); ++l) {
    const auto [conv, rec] = layer_floats(layers_[l], static_cast<int64_t>(l));
    conv_floats_.push_back(conv);
    recurrent_floats_.push_back(rec);
    conv_offset_.push_back(row_floats_);
    recurrent_offset_.push_back(row_floats_ + conv);
    row_floats_ += conv + rec;
  }
  physical_.resize(rows);
  for (int64_t r = 0; r < rows; ++r) physical_[r] = r;
  snapshot_data_.resize(snapshots);  // allocated at each slot's first write
  data_.assign(static_cast<size_t>(rows * row_floats_), 0.0f);
}

void StateCache::check_row(int64_t row, const char* what) const {
  if (row < 0 || row >= rows())
    throw ValueError(std::string(what) + " = " + std::to_string(row) + " is outside the state cache's rows [0, " +
                     std::to_string(rows()) + ")");
}

void StateCache::check_slot(int64_t slot) const {
  if (slot < 0 || slot >= snapshots_)
    throw ValueError("snapshot slot " + std::to_string(slot) + " is outside the state cache's slots [0, " +
                     std::to_string(snapshots_) + ")");
}

void StateCache::reorder(const int64_t* parents) {
  const int64_t n = rows();
  for (int64_t r = 0; r < n; ++r) check_row(parents[r], "parent");
  // The first child of each parent takes the parent's block; the others copy it into a
  // block that no child takes (the blocks of rows that are nobody's first child's parent).
  std::vector<int64_t> first_child(n, -1), next(n);
  for (int64_t r = 0; r < n; ++r)
    if (first_child[parents[r]] < 0) first_child[parents[r]] = r;
  std::vector<int64_t> free_blocks;
  for (int64_t p = 0; p < n; ++p)
    if (first_child[p] < 0) free_blocks.push_back(physical_[p]);
  for (int64_t r = 0; r < n; ++r) {
    const int64_t p = parents[r];
    if (first_child[p] == r) {
      next[r] = physical_[p];
    } else {
      next[r] = free_blocks.back();
      free_blocks.pop_back();
      std::memcpy(block(next[r]), block(physical_[p]), row_floats_ * sizeof(float));
    }
  }
  physical_ = std::move(next);
}

void StateCache::copy_row(int64_t src, int64_t dst) {
  check_row(src, "source row");
  check_row(dst, "destination row");
  if (src != dst) std::memcpy(block(physical_[dst]), block(physical_[src]), row_floats_ * sizeof(float));
}

void StateCache::reset(int64_t row) {
  check_row(row, "row");
  std::fill_n(block(physical_[row]), row_floats_, 0.0f);
}

void StateCache::snapshot(int64_t row, int64_t slot) {
  check_row(row, "row");
  check_slot(slot);
  std::unique_ptr<float[]>& copy = snapshot_data_[slot];
  if (!copy) {
    copy = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(row_floats_));
    ++taken_count_;
  }
  std::memcpy(copy.get(), block(physical_[row]), row_floats_ * sizeof(float));
}

void StateCache::snapshot_layer(int64_t layer, int64_t row, int64_t slot) {
  check_row(row, "row");
  check_slot(slot);
  if (layer < 0 || layer >= layers()) throw ValueError("state layer " + std::to_string(layer) + " is out of range");
  std::unique_ptr<float[]>& copy = snapshot_data_[slot];
  if (!copy) {
    copy = std::make_unique<float[]>(static_cast<size_t>(row_floats_));  // zeros where no layer writes
    ++taken_count_;
  }
  const float* from = block(physical_[row]);
  std::memcpy(copy.get() + conv_offset_[layer], from + conv_offset_[layer], conv_floats_[layer] * sizeof(float));
  std::memcpy(copy.get() + recurrent_offset_[layer], from + recurrent_offset_[layer],
              recurrent_floats_[layer] * sizeof(float));
}

void StateCache::restore(int64_t slot, int64_t row) {
  check_row(row, "row");
  check_slot(slot);
  if (!snapshot_data_[slot])
    throw ValueError("snapshot slot " + std::to_string(slot) + " holds no snapshot to restore");
  std::memcpy(block(physical_[row]), snapshot_data_[slot].get(), row_floats_ * sizeof(float));
}

}  // namespace kvgen
