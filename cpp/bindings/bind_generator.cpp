// Binding of kvgen::Generator (the step API over external logits) and its results.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>

#include "arrays.h"
#include "py_model.h"
#include "kvgen/errors.h"
#include "kvgen/generator.h"
#include "kvgen/model_generation.h"

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

py::array_t<int64_t> next_tokens_of(const Generator& g) { return copy_array(g.next_tokens(), g.rows()); }

py::object beam_indices_of(const Generator& g) {
  const int64_t* p = g.beam_indices();
  return p ? py::object(copy_array(p, g.rows())) : py::object(py::none());
}

py::list sequences_of(const Generator& g) {
  py::list out;
  const Sequences& s = g.sequences();
  for (int64_t r = 0; r < s.rows(); ++r) out.append(copy_array(s.tokens(r), s.length(r)));
  return out;
}

py::list finish_reasons_of(const Generator& g) {
  py::list out;
  for (int64_t r = 0; r < g.rows(); ++r) out.append(reason_object(g.finish_reason(r)));
  return out;
}

// The last processed logits as a view over the generator's buffer, kept alive by owner.
py::object last_logits_of(Generator& g, py::handle owner) {
  if (g.steps() == 0) return py::none();
  const auto rows = static_cast<py::ssize_t>(g.rows()), vocab = static_cast<py::ssize_t>(g.vocab());
  const std::vector<py::ssize_t> shape{rows, vocab};
  const std::vector<py::ssize_t> strides{vocab * static_cast<py::ssize_t>(sizeof(float)), sizeof(float)};
  return py::array_t<float>(shape, strides, g.processed_logits(), owner);
}

py::list hypotheses_of(const Generator& g) {
  py::list out;
  for (const auto& per_input : g.results()) {
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
    return {next_tokens_of(gen_), beam_indices_of(gen_), gen_.done()};
  }

  Generator& core() { return gen_; }
  const Generator& core() const { return gen_; }

 private:
  Generator gen_;
  std::optional<int64_t> expected_batch_;
  std::mutex mutex_;
};

// Binds the state readers shared by both generator classes (W::core() -> Generator&).
template <class W>
void def_generator_state(py::class_<W>& cls) {
  cls.def("is_done", [](const W& w) { return w.core().done(); }, "True when generation has finished.")
      .def_property_readonly("rows", [](const W& w) { return w.core().rows(); },
                             "Rows of logits each step expects: batch_size x (num_beams or num_return_sequences).")
      .def_property_readonly("batch_size", [](const W& w) { return w.core().batch_size(); },
                             "Number of prompts (0 before append_tokens).")
      .def_property_readonly("num_beams", [](const W& w) { return w.core().config().num_beams; },
                             "Beams per prompt (1 without beam search).")
      .def_property_readonly("step_count", [](const W& w) { return w.core().steps(); }, "Steps taken.")
      .def_property_readonly("config", [](const W& w) { return w.core().config(); }, "A copy of the GenerationConfig.")
      .def_property_readonly("next_tokens", [](const W& w) { return next_tokens_of(w.core()); },
                             "int64 [rows]: the tokens to feed the model next.")
      .def_property_readonly("beam_indices", [](const W& w) { return beam_indices_of(w.core()); },
                             "int64 [rows]: parent row of each row after the last beam step; None otherwise.")
      .def_property_readonly("sequences", [](const W& w) { return sequences_of(w.core()); },
                             "The current token ids of every row (prompt + generated), as a list of int64 arrays.")
      .def_property_readonly("finish_reasons", [](const W& w) { return finish_reasons_of(w.core()); },
                             "Per row: 'eos', 'length', 'stop' or None while running (None for running beams; "
                             "beam hypotheses carry theirs in result()).")
      .def_property_readonly("last_logits", [](py::object self) { return last_logits_of(self.cast<W&>().core(), self); },
                             "The processed logits of the last step [rows, vocab] (log-probs under beam search) as "
                             "a NumPy view over the generator's own buffer: no copy, overwritten by the next step. "
                             "None before the first step.")
      .def("_hypotheses", [](const W& w) { return hypotheses_of(w.core()); });
}

// kvgen._ModelGeneration: keeps the Python model (and so its weights) alive.
class PyModelGeneration {
 public:
  PyModelGeneration(py::object model, const GenerationConfig& config, py::object token_strings, bool raw)
      : model_(model), run_(model_of(model).core(), config) {
    if (!token_strings.is_none()) run_.generator().set_token_texts(token_texts(token_strings));
    run_.generator().set_keep_raw_logprobs(raw);
  }

  void start(py::handle prompts) {
    auto lists = prompt_lists(prompts);
    PyModel& m = model_of(model_);
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(m.mutex);
    run_.start(lists);
  }

  void advance() {
    PyModel& m = model_of(model_);
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(m.mutex);
    run_.advance();
  }

  int64_t kv_cache_bytes() const { return run_.generator().started() ? run_.cache().bytes() : 0; }
  Generator& core() { return run_.generator(); }
  const Generator& core() const { return run_.generator(); }

 private:
  static PyModel& model_of(py::handle obj) {
    if (!py::isinstance<PyModel>(obj)) throw TypeError("model must be a kvgen.Model");
    return obj.cast<PyModel&>();
  }

  py::object model_;
  ModelGeneration run_;
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

  py::class_<PyGenerator> gen(m, "_Generator", "The C++ generation loop over external logits (see kvgen.Generator).");
  gen.def(py::init<const GenerationConfig&, std::optional<int64_t>, py::object, bool>(), py::arg("config"),
          py::arg("batch_size") = py::none(), py::kw_only(), py::arg("token_strings") = py::none(),
          py::arg("output_raw_logprobs") = false)
      .def("append_tokens", &PyGenerator::append_tokens, py::arg("prompts"),
           "Sets the prompts: a list of token-id lists (lengths may differ) or a 2-D integer array.")
      .def("step", &PyGenerator::step, py::arg("logits"),
           "Processes the next-token logits [rows, vocab] (float32, C-contiguous, read in place) and picks a token "
           "per row; returns a StepResult.");
  def_generator_state(gen);

  py::class_<PyModelGeneration> mg(m, "_ModelGeneration", "A Generator driven by a built-in model (see kvgen.Generator).");
  mg.def(py::init<py::object, const GenerationConfig&, py::object, bool>(), py::arg("model"), py::arg("config"),
         py::kw_only(), py::arg("token_strings") = py::none(), py::arg("output_raw_logprobs") = false)
      .def("start", &PyModelGeneration::start, py::arg("prompts"),
           "Checks the context, prefills the prompts in one batched pass and takes the first step.")
      .def("advance", &PyModelGeneration::advance, "One decode step: forward the last tokens, then pick the next.")
      .def_property_readonly("kv_cache_bytes", &PyModelGeneration::kv_cache_bytes,
                             "Bytes of the KV cache (rows x layers x 2 x positions x kv_dim x 4).");
  def_generator_state(mg);
}

}  // namespace kvgen::bindings
