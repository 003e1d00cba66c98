// Binding of the built-in models: kvgen._core._Model, built from a config dict and a
// dict of float32 NumPy arrays (the facade loads them with safetensors / gguf).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>

#include "arrays.h"
#include "kvgen/errors.h"
#include "kvgen/limits.h"
#include "kvgen/model/gpt2.h"
#include "kvgen/model/kernels.h"
#include "kvgen/model/llama.h"
#include "py_model.h"

namespace py = pybind11;

namespace kvgen::bindings {
namespace {

// name -> view over each array; float32 and C-contiguous, or a TypeError naming it.
TensorMap tensor_map(const py::dict& arrays) {
  TensorMap t;
  for (auto item : arrays) {
    const std::string name = py::str(item.first);
    if (!py::isinstance<py::array>(item.second))
      throw TypeError("tensor '" + name + "' is not a NumPy array");
    py::array a = py::reinterpret_borrow<py::array>(item.second);
    if (!a.dtype().is(py::dtype::of<float>()))
      throw TypeError("tensor '" + name + "' has dtype " + std::string(py::str(a.dtype())) +
                      "; kvgen's models read float32 weights");
    if (!(a.flags() & py::array::c_style)) throw ValueError("tensor '" + name + "' is not C-contiguous");
    TensorView v{static_cast<const float*>(a.data()), {}};
    for (py::ssize_t i = 0; i < a.ndim(); ++i) v.shape.push_back(a.shape(i));
    t.add(name, std::move(v));
  }
  return t;
}

// ---- typed reads of config values: a wrong type is a TypeError, a value out of range a
// ValueError, each naming the key (never a pybind11 cast error) ----

std::string describe(const py::handle& v) {
  return std::string(py::repr(v)).substr(0, 60) + " (" + std::string(py::str(v.get_type().attr("__name__"))) + ")";
}

bool present(const py::dict& c, const char* key) { return c.contains(key) && !c[key].is_none(); }

// config[key] as an int64: a Python int (bool, float and str are refused) that fits.
int64_t int_value(const py::dict& c, const char* key) {
  py::object v = c[key];
  if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v))
    throw TypeError(std::string("model config: ") + key + " must be an integer, got " + describe(v));
  int overflow = 0;
  const long long out = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow != 0)
    throw ValueError(std::string("model config: ") + key + " = " + std::string(py::str(v)).substr(0, 40) +
                     " does not fit in 64 bits");
  return out;
}

int64_t get_int(const py::dict& c, const char* key) {
  if (!present(c, key)) throw ValueError(std::string("model config has no '") + key + "'");
  return int_value(c, key);
}

// config[key], or fallback when it is absent or None.
int64_t get_int_or(const py::dict& c, const char* key, int64_t fallback) {
  return present(c, key) ? int_value(c, key) : fallback;
}

// config[key] must be >= 1 (a head count that later divides a width).
int64_t get_positive(const py::dict& c, const char* key) {
  const int64_t v = get_int(c, key);
  if (v < 1) throw ValueError(std::string("model config: ") + key + " = " + std::to_string(v) + " must be positive");
  return v;
}

// config[key] as a finite, non-negative float32 (an epsilon), or fallback when absent.
float get_epsilon_or(const py::dict& c, const char* key, float fallback) {
  if (!present(c, key)) return fallback;
  py::object v = c[key];
  if (py::isinstance<py::bool_>(v) || !(py::isinstance<py::float_>(v) || py::isinstance<py::int_>(v)))
    throw TypeError(std::string("model config: ") + key + " must be a number, got " + describe(v));
  const double d = v.cast<double>();
  const auto f = static_cast<float>(d);
  if (!std::isfinite(f) || f < 0)
    throw ValueError(std::string("model config: ") + key + " = " + std::string(py::repr(v)) +
                     " must be a finite, non-negative float32");
  return f;
}

bool get_bool_or(const py::dict& c, const char* key, bool fallback) {
  if (!present(c, key)) return fallback;
  py::object v = c[key];
  if (!py::isinstance<py::bool_>(v))
    throw TypeError(std::string("model config: ") + key + " must be true or false, got " + describe(v));
  return v.cast<bool>();
}

std::string get_str_or(const py::dict& c, const char* key, const std::string& fallback) {
  if (!present(c, key)) return fallback;
  py::object v = c[key];
  if (!py::isinstance<py::str>(v))
    throw TypeError(std::string("model config: ") + key + " must be a string, got " + describe(v));
  return v.cast<std::string>();
}

