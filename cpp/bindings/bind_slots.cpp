// Binding of kvgen._core._ModelSlots: a built-in model's KV cache of `slots` rows and its
// (slots, vocab) logits buffer, for a scheduler that runs many requests through one
// model (continuous batching, python/kvgen/_engine.py). Each forward call takes chunks
// of mixed lengths (a prompt chunk of one slot, one token of another): the model
// continues each slot at its cached length and writes the chunk's last-token logits at
// that slot's row of the buffer, which NumPy reads in place.
//
// The cache is allocated untouched: a page becomes resident only when a slot's positions
// reach it, so slots x context is mostly address space until used.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/errors.h"
#include "kvgen/limits.h"
#include "kvgen/model/kv_cache.h"
#include "kvgen/model_decode_loop.h"
#include "py_model.h"

namespace py = pybind11;

namespace kvgen::bindings {
namespace {

class PyModelSlots {
 public:
  PyModelSlots(py::object model, int64_t slots, int64_t context) : model_(std::move(model)), pm_(model_of(model_)) {
    const ModelConfig& c = pm_.core().config();
    if (slots < 1) throw ValueError("slots must be >= 1, got " + std::to_string(slots));
    limits::check_at_most("slots", slots, limits::kMaxRows);
    if (context < 1 || context > c.context_length)
      throw ValueError("context must be in [1, " + std::to_string(c.context_length) + "] (the model's context), got " +
                       std::to_string(context));
    limits::checked_mul(slots, c.vocab_size, "logits (slots x vocab_size)");
    KVCache::bytes_for(c.layers, slots, context, c.kv_heads, c.head_dim, c.layer_windows);  // overflow-checked before allocating
    cache_.emplace(pm_.core().make_cache(slots, context));
    logits_ = xt::xtensor<float, 2>::from_shape({static_cast<size_t>(slots), static_cast<size_t>(c.vocab_size)});
    in_chunk_.assign(slots, 0);
  }

  int64_t slots() const { return cache_->rows(); }
  int64_t context() const { return cache_->max_context(); }
  int64_t bytes() const { return cache_->bytes(); }
  int64_t length(int64_t slot) const { return cache_->length(checked(slot, "slot")); }

  // A view over the logits buffer, kept alive by owner; the buffer never moves.
  py::array_t<float> logits(py::handle owner) {
    const auto rows = static_cast<py::ssize_t>(logits_.shape(0)), vocab = static_cast<py::ssize_t>(logits_.shape(1));
    const std::vector<py::ssize_t> shape{rows, vocab};
    const std::vector<py::ssize_t> strides{vocab * static_cast<py::ssize_t>(sizeof(float)), sizeof(float)};
    return py::array_t<float>(shape, strides, logits_.data(), owner);
  }

  // chunks: (slot, int64 tokens) pairs, each slot at most once.
  void forward(const std::vector<std::pair<int64_t, py::array_t<int64_t, py::array::c_style | py::array::forcecast>>>&
                   chunks) {
    std::vector<RowTokens> rows;
    rows.reserve(chunks.size());
    for (const auto& [slot, tokens] : chunks) {
      checked(slot, "slot");
      if (tokens.ndim() != 1 || tokens.size() < 1)
        throw ValueError("the tokens of slot " + std::to_string(slot) + " must be a non-empty 1-D array");
      if (in_chunk_[slot]) {
        for (const RowTokens& r : rows) in_chunk_[r.row] = 0;
        throw ValueError("slot " + std::to_string(slot) + " appears twice in one forward");
      }
      in_chunk_[slot] = 1;
      rows.push_back({slot, tokens.data(), static_cast<int64_t>(tokens.size())});
    }
    for (const RowTokens& r : rows) in_chunk_[r.row] = 0;
    if (rows.empty()) return;
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(pm_.mutex);
    pm_.core().forward(rows, *cache_, logits_.data(), /*all_positions=*/false);
  }

  // The slot forgets its positions (a new request starts there).
  void reset(int64_t slot) { cache_->set_length(checked(slot, "slot"), 0); }

