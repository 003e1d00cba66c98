// Named float32 tensors handed to a model loader: views over memory someone else owns
// (memory-mapped or loaded files), checked by name and shape.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kvgen {

struct TensorView {
  const float* data = nullptr;
  std::vector<int64_t> shape;
};

class TensorMap {
 public:
  void add(std::string name, TensorView view) { tensors_[std::move(name)] = std::move(view); }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The tensor `name` with exactly this shape; ValueError naming it otherwise.
  const float* get(const std::string& name, const std::vector<int64_t>& shape) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, TensorView> tensors_;
};

}  // namespace kvgen
