// TensorMap: name and shape checks with errors that name the tensor.
#include "kvgen/model/tensors.h"

#include <sstream>

#include "kvgen/errors.h"

namespace kvgen {
namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < s.size(); ++i) out << (i ? ", " : "") << s[i];
  out << (s.size() == 1 ? ",)" : ")");
  return out.str();
}

}  // namespace

const float* TensorMap::get(const std::string& name, const std::vector<int64_t>& shape) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw ValueError("the model file has no tensor '" + name + "'");
  if (it->second.shape != shape)
    throw ValueError("tensor '" + name + "' has shape " + shape_str(it->second.shape) + ", expected " +
                     shape_str(shape) + " from the model config");
  return it->second.data;
}

std::vector<std::string> TensorMap::names() const {
  std::vector<std::string> out;
  for (const auto& [name, view] : tensors_) out.push_back(name);
  return out;
}

}  // namespace kvgen
