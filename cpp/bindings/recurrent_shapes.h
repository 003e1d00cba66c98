// The recurrent layer shapes (state_cache.h) as Python sees them: a tuple (conv_channels,
// conv_kernel, heads, key_dim, value_dim) per layer, for _ModelConfig and _StateCache.
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

#include "kvgen/runtime/state_cache.h"

namespace kvgen::bindings {

using LayerTuple = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;

inline std::vector<RecurrentLayerShape> layer_shapes(const std::vector<LayerTuple>& layers) {
  std::vector<RecurrentLayerShape> out;
  for (const auto& [channels, kernel, heads, key_dim, value_dim] : layers)
    out.push_back({channels, kernel, heads, key_dim, value_dim});
  return out;
}

inline std::vector<LayerTuple> layer_tuples(const std::vector<RecurrentLayerShape>& layers) {
  std::vector<LayerTuple> out;
  for (const RecurrentLayerShape& s : layers) out.emplace_back(s.conv_channels, s.conv_kernel, s.heads, s.key_dim, s.value_dim);
  return out;
}

}  // namespace kvgen::bindings
