// Binding of kvgen._core._ModelSlots: a SlotCache (kvgen/runtime/slot_cache.h) with the
// Python model it belongs to, for the engine (python/kvgen/generation/engine.py).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kvgen/errors.h"
#include "kvgen/runtime/attention.h"
#include "kvgen/runtime/slot_cache.h"
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
  PyModelSlots(py::object model, int64_t slots, int64_t context, int64_t verify_positions, int64_t snapshots)
      : model_(std::move(model)),
        pm_(model_of(model_)),
        slots_(SlotCache::for_model(pm_.core(), slots, context, verify_positions, snapshots)),
        all_logits_(slots, 0) {}

  SlotCache& slots() { return slots_; }

  // A view over the logits buffer, kept alive by owner; the buffer never moves.
  py::array_t<float> logits(py::handle owner) {
    const auto rows = static_cast<py::ssize_t>(slots_.slots()), vocab = static_cast<py::ssize_t>(slots_.vocab());
    const std::vector<py::ssize_t> shape{rows, vocab};
    const std::vector<py::ssize_t> strides{vocab * static_cast<py::ssize_t>(sizeof(float)), sizeof(float)};
    return py::array_t<float>(shape, strides, slots_.logits(), owner);
  }

  // A view (slots, width, vocab) over the verify buffer as the last forward laid it out.
  py::array_t<float> verify_logits(py::handle owner) {
    const auto rows = static_cast<py::ssize_t>(slots_.slots()), vocab = static_cast<py::ssize_t>(slots_.vocab());
    const auto width = static_cast<py::ssize_t>(slots_.verify_width());
    const auto f = static_cast<py::ssize_t>(sizeof(float));
    const std::vector<py::ssize_t> shape{rows, width, vocab};
    const std::vector<py::ssize_t> strides{width * vocab * f, vocab * f, f};
    return py::array_t<float>(shape, strides, slots_.verify_logits(), owner);
  }

  void forward(const std::vector<std::pair<int64_t, TokenArray>>& chunks, const std::vector<int64_t>& verify,
               const std::vector<int64_t>& in_blocks, const std::vector<std::pair<int64_t, py::array>>& hidden,
               const std::vector<std::pair<int64_t, py::array>>& hidden_and_logits,
               const std::vector<std::pair<int64_t, py::array>>& input_hidden,
               const std::vector<std::pair<int64_t, int64_t>>& checkpoints) {
    std::vector<RowTokens> rows;
    rows.reserve(chunks.size());
    for (const auto& [slot, tokens] : chunks) {
      if (tokens.ndim() != 1) throw ValueError("the tokens of slot " + std::to_string(slot) + " must be a 1-D array");
      rows.push_back({slot, tokens.data(), static_cast<int64_t>(tokens.size())});
    }
    // the chunk of `slot`, which a `what` argument names (ValueError when the forward has none)
    const auto chunk_of = [&](int64_t slot, const std::string& what) -> RowTokens& {
      auto it = std::find_if(rows.begin(), rows.end(), [&](const RowTokens& r) { return r.row == slot; });
      if (it == rows.end()) throw ValueError(what + " slot " + std::to_string(slot) + " has no chunk in the forward");
      return *it;
    };
    for (int64_t slot : in_blocks) chunk_of(slot, "in_blocks").in_blocks = true;
    const int64_t width = pm_.core().config().hidden;
    // the caller's (count, hidden) float32 arrays: written in place (hidden), or read (input_hidden)
    const auto chunk_array = [&](int64_t slot, const py::array& a, const char* what, bool written) -> RowTokens& {
      RowTokens& row = chunk_of(slot, what);
      const std::string name = "the " + std::string(what) + " states of slot " + std::to_string(slot);
      if (!a.dtype().is(py::dtype::of<float>())) throw TypeError(name + " must be a float32 array");
      if (!(a.flags() & py::array::c_style) || (written && !a.writeable()))
        throw ValueError(name + (written ? " must be a writable C-contiguous array" : " must be a C-contiguous array"));
      if (a.ndim() != 2 || a.shape(0) != row.count || a.shape(1) != width)
        throw ValueError(name + " must have the shape (" + std::to_string(row.count) + ", " + std::to_string(width) +
                         "): its chunk's tokens by the model's hidden size");
      return row;
    };
    for (const auto* list : {&hidden, &hidden_and_logits})
      for (auto [slot, out] : *list) {
        RowTokens& row = chunk_array(slot, out, "hidden", true);
        if (row.hidden != nullptr) throw ValueError("slot " + std::to_string(slot) + " asks for its hidden states twice");
        row.hidden = static_cast<float*>(out.mutable_data());
        row.logits_too = list == &hidden_and_logits;
      }
    for (const auto& [slot, in] : input_hidden) chunk_array(slot, in, "input hidden", false).input_hidden =
        static_cast<const float*>(in.data());
    for (const auto& [slot, first] : checkpoints) {
      if (first < 0) throw ValueError("checkpoints of slot " + std::to_string(slot) + " start at a negative snapshot");
      chunk_of(slot, "checkpoint").checkpoints = first;
    }
    std::vector<uint8_t> all_logits;
    if (!verify.empty()) {
      for (int64_t slot : verify) {
        if (slot < 0 || slot >= slots_.slots())
          throw ValueError("verify slot " + std::to_string(slot) + " is outside [0, " +
                           std::to_string(slots_.slots()) + ")");
        all_logits_[slot] = 1;
      }
      all_logits.resize(rows.size());
      size_t found = 0;
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t slot = rows[i].row;
        all_logits[i] = slot >= 0 && slot < slots_.slots() && all_logits_[slot];
        found += all_logits[i];
      }
      for (int64_t slot : verify) all_logits_[slot] = 0;
      if (found != verify.size()) throw ValueError("every verify slot must have exactly one chunk in the forward");
    }
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(pm_.mutex);
    slots_.forward(pm_.core(), rows, all_logits);
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
  std::vector<uint8_t> all_logits_;  // (slots) scratch of forward: the verify slots
};

}  // namespace

