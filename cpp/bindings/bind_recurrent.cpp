// Private bindings of the recurrent mixers' kernels and the state cache, for the tests:
// _causal_conv1d, _gated_delta_gates, _gated_delta_rule, _gated_rms_norm, _short_conv
// (kvgen/models/{causal_conv,gated_delta_net,short_conv}.h) and _StateCache
// (kvgen/runtime/state_cache.h). Arrays are float32 and C-contiguous, read (and states
// written) in place; a wrong dtype or layout is a TypeError, a wrong shape a ValueError
// naming the argument. The kernels run with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kvgen/errors.h"
#include "kvgen/models/causal_conv.h"
#include "kvgen/models/gated_delta_net.h"
#include "kvgen/models/short_conv.h"
#include "kvgen/runtime/state_cache.h"
#include "recurrent_shapes.h"

namespace py = pybind11;

namespace kvgen::bindings {
namespace {

using FloatArray = py::array_t<float, py::array::c_style>;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// obj as a float32 C-contiguous array of `shape` (-1: any size there), in place.
FloatArray float_array(py::handle obj, const char* name, std::vector<int64_t> shape, bool writable = false) {
  if (!py::isinstance<FloatArray>(obj)) throw TypeError(std::string(name) + " must be a C-contiguous float32 array");
  auto a = py::reinterpret_borrow<FloatArray>(obj);
  std::vector<int64_t> actual(a.shape(), a.shape() + a.ndim());
  bool match = actual.size() == shape.size();
  for (size_t i = 0; match && i < shape.size(); ++i) {
    if (shape[i] < 0) shape[i] = actual[i];
    match = actual[i] == shape[i];
  }
  if (!match) throw ValueError(std::string(name) + " has shape " + shape_text(actual) + ", expected " + shape_text(shape));
  if (writable && !a.writeable()) throw ValueError(std::string(name) + " must be writable (the state is updated in place)");
  return a;
}

FloatArray causal_conv1d(py::handle x_obj, py::handle weight_obj, py::handle bias_obj, py::handle window_obj,
                         bool silu) {
  auto weight = float_array(weight_obj, "weight", {-1, -1});
  const int64_t channels = weight.shape(0), kernel = weight.shape(1);
  if (kernel < 1) throw ValueError("weight must have at least one column (the kernel)");
  auto x = float_array(x_obj, "x", {-1, channels});
  auto window = float_array(window_obj, "window", {channels, kernel - 1}, true);
  std::optional<FloatArray> bias;
  if (!bias_obj.is_none()) bias = float_array(bias_obj, "bias", {channels});
  const int64_t tokens = x.shape(0);
  FloatArray out({tokens, channels});
  float* o = out.mutable_data();
  float* w = window.mutable_data();
  const float* b = bias ? bias->data() : nullptr;
  py::gil_scoped_release release;
  kvgen::causal_conv1d(o, w, x.data(), weight.data(), b, silu, tokens, channels, kernel);
  return out;
}

std::tuple<FloatArray, FloatArray> gated_delta_gates(py::handle a_obj, py::handle b_obj, py::handle a_log_obj,
                                                     py::handle dt_bias_obj) {
  auto a = float_array(a_obj, "a", {-1, -1});
  const int64_t tokens = a.shape(0), heads = a.shape(1);
  auto b = float_array(b_obj, "b", {tokens, heads});
  auto a_log = float_array(a_log_obj, "A_log", {heads});
  auto dt_bias = float_array(dt_bias_obj, "dt_bias", {heads});
  FloatArray g({tokens, heads}), beta({tokens, heads});
  float *go = g.mutable_data(), *bo = beta.mutable_data();
  py::gil_scoped_release release;
  kvgen::gated_delta_gates(go, bo, a.data(), b.data(), a_log.data(), dt_bias.data(), tokens, heads);
  return {g, beta};
}

FloatArray gated_delta_rule(py::handle q_obj, py::handle k_obj, py::handle v_obj, py::handle g_obj,
                            py::handle beta_obj, py::handle state_obj, bool chunked, bool use_qk_l2norm,
                            int64_t chunk_size) {
  auto q = float_array(q_obj, "query", {-1, -1, -1});
  DeltaRuleShape s;
  s.tokens = q.shape(0);
  s.key_heads = q.shape(1);
  s.key_dim = q.shape(2);
  auto k = float_array(k_obj, "key", {s.tokens, s.key_heads, s.key_dim});
  auto v = float_array(v_obj, "value", {s.tokens, -1, -1});
  s.value_heads = v.shape(1);
  s.value_dim = v.shape(2);
  auto g = float_array(g_obj, "g", {s.tokens, s.value_heads});
  auto beta = float_array(beta_obj, "beta", {s.tokens, s.value_heads});
  auto state = float_array(state_obj, "state", {s.value_heads, s.key_dim, s.value_dim}, true);
  FloatArray out({s.tokens, s.value_heads, s.value_dim});
  float* o = out.mutable_data();
  float* st = state.mutable_data();
  py::gil_scoped_release release;
  if (chunked)
    gated_delta_rule_chunked(o, st, q.data(), k.data(), v.data(), g.data(), beta.data(), use_qk_l2norm, s,
                             chunk_size);
  else
    gated_delta_rule_recurrent(o, st, q.data(), k.data(), v.data(), g.data(), beta.data(), use_qk_l2norm, s);
  return out;
}

FloatArray gated_rms_norm(py::handle x_obj, py::handle z_obj, py::handle weight_obj, float eps) {
  auto x = float_array(x_obj, "x", {-1, -1});
  const int64_t rows = x.shape(0), dim = x.shape(1);
  auto z = float_array(z_obj, "z", {rows, dim});
  auto weight = float_array(weight_obj, "weight", {dim});
  FloatArray out({rows, dim});
  float* o = out.mutable_data();
  py::gil_scoped_release release;
  kvgen::gated_rms_norm(o, x.data(), z.data(), weight.data(), eps, rows, dim);
  return out;
}

FloatArray short_conv(py::handle bcx_obj, py::handle weight_obj, py::handle bias_obj, py::handle window_obj) {
  auto weight = float_array(weight_obj, "weight", {-1, -1});
  const int64_t channels = weight.shape(0), kernel = weight.shape(1);
  if (kernel < 1) throw ValueError("weight must have at least one column (the kernel)");
  auto bcx = float_array(bcx_obj, "bcx", {-1, 3 * channels});
  auto window = float_array(window_obj, "window", {channels, kernel - 1}, true);
  std::optional<FloatArray> bias;
  if (!bias_obj.is_none()) bias = float_array(bias_obj, "bias", {channels});
  const int64_t tokens = bcx.shape(0);
  FloatArray out({tokens, channels});
  float* o = out.mutable_data();
  float* w = window.mutable_data();
  const float* b = bias ? bias->data() : nullptr;
  py::gil_scoped_release release;
  kvgen::short_conv(o, w, bcx.data(), weight.data(), b, tokens, channels, kernel);
  return out;
}

void check_layer(const StateCache& c, int64_t layer) {
  if (layer < 0 || layer >= c.layers())
    throw ValueError("layer " + std::to_string(layer) + " is outside the state cache's layers [0, " +
                     std::to_string(c.layers()) + ")");
}

void check_row(const StateCache& c, int64_t row) {
  if (row < 0 || row >= c.rows())
    throw ValueError("row " + std::to_string(row) + " is outside the state cache's rows [0, " +
                     std::to_string(c.rows()) + ")");
}

}  // namespace

void register_recurrent(py::module_& m) {
  m.def("_causal_conv1d", &causal_conv1d, py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("window"),
        py::arg("silu"),
        "out (tokens, channels): the causal depthwise convolution of x (tokens, channels) after the window "
        "(channels, kernel - 1), which is advanced in place; weight (channels, kernel).");
  m.def("_gated_delta_gates", &gated_delta_gates, py::arg("a"), py::arg("b"), py::arg("A_log"), py::arg("dt_bias"),
        "(g, beta): g = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b), each (tokens, heads).");
  m.def("_gated_delta_rule", &gated_delta_rule, py::arg("query"), py::arg("key"), py::arg("value"), py::arg("g"),
        py::arg("beta"), py::arg("state"), py::kw_only(), py::arg("chunked"), py::arg("use_qk_l2norm") = true,
        py::arg("chunk_size") = 64,
        "out (tokens, value_heads, value_dim) of the gated delta rule from state (value_heads, key_dim, "
        "value_dim), updated in place; recurrent (token by token) or chunked.");
  m.def("_gated_rms_norm", &gated_rms_norm, py::arg("x"), py::arg("z"), py::arg("weight"), py::arg("eps"),
        "weight * x / sqrt(mean(x^2) + eps) * silu(z), per row of (rows, dim).");
  m.def("_short_conv", &short_conv, py::arg("bcx"), py::arg("weight"), py::arg("bias"), py::arg("window"),
        "LFM2's gated short convolution: C * conv(B * x) from bcx (tokens, 3 * channels), the window "
        "(channels, kernel - 1) advanced in place.");

  py::class_<StateCache>(m, "_StateCache")
      .def(py::init([](const std::vector<LayerTuple>& layers, int64_t rows, int64_t snapshots) {
             return new StateCache(layer_shapes(layers), rows, snapshots);
           }),
           py::arg("layers"), py::arg("rows"), py::arg("snapshots") = 0)
      .def_property_readonly("rows", &StateCache::rows)
      .def_property_readonly("layers", &StateCache::layers)
      .def_property_readonly("snapshots", &StateCache::snapshots)
      .def_property_readonly("bytes", &StateCache::bytes)
      .def_property_readonly("held_bytes", &StateCache::held_bytes)
      .def_static(
          "bytes_for",
          [](const std::vector<LayerTuple>& layers, int64_t rows, int64_t snapshots) {
            return StateCache::bytes_for(layer_shapes(layers), rows, snapshots);
          },
          py::arg("layers"), py::arg("rows"), py::arg("snapshots") = 0)
      .def(
          "conv",
          [](py::object self, int64_t layer, int64_t row) {
            auto& c = self.cast<StateCache&>();
            check_layer(c, layer);
            check_row(c, row);
            const auto& s = c.shape(layer);
            const int64_t keep = s.conv_channels ? s.conv_kernel - 1 : 0;
            return FloatArray({s.conv_channels, keep}, c.conv(layer, row), self);
          },
          py::arg("layer"), py::arg("row"))
      .def(
          "recurrent",
          [](py::object self, int64_t layer, int64_t row) {
            auto& c = self.cast<StateCache&>();
            check_layer(c, layer);
            check_row(c, row);
            const auto& s = c.shape(layer);
            return FloatArray({s.heads, s.key_dim, s.value_dim}, c.recurrent(layer, row), self);
          },
          py::arg("layer"), py::arg("row"))
      .def(
          "reorder",
          [](StateCache& c, const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& parents) {
            if (parents.ndim() != 1 || parents.shape(0) != c.rows())
              throw ValueError("parents must have shape (" + std::to_string(c.rows()) + ",)");
            c.reorder(parents.data());
          },
          py::arg("parents"))
      .def("copy_row", &StateCache::copy_row, py::arg("src"), py::arg("dst"))
      .def("reset", &StateCache::reset, py::arg("row"))
      .def("snapshot", &StateCache::snapshot, py::arg("row"), py::arg("slot"))
      .def("restore", &StateCache::restore, py::arg("slot"), py::arg("row"));
}

}  // namespace kvgen::bindings
