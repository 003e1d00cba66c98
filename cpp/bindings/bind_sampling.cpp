// Bindings of the sampler: kvgen.LogitsProcessor (HF LogitsProcessor call signature,
// in place) and kvgen.sample (one token per row). The GIL is released around the C++ work.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "arrays.h"
#include "kvgen/errors.h"
#include "kvgen/sampling/prompt_tracker.h"
#include "kvgen/sampling/sampler.h"

namespace py = pybind11;

namespace kvgen::bindings {
namespace {

// Runs Sampler::sample on Python arrays and builds the Python result.
py::object run_sample(Sampler& sampler, std::mutex& mutex, py::handle logits, py::handle input_ids, int64_t step,
                      py::handle sequence_ids, bool return_logprobs, std::optional<int64_t> prompt_length) {
  if (step < 0) throw ValueError("step must be >= 0, got " + std::to_string(step));
  LogitsView lv = logits_view(logits, false);
  HistoryView hv = history_view(input_ids, lv.rows, "input_ids", lv.vocab);
  auto seq = ids_view(sequence_ids, lv.rows, "sequence_ids");
  if (prompt_length && (*prompt_length < 0 || *prompt_length > hv.length))
    throw ValueError("prompt_length = " + std::to_string(*prompt_length) + " must be in [0, " +
                     std::to_string(hv.length) + "] (the length of input_ids)");
  TokenHistory history{hv.data(), hv.length, hv.length, nullptr, prompt_length.value_or(hv.length), nullptr};
  DrawKeys keys{sampler.config().resolved_seed(), seq.size() ? seq.data() : nullptr, step};
  py::array_t<int64_t> tokens(lv.rows);
  py::array_t<float> logprobs(return_logprobs ? lv.rows : 0);
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex);
    sampler.sample(RowLogits{.data = lv.data, .rows = lv.rows, .vocab = lv.vocab}, history, keys,
                   SampleOutputs{.tokens = tokens.mutable_data(),
                                 .logprobs = return_logprobs ? logprobs.mutable_data() : nullptr});
  }
  if (return_logprobs) return py::make_tuple(tokens, logprobs);
  return tokens;
}

// kvgen.LogitsProcessor: owns a Sampler. The prompt length is the one given at
// construction, or else the PromptTracker's.
class PyLogitsProcessor {
 public:
  PyLogitsProcessor(const GenerationConfig& config, std::optional<int64_t> prompt_length)
      : sampler_(config), prompt_length_(prompt_length) {
    if (prompt_length && *prompt_length < 0)
      throw ValueError("prompt_length must be >= 0, got " + std::to_string(*prompt_length));
  }

  py::object call(py::object input_ids, py::object scores) {
    LogitsView lv = logits_view(scores, true, "scores");
    HistoryView hv = history_view(input_ids, lv.rows, "input_ids", lv.vocab);
    TokenHistory history{hv.data(), hv.length, hv.length, nullptr, prompt_of(hv), nullptr};
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      sampler_.process(lv.data, lv.rows, lv.vocab, history);
    }
    return scores;
  }

  py::object sample(py::handle logits, py::handle input_ids, int64_t step, py::handle sequence_ids,
                    bool return_logprobs) {
    const LogitsView lv = logits_view(logits, false);
    const int64_t prompt = prompt_of(history_view(input_ids, lv.rows, "input_ids", lv.vocab));
    return run_sample(sampler_, mutex_, logits, input_ids, step, sequence_ids, return_logprobs, prompt);
  }

  void reset() { tracker_.reset(); }

  const GenerationConfig& config() const { return sampler_.config(); }
  std::string repr() const { return "LogitsProcessor(" + sampler_.chain().describe() + ")"; }

  std::optional<int64_t> prompt_length() const { return prompt_length_ ? prompt_length_ : tracker_.current(); }

 private:
  // The prompt length for this call's history: the fixed one, or the tracked one.
  int64_t prompt_of(const HistoryView& h) {
    if (prompt_length_) return std::min(*prompt_length_, h.length);
    return tracker_.prompt_length(h.data(), h.rows, h.length);
  }

  Sampler sampler_;
  std::optional<int64_t> prompt_length_;  // fixed by the caller, or found per sequence
  std::mutex mutex_;                      // one chain run at a time (the sampler has scratch state)
  PromptTracker tracker_;                 // the calling threads' sequences (held briefly, with the GIL)
};

// The sampler behind kvgen.sample(), cached per thread while the config is unchanged.
struct CachedSampler {
  std::optional<GenerationConfig> config;
  std::unique_ptr<Sampler> sampler;
  std::mutex mutex;
};

