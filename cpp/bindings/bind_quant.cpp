// Private bindings of the quantized-weight kernels, for the tests and benchmarks:
// _quant_pack(raw uint8 bytes, type, rows, cols) -> _QuantMatrix with matmul (int8 or
// exact float activations, any CPU path this CPU runs) and dequantize_rows.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "kvgen/errors.h"
#include "kvgen/quant/activations.h"
#include "kvgen/quant/dispatch.h"
#include "kvgen/quant/matmul.h"
#include "kvgen/quant/packed_matrix.h"
#include "kvgen/runtime/row_table.h"

namespace py = pybind11;

namespace kvgen::bindings {
namespace {

using quant::CpuPath;
using quant::PackedMatrix;
using quant::QuantizedActivations;
using FloatArray = py::array_t<float, py::array::c_style>;

CpuPath resolve_path(const std::optional<std::string>& path) {
  return path ? quant::parse_cpu_path(*path) : quant::active_cpu_path();
}

// (M, K) float32 activations for a matrix of K columns.
void check_activations(const FloatArray& x, const PackedMatrix& w) {
  if (x.ndim() != 2 || x.shape(1) != w.cols())
    throw ValueError("x must have shape (M, " + std::to_string(w.cols()) + ")");
}

quant::GroupRange group_range(const PackedMatrix& w, const std::optional<std::pair<int64_t, int64_t>>& groups) {
  return groups ? quant::GroupRange{groups->first, groups->second} : quant::all_groups(w);
}

// Rows outside the computed groups stay NaN, so a test sees what a range wrote.
FloatArray nan_output(int64_t rows, int64_t cols) {
  FloatArray out({rows, cols});
  std::fill(out.mutable_data(), out.mutable_data() + rows * cols, std::numeric_limits<float>::quiet_NaN());
  return out;
}

FloatArray matmul(const PackedMatrix& w, py::array x_obj, bool exact, const std::optional<std::string>& path,
                  const std::optional<std::pair<int64_t, int64_t>>& groups, bool two_level, bool bf16) {
  if (!py::isinstance<FloatArray>(x_obj)) throw TypeError("x must be a C-contiguous float32 array");
  FloatArray x = py::reinterpret_borrow<FloatArray>(x_obj);
  check_activations(x, w);
  const CpuPath p = resolve_path(path);
  const int64_t m = x.shape(0);
  FloatArray out = nan_output(m, w.rows());
  float* o = out.mutable_data();
  const float* xd = x.data();
  const quant::GroupRange range = group_range(w, groups);
  if (exact && bf16) throw ValueError("exact=True and bf16=True ask for two kinds of activations");
  if (exact) {
    py::gil_scoped_release release;
    quant::matmul_float(w, xd, m, w.cols(), o, w.rows(), range, p);
  } else if (bf16) {  // as the model's projector in activations="bf16"
    quant::check_int8_kernel(w.type());
    quant::Bf16Activations acts(m, w.cols(), p);
    py::gil_scoped_release release;
    acts.convert(xd, m, w.cols());
    quant::matmul_bf16(w, acts, o, w.rows(), range, p);
  } else if (m > 0 && two_level) {  // as the model's projector: one kernel pass, or the halves added
    quant::check_int8_kernel(w.type());
    QuantizedActivations acts(2 * m, w.cols());
    py::gil_scoped_release release;
    acts.quantize_two_level(xd, m, w.cols());
    if (!quant::matmul_int8x2(w, acts, o, w.rows(), range, p)) {
      std::vector<float> halves(static_cast<size_t>(2 * m * w.rows()), std::numeric_limits<float>::quiet_NaN());
      quant::matmul_int8(w, acts, halves.data(), w.rows(), range, p);
      for (int64_t i = 0; i < m * w.rows(); ++i) o[i] = halves[i] + halves[m * w.rows() + i];
    }
  } else if (m > 0) {
    quant::check_int8_kernel(w.type());  // before x's quantization, which needs cols % 32 == 0
    QuantizedActivations acts(m, w.cols());  // a test binding: the model keeps one per input
    py::gil_scoped_release release;
    acts.quantize(xd, m, w.cols());
    quant::matmul_int8(w, acts, o, w.rows(), range, p);
  }
  return out;
}

}  // namespace

void register_quant(py::module_& m) {
  py::class_<QuantizedActivations>(m, "_QuantActivations",
                                   "Activations quantized per 32-block to int8, reusable by several products.")
      .def(py::init<int64_t, int64_t>(), py::arg("max_rows"), py::arg("cols"))
      .def(
          "quantize",
          [](QuantizedActivations& a, FloatArray x) {
            if (x.ndim() != 2 || x.shape(1) != a.cols())
              throw ValueError("x must have shape (M, " + std::to_string(a.cols()) + ")");
            a.quantize(x.data(), x.shape(0), a.cols());
          },
          py::arg("x").noconvert());

  py::class_<PackedMatrix>(m, "_QuantMatrix", "A GGUF [rows, cols] weight matrix in kvgen's 16-row tiles.")
      .def_property_readonly("rows", &PackedMatrix::rows)
      .def_property_readonly("cols", &PackedMatrix::cols)
      .def_property_readonly("nbytes", &PackedMatrix::bytes)
      .def_property_readonly("type", [](const PackedMatrix& w) { return quant::quant_type_name(w.type()); })
      .def("matmul", &matmul, py::arg("x"), py::arg("exact") = false, py::arg("path") = py::none(),
           py::arg("groups") = py::none(), py::arg("two_level") = false, py::arg("bf16") = false,
           "x (M, cols) float32 @ W^T -> (M, rows); exact=False quantizes x to int8 per block (two_level: in "
           "two levels, as the models' default; bf16: x and W rounded to bfloat16, float32 sums); rows outside "
           "`groups` (a range of 16-row groups) are NaN.")
      .def(
          "matmul_quantized",
          [](const PackedMatrix& w, const QuantizedActivations& acts, const std::optional<std::string>& path) {
            const int64_t rows = acts.view().rows;
            FloatArray out = nan_output(rows, w.rows());
            float* o = out.mutable_data();
            const CpuPath p = resolve_path(path);
            py::gil_scoped_release release;
            quant::matmul_int8(w, acts, o, w.rows(), quant::all_groups(w), p);
            return out;
          },
          py::arg("acts"), py::arg("path") = py::none())
      .def(
          "dequantize_rows",
          [](const PackedMatrix& w, py::array_t<int64_t, py::array::c_style | py::array::forcecast> ids) {
            if (ids.ndim() != 1) throw ValueError("ids must be 1-D");
            FloatArray out({static_cast<int64_t>(ids.shape(0)), w.cols()});
            for (py::ssize_t i = 0; i < ids.shape(0); ++i) w.dequantize_row(ids.at(i), out.mutable_data() + i * w.cols());
            return out;
          },
          py::arg("ids"));

  m.def(
      "_bf16_unavailable_reason",
      [](const std::optional<std::string>& path) { return quant::bf16_unavailable_reason(resolve_path(path)); },
      py::arg("path") = py::none(),
      "Why activations='bf16' cannot run on the CPU path (default: the process's), or '' where it can.");
  m.def(
      "_quant_pack",
      [](py::array_t<uint8_t, py::array::c_style> raw, const std::string& type, int64_t rows, int64_t cols) {
        const quant::QuantType t = quant::parse_quant_type(type);
        return PackedMatrix(t, raw.data(), raw.size(), rows, cols);
      },
      py::arg("raw").noconvert(), py::arg("type"), py::arg("rows"), py::arg("cols"),
      "Repacks a GGUF tensor's raw block bytes (uint8) of `type` (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, "
      "Q6_K, F16, BF16, IQ4_NL, IQ4_XS, MXFP4), or of kvgen's index types I4S16 / I4S16M that the loader "
      "decodes the other GGUF types into (kvgen.loaders.index_types).");
  m.def(
      "_row_table_rows",
      [](py::array_t<uint8_t, py::array::c_style> raw, const std::string& type, int64_t rows, int64_t cols,
         py::array_t<int64_t, py::array::c_style | py::array::forcecast> ids) {
        const RowTable table("raw", raw.data(), type, raw.size(), rows, cols);
        if (ids.ndim() != 1) throw ValueError("ids must be 1-D");
        FloatArray out({static_cast<int64_t>(ids.shape(0)), cols});
        for (py::ssize_t i = 0; i < ids.shape(0); ++i) table.row(ids.at(i), out.mutable_data() + i * cols);
        return out;
      },
      py::arg("raw").noconvert(), py::arg("type"), py::arg("rows"), py::arg("cols"), py::arg("ids"),
      "Rows `ids` of a [rows, cols] tensor's raw bytes of `type` (F32 or as _quant_pack), read in place as "
      "a row table reads a mapped file (kvgen/runtime/row_table.h), never repacked.");
  m.def("_quant_cpu_path", [] { return quant::cpu_path_name(quant::active_cpu_path()); },
        "The kernel path in use (KVGEN_CPU_PATH or the best this CPU runs).");
  m.def("_amx_unavailable_reason", [] { return quant::amx_unavailable_reason(); },
        "Why this process has no amx path ('' when it has one).");
  m.def(
      "_quant_set_amx_tiles",
      [](bool on) {
        const std::string& why = quant::amx_unavailable_reason();
        if (!why.empty()) throw ValueError("the amx path is unavailable: " + why);
#if KVGEN_X86_KERNELS
        quant::set_amx_tiles(on);
#endif
      },
      py::arg("on"),
      "Whether the amx path's products of several rows use the AMX tiles or the avx512 path's VNNI kernels "
      "(the same outputs bit for bit; for benchmarks, process-wide).");
  m.def(
      "_quant_amx_tile_products",
      [] {
#if KVGEN_X86_KERNELS
        return quant::amx_tile_products();
#else
        return uint64_t{0};
#endif
      },
      "How many two-level products (calls of the kernel, per thread's share) ran on the AMX tiles so far.");
  m.def("_quant_supported_paths", [] {
    std::vector<std::string> names;
    for (CpuPath p : quant::supported_cpu_paths()) names.push_back(quant::cpu_path_name(p));
    return names;
  });
  m.def(
      "_quant_choose_path",
      [](const std::optional<std::string>& requested, const std::vector<std::string>& supported) {
        std::vector<CpuPath> paths;
        for (const auto& s : supported) paths.push_back(quant::parse_cpu_path(s));
        if (paths.empty()) throw ValueError("supported must not be empty");
        return quant::cpu_path_name(quant::choose_cpu_path(requested ? requested->c_str() : nullptr, paths));
      },
      py::arg("requested"), py::arg("supported"), "choose_cpu_path on a made-up CPU (for tests).");
}

}  // namespace kvgen::bindings
