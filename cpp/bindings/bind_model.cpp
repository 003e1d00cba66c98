// Binding of the built-in models: kvgen._core._Model, built from a _ModelConfig (sizes), the
// architecture's options and a dict of float32 NumPy arrays. The facade (kvgen._model) reads
// the Hugging Face config keys into those structs and loads the arrays (safetensors / gguf).
#include <optional>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "arrays.h"
#include "kvgen/errors.h"
#include "kvgen/limits.h"
#include "kvgen/models/gemma.h"
#include "kvgen/models/gpt2.h"
#include "kvgen/models/granite_hybrid.h"
#include "kvgen/models/lfm2.h"
#include "kvgen/models/llama.h"
#include "kvgen/models/qwen35.h"
#include "kvgen/runtime/thread_pool.h"
#include "py_model.h"
#include "recurrent_shapes.h"

namespace py = pybind11;

namespace kvgen::bindings {
namespace {

// name -> view over each tensor: a float32 C-contiguous array, or a (type, data, shape,
// mapped) tuple of a quantized tensor (a GGUF type name, its raw uint8 blocks, its logical
// shape, and whether the blocks are pages of a read-only file mapping that may be dropped
// once repacked), which the model repacks; a TypeError naming the tensor otherwise.
TensorMap tensor_map(const py::dict& arrays) {
  TensorMap t;
  for (auto item : arrays) {
    const std::string name = py::str(item.first);
    TensorView v;
    py::array a;
    if (py::isinstance<py::tuple>(item.second)) {
      const py::tuple raw = py::reinterpret_borrow<py::tuple>(item.second);
      if (raw.size() != 4 || !py::isinstance<py::str>(raw[0]) || !py::isinstance<py::array>(raw[1]))
        throw TypeError("quantized tensor '" + name + "' must be a (type name, uint8 array, shape, mapped) tuple");
      v.type = raw[0].cast<std::string>();
      a = py::reinterpret_borrow<py::array>(raw[1]);
      if (!a.dtype().is(py::dtype::of<uint8_t>()))
        throw TypeError("quantized tensor '" + name + "' has dtype " + std::string(py::str(a.dtype())) +
                        "; its blocks must be a uint8 array");
      for (auto d : raw[2].cast<py::tuple>()) v.shape.push_back(d.cast<int64_t>());
      v.mapped = raw[3].cast<bool>();
    } else {
      if (!py::isinstance<py::array>(item.second)) throw TypeError("tensor '" + name + "' is not a NumPy array");
      a = py::reinterpret_borrow<py::array>(item.second);
      if (!a.dtype().is(py::dtype::of<float>()))
        throw TypeError("tensor '" + name + "' has dtype " + std::string(py::str(a.dtype())) +
                        "; kvgen's models read float32 weights (or quantized GGUF blocks)");
      for (py::ssize_t i = 0; i < a.ndim(); ++i) v.shape.push_back(a.shape(i));
    }
    if (!(a.flags() & py::array::c_style)) throw ValueError("tensor '" + name + "' is not C-contiguous");
    v.data = a.data();
    v.bytes = static_cast<int64_t>(a.nbytes());
    t.add(name, std::move(v));
  }
  return t;
}

// The facade names the architecture in the config it passes; the factory it calls must agree.
void expect_architecture(const ModelConfig& config, const std::string& architecture) {
  if (config.architecture != architecture)
    throw ValueError("a " + config.architecture + " ModelConfig passed to _Model." + architecture);
}

// "int8x2" | "int8" | "float" (Model.activations in Python).
Activations parse_activations(const std::string& name) {
  if (name == "int8x2") return Activations::Int8TwoLevel;
  if (name == "int8") return Activations::Int8;
  if (name == "float") return Activations::Float;
  if (name == "bf16") {
    const std::string why = quant::bf16_unavailable_reason(quant::active_cpu_path());
    if (!why.empty()) throw ValueError("activations='bf16': " + why);
    return Activations::Bf16;
  }
  throw ValueError("activations='" + name + "' is not one of 'int8x2', 'int8', 'float', 'bf16'");
}

std::string activations_name(Activations a) {
  switch (a) {
    case Activations::Int8TwoLevel: return "int8x2";
    case Activations::Int8: return "int8";
    case Activations::Float: return "float";
    case Activations::Bf16: return "bf16";
  }
  return "?";
}

// The model `make` builds over `arrays` (models/<family>.h's make_<family>). The model repacks
// quantized tensors while it is built (the GIL released meanwhile), so their blocks (often a
// memory-mapped file) can go; the float32 arrays it reads in place are kept.
template <class Options, class Make>
std::unique_ptr<PyModel> make_model(Make make, const std::string& architecture, const ModelConfig& config,
                                    const Options& options, const py::dict& arrays, const std::string& activations) {
  const Activations mode = parse_activations(activations);  // before any work
  expect_architecture(config, architecture);
  const TensorMap tensors = tensor_map(arrays);
  auto pm = std::make_unique<PyModel>();
  {
    py::gil_scoped_release release;
    pm->model = make(config, options, tensors);
  }
  pm->model->set_activations(mode);
  for (auto item : arrays)  // the float32 arrays and the quantized tensors the model reads in place
    if (!py::isinstance<py::tuple>(item.second)) pm->arrays[item.first] = item.second;
  for (const std::string& name : tensors.read_in_place()) pm->arrays[py::str(name)] = arrays[py::str(name)];
  return pm;
}

std::unique_ptr<PyModel> make_gpt2(const ModelConfig& config, const GPT2Options& options, const py::dict& arrays,
                                   const std::string& activations) {
  return make_model(&kvgen::make_gpt2, "gpt2", config, options, arrays, activations);
}

std::unique_ptr<PyModel> make_gemma(const ModelConfig& config, const GemmaOptions& options, const py::dict& arrays,
                                    const std::string& activations) {
  return make_model(&kvgen::make_gemma, "gemma", config, options, arrays, activations);
}

std::unique_ptr<PyModel> make_llama(const ModelConfig& config, const LlamaOptions& options, const py::dict& arrays,
                                    const std::string& activations) {
  return make_model(&kvgen::make_llama, "llama", config, options, arrays, activations);
}

std::unique_ptr<PyModel> make_lfm2(const ModelConfig& config, const Lfm2Options& options, const py::dict& arrays,
                                   const std::string& activations) {
  return make_model(&kvgen::make_lfm2, "lfm2", config, options, arrays, activations);
}

std::unique_ptr<PyModel> make_qwen35(const ModelConfig& config, const Qwen35Options& options, const py::dict& arrays,
                                     const std::string& activations) {
  return make_model(&kvgen::make_qwen35, "qwen35", config, options, arrays, activations);
}

// The head keeps its target alive (in its arrays, under "<target>"): it reads the target's
// embedding and LM head.
std::unique_ptr<PyModel> make_qwen35_mtp(py::object target, const ModelConfig& config, const Qwen35Options& options,
                                         const py::dict& arrays, const std::string& activations) {
  if (!py::isinstance<PyModel>(target)) throw TypeError("target must be a kvgen._core._Model");
  PyModel& model = target.cast<PyModel&>();
  auto make = [&model](const ModelConfig& c, const Qwen35Options& o, const TensorMap& t) {
    return kvgen::make_qwen35_mtp(c, o, t, model.core());
  };
  auto pm = make_model(make, "qwen35", config, options, arrays, activations);
  pm->arrays["<target>"] = target;
  return pm;
}

std::unique_ptr<PyModel> make_granite_hybrid(const ModelConfig& config, const GraniteHybridOptions& options,
                                             const py::dict& arrays, const std::string& activations) {
  return make_model(&kvgen::make_granite_hybrid, "granitehybrid", config, options, arrays, activations);
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

// A mixture of experts' routing and activation (kvgen/models/moe.h), a field of _LlamaOptions.
void register_expert_options(py::module_& m) {
  const ExpertOptions experts;
  py::class_<ExpertOptions>(m, "_ExpertOptions",
                            "How a mixture of experts routes and what its experts compute (kvgen/models/moe.h).")
      .def(py::init([](bool norm_topk_prob, bool softmax_after_top_k, float swiglu_limit, float swiglu_alpha,
                       float norm_min, int64_t shared_expert_intermediate) {
             return ExpertOptions{.norm_topk_prob = norm_topk_prob, .softmax_after_top_k = softmax_after_top_k,
                                  .swiglu_limit = swiglu_limit, .swiglu_alpha = swiglu_alpha, .norm_min = norm_min,
                                  .shared_expert_intermediate = shared_expert_intermediate};
           }),
           py::kw_only(), py::arg("norm_topk_prob") = experts.norm_topk_prob,
           py::arg("softmax_after_top_k") = experts.softmax_after_top_k,
           py::arg("swiglu_limit") = experts.swiglu_limit, py::arg("swiglu_alpha") = experts.swiglu_alpha,
           py::arg("norm_min") = experts.norm_min,
           py::arg("shared_expert_intermediate") = experts.shared_expert_intermediate,
           "norm_topk_prob: renormalise each token's top-k routing probabilities (Qwen3-MoE); "
           "softmax_after_top_k: softmax the top-k router logits among themselves (GPT-OSS); swiglu_limit > 0: "
           "the experts' clamped SwiGLU, (clamp(up, -limit, limit) + 1) * g * sigmoid(swiglu_alpha * g) with "
           "g = min(gate, limit) (GPT-OSS); norm_min: the renormalising sum taken as at least this (ERNIE 4.5's "
           "moe_norm_min); shared_expert_intermediate > 0: every sparse layer's shared expert (mlp.shared_expert.*, "
           "scaled by sigmoid(mlp.shared_expert_gate(h)) where that tensor exists) is this wide.")
      .def_readonly("norm_topk_prob", &ExpertOptions::norm_topk_prob)
      .def_readonly("softmax_after_top_k", &ExpertOptions::softmax_after_top_k)
      .def_readonly("swiglu_limit", &ExpertOptions::swiglu_limit)
      .def_readonly("swiglu_alpha", &ExpertOptions::swiglu_alpha)
      .def_readonly("norm_min", &ExpertOptions::norm_min)
      .def_readonly("shared_expert_intermediate", &ExpertOptions::shared_expert_intermediate);
}

void register_model_config(py::module_& m) {
  py::class_<ModelConfig>(m, "_ModelConfig", "The sizes of a built-in model (kvgen/runtime/model_config.h).")
      .def(py::init([](std::string architecture, int64_t vocab_size, int64_t context_length, int64_t hidden,
                       int64_t layers, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t intermediate,
                       std::vector<int64_t> layer_windows, int64_t experts, int64_t experts_per_token,
                       int64_t expert_intermediate, const std::vector<LayerTuple>& recurrent_layers,
                       std::vector<int64_t> layer_kv_heads, std::vector<int64_t> layer_head_dims,
                       std::vector<int64_t> kv_sources) {
             return ModelConfig{.architecture = std::move(architecture), .vocab_size = vocab_size,
                                .context_length = context_length, .hidden = hidden, .layers = layers,
                                .heads = heads, .kv_heads = kv_heads, .head_dim = head_dim,
                                .intermediate = intermediate, .layer_windows = std::move(layer_windows),
                                .experts = experts, .experts_per_token = experts_per_token,
                                .expert_intermediate = expert_intermediate,
                                .recurrent_layers = layer_shapes(recurrent_layers),
                                .kv_layers = {.kv_heads = std::move(layer_kv_heads),
                                              .head_dims = std::move(layer_head_dims),
                                              .sources = std::move(kv_sources)}};
           }),
           py::kw_only(), py::arg("architecture"), py::arg("vocab_size"), py::arg("context_length"),
           py::arg("hidden"), py::arg("layers"), py::arg("heads"), py::arg("kv_heads"), py::arg("head_dim"),
           py::arg("intermediate"), py::arg("layer_windows") = std::vector<int64_t>(), py::arg("experts") = 0,
           py::arg("experts_per_token") = 0, py::arg("expert_intermediate") = 0,
           py::arg("recurrent_layers") = std::vector<LayerTuple>(),
           py::arg("layer_kv_heads") = std::vector<int64_t>(), py::arg("layer_head_dims") = std::vector<int64_t>(),
           py::arg("kv_sources") = std::vector<int64_t>(),
           "layer_windows: per layer, the sliding window (0 = full attention; empty = every layer full); "
           "experts > 0: a mixture of experts of that many experts, experts_per_token chosen per token, each "
           "expert_intermediate wide; recurrent_layers: per layer of a hybrid model, (conv_channels, conv_kernel, "
           "heads, key_dim, value_dim) of the state it keeps, all zeros for a layer that attends (empty = none); "
           "layer_kv_heads / layer_head_dims: per layer, its kv heads and head_dim (empty = kv_heads, head_dim "
           "everywhere); kv_sources: per layer, the layer whose keys and values it attends over (itself: its own; "
           "empty = each its own).")
      .def_readonly("architecture", &ModelConfig::architecture)
      .def_readonly("vocab_size", &ModelConfig::vocab_size)
      .def_readonly("context_length", &ModelConfig::context_length)
      .def_readonly("hidden", &ModelConfig::hidden)
      .def_readonly("layers", &ModelConfig::layers)
      .def_readonly("heads", &ModelConfig::heads)
      .def_readonly("kv_heads", &ModelConfig::kv_heads)
      .def_readonly("head_dim", &ModelConfig::head_dim)
      .def_readonly("intermediate", &ModelConfig::intermediate)
      .def_readonly("layer_windows", &ModelConfig::layer_windows)
      .def_readonly("experts", &ModelConfig::experts)
      .def_readonly("experts_per_token", &ModelConfig::experts_per_token)
      .def_readonly("expert_intermediate", &ModelConfig::expert_intermediate)
      .def_property_readonly("layer_kv_heads", [](const ModelConfig& c) { return c.kv_layers.kv_heads; })
      .def_property_readonly("layer_head_dims", [](const ModelConfig& c) { return c.kv_layers.head_dims; })
      .def_property_readonly("kv_sources", [](const ModelConfig& c) { return c.kv_layers.sources; })
      .def_property_readonly("recurrent_layers",
                             [](const ModelConfig& c) { return layer_tuples(c.recurrent_layers); })
      .def("validate", &ModelConfig::validate,
           "ValueError naming the config key when a size is not positive, above its limit or inconsistent "
           "(the models' constructors run it too).");

  // Each option's default is the C++ struct's: the facade passes only what the config sets.
  const GPT2Options gpt2;
  py::class_<GPT2Options>(m, "_GPT2Options", "GPT-2's numerics options (kvgen/models/gpt2.h).")
      .def(py::init([](float layer_norm_epsilon, bool scale_attn_weights, bool scale_attn_by_inverse_layer_idx,
                       bool exact_gelu) {
             return GPT2Options{.layer_norm_epsilon = layer_norm_epsilon,
                                .scale_attn_weights = scale_attn_weights,
                                .scale_attn_by_inverse_layer_idx = scale_attn_by_inverse_layer_idx,
                                .exact_gelu = exact_gelu};
           }),
           py::kw_only(), py::arg("layer_norm_epsilon") = gpt2.layer_norm_epsilon,
           py::arg("scale_attn_weights") = gpt2.scale_attn_weights,
           py::arg("scale_attn_by_inverse_layer_idx") = gpt2.scale_attn_by_inverse_layer_idx,
           py::arg("exact_gelu") = gpt2.exact_gelu)
      .def_readonly("layer_norm_epsilon", &GPT2Options::layer_norm_epsilon)
      .def_readonly("scale_attn_weights", &GPT2Options::scale_attn_weights)
      .def_readonly("scale_attn_by_inverse_layer_idx", &GPT2Options::scale_attn_by_inverse_layer_idx)
      .def_readonly("exact_gelu", &GPT2Options::exact_gelu);

  const LlamaOptions llama;
  py::class_<LlamaOptions>(m, "_LlamaOptions",
                           "Numerics options of the Llama-like families (kvgen/models/llama.h).")
      .def(py::init([](py::array_t<float, py::array::c_style> inv_freq, float rms_norm_eps, int64_t rotary_dim,
                       std::optional<py::array_t<float, py::array::c_style>> inv_freq_long,
                       int64_t original_context, float rope_attention_factor, std::vector<uint8_t> rope_layers,
                       float embedding_multiplier, float residual_multiplier, float attention_scale,
                       float logit_scale, const ExpertOptions& experts) {
             const auto vector = [](const py::array_t<float, py::array::c_style>& a) {
               if (a.ndim() != 1) throw ValueError("rope inverse frequencies must be a 1-D array");
               return std::vector<float>(a.data(), a.data() + a.size());
             };
             return LlamaOptions{.rms_norm_eps = rms_norm_eps,
                                 .inv_freq = vector(inv_freq),
                                 .rotary_dim = rotary_dim,
                                 .inv_freq_long = inv_freq_long ? vector(*inv_freq_long) : std::vector<float>(),
                                 .original_context = original_context,
                                 .rope_attention_factor = rope_attention_factor,
                                 .rope_layers = std::move(rope_layers),
                                 .embedding_multiplier = embedding_multiplier,
                                 .residual_multiplier = residual_multiplier,
                                 .attention_scale = attention_scale,
                                 .logit_scale = logit_scale,
                                 .experts = experts};
           }),
           py::kw_only(), py::arg("inv_freq"), py::arg("rms_norm_eps") = llama.rms_norm_eps,
           py::arg("rotary_dim") = llama.rotary_dim, py::arg("inv_freq_long") = py::none(),
           py::arg("original_context") = llama.original_context,
           py::arg("rope_attention_factor") = llama.rope_attention_factor,
           py::arg("rope_layers") = llama.rope_layers, py::arg("embedding_multiplier") = llama.embedding_multiplier,
           py::arg("residual_multiplier") = llama.residual_multiplier,
           py::arg("attention_scale") = llama.attention_scale, py::arg("logit_scale") = llama.logit_scale,
           py::arg("experts") = llama.experts,
           "inv_freq: the rotary_dim / 2 rotary inverse frequencies, scaling applied (kvgen.loaders.rope); "
           "rotary_dim 0 = head_dim; inv_freq_long: LongRoPE's frequencies for calls reaching beyond "
           "original_context; rope_layers: per layer, nonzero where it applies the rotary embedding (empty: all); "
           "attention_scale 0 = 1 / sqrt(head_dim); experts: how a mixture of experts routes and activates "
           "(_ExpertOptions).")
      .def_readonly("rms_norm_eps", &LlamaOptions::rms_norm_eps)
      .def_readonly("rotary_dim", &LlamaOptions::rotary_dim)
      .def_readonly("original_context", &LlamaOptions::original_context)
      .def_readonly("rope_attention_factor", &LlamaOptions::rope_attention_factor)
      .def_readonly("rope_layers", &LlamaOptions::rope_layers)
      .def_readonly("embedding_multiplier", &LlamaOptions::embedding_multiplier)
      .def_readonly("residual_multiplier", &LlamaOptions::residual_multiplier)
      .def_readonly("attention_scale", &LlamaOptions::attention_scale)
      .def_readonly("logit_scale", &LlamaOptions::logit_scale)
      .def_readonly("experts", &LlamaOptions::experts)
      .def_property_readonly("inv_freq", [](const LlamaOptions& o) {
        return py::array_t<float>(static_cast<py::ssize_t>(o.inv_freq.size()), o.inv_freq.data());
      })
      .def_property_readonly("inv_freq_long", [](const LlamaOptions& o) {
        return py::array_t<float>(static_cast<py::ssize_t>(o.inv_freq_long.size()), o.inv_freq_long.data());
      });
  // The sliding-window layers' own rotary frequencies (OLMo 3), set on a copy.
  py::reinterpret_borrow<py::class_<LlamaOptions>>(m.attr("_LlamaOptions"))
      .def(
          "with_sliding_rotary",
          [](LlamaOptions o, const py::array_t<float, py::array::c_style>& inv_freq, float attention_factor) {
            if (inv_freq.ndim() != 1) throw ValueError("rope inverse frequencies must be a 1-D array");
            o.inv_freq_sliding.assign(inv_freq.data(), inv_freq.data() + inv_freq.size());
            o.rope_attention_factor_sliding = attention_factor;
            return o;
          },
          py::arg("inv_freq"), py::arg("attention_factor") = 1.0f,
          "A copy whose sliding-window layers rotate with inv_freq (rotary_dim / 2 frequencies, scaling applied) "
          "and cos/sin times attention_factor, apart from the full layers.")
      .def_property_readonly("inv_freq_sliding",
                             [](const LlamaOptions& o) {
                               return py::array_t<float>(static_cast<py::ssize_t>(o.inv_freq_sliding.size()),
                                                         o.inv_freq_sliding.data());
                             })
      .def_readonly("rope_attention_factor_sliding", &LlamaOptions::rope_attention_factor_sliding);
}

void register_gemma_options(py::module_& m) {
  const GemmaOptions gemma;
  py::class_<GemmaOptions>(m, "_GemmaOptions", "Numerics options of Gemma 2 and 3 (kvgen/models/gemma.h).")
      .def(py::init([](py::array_t<float, py::array::c_style> inv_freq,
                       std::optional<py::array_t<float, py::array::c_style>> inv_freq_local, float rms_norm_eps,
                       float norm_offset, float embed_scale, float attention_scale, float attn_softcap,
                       float final_softcap, bool value_norm, int64_t per_layer_hidden, int64_t per_layer_vocab,
                       std::vector<int64_t> layer_intermediate) {
             const auto vector = [](const py::array_t<float, py::array::c_style>& a) {
               if (a.ndim() != 1) throw ValueError("rope inverse frequencies must be a 1-D array");
               return std::vector<float>(a.data(), a.data() + a.size());
             };
             return GemmaOptions{.rms_norm_eps = rms_norm_eps,
                                 .norm_offset = norm_offset,
                                 .embed_scale = embed_scale,
                                 .attention_scale = attention_scale,
                                 .attn_softcap = attn_softcap,
                                 .final_softcap = final_softcap,
                                 .inv_freq = vector(inv_freq),
                                 .inv_freq_local = inv_freq_local ? vector(*inv_freq_local) : std::vector<float>(),
                                 .value_norm = value_norm,
                                 .per_layer_hidden = per_layer_hidden,
                                 .per_layer_vocab = per_layer_vocab,
                                 .layer_intermediate = std::move(layer_intermediate)};
           }),
           py::kw_only(), py::arg("inv_freq"), py::arg("inv_freq_local") = py::none(),
           py::arg("rms_norm_eps") = gemma.rms_norm_eps, py::arg("norm_offset") = gemma.norm_offset,
           py::arg("embed_scale") = gemma.embed_scale, py::arg("attention_scale") = gemma.attention_scale,
           py::arg("attn_softcap") = gemma.attn_softcap, py::arg("final_softcap") = gemma.final_softcap,
           py::arg("value_norm") = gemma.value_norm, py::arg("per_layer_hidden") = gemma.per_layer_hidden,
           py::arg("per_layer_vocab") = gemma.per_layer_vocab,
           py::arg("layer_intermediate") = std::vector<int64_t>(),
           "inv_freq / inv_freq_local: rotary inverse frequencies of the full-attention and sliding-window layers "
           "(None: inv_freq); norm_offset: added to every RMSNorm weight (1 for Hugging Face checkpoints, 0 for "
           "GGUF files, which store 1 + w); softcaps 0 = none; attention_scale 0 = 1 / sqrt(head_dim); "
           "value_norm: values RMS-normed per head without a weight (Gemma 4); per_layer_hidden > 0: per-layer "
           "embeddings of that width per layer from a table of per_layer_vocab rows (Gemma 4); "
           "layer_intermediate: each layer's MLP width (empty: intermediate).")
      .def_readonly("rms_norm_eps", &GemmaOptions::rms_norm_eps)
      .def_readonly("norm_offset", &GemmaOptions::norm_offset)
      .def_readonly("embed_scale", &GemmaOptions::embed_scale)
      .def_readonly("attention_scale", &GemmaOptions::attention_scale)
      .def_readonly("attn_softcap", &GemmaOptions::attn_softcap)
      .def_readonly("final_softcap", &GemmaOptions::final_softcap);
}

void register_lfm2_options(py::module_& m) {
  const Lfm2Options lfm2;
  py::class_<Lfm2Options>(m, "_Lfm2Options", "Numerics options of LFM2 (kvgen/models/lfm2.h).")
      .def(py::init([](py::array_t<float, py::array::c_style> inv_freq, float norm_eps) {
             if (inv_freq.ndim() != 1) throw ValueError("rope inverse frequencies must be a 1-D array");
             return Lfm2Options{.norm_eps = norm_eps,
                                .inv_freq = std::vector<float>(inv_freq.data(), inv_freq.data() + inv_freq.size())};
           }),
           py::kw_only(), py::arg("inv_freq"), py::arg("norm_eps") = lfm2.norm_eps,
           "inv_freq: the head_dim / 2 rotary inverse frequencies, scaling applied (kvgen.loaders.rope); "
           "norm_eps: every RMSNorm's epsilon.")
      .def_readonly("norm_eps", &Lfm2Options::norm_eps)
      .def_property_readonly("inv_freq", [](const Lfm2Options& o) {
        return py::array_t<float>(static_cast<py::ssize_t>(o.inv_freq.size()), o.inv_freq.data());
      });
}

void register_qwen35_options(py::module_& m) {
  const Qwen35Options qwen35;
  py::class_<Qwen35Options>(m, "_Qwen35Options", "Numerics options of Qwen3.5 (kvgen/models/qwen35.h).")
      .def(py::init([](py::array_t<float, py::array::c_style> inv_freq, int64_t rotary_dim, float rms_norm_eps,
                       float norm_offset, int64_t linear_key_heads, bool value_heads_tiled, int64_t chunk_size,
                       bool norm_topk_prob, int64_t shared_expert_intermediate) {
             if (inv_freq.ndim() != 1) throw ValueError("rope inverse frequencies must be a 1-D array");
             return Qwen35Options{.rms_norm_eps = rms_norm_eps,
                                  .inv_freq = std::vector<float>(inv_freq.data(), inv_freq.data() + inv_freq.size()),
                                  .rotary_dim = rotary_dim,
                                  .norm_offset = norm_offset,
                                  .linear_key_heads = linear_key_heads,
                                  .value_heads_tiled = value_heads_tiled,
                                  .chunk_size = chunk_size,
                                  .norm_topk_prob = norm_topk_prob,
                                  .shared_expert_intermediate = shared_expert_intermediate};
           }),
           py::kw_only(), py::arg("inv_freq"), py::arg("rotary_dim") = qwen35.rotary_dim,
           py::arg("rms_norm_eps") = qwen35.rms_norm_eps, py::arg("norm_offset") = qwen35.norm_offset,
           py::arg("linear_key_heads") = qwen35.linear_key_heads,
           py::arg("value_heads_tiled") = qwen35.value_heads_tiled, py::arg("chunk_size") = qwen35.chunk_size,
           py::arg("norm_topk_prob") = qwen35.norm_topk_prob,
           py::arg("shared_expert_intermediate") = qwen35.shared_expert_intermediate,
           "inv_freq: (rotary_dim / 2) rotary inverse frequencies; rotary_dim 0 = head_dim; norm_offset: added to "
           "the (1 + w) RMSNorm weights (1 for Hugging Face checkpoints, 0 for GGUF files, which store 1 + w); "
           "linear_key_heads: the Gated DeltaNet's key heads; value_heads_tiled: its value heads are ordered "
           "tiled over the key heads (llama.cpp's files), not grouped by key head; chunk_size: tokens per chunk of the chunked delta "
           "rule; norm_topk_prob: the chosen experts' weights renormalised (with experts); shared_expert_intermediate: "
           "the shared expert's width (0: none).")
      .def_readonly("rms_norm_eps", &Qwen35Options::rms_norm_eps)
      .def_readonly("rotary_dim", &Qwen35Options::rotary_dim)
      .def_readonly("norm_offset", &Qwen35Options::norm_offset)
      .def_readonly("linear_key_heads", &Qwen35Options::linear_key_heads)
      .def_readonly("value_heads_tiled", &Qwen35Options::value_heads_tiled)
      .def_readonly("chunk_size", &Qwen35Options::chunk_size)
      .def_readonly("norm_topk_prob", &Qwen35Options::norm_topk_prob)
      .def_readonly("shared_expert_intermediate", &Qwen35Options::shared_expert_intermediate);
}

void register_granite_hybrid_options(py::module_& m) {
  const GraniteHybridOptions granite;
  py::class_<GraniteHybridOptions>(m, "_GraniteHybridOptions",
                                   "Numerics options of Granite 4.0's hybrid (kvgen/models/granite_hybrid.h).")
      .def(py::init([](py::array_t<float, py::array::c_style> inv_freq, float rms_norm_eps, float embedding_multiplier,
                       float residual_multiplier, float attention_multiplier, float logit_scale,
                       int64_t mamba_groups) {
             if (inv_freq.ndim() != 1) throw ValueError("rope inverse frequencies must be a 1-D array");
             return GraniteHybridOptions{
                 .rms_norm_eps = rms_norm_eps,
                 .inv_freq = std::vector<float>(inv_freq.data(), inv_freq.data() + inv_freq.size()),
                 .embedding_multiplier = embedding_multiplier,
                 .residual_multiplier = residual_multiplier,
                 .attention_multiplier = attention_multiplier,
                 .logit_scale = logit_scale,
                 .mamba_groups = mamba_groups};
           }),
           py::kw_only(), py::arg("inv_freq"), py::arg("rms_norm_eps") = granite.rms_norm_eps,
           py::arg("embedding_multiplier") = granite.embedding_multiplier,
           py::arg("residual_multiplier") = granite.residual_multiplier,
           py::arg("attention_multiplier") = granite.attention_multiplier,
           py::arg("logit_scale") = granite.logit_scale, py::arg("mamba_groups") = granite.mamba_groups,
           "inv_freq: the head_dim / 2 rotary inverse frequencies of the attention layers, or an empty array "
           "(no rotary embedding); the multipliers as config.json names them, logit_scale = 1 / logits_scaling; "
           "mamba_groups: mamba_n_groups.")
      .def_readonly("rms_norm_eps", &GraniteHybridOptions::rms_norm_eps)
      .def_readonly("embedding_multiplier", &GraniteHybridOptions::embedding_multiplier)
      .def_readonly("residual_multiplier", &GraniteHybridOptions::residual_multiplier)
      .def_readonly("attention_multiplier", &GraniteHybridOptions::attention_multiplier)
      .def_readonly("logit_scale", &GraniteHybridOptions::logit_scale)
      .def_readonly("mamba_groups", &GraniteHybridOptions::mamba_groups)
      .def_property_readonly("inv_freq", [](const GraniteHybridOptions& o) {
        return py::array_t<float>(static_cast<py::ssize_t>(o.inv_freq.size()), o.inv_freq.data());
      });
}

void register_model(py::module_& m) {
  register_expert_options(m);
  register_model_config(m);
  register_gemma_options(m);
  register_lfm2_options(m);
  register_qwen35_options(m);
  register_granite_hybrid_options(m);
  py::class_<PyModel>(m, "_Model", "A built-in model over weights held in NumPy arrays (see kvgen.Model).")
      .def_static("gpt2", &make_gpt2, py::arg("config"), py::arg("options"), py::arg("arrays"),
                  py::kw_only(), py::arg("activations") = "int8x2",
                  "GPT-2 of these sizes and options over its tensors by Hugging Face name (float32 arrays, "
                  "or (type, uint8 blocks, shape) tuples of quantized matrices, stored [out, in]).")
      .def_static("llama", &make_llama, py::arg("config"), py::arg("options"), py::arg("arrays"),
                  py::kw_only(), py::arg("activations") = "int8x2",
                  "A Llama-family model of these sizes and options over its tensors by Hugging Face name "
                  "(float32 arrays, or (type, uint8 blocks, shape, mapped) tuples of quantized matrices).")
      .def_static("gemma", &make_gemma, py::arg("config"), py::arg("options"), py::arg("arrays"),
                  py::kw_only(), py::arg("activations") = "int8x2",
                  "A Gemma 2 or Gemma 3 model of these sizes and options over its tensors by Hugging Face name "
                  "(float32 arrays, or (type, uint8 blocks, shape, mapped) tuples of quantized matrices).")
      .def_static("lfm2", &make_lfm2, py::arg("config"), py::arg("options"), py::arg("arrays"),
                  py::kw_only(), py::arg("activations") = "int8x2",
                  "An LFM2 model (short convolutions beside attention; config.recurrent_layers names the "
                  "convolution layers) of these sizes and options over its tensors by Hugging Face name "
                  "(float32 arrays, or (type, uint8 blocks, shape, mapped) tuples of quantized matrices).")
      .def_static("qwen35", &make_qwen35, py::arg("config"), py::arg("options"), py::arg("arrays"),
                  py::kw_only(), py::arg("activations") = "int8x2",
                  "A Qwen3.5 model (Gated DeltaNet and gated attention layers; config.recurrent_layers says which) "
                  "of these sizes and options over its tensors by Hugging Face name.")
      .def_static("qwen35_mtp", &make_qwen35_mtp, py::arg("target"), py::arg("config"), py::arg("options"),
                  py::arg("arrays"), py::kw_only(), py::arg("activations") = "int8x2",
                  "The multi-token-prediction head of the Qwen3.5 model `target` (kvgen/models/qwen35.h: "
                  "make_qwen35_mtp) over its mtp.* tensors; it shares the target's embedding and LM head, and every "
                  "forward chunk carries the target's hidden states (_ModelSlots.forward's input_hidden).")
      .def_static("granite_hybrid", &make_granite_hybrid, py::arg("config"), py::arg("options"), py::arg("arrays"),
                  py::kw_only(), py::arg("activations") = "int8x2",
                  "A Granite 4.0 hybrid model (Mamba-2 and attention layers; config.recurrent_layers says which) "
                  "of these sizes and options over its tensors by Hugging Face name.")
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
      .def_property_readonly("token_checkpoints", [](PyModel& pm) { return pm.core().token_checkpoints(); },
                             "Whether a forward chunk may ask for per-token state checkpoints (a hybrid's "
                             "verification pass: _ModelSlots.forward's checkpoints).")
      .def_property_readonly(
          "weight_bytes", [](PyModel& p) { return p.core().weight_bytes(); },
          "Bytes of the weights the model reads per token (quantized matrices at their packed size).")
      .def_property(
          "activations", [](PyModel& p) { return activations_name(p.core().activations()); },
          [](PyModel& p, const std::string& name) {
            const Activations a = parse_activations(name);
            py::gil_scoped_release release;
            std::lock_guard<std::mutex> lock(p.mutex);  // never in the middle of a forward pass
            p.core().set_activations(a);
          },
          "What quantized weights multiply: 'int8x2' (two-level int8), 'int8' or 'float' (see kvgen.Model).")
      .def_property(
          "kv_cache_dtype",
          [](PyModel& p) -> std::string {
            const std::optional<KVType> t = p.core().kv_choice();
            if (!t) return "auto";
            return *t == KVType::Float32 ? "float32" : *t == KVType::Float16 ? "float16" : "int8";
          },
          [](PyModel& p, const std::string& name) {
            std::optional<KVType> t;
            if (name == "float32") t = KVType::Float32;
            else if (name == "float16") t = KVType::Float16;
            else if (name == "int8") t = KVType::Int8;
            else if (name != "auto")
              throw ValueError("kv_cache_dtype='" + name + "' is not one of 'auto', 'float32', 'float16', 'int8'");
            py::gil_scoped_release release;
            std::lock_guard<std::mutex> lock(p.mutex);  // never in the middle of a forward pass
            p.core().set_kv_choice(t);
          },
          "What caches made from now on store keys and values as: 'auto' (half with int8 activations on "
          "quantized weights, float32 otherwise), 'float32', 'float16' or 'int8' (a scale per position and kv head).")
      .def(
          "kv_cache_bytes",
          [](PyModel& p, int64_t rows, int64_t positions, int64_t snapshots) {
            const ModelConfig& c = p.core().config();
            return KVCache::bytes_for(c.layers, rows, positions, c.kv_heads, c.head_dim, c.layer_windows,
                                      p.core().kv_type(), c.recurrent_layers, snapshots, c.kv_layers);
          },
          py::arg("rows"), py::arg("positions"), py::arg("snapshots") = 0,
          "Bytes a KV cache for rows x positions takes (its kv_cache_dtype; 'auto': half keys and values "
          "outside exact mode on int8-kernel weights, float32 otherwise), a hybrid model's recurrent state "
          "included, with `snapshots` spare copies of one row's state (the engine's prefix cache and speculative "
          "rollback).");

  m.def(
      "set_num_threads", [](int n) { set_compute_threads(n); }, py::arg("n"),
      "Threads of the model's forward pass (kvgen's compute pool; OpenBLAS is kept at one thread "
      "so the two never oversubscribe the cores). The sampler runs on the calling thread.");
  m.def(
      "get_num_threads", [] { return compute_threads(); },
      "Threads the model's forward pass uses (default: the CPUs this process may run on).");
  m.def(
      "_pool_profile",
      [](bool on) {
        const PoolProfile p = pool_profile(on);
        py::list sections, forwards;
        for (const SectionEvent& e : p.sections)
          sections.append(py::make_tuple(e.label, e.tag, e.items, e.start_ns, e.end_ns, e.wait_ns, e.first_join_ns,
                                         e.caller_items, e.worker_items, e.threads, e.joined));
        for (const ForwardEvent& e : p.forwards) forwards.append(py::make_tuple(e.start_ns, e.end_ns));
        py::dict out;
        out["sections"] = sections;
        out["forwards"] = forwards;
        return out;
      },
      py::arg("on"),
      "Profiling of the compute pool (for measuring): turns it on or off and returns the events "
      "recorded since the last call. 'sections': (label, tag, items, start_ns, end_ns, wait_ns, "
      "first_join_ns, caller_items, worker_items, threads, joined) per section; 'forwards': "
      "(start_ns, end_ns) per forward pass.");
}

}  // namespace kvgen::bindings
