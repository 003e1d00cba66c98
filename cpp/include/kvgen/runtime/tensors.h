// Named tensors handed to a model loader: views over memory someone else owns (NumPy
// arrays over loaded or memory-mapped files), checked by name, type and shape. A tensor is
// float32, or raw GGUF blocks of a quantized type that the model repacks and computes on
// directly (kvgen/runtime/linear_weight.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kvgen/runtime/linear_weight.h"
#include "kvgen/runtime/row_table.h"

namespace kvgen {

// What a loader hands in: the data, its element type and its logical (row-major) shape.
struct TensorView {
  const void* data = nullptr;
  std::vector<int64_t> shape;
  std::string type = "F32";  // "F32", or a GGUF type name kvgen::quant reads ("Q4_1", ...)
  int64_t bytes = 0;         // size of data in bytes
  // The data are pages of a read-only file mapping: once a quantized tensor is repacked,
  // its pages are dropped from the process (madvise), so that loading never holds the
  // file and the packed copy at once.
  bool mapped = false;
};

class TensorMap {
 public:
  // Adds a tensor; ValueError naming it when a dimension is negative or, for F32, when
  // `bytes` does not match its shape.
  void add(std::string name, TensorView view);
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The shape of tensor `name` (empty when there is none): for a size a model reads from the file.
  std::vector<int64_t> shape(const std::string& name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? std::vector<int64_t>() : it->second.shape;
  }
  // The float32 data of tensor `name`, whose shape must be exactly `shape`; ValueError naming
  // it otherwise (or TypeError if it is quantized). Models keep the pointer.
  const float* get(const std::string& name, const std::vector<int64_t>& shape) const;
  // The matrix `name` as a projection weight W, stored (out, in) (a quantized one as one
  // row of blocks per output): float32 used in place, anything else repacked here
  // (ValueError from kvgen::quant when its bytes or sizes are wrong).
  LinearWeight linear(const std::string& name, int64_t out, int64_t in) const;
  // The 3-D tensor `name` (count, out, in) as `count` projection weights (a mixture of
  // experts' stacked matrices): float32 sliced in place, anything else cut into equal
  // byte ranges, each repacked as linear() does.
  std::vector<LinearWeight> stacked_linear(const std::string& name, int64_t count, int64_t out, int64_t in) const;
  // The matrix `name` (rows, cols) as a table read a row at a time where the loader put it
  // (kvgen/runtime/row_table.h): never repacked, its mapped pages left to the rows read. The
  // model keeps a pointer into its bytes, as into float32 tensors: read_in_place() names it.
  RowTable row_table(const std::string& name, int64_t rows, int64_t cols) const;
  // The quantized tensors handed out by row_table(): their owners must outlive the model.
  const std::vector<std::string>& read_in_place() const { return read_in_place_; }
  std::vector<std::string> names() const;

 private:
  const TensorView& find(const std::string& name, const std::vector<int64_t>& shape) const;
  mutable std::vector<std::string> read_in_place_;
  std::map<std::string, TensorView> tensors_;
};

}  // namespace kvgen