void register_slots(py::module_& m) {
  m.attr("_PREFILL_CHUNK") = kPrefillChunk;
  m.attr("_TOKEN_BY_TOKEN_ATTENTION") = kTokenByTokenAttention;
  m.def(
      "_set_attention_parts_budget",
      [](int64_t floats) {
        const int64_t before = attention_parts_budget();
        set_attention_parts_budget(floats);
        return before;
      },
      py::arg("floats"),
      "Sets the floats of partial attention results a forward pass holds at once (its tokens attended in "
      "rounds beyond it; at least one piece's); returns the previous budget. For tests.");
  py::class_<PyModelSlots>(m, "_ModelSlots", "A model's KV cache of `slots` rows and their logits (kvgen.generation.engine).")
      .def(py::init<py::object, int64_t, int64_t, int64_t, int64_t>(), py::arg("model"), py::arg("slots"),
           py::arg("context"), py::arg("verify_positions") = 0, py::arg("snapshots") = 0)
      .def_property_readonly("slots", [](PyModelSlots& s) { return s.slots().slots(); }, "Rows of the cache.")
      .def_property_readonly("context", [](PyModelSlots& s) { return s.slots().context(); },
                             "Positions each slot holds.")
      .def_property_readonly("kv_cache_bytes", [](PyModelSlots& s) { return s.slots().bytes(); },
                             "Bytes the cache spans (pages become resident only as slots use them).")
      .def_property_readonly(
          "logits", [](py::object self) { return self.cast<PyModelSlots&>().logits(self); },
          "float32 [slots, vocab]: each slot's next-token logits, a view (see SlotCache).")
      .def_property_readonly(
          "verify_logits", [](py::object self) { return self.cast<PyModelSlots&>().verify_logits(self); },
          "float32 [slots, width, vocab]: after a forward with verify slots, the logits of every position of "
          "their chunks (width: the longest of them), a view valid until the next forward.")
      .def_property_readonly("verify_positions", [](PyModelSlots& s) { return s.slots().verify_positions(); },
                             "The longest chunk a forward may return every position's logits of.")
      .def("forward", &PyModelSlots::forward, py::arg("chunks"), py::arg("verify") = std::vector<int64_t>{},
           py::arg("in_blocks") = std::vector<int64_t>{},
           py::arg("hidden") = std::vector<std::pair<int64_t, py::array>>{}, py::arg("hidden_and_logits") = std::vector<std::pair<int64_t, py::array>>{},
           py::arg("input_hidden") = std::vector<std::pair<int64_t, py::array>>{},
           py::arg("checkpoints") = std::vector<std::pair<int64_t, int64_t>>{},
           "Runs (slot, int64 tokens) chunks in one forward pass (GIL released; see SlotCache::forward); the "
           "chunks of the `verify` slots return the logits of all their positions in verify_logits; those of "
           "the `in_blocks` slots are the rest of a prompt whose first positions are cached, computed as a "
           "fresh prefill of the whole prompt computes them (RowTokens::in_blocks); `hidden`: (slot, float32 "
           "array (count, hidden_size)) pairs whose chunks write the final-normed hidden states of their "
           "positions there (embeddings), and no logits; `hidden_and_logits`: the same pairs for chunks that get "
           "their logits as well, as without it (speculation with a multi-token-prediction head); `input_hidden`: (slot, "
           "float32 array (count, hidden_size)) pairs, each chunk's second input for a model that reads one "
           "(an MTP head: the target's hidden states; every chunk must have one); `checkpoints`: (slot, first "
           "snapshot) pairs: the slot's recurrent state after each token i of its chunk is copied into snapshot "
           "first + i (a hybrid model's verification pass: resume() then goes back to any accepted position).")
      .def(
          "truncate",
          [](PyModelSlots& s, int64_t slot, int64_t length) { s.slots().truncate(slot, length); },
          py::arg("slot"), py::arg("length"),
          "Keeps a slot's first `length` positions, copying nothing (speculative decoding's rollback, a "
          "cached prompt prefix); "
          "ValueError where a sliding-window ring cannot roll back so far.")
      .def(
          "snapshot",
          [](PyModelSlots& s, int64_t slot, int64_t snapshot) {
            s.released([&](SlotCache& c) { c.snapshot(slot, snapshot); });
          },
          py::arg("slot"), py::arg("snapshot"),
          "A hybrid model's recurrent state of a slot into snapshot `snapshot` (ValueError for a bad slot or "
          "snapshot, or a model without a recurrent state).")
      .def(
          "resume",
          [](PyModelSlots& s, int64_t slot, int64_t length, int64_t snapshot) {
            s.released([&](SlotCache& c) { c.resume(slot, length, snapshot); });
          },
          py::arg("slot"), py::arg("length"), py::arg("snapshot"),
          "Keeps a slot's first `length` positions and gives it the recurrent state of snapshot `snapshot`, taken "
          "when the slot's first `length` positions were these (a cached prefix, speculative rollback); "
          "ValueError, changing nothing, for a bad slot, snapshot or length.")
      .def_property_readonly("snapshots", [](PyModelSlots& s) { return s.slots().snapshots(); },
                             "Snapshots of the recurrent state the cache keeps (0 without a recurrent state).")
      .def_property_readonly("max_rollback", [](PyModelSlots& s) { return s.slots().cache().max_rollback(); },
                             "The most positions truncate may discard at once.")
      .def("length", [](PyModelSlots& s, int64_t slot) { return s.slots().length(slot); }, py::arg("slot"),
           "Positions cached in a slot.")
      .def("reset", [](PyModelSlots& s, int64_t slot) { s.slots().reset(slot); }, py::arg("slot"),
           "Empties a slot (its length becomes 0).")
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
