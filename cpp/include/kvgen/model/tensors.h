// Named float32 tensors handed to a model loader: views over memory someone else owns
// (NumPy arrays over memory-mapped or loaded files), checked by name and shape.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xadapt.hpp>

namespace kvgen {

// What a loader hands in: row-major float32 data and its shape.
struct TensorView {
  const float* data = nullptr;
  std::vector<int64_t> shape;
};

class TensorMap {
 public:
  // A read-only xtensor view (xt::adapt, no copy) that carries the tensor's shape.
  using Weights = decltype(xt::adapt(std::declval<const float*>(), size_t{}, xt::no_ownership(),
                                     std::declval<std::vector<size_t>>()));

  // Adapts the view; ValueError naming it when a dimension is negative.
  void add(std::string name, const TensorView& view);
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The data of tensor `name`, whose shape must be exactly `shape`; ValueError naming it
  // otherwise. Models keep the pointer: their hot loops read weights through raw pointers.
  const float* get(const std::string& name, const std::vector<int64_t>& shape) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, Weights> tensors_;
};

}  // namespace kvgen