  // dst takes src's cached positions and its logits row (rows of one request share a prompt).
  void copy_row(int64_t src, int64_t dst) {
    checked(src, "src");
    checked(dst, "dst");
    py::gil_scoped_release release;
    cache_->copy_row(src, dst);
    const int64_t V = static_cast<int64_t>(logits_.shape(1));
    std::copy(logits_.data() + src * V, logits_.data() + (src + 1) * V, logits_.data() + dst * V);
  }

  // Beam search within slots [first, first + n): slot first + r takes the contents of
  // slot first + parents[r] (parents index within the range).
  void reorder(int64_t first, const std::vector<int64_t>& parents) {
    const auto n = static_cast<int64_t>(parents.size());
    if (first < 0 || n < 1 || first + n > slots())
      throw ValueError("slots [" + std::to_string(first) + ", " + std::to_string(first + n) + ") are outside [0, " +
                       std::to_string(slots()) + ")");
    std::vector<int64_t> all(slots());
    for (int64_t s = 0; s < slots(); ++s) all[s] = s;
    for (int64_t r = 0; r < n; ++r) {
      if (parents[r] < 0 || parents[r] >= n)
        throw ValueError("parents[" + std::to_string(r) + "] = " + std::to_string(parents[r]) + " is outside [0, " +
                         std::to_string(n) + ")");
      all[first + r] = first + parents[r];
    }
    py::gil_scoped_release release;
    cache_->reorder(all.data());
  }

 private:
  static PyModel& model_of(py::handle obj) {
    if (!py::isinstance<PyModel>(obj)) throw TypeError("model must be a kvgen._core._Model");
    return obj.cast<PyModel&>();
  }

  int64_t checked(int64_t slot, const char* name) const {
    if (slot < 0 || slot >= slots())
      throw ValueError(std::string(name) + " " + std::to_string(slot) + " is outside [0, " + std::to_string(slots()) +
                       ")");
    return slot;
  }

  py::object model_;  // keeps the model (and its weights) alive
  PyModel& pm_;       // model_'s C++ object; its mutex serialises forward passes
  std::optional<KVCache> cache_;
  xt::xtensor<float, 2> logits_;  // (slots, vocab) last-token logits of each slot's last chunk
  std::vector<uint8_t> in_chunk_;  // (slots) scratch of forward's duplicate check
};

}  // namespace

void register_slots(py::module_& m) {
  m.attr("_PREFILL_CHUNK") = kPrefillChunk;  // the engine cuts prompts as ModelDecodeLoop does
  py::class_<PyModelSlots>(m, "_ModelSlots",
                           "A model's KV cache of `slots` rows and their logits, for continuous batching "
                           "(kvgen._engine).")
      .def(py::init<py::object, int64_t, int64_t>(), py::arg("model"), py::arg("slots"), py::arg("context"))
      .def_property_readonly("slots", &PyModelSlots::slots, "Rows of the cache.")
      .def_property_readonly("context", &PyModelSlots::context, "Positions each slot holds.")
      .def_property_readonly("kv_cache_bytes", &PyModelSlots::bytes,
                             "Bytes the cache spans (pages become resident only as slots use them).")
      .def_property_readonly(
          "logits", [](py::object self) { return self.cast<PyModelSlots&>().logits(self); },
          "float32 [slots, vocab]: each slot's next-token logits after its last forward, a view over the "
          "object's own buffer (no copy; overwritten by the next forward that includes the slot).")
      .def("forward", &PyModelSlots::forward, py::arg("chunks"),
           "Runs (slot, int64 tokens) chunks in one forward pass (the GIL released, the model's lock held): "
           "each slot continues at its cached length; logits[slot] gets its chunk's last-token logits.")
      .def("length", &PyModelSlots::length, py::arg("slot"), "Positions cached in a slot.")
      .def("reset", &PyModelSlots::reset, py::arg("slot"), "Empties a slot (its length becomes 0).")
      .def("copy_row", &PyModelSlots::copy_row, py::arg("src"), py::arg("dst"),
           "Slot dst becomes a copy of slot src: cached positions and logits row.")
      .def("reorder", &PyModelSlots::reorder, py::arg("first"), py::arg("parents"),
           "Beam search: slot first + r takes slot first + parents[r], for r < len(parents).");
}

}  // namespace kvgen::bindings
