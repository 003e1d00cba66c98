// KVLayers: where a model's layers depart from one key/value shape: a (kv_heads, head_dim)
// of their own (Gemma 4's full-attention layers), or the keys and values of another layer
// read instead of their own (Gemma 4's KV-shared layers: a reader stores none and attends
// over its source's). Read from the file by the family's loader; empty vectors: none.
#pragma once

#include <cstdint>
#include <vector>

namespace kvgen {

struct KVLayers {
  std::vector<int64_t> kv_heads;   // (layers) kv heads of each layer, or empty: ModelConfig::kv_heads everywhere
  std::vector<int64_t> head_dims;  // (layers) head_dim of each layer, or empty: ModelConfig::head_dim everywhere
  // (layers) the layer whose keys and values layer l attends over: l itself, or an earlier
  // layer of the same shape and window (l then stores none); empty: each its own
  std::vector<int64_t> sources;

  int64_t kv_heads_of(int64_t layer, int64_t uniform) const { return kv_heads.empty() ? uniform : kv_heads[layer]; }
  int64_t head_dim_of(int64_t layer, int64_t uniform) const { return head_dims.empty() ? uniform : head_dims[layer]; }
  int64_t source(int64_t layer) const { return sources.empty() ? layer : sources[layer]; }
  // Whether some other layer reads `layer`'s keys and values.
  bool read_by_others(int64_t layer) const {
    for (int64_t l = 0; l < static_cast<int64_t>(sources.size()); ++l)
      if (l != layer && sources[l] == layer) return true;
    return false;
  }
};

}  // namespace kvgen
