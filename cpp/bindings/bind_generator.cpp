// Binding of kvgen::Generator (the step API over external logits) and its results.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>

#include "arrays.h"
#include "kvgen/errors.h"
#include "kvgen/generator.h"

namespace py = pybind11;

namespace kvgen::bindings {
namespace {

template <class T>
py::array_t<T> copy_array(const T* data, int64_t n) {
  py::array_t<T> out(n);
  std::copy(data, data + n, out.mutable_data());
  return out;
}

py::object reason_object(FinishReason r) {
  return r == FinishReason::None ? py::object(py::none()) : py::object(py::str(finish_reason_name(r)));
}

// Token texts from str or bytes entries (str is encoded as UTF-8).
std::vector<std::string> token_texts(py::handle obj) {
  std::vector<std::string> out;
  for (py::handle item : py::iter(obj)) {
    if (py::isinstance<py::bytes>(item))
      out.push_back(item.cast<std::string>());
    else if (py::isinstance<py::str>(item))
      out.push_back(item.cast<std::string>());
    else
      throw TypeError("token_strings must hold str or bytes, got " +
                      std::string(py::str(py::type::of(item).attr("__name__"))));
  }
  return out;
}

std::vector<std::vector<int64_t>> prompt_lists(py::handle prompts) {
  py::module_ np = py::module_::import("numpy");
  if (py::isinstance<py::array>(prompts)) {
    py::array a = py::reinterpret_borrow<py::array>(prompts);
    const char kind = a.dtype().kind();
    if (kind != 'i' && kind != 'u')
      throw TypeError("prompts must hold integer token ids, got dtype " + std::string(py::str(a.dtype())));
    if (a.ndim() == 1) a = np.attr("expand_dims")(a, 0);
    if (a.ndim() != 2) throw ValueError("prompts as an array must be 1-D (one prompt) or 2-D [batch, length]");
    prompts = a.attr("tolist")();
  }
  std::vector<std::vector<int64_t>> out;
  for (py::handle p : py::iter(prompts)) {
    if (py::isinstance<py::int_>(p))
      throw TypeError("prompts must be a list of token-id lists (for one prompt: [[1, 2, 3]])");
    std::vector<int64_t> ids;
    py::object seq = py::isinstance<py::array>(p) ? py::object(p.attr("tolist")()) : py::reinterpret_borrow<py::object>(p);
    for (py::handle t : py::iter(seq)) {
      if (!py::isinstance<py::int_>(t)) throw TypeError("prompts must hold integer token ids");
      ids.push_back(t.cast<int64_t>());
    }
    out.push_back(std::move(ids));
  }
  return out;
}

// What Generator.step returns.
struct StepResult {
  py::array_t<int64_t> tokens;
  py::object beam_indices;
  bool done;
};

class PyGenerator {
 public:
  PyGenerator(const GenerationConfig& config, std::optional<int64_t> batch_size, py::object token_strings,
              bool output_raw_logprobs)
      : gen_(config), expected_batch_(batch_size) {
    if (batch_size && *batch_size < 1) throw ValueError("batch_size must be >= 1, got " + std::to_string(*batch_size));
    if (!token_strings.is_none()) gen_.set_token_texts(token_texts(token_strings));
    gen_.set_keep_raw_logprobs(output_raw_logprobs);
  }

  void append_tokens(py::handle prompts) {
    auto lists = prompt_lists(prompts);
    if (expected_batch_ && static_cast<int64_t>(lists.size()) != *expected_batch_)
      throw ValueError("got " + std::to_string(lists.size()) + " prompts, but the Generator was made for batch_size " +
                       std::to_string(*expected_batch_));
    gen_.append_tokens(lists);
  }

  StepResult step(py::handle logits) {
    LogitsView lv = logits_view(logits, false);
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      gen_.step(lv.data, lv.rows, lv.vocab);
    }
    return {next_tokens(), beam_indices(), gen_.done()};
  }

  py::array_t<int64_t> next_tokens() const { return copy_array(gen_.next_tokens(), gen_.rows()); }

  py::object beam_indices() const {
    const int64_t* p = gen_.beam_indices();
    return p ? py::object(copy_array(p, gen_.rows())) : py::object(py::none());
  }

  py::list sequences() const {
    py::list out;
    const Sequences& s = gen_.sequences();
    for (int64_t r = 0; r < s.rows(); ++r) out.append(copy_array(s.tokens(r), s.length(r)));
    return out;
  }

  py::list finish_reasons() const {
    py::list out;
    for (int64_t r = 0; r < gen_.rows(); ++r) out.append(reason_object(gen_.finish_reason(r)));
    return out;
  }

  // The last processed logits as a view over the generator's buffer (self is the base).
  static py::object last_logits(py::object self) {
    PyGenerator& g = self.cast<PyGenerator&>();
    if (g.gen_.steps() == 0) return py::none();
    const auto rows = static_cast<py::ssize_t>(g.gen_.rows()), vocab = static_cast<py::ssize_t>(g.gen_.vocab());
    const std::vector<py::ssize_t> shape{rows, vocab};
    const std::vector<py::ssize_t> strides{vocab * static_cast<py::ssize_t>(sizeof(float)), sizeof(float)};
    return py::array_t<float>(shape, strides, g.gen_.processed_logits(), self);
  }

