// Array conversion for the bindings: NumPy arrays and DLPack producers (torch CPU
// tensors) are read in place; a wrong dtype, rank or layout is a clear TypeError /
// ValueError, never a silent copy of the logits.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

namespace kvgen::bindings {

namespace py = pybind11;

// A C-contiguous float32 [rows, vocab] view over the caller's memory.
struct LogitsView {
  py::array array;  // keeps the memory alive
  float* data;
  int64_t rows;
  int64_t vocab;
};

// An int64 [rows, length] token history (copied to int64 if it came as another integer
// type, or as Python ints that NumPy held as objects; an id int64 cannot hold is refused).
struct HistoryView {
  py::array_t<int64_t, py::array::c_style> array;
  int64_t rows = 0;
  int64_t length = 0;
  const int64_t* data() const { return length ? array.data() : nullptr; }
};

// `name` is the argument's name in error messages.
LogitsView logits_view(py::handle obj, bool writable, const char* name = "logits");

// None -> empty history for `rows` rows. Every id must lie in [0, vocab); an error names
// the position and the id: "input_ids[0, 3] = 300 is outside the vocabulary [0, 211)".
HistoryView history_view(py::handle obj, int64_t rows, const char* name, int64_t vocab);

// (rows) int64 sequence ids, or an empty array for None.
py::array_t<int64_t, py::array::c_style> ids_view(py::handle obj, int64_t rows, const char* name);

// An allowed-token bitmask [rows, ceil(vocab / 32)] of 32-bit words (uint32, or int32 as
// llguidance's NumPy helpers allocate it), C-contiguous, read in place; None -> null.
struct MaskView {
  py::array array;  // keeps the memory alive
  const uint32_t* data = nullptr;
};

MaskView mask_view(py::handle obj, int64_t rows, int64_t vocab, const char* name = "allowed_tokens");

// A C-contiguous float32 [rows, positions, vocab] view over the caller's memory, read in
// place (speculative verification's logits, a draft model's probabilities).
struct PositionsView {
  py::array array;  // keeps the memory alive
  const float* data = nullptr;
  int64_t rows = 0, positions = 0, vocab = 0;
};

PositionsView positions_view(py::handle obj, const char* name);

// An allowed-token bitmask per position [rows, positions, ceil(vocab / 32)] (uint32 or
// int32 words), C-contiguous, read in place; None -> null.
MaskView position_mask_view(py::handle obj, int64_t rows, int64_t positions, int64_t vocab,
                            const char* name = "allowed_tokens");

}  // namespace kvgen::bindings
