// Bindings of the sampler: kvgen.LogitsProcessor (HF LogitsProcessor call signature,
// in place) and kvgen.sample (one token per row). The GIL is released around the C++ work.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <random>

#include "arrays.h"
#include "kvgen/errors.h"
#include "kvgen/sampling/sampler.h"

namespace py = pybind11;

namespace kvgen::bindings {
namespace {

uint64_t resolve_seed(const GenerationConfig& cfg) {
  if (cfg.seed) return *cfg.seed;
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// Runs Sampler::sample on Python arrays and builds the Python result.
py::object run_sample(Sampler& sampler, std::mutex& mutex, py::handle logits, py::handle input_ids, int64_t step,
                      py::handle sequence_ids, bool return_logprobs, std::optional<int64_t> prompt_length) {
  if (step < 0) throw ValueError("step must be >= 0, got " + std::to_string(step));
  LogitsView lv = logits_view(logits, false);
  HistoryView hv = history_view(input_ids, lv.rows);
  auto seq = ids_view(sequence_ids, lv.rows, "sequence_ids");
  if (prompt_length && (*prompt_length < 0 || *prompt_length > hv.length))
    throw ValueError("prompt_length = " + std::to_string(*prompt_length) + " must be in [0, " +
                     std::to_string(hv.length) + "] (the length of input_ids)");
  TokenHistory history{hv.data(), hv.length, hv.length, nullptr, prompt_length.value_or(hv.length), nullptr};
  DrawKeys keys{resolve_seed(sampler.config()), seq.size() ? seq.data() : nullptr, step};
  py::array_t<int64_t> tokens(lv.rows);
  py::array_t<float> logprobs(return_logprobs ? lv.rows : 0);
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex);
    sampler.sample(lv.data, lv.rows, lv.vocab, history, keys, tokens.mutable_data(),
                   return_logprobs ? logprobs.mutable_data() : nullptr);
  }
  if (return_logprobs) return py::make_tuple(tokens, logprobs);
  return tokens;
}

// kvgen.LogitsProcessor: owns a Sampler; the prompt length is fixed at construction or
// at the first call, as Hugging Face fixes it when generate() builds its processors.
class PyLogitsProcessor {
 public:
  PyLogitsProcessor(const GenerationConfig& config, std::optional<int64_t> prompt_length)
      : sampler_(config), prompt_length_(prompt_length) {
    if (prompt_length && *prompt_length < 0)
      throw ValueError("prompt_length must be >= 0, got " + std::to_string(*prompt_length));
  }

  py::object call(py::object input_ids, py::object scores) {
    LogitsView lv = logits_view(scores, true, "scores");
    HistoryView hv = history_view(input_ids, lv.rows);
    TokenHistory history{hv.data(), hv.length, hv.length, nullptr, resolve_prompt(hv.length), nullptr};
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      sampler_.process(lv.data, lv.rows, lv.vocab, history);
    }
    return scores;
  }

  py::object sample(py::handle logits, py::handle input_ids, int64_t step, py::handle sequence_ids,
                    bool return_logprobs) {
    const int64_t len = input_ids.is_none() ? 0 : history_view(input_ids, logits_view(logits, false).rows).length;
    return run_sample(sampler_, mutex_, logits, input_ids, step, sequence_ids, return_logprobs, resolve_prompt(len));
  }

  const GenerationConfig& config() const { return sampler_.config(); }
  std::string repr() const { return "LogitsProcessor(" + sampler_.chain().describe() + ")"; }
  std::optional<int64_t> prompt_length() const { return prompt_length_; }

 private:
  int64_t resolve_prompt(int64_t history_len) {
    if (!prompt_length_) prompt_length_ = history_len;
    return std::min(*prompt_length_, history_len);
  }

  Sampler sampler_;
  std::optional<int64_t> prompt_length_;
  std::mutex mutex_;
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
``forced_eos_token_id``). None: the length of ``input_ids`` at the first call.
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
      .def_property_readonly("prompt_length", &PyLogitsProcessor::prompt_length,
                             "Prompt tokens at the start of input_ids (None until the first call).")
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