// The sizes of a GPT-2 / Llama config dict (Hugging Face keys), validated.
ModelConfig gpt2_config(const py::dict& config) {
  ModelConfig mc;
  mc.architecture = "gpt2";
  mc.vocab_size = get_positive(config, "vocab_size");
  mc.context_length = get_positive(config, "n_positions");
  mc.hidden = get_positive(config, "n_embd");
  mc.layers = get_positive(config, "n_layer");
  mc.heads = mc.kv_heads = get_positive(config, "n_head");
  mc.head_dim = mc.hidden / mc.heads;
  mc.intermediate = present(config, "n_inner") ? get_int(config, "n_inner")
                                               : limits::checked_mul(4, mc.hidden, "gpt2 config: n_inner (4 x n_embd)");
  mc.validate();
  return mc;
}

ModelConfig llama_config(const py::dict& config) {
  ModelConfig mc;
  mc.architecture = "llama";
  mc.vocab_size = get_positive(config, "vocab_size");
  mc.context_length = get_positive(config, "max_position_embeddings");
  mc.hidden = get_positive(config, "hidden_size");
  mc.layers = get_positive(config, "num_hidden_layers");
  mc.heads = get_positive(config, "num_attention_heads");
  mc.kv_heads = get_int_or(config, "num_key_value_heads", mc.heads);
  mc.head_dim = get_int_or(config, "head_dim", mc.hidden / mc.heads);
  mc.intermediate = get_positive(config, "intermediate_size");
  mc.validate();
  return mc;
}

std::unique_ptr<PyModel> own(const py::dict& arrays, std::unique_ptr<Model> model) {
  auto pm = std::make_unique<PyModel>();
  pm->arrays = arrays;
  pm->model = std::move(model);
  return pm;
}

std::unique_ptr<PyModel> make_gpt2(const py::dict& config, const py::dict& arrays) {
  const ModelConfig mc = gpt2_config(config);
  GPT2Options opt;
  opt.layer_norm_epsilon = get_epsilon_or(config, "layer_norm_epsilon", opt.layer_norm_epsilon);
  opt.scale_attn_weights = get_bool_or(config, "scale_attn_weights", opt.scale_attn_weights);
  opt.scale_attn_by_inverse_layer_idx =
      get_bool_or(config, "scale_attn_by_inverse_layer_idx", opt.scale_attn_by_inverse_layer_idx);
  opt.exact_gelu = get_str_or(config, "activation_function", "gelu_new") == "gelu";
  return own(arrays, std::make_unique<GPT2>(mc, opt, tensor_map(arrays)));
}

std::unique_ptr<PyModel> make_llama(const py::dict& config, py::array_t<float, py::array::c_style> inv_freq,
                                    const py::dict& arrays) {
  const ModelConfig mc = llama_config(config);
  LlamaOptions opt;
  opt.rms_norm_eps = get_epsilon_or(config, "rms_norm_eps", opt.rms_norm_eps);
  if (inv_freq.ndim() != 1) throw ValueError("rope inverse frequencies must be a 1-D array");
  opt.inv_freq.assign(inv_freq.data(), inv_freq.data() + inv_freq.size());
  return own(arrays, std::make_unique<Llama>(mc, opt, tensor_map(arrays)));
}

// The validated sizes of a config dict, by ModelConfig field name (the facade needs
// head_dim before it computes the rotary frequencies).
py::dict model_sizes(const std::string& architecture, const py::dict& config) {
  if (architecture != "gpt2" && architecture != "llama")
    throw ValueError("architecture '" + architecture + "' is not one of gpt2, llama");
  const ModelConfig mc = architecture == "gpt2" ? gpt2_config(config) : llama_config(config);
  py::dict out;
  out["vocab_size"] = mc.vocab_size;
  out["context_length"] = mc.context_length;
  out["hidden"] = mc.hidden;
  out["layers"] = mc.layers;
  out["heads"] = mc.heads;
  out["kv_heads"] = mc.kv_heads;
  out["head_dim"] = mc.head_dim;
  out["intermediate"] = mc.intermediate;
  return out;
}

