// SlotCache: range checks, duplicate detection, beam reorders and row copies over the
// KV cache of the engine's slots.
#include "kvgen/runtime/slot_cache.h"

#include <algorithm>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/limits.h"

namespace kvgen {

namespace {

KVCache checked_cache(int64_t layers, int64_t slots, int64_t context, int64_t kv_heads, int64_t head_dim,
                      int64_t vocab, const std::vector<int64_t>& windows, int64_t verify_positions, KVType type,
                      const std::vector<RecurrentLayerShape>& recurrent, int64_t snapshots,
                      const KVLayers& kv_layers) {
  if (slots < 1) throw ValueError("slots must be >= 1, got " + std::to_string(slots));
  limits::check_at_most("slots", slots, limits::kMaxRows);
  if (context < 1) throw ValueError("context must be >= 1, got " + std::to_string(context));
  limits::checked_mul(slots, vocab, "logits (slots x vocab_size)");
  if (verify_positions < 0 || verify_positions > context)
    throw ValueError("verify_positions must be in [0, " + std::to_string(context) + "] (the context), got " +
                     std::to_string(verify_positions));
  limits::checked_mul(limits::checked_mul(slots, verify_positions, "verify logits"), vocab, "verify logits");
  KVCache::bytes_for(layers, slots, context, kv_heads, head_dim, windows, type, recurrent, snapshots,
                     kv_layers);  // overflow-checked first
  return KVCache(layers, slots, context, kv_heads, head_dim, windows, type, recurrent, snapshots, kv_layers);
}

}  // namespace

SlotCache::SlotCache(int64_t layers, int64_t slots, int64_t context, int64_t kv_heads, int64_t head_dim,
                     int64_t vocab, const std::vector<int64_t>& windows, int64_t verify_positions, KVType type,
                     const std::vector<RecurrentLayerShape>& recurrent, int64_t snapshots,
                     const KVLayers& kv_layers)
    : cache_(checked_cache(layers, slots, context, kv_heads, head_dim, vocab, windows, verify_positions, type,
                           recurrent, snapshots, kv_layers)),
      logits_(xt::xtensor<float, 2>::from_shape({static_cast<size_t>(slots), static_cast<size_t>(vocab)})),
      in_chunk_(slots, 0),
      parents_(slots, 0),
      verify_positions_(verify_positions),
      verify_logits_(xt::xtensor<float, 1>::from_shape({static_cast<size_t>(slots * verify_positions * vocab)})) {
  chunks_.reserve(slots);
}

SlotCache SlotCache::for_model(const Model& model, int64_t slots, int64_t context, int64_t verify_positions,
                               int64_t snapshots) {
  const ModelConfig& c = model.config();
  if (context < 1 || context > c.context_length)
    throw ValueError("context must be in [1, " + std::to_string(c.context_length) + "] (the model's context), got " +
                     std::to_string(context));
  return SlotCache(c.layers, slots, context, c.kv_heads, c.head_dim, c.vocab_size, c.layer_windows, verify_positions,
                   model.kv_type(), c.recurrent_layers, snapshots, c.kv_layers);
}

int64_t SlotCache::checked(int64_t slot, const char* name) const {
  if (slot < 0 || slot >= slots())
    throw ValueError(std::string(name) + " " + std::to_string(slot) + " is outside [0, " + std::to_string(slots()) +
                     ")");
  return slot;
}

void SlotCache::check_chunks(const std::vector<RowTokens>& chunks) {
  size_t marked = 0;
  const auto unmark = [&] {
    for (size_t i = 0; i < marked; ++i) in_chunk_[chunks[i].row] = 0;
  };
  for (const RowTokens& c : chunks) {
    if (c.row < 0 || c.row >= slots() || c.count < 1 || in_chunk_[c.row]) {
      unmark();
      if (c.row < 0 || c.row >= slots()) checked(c.row, "slot");
      if (c.count < 1) throw ValueError("the tokens of slot " + std::to_string(c.row) + " must be non-empty");
      throw ValueError("slot " + std::to_string(c.row) + " appears twice in one forward");
    }
    in_chunk_[c.row] = 1;
    ++marked;
  }
  unmark();
}

void SlotCache::forward(Model& model, const std::vector<RowTokens>& chunks, const std::vector<uint8_t>& all_logits) {
  check_chunks(chunks);
  if (!all_logits.empty() && all_logits.size() != chunks.size())
    throw ValueError("all_logits has " + std::to_string(all_logits.size()) + " entries for " +
                     std::to_string(chunks.size()) + " chunks");
  if (chunks.empty()) return;
  if (model.config().vocab_size != vocab())
    throw ValueError("the model's vocabulary (" + std::to_string(model.config().vocab_size) +
                     ") is not the slot cache's (" + std::to_string(vocab()) + ")");
  if (all_logits.empty()) {
    model.forward(chunks, cache_, logits_.data(), /*all_positions=*/false);
    return;
  }
  int64_t width = 0;
  for (size_t i = 0; i < chunks.size(); ++i)
    if (all_logits[i]) {
      if (chunks[i].count > verify_positions_)
        throw ValueError("the chunk of slot " + std::to_string(chunks[i].row) + " asks for the logits of " +
                         std::to_string(chunks[i].count) + " positions, more than the " +
                         std::to_string(verify_positions_) + " verify_positions reserved");
      width = std::max(width, chunks[i].count);
    }
  chunks_.assign(chunks.begin(), chunks.end());
  for (size_t i = 0; i < chunks.size(); ++i)
    chunks_[i].logits = all_logits[i] ? verify_logits_.data() + chunks[i].row * width * vocab() : nullptr;
  model.forward(chunks_, cache_, logits_.data(), /*all_positions=*/false);
  verify_width_ = width;
}

void SlotCache::copy_row(int64_t src, int64_t dst) {
  checked(src, "src");
  checked(dst, "dst");
  cache_.copy_row(src, dst);
  const int64_t V = vocab();
  std::copy(logits_.data() + src * V, logits_.data() + (src + 1) * V, logits_.data() + dst * V);
}

void SlotCache::reorder(int64_t first, const std::vector<int64_t>& parents) {
  const auto n = static_cast<int64_t>(parents.size());
  if (first < 0 || n < 1 || n > slots() - first)
    throw ValueError("slots [" + std::to_string(first) + ", " + std::to_string(first + n) + ") are outside [0, " +
                     std::to_string(slots()) + ")");
  for (int64_t r = 0; r < n; ++r)
    if (parents[r] < 0 || parents[r] >= n)
      throw ValueError("parents[" + std::to_string(r) + "] = " + std::to_string(parents[r]) + " is outside [0, " +
                       std::to_string(n) + ")");
  for (int64_t s = 0; s < slots(); ++s) parents_[s] = s;
  for (int64_t r = 0; r < n; ++r) parents_[first + r] = first + parents[r];
  cache_.reorder(parents_.data());
}

}  // namespace kvgen
