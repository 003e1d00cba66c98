// Binding of kvgen._core._ModelSlots: a SlotCache (kvgen/model/slot_cache.h) with the
// Python model it belongs to, for the engine (python/kvgen/generation/engine.py).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kvgen/errors.h"
#include "kvgen/model/slot_cache.h"
#include "py_model.h"

namespace py = pybind11;

namespace kvgen::bindings {
namespace {

using TokenArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

PyModel& model_of(py::handle obj) {
  if (!py::isinstance<PyModel>(obj)) throw TypeError("model must be a kvgen._core._Model");
  return obj.cast<PyModel&>();
}

class PyModelSlots {
 public:
  PyModelSlots(py::object model, int64_t slots, int64_t context)
      : model_(std::move(model)), pm_(model_of(model_)), slots_(SlotCache::for_model(pm_.core(), slots, context)) {}

  SlotCache& slots() { return slots_; }

  // A view over the logits buffer, kept alive by owner; the buffer never moves.
  py::array_t<float> logits(py::handle owner) {
    const auto rows = static_cast<py::ssize_t>(slots_.slots()), vocab = static_cast<py::ssize_t>(slots_.vocab());
    const std::vector<py::ssize_t> shape{rows, vocab};
    const std::vector<py::ssize_t> strides{vocab * static_cast<py::ssize_t>(sizeof(float)), sizeof(float)};
    return py::array_t<float>(shape, strides, slots_.logits(), owner);
  }

  void forward(const std::vector<std::pair<int64_t, TokenArray>>& chunks) {
    std::vector<RowTokens> rows;
    rows.reserve(chunks.size());
    for (const auto& [slot, tokens] : chunks) {
      if (tokens.ndim() != 1) throw ValueError("the tokens of slot " + std::to_string(slot) + " must be a 1-D array");
      rows.push_back({slot, tokens.data(), static_cast<int64_t>(tokens.size())});
    }
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(pm_.mutex);
    slots_.forward(pm_.core(), rows);
  }

  // The slot keeps its first `length` positions (a prompt prefix that a new request shares).
  // ValueError unless 0 <= length <= the slot's length, or when a sliding-window layer's ring
  // has wrapped (positions before `length` may be overwritten).
  void truncate(int64_t slot, int64_t length) {
    const int64_t have = slots_.length(slot);
    if (length < 0 || length > have) {
      throw ValueError("truncate: length " + std::to_string(length) + " is outside [0, " + std::to_string(have) +
                       "], the positions slot " + std::to_string(slot) + " holds");
    }
    for (int64_t layer = 0; layer < pm_.core().config().layers; ++layer) {
      if (slots_.cache().capacity(layer) < have) {
        throw ValueError("truncate: the sliding-window ring of layer " + std::to_string(layer) + " has wrapped");
      }
    }
    slots_.cache().set_length(slot, length);
  }

  template <class F>
  void released(F&& f) {
    py::gil_scoped_release release;
    f(slots_);
  }

 private:
  py::object model_;  // keeps the model (and its weights) alive
  PyModel& pm_;       // model_'s C++ object; its mutex serialises forward passes
  SlotCache slots_;
};

}  // namespace

void register_slots(py::module_& m) {
  m.attr("_PREFILL_CHUNK") = kPrefillChunk;
  py::class_<PyModelSlots>(m, "_ModelSlots", "A model's KV cache of `slots` rows and their logits (kvgen.generation.engine).")
      .def(py::init<py::object, int64_t, int64_t>(), py::arg("model"), py::arg("slots"), py::arg("context"))
      .def_property_readonly("slots", [](PyModelSlots& s) { return s.slots().slots(); }, "Rows of the cache.")
      .def_property_readonly("context", [](PyModelSlots& s) { return s.slots().context(); },
                             "Positions each slot holds.")
      .def_property_readonly("kv_cache_bytes", [](PyModelSlots& s) { return s.slots().bytes(); },
                             "Bytes the cache spans (pages become resident only as slots use them).")
      .def_property_readonly(
          "logits", [](py::object self) { return self.cast<PyModelSlots&>().logits(self); },
          "float32 [slots, vocab]: each slot's next-token logits, a view (see SlotCache).")
      .def("forward", &PyModelSlots::forward, py::arg("chunks"),
           "Runs (slot, int64 tokens) chunks in one forward pass (GIL released; see SlotCache::forward).")
      .def("length", [](PyModelSlots& s, int64_t slot) { return s.slots().length(slot); }, py::arg("slot"),
           "Positions cached in a slot.")
      .def("reset", [](PyModelSlots& s, int64_t slot) { s.slots().reset(slot); }, py::arg("slot"),
           "Empties a slot (its length becomes 0).")
      .def("truncate", &PyModelSlots::truncate, py::arg("slot"), py::arg("length"),
           "Keeps a slot's first `length` positions (ValueError past its length or once a sliding-window ring "
           "wrapped).")
      .def(
          "copy_row",
          [](PyModelSlots& s, int64_t src, int64_t dst) { s.released([&](SlotCache& c) { c.copy_row(src, dst); }); },
          py::arg("src"), py::arg("dst"), "Slot dst becomes a copy of slot src: cached positions and logits row.")
      .def(
          "reorder",
          [](PyModelSlots& s, int64_t first, std::vector<int64_t> parents) {
            s.released([&](SlotCache& c) { c.reorder(first, parents); });
          },
          py::arg("first"), py::arg("parents"), "Beam search: slot first + r takes slot first + parents[r].");
}

}  // namespace kvgen::bindings
