// TensorMap: name and shape checks with errors that name the tensor.
#include "kvgen/model/tensors.h"

#include <algorithm>
#include <sstream>

#include "kvgen/errors.h"

namespace kvgen {
namespace {

template <class Shape>
std::string shape_str(const Shape& s) {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < s.size(); ++i) out << (i ? ", " : "") << s[i];
  out << (s.size() == 1 ? ",)" : ")");
  return out.str();
}

}  // namespace

void TensorMap::add(std::string name, const TensorView& view) {
  std::vector<size_t> shape;
  size_t size = 1;
  for (int64_t d : view.shape) {
    if (d < 0) throw ValueError("tensor '" + name + "' has a negative dimension: " + shape_str(view.shape));
    shape.push_back(static_cast<size_t>(d));
    size *= static_cast<size_t>(d);  // the loader's array holds this many floats, so it fits
  }
  tensors_.insert_or_assign(std::move(name), xt::adapt(static_cast<const float*>(view.data), size, xt::no_ownership(),
                                                       std::move(shape)));
}

const float* TensorMap::get(const std::string& name, const std::vector<int64_t>& shape) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw ValueError("the model file has no tensor '" + name + "'");
  const auto& have = it->second.shape();
  if (!std::equal(have.begin(), have.end(), shape.begin(), shape.end(),
                  [](size_t a, int64_t b) { return static_cast<int64_t>(a) == b; }))
    throw ValueError("tensor '" + name + "' has shape " + shape_str(have) + ", expected " + shape_str(shape) +
                     " from the model config");
  return it->second.data();
}

std::vector<std::string> TensorMap::names() const {
  std::vector<std::string> out;
  for (const auto& [name, view] : tensors_) out.push_back(name);
  return out;
}

}  // namespace kvgen