// Model.forward: a fresh array per call, written by the forward pass in place, so a
// result stays valid whatever other calls (or threads) do later.
py::array_t<float> forward(PyModel& pm, py::handle input_ids) {
  const ModelConfig& c = pm.core().config();
  py::array ids = py::module_::import("numpy").attr("asarray")(input_ids);
  if (ids.ndim() == 1) ids = py::module_::import("numpy").attr("expand_dims")(ids, 0);
  HistoryView hv = history_view(ids, ids.ndim() == 2 ? ids.shape(0) : -1, "input_ids", c.vocab_size);
  const int64_t rows = hv.rows, len = hv.length;
  if (rows < 1 || len < 1) throw ValueError("input_ids must hold at least one token per row");
  if (len > c.context_length)
    throw ValueError("context overflow: input_ids has " + std::to_string(len) + " tokens, the model has " +
                     std::to_string(c.context_length) + " positions");
  limits::checked_mul(limits::checked_mul(rows, len, "input_ids"), c.vocab_size, "forward logits");
  py::array_t<float> logits(std::vector<py::ssize_t>{rows, len, c.vocab_size});  // (rows, len, vocab)
  float* out = logits.mutable_data();
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(pm.mutex);
    KVCache cache = pm.core().make_cache(rows, len);
    std::vector<RowTokens> chunks;
    for (int64_t r = 0; r < rows; ++r) chunks.push_back({r, hv.data() + r * len, len});
    pm.core().forward(chunks, cache, out, /*all_positions=*/true);
  }
  return logits;
}

}  // namespace

void register_model(py::module_& m) {
  py::class_<PyModel>(m, "_Model", "A built-in model over weights held in NumPy arrays (see kvgen.Model).")
      .def_static("gpt2", &make_gpt2, py::arg("config"), py::arg("arrays"),
                  "GPT-2 from a Hugging Face config dict and its tensors (float32 arrays by name).")
      .def_static("sizes", &model_sizes, py::arg("architecture"), py::arg("config"),
                  "The validated sizes of a gpt2 / llama config dict (Hugging Face keys): vocab_size, "
                  "context_length, hidden, layers, heads, kv_heads, head_dim, intermediate.")
      .def_static("llama", &make_llama, py::arg("config"), py::arg("inv_freq"), py::arg("arrays"),
                  "A Llama-family model from a Hugging Face LlamaConfig dict, its rotary inverse frequencies "
                  "(head_dim / 2, scaling applied) and its tensors (float32 arrays by "
                  "Hugging Face name).")
      .def("forward", &forward, py::arg("input_ids"), R"doc(
Logits [rows, length, vocab] for input_ids [rows, length] (all positions, no cache kept).

The result is a new float32 array that the caller owns: the forward pass writes into it
directly (no copy), and later calls never touch it. Calls from several threads run one
at a time (the GIL is released meanwhile). A token id outside [0, vocab) is a ValueError
naming its position: "input_ids[0, 3] = 300 is outside the vocabulary [0, 211)".
)doc")
      .def_property_readonly("architecture", [](PyModel& p) { return p.core().config().architecture; })
      .def_property_readonly("vocab_size", [](PyModel& p) { return p.core().config().vocab_size; })
      .def_property_readonly("context_length", [](PyModel& p) { return p.core().config().context_length; })
      .def_property_readonly("hidden_size", [](PyModel& p) { return p.core().config().hidden; })
      .def_property_readonly("num_layers", [](PyModel& p) { return p.core().config().layers; })
      .def_property_readonly("num_heads", [](PyModel& p) { return p.core().config().heads; })
      .def_property_readonly("num_kv_heads", [](PyModel& p) { return p.core().config().kv_heads; })
      .def_property_readonly(
          "weight_bytes",
          [](PyModel& p) {
            int64_t total = 0;
            for (auto item : p.arrays) total += py::reinterpret_borrow<py::array>(item.second).nbytes();
            return total;
          },
          "Bytes of the weight arrays the model reads.")
      .def(
          "kv_cache_bytes",
          [](PyModel& p, int64_t rows, int64_t positions) {
            const ModelConfig& c = p.core().config();
            int64_t bytes = 2 * static_cast<int64_t>(sizeof(float));
            for (int64_t n : {c.layers, rows, positions, c.kv_heads, c.head_dim})
              bytes = limits::checked_mul(bytes, n, "kv_cache_bytes(rows, positions)");
            return bytes;
          },
          py::arg("rows"), py::arg("positions"), "Bytes a KV cache for rows x positions takes.");

  m.def("set_num_threads", &kernels::set_blas_threads, py::arg("n"),
        "Threads for the model's matrix products (OpenBLAS); the sampler runs on the calling thread.");
  m.def("get_num_threads", &kernels::blas_threads, "Threads the model's matrix products use.");
}

}  // namespace kvgen::bindings