Sampler& cached_sampler(const GenerationConfig& config, std::mutex*& mutex) {
  thread_local CachedSampler cache;
  if (!cache.config || !(*cache.config == config)) {
    cache.sampler = std::make_unique<Sampler>(config);
    cache.config = config;
  }
  mutex = &cache.mutex;
  return *cache.sampler;
}

}  // namespace

void register_sampling(py::module_& m) {
  py::class_<PyLogitsProcessor>(m, "LogitsProcessor", R"doc(
The logits-processing chain of a GenerationConfig, applied in place.

``processor(input_ids, scores)`` has Hugging Face's ``LogitsProcessor`` call signature:
``input_ids`` is the token history ``[rows, length]`` (or None), ``scores`` the logits
``[rows, vocab]``, a C-contiguous float32 NumPy array or torch CPU tensor, which is
processed in place (no copy) and returned. Filtered tokens become ``-inf``. So it can be
passed to ``transformers``' ``generate(logits_processor=[...])``.

The chain runs in Hugging Face's order (see the README); warpers (temperature, top-k,
top-p, min-p, typical, epsilon, eta) only when sampling.

``prompt_length``: how many leading tokens of ``input_ids`` are the prompt (used by
``min_new_tokens``, ``begin_suppress_tokens`` and ``max_new_tokens`` with
``forced_eos_token_id``). Given here, it holds for every call. None (the default): it is
found per sequence, so one processor can serve one ``generate()`` after another. A call
continues the calling thread's last sequence when its ``input_ids`` have as many rows,
are no shorter than that prompt and at most one token longer than the last call, and
each row's tokens before its newest one are those of some row of the last call (beam
search reorders rows). Any other call starts a new sequence whose prompt is all of its
``input_ids``. ``reset()`` makes the next call start a new sequence: call it before a
new prompt that could pass for a continuation (one that repeats the last call's tokens
up to its own last token).

Threads: one processor may be called from several threads at once. Each thread has its
own sequence (prompt length); the chain runs one call at a time, without the GIL.
)doc")
      .def(py::init<const GenerationConfig&, std::optional<int64_t>>(), py::arg("config"),
           py::arg("prompt_length") = py::none())
      .def("__call__", &PyLogitsProcessor::call, py::arg("input_ids"), py::arg("scores"),
           "Processes scores [rows, vocab] in place from the history input_ids [rows, length]; returns scores.")
      .def("sample", &PyLogitsProcessor::sample, py::arg("logits"), py::arg("input_ids") = py::none(),
           py::kw_only(), py::arg("step") = 0, py::arg("sequence_ids") = py::none(),
           py::arg("return_logprobs") = false,
           "Picks one token per row of logits (not modified); see kvgen.sample.")
      .def_property_readonly("config", &PyLogitsProcessor::config, "A copy of the GenerationConfig.")
      .def("reset", &PyLogitsProcessor::reset,
           "Forgets the calling thread's sequence, so that its next call starts a new one.")
      .def_property_readonly("prompt_length", &PyLogitsProcessor::prompt_length,
                             "Prompt tokens at the start of input_ids: the fixed value, or that of the calling "
                             "thread's current sequence (None before its first call).")
      .def("__repr__", &PyLogitsProcessor::repr);

  m.def(
      "sample",
      [](py::handle logits, const GenerationConfig& config, py::handle input_ids, int64_t step,
         py::handle sequence_ids, bool return_logprobs, std::optional<int64_t> prompt_length) {
        std::mutex* mutex = nullptr;
        Sampler& sampler = cached_sampler(config, mutex);
        return run_sample(sampler, *mutex, logits, input_ids, step, sequence_ids, return_logprobs, prompt_length);
      },
      py::arg("logits"), py::arg("config"), py::arg("input_ids") = py::none(), py::arg("step") = 0, py::kw_only(),
      py::arg("sequence_ids") = py::none(), py::arg("return_logprobs") = false,
      py::arg("prompt_length") = py::none(), R"doc(
Picks the next token of every row of ``logits`` ``[rows, vocab]`` (float32,
C-contiguous; read in place, never modified).

Greedy (``do_sample=False`` or ``temperature=0``): the argmax of the processed logits.
Sampling: a draw from the processed distribution with a counter-based RNG keyed by
``(config.seed, sequence id, step)``; the sequence id of row ``r`` is
``sequence_ids[r]`` (default ``r``), so a sequence gets the same token whatever batch
it is in. ``input_ids`` ``[rows, length]`` is the token history read by the penalties;
``prompt_length`` how much of it is prompt (default: all of it).

Returns an int64 array ``[rows]``; with ``return_logprobs=True`` also the float32
log-probabilities of those tokens under the processed distribution.
)doc");
}

}  // namespace kvgen::bindings