  py::list hypotheses() const {
    py::list out;
    for (const auto& per_input : gen_.results()) {
      py::list row;
      for (const Hypothesis& h : per_input) {
        py::dict d;
        d["tokens"] = copy_array(h.tokens.data(), static_cast<int64_t>(h.tokens.size()));
        d["prompt_length"] = h.prompt_length;
        d["logprobs"] = copy_array(h.logprobs.data(), static_cast<int64_t>(h.logprobs.size()));
        const bool has_raw = !h.logprobs.empty() && h.raw_logprobs.size() == h.logprobs.size();
        d["raw_logprobs"] = has_raw ? py::object(copy_array(h.raw_logprobs.data(), static_cast<int64_t>(h.raw_logprobs.size())))
                                    : py::object(py::none());
        d["score"] = h.score;
        d["finish_reason"] = reason_object(h.reason);
        row.append(d);
      }
      out.append(row);
    }
    return out;
  }

  Generator& core() { return gen_; }
  const Generator& core() const { return gen_; }

 private:
  Generator gen_;
  std::optional<int64_t> expected_batch_;
  std::mutex mutex_;
};

}  // namespace

void register_generator(py::module_& m) {
  py::class_<StepResult>(m, "StepResult", "What Generator.step() returns: the tokens of this step and the beam parents.")
      .def_readonly("tokens", &StepResult::tokens,
                    "int64 [rows]: the token each row gets (the tokens to feed next; pad_token_id for finished rows).")
      .def_readonly("beam_indices", &StepResult::beam_indices,
                    "int64 [rows] under beam search: the row each new row continues (reorder your KV cache with "
                    "it: cache = cache[beam_indices]); None otherwise.")
      .def_readonly("done", &StepResult::done, "True when every row has finished.")
      .def("__repr__", [](const StepResult& s) {
        return "StepResult(tokens=" + std::string(py::repr(s.tokens)) + ", beam_indices=" +
               std::string(py::repr(s.beam_indices)) + ", done=" + (s.done ? "True" : "False") + ")";
      });

  py::class_<PyGenerator>(m, "_Generator", "The C++ generation loop over external logits (see kvgen.Generator).")
      .def(py::init<const GenerationConfig&, std::optional<int64_t>, py::object, bool>(), py::arg("config"),
           py::arg("batch_size") = py::none(), py::kw_only(), py::arg("token_strings") = py::none(),
           py::arg("output_raw_logprobs") = false)
      .def("append_tokens", &PyGenerator::append_tokens, py::arg("prompts"),
           "Sets the prompts: a list of token-id lists (lengths may differ) or a 2-D integer array.")
      .def("step", &PyGenerator::step, py::arg("logits"),
           "Processes the next-token logits [rows, vocab] (float32, C-contiguous, read in place) and picks a token "
           "per row; returns a StepResult.")
      .def("is_done", [](const PyGenerator& g) { return g.core().done(); }, "True when generation has finished.")
      .def_property_readonly("rows", [](const PyGenerator& g) { return g.core().rows(); },
                             "Rows of logits each step expects: batch_size x (num_beams or num_return_sequences).")
      .def_property_readonly("batch_size", [](const PyGenerator& g) { return g.core().batch_size(); },
                             "Number of prompts (0 before append_tokens).")
      .def_property_readonly("num_beams", [](const PyGenerator& g) { return g.core().config().num_beams; },
                             "Beams per prompt (1 without beam search).")
      .def_property_readonly("step_count", [](const PyGenerator& g) { return g.core().steps(); }, "Steps taken.")
      .def_property_readonly("config", [](const PyGenerator& g) { return g.core().config(); },
                             "A copy of the GenerationConfig.")
      .def_property_readonly("next_tokens", &PyGenerator::next_tokens,
                             "int64 [rows]: the tokens to feed the model next.")
      .def_property_readonly("beam_indices", &PyGenerator::beam_indices,
                             "int64 [rows]: parent row of each row after the last beam step; None otherwise.")
      .def_property_readonly("sequences", &PyGenerator::sequences,
                             "The current token ids of every row (prompt + generated), as a list of int64 arrays.")
      .def_property_readonly("finish_reasons", &PyGenerator::finish_reasons,
                             "Per row: 'eos', 'length', 'stop' or None while running (None for running beams; "
                             "beam hypotheses carry theirs in result()).")
      .def_property_readonly("last_logits", &PyGenerator::last_logits,
                             "The processed logits of the last step [rows, vocab] (log-probs under beam search) as "
                             "a NumPy view over the generator's own buffer: no copy, overwritten by the next step. "
                             "None before the first step.")
      .def("_hypotheses", &PyGenerator::hypotheses);
}

}  // namespace kvgen::bindings
