// Array conversion for the bindings (see arrays.h).
#include "arrays.h"

#include <climits>
#include <sstream>

#include "kvgen/errors.h"

namespace kvgen::bindings {
namespace {

std::string shape_of(const py::array& a) {
  std::ostringstream s;
  s << "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s << (i ? ", " : "") << a.shape(i);
  s << (a.ndim() == 1 ? ",)" : ")");
  return s.str();
}

std::string type_name(py::handle obj) { return py::str(py::type::of(obj).attr("__name__")); }

// A NumPy view of obj without copying: ndarrays as they are, DLPack producers (torch
// CPU tensors) through numpy.from_dlpack. `float_only` gives dtype errors that name the
// fix for half-precision tensors before DLPack fails on them.
// Returns None for objects that are neither.
py::object numpy_view(py::handle obj, const char* name, bool float_only) {
  if (py::isinstance<py::array>(obj)) return py::reinterpret_borrow<py::array>(obj);
  if (py::hasattr(obj, "__dlpack__")) {
    if (float_only && py::hasattr(obj, "dtype")) {
      const std::string dt = py::str(obj.attr("dtype"));
      if (dt.find("float32") == std::string::npos) {
        throw TypeError(std::string(name) + " has dtype " + dt +
                        "; kvgen reads float32 logits only and never converts them silently: pass " + name +
                        ".float() (torch) or " + name + ".astype(numpy.float32)");
      }
    }
    if (py::hasattr(obj, "requires_grad") && obj.attr("requires_grad").cast<bool>()) {
      throw TypeError(std::string(name) + " is a tensor that requires grad, which kvgen cannot read in place: pass " +
                      name + ".detach() (or compute it under torch.no_grad() / torch.inference_mode())");
    }
    const bool on_cpu = !py::hasattr(obj, "device") || py::str(obj.attr("device")).cast<std::string>() == "cpu";
    try {
      return py::module_::import("numpy").attr("from_dlpack")(obj);
    } catch (py::error_already_set& e) {
      // The exception's message only: what() would append the Python traceback ("At: ...").
      throw TypeError(std::string(name) + " (" + type_name(obj) + ") cannot be read in place through DLPack: " +
                      py::str(e.value()).cast<std::string>() +
                      (on_cpu ? "" : "; kvgen reads CPU memory: pass " + std::string(name) + ".cpu()"));
    }
  }
  return py::none();
}

// "<name>[r, i] = <value> is outside the vocabulary [0, vocab)", for element `flat`.
[[noreturn]] void throw_outside(const char* name, int64_t flat, int64_t length, const std::string& value,
                                int64_t vocab) {
  throw ValueError(std::string(name) + "[" + std::to_string(flat / length) + ", " + std::to_string(flat % length) +
                   "] = " + value + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
}

// `a` (2-D, integer or object dtype) as C-contiguous int64. A value int64 cannot hold (a
// uint64 above 2^63 - 1, a Python int such as 2**70 that made NumPy choose dtype object)
// is a ValueError naming its position: a plain cast would wrap it to another id.
py::array_t<int64_t, py::array::c_style> to_int64(const py::array& a, const char* name, int64_t vocab) {
  const int64_t length = a.shape(1);
  if (a.dtype().kind() == 'u' && a.itemsize() == sizeof(uint64_t)) {
    auto u = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>::ensure(a);
    for (py::ssize_t k = 0; k < u.size(); ++k)
      if (u.data()[k] > static_cast<uint64_t>(INT64_MAX))
        throw_outside(name, k, length, std::to_string(u.data()[k]), vocab);
  }
  if (a.dtype().kind() != 'O') return py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  // dtype object: each element must be an integer (int, numpy integer: __index__).
  py::array objects = py::array::ensure(a, py::array::c_style);
  py::array_t<int64_t, py::array::c_style> out(std::vector<py::ssize_t>{a.shape(0), a.shape(1)});
  auto* const* items = static_cast<PyObject* const*>(objects.data());
  for (py::ssize_t k = 0; k < objects.size(); ++k) {
    py::handle item(items[k]);
    if (!PyIndex_Check(item.ptr()) || PyBool_Check(item.ptr())) {
      throw TypeError(std::string(name) + "[" + std::to_string(k / length) + ", " + std::to_string(k % length) +
                      "] is a " + type_name(item) + "; " + name + " must hold integer token ids");
    }
    py::int_ value = py::reinterpret_steal<py::int_>(PyNumber_Index(item.ptr()));
    if (!value) throw py::error_already_set();
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow) throw_outside(name, k, length, py::str(value), vocab);
    out.mutable_data()[k] = v;
  }
  return out;
}

// Every id of h in [0, vocab), or a ValueError naming the first one outside.
void check_vocabulary(const HistoryView& h, const char* name, int64_t vocab) {
  const int64_t* ids = h.data();
  for (int64_t k = 0; k < h.rows * h.length; ++k)
    if (ids[k] < 0 || ids[k] >= vocab) throw_outside(name, k, h.length, std::to_string(ids[k]), vocab);
}

}  // namespace

LogitsView logits_view(py::handle obj, bool writable, const char* name) {
  py::object view = numpy_view(obj, name, true);
  if (view.is_none()) {
    throw TypeError(std::string(name) + " must be a float32 NumPy array or a CPU tensor (DLPack), got " +
                    type_name(obj));
  }
  py::array a = view.cast<py::array>();
  if (!a.dtype().is(py::dtype::of<float>())) {
    const std::string dt = py::str(a.dtype());
    throw TypeError(std::string(name) + " must have dtype float32, got " + dt +
                    "; kvgen never converts logits silently: pass " + name + ".astype(numpy.float32)");
  }
  if (a.ndim() != 2) {
    throw ValueError(std::string(name) + " must be 2-D [rows, vocab], got " + std::to_string(a.ndim()) +
                     "-D with shape " + shape_of(a) + (a.ndim() == 1 ? " (use logits[None, :] for one row)" : ""));
  }
  if (!(a.flags() & py::array::c_style)) {
    const std::string fix = py::isinstance<py::array>(obj) ? "numpy.ascontiguousarray(" + std::string(name) + ")"
                                                           : std::string(name) + ".contiguous()";
    throw ValueError(std::string(name) + " must be C-contiguous (row-major) to be read in place; got shape " +
                     shape_of(a) + " with other strides: pass " + fix);
  }
  if (writable && !a.writeable()) {
    throw ValueError(std::string(name) + " is read-only, but this call writes the processed logits into it");
  }
  if (a.shape(1) == 0) throw ValueError(std::string(name) + " has an empty vocabulary axis, shape " + shape_of(a));
  // Read-only arrays are only ever read (writable was checked above for writers).
  float* data = const_cast<float*>(static_cast<const float*>(a.data()));
  return {a, data, static_cast<int64_t>(a.shape(0)), static_cast<int64_t>(a.shape(1))};
}

PositionsView positions_view(py::handle obj, const char* name) {
  py::object view = numpy_view(obj, name, true);
  if (view.is_none())
    throw TypeError(std::string(name) + " must be a float32 NumPy array or a CPU tensor (DLPack), got " +
                    type_name(obj));
  py::array a = view.cast<py::array>();
  if (!a.dtype().is(py::dtype::of<float>()))
    throw TypeError(std::string(name) + " must have dtype float32, got " + std::string(py::str(a.dtype())) +
                    "; kvgen never converts it silently: pass " + name + ".astype(numpy.float32)");
  if (a.ndim() != 3)
    throw ValueError(std::string(name) + " must be 3-D [rows, positions, vocab], got " + std::to_string(a.ndim()) +
                     "-D with shape " + shape_of(a));
  if (!(a.flags() & py::array::c_style)) {
    const std::string fix = py::isinstance<py::array>(obj) ? "numpy.ascontiguousarray(" + std::string(name) + ")"
                                                           : std::string(name) + ".contiguous()";
    throw ValueError(std::string(name) + " must be C-contiguous (row-major) to be read in place; got shape " +
                     shape_of(a) + " with other strides: pass " + fix);
  }
  if (a.shape(2) == 0) throw ValueError(std::string(name) + " has an empty vocabulary axis, shape " + shape_of(a));
  return {a, static_cast<const float*>(a.data()), static_cast<int64_t>(a.shape(0)), static_cast<int64_t>(a.shape(1)),
          static_cast<int64_t>(a.shape(2))};
}

MaskView position_mask_view(py::handle obj, int64_t rows, int64_t positions, int64_t vocab, const char* name) {
  if (obj.is_none()) return {};
  if (!py::isinstance<py::array>(obj))
    throw TypeError(std::string(name) + " must be a NumPy array of uint32 words, got " + type_name(obj));
  py::array a = py::reinterpret_borrow<py::array>(obj);
  const py::dtype dt = a.dtype();
  if (dt.itemsize() != 4 || (dt.kind() != 'u' && dt.kind() != 'i'))
    throw TypeError(std::string(name) + " must hold uint32 (or int32) words, got dtype " + std::string(py::str(dt)));
  const int64_t words = (vocab + 31) / 32;
  if (a.ndim() != 3 || a.shape(0) != rows || a.shape(1) != positions || a.shape(2) != words)
    throw ValueError(std::string(name) + " must have shape (" + std::to_string(rows) + ", " + std::to_string(positions) +
                     ", " + std::to_string(words) + ") (rows, positions, ceil(vocab / 32)), got " + shape_of(a));
  if (!(a.flags() & py::array::c_style)) throw ValueError(std::string(name) + " must be C-contiguous");
  return {a, static_cast<const uint32_t*>(a.data())};
}

HistoryView history_view(py::handle obj, int64_t rows, const char* name, int64_t vocab) {
  HistoryView h;
  h.rows = rows;
  if (obj.is_none()) {
    h.array = py::array_t<int64_t, py::array::c_style>(std::vector<py::ssize_t>{rows, 0});
    return h;
  }
  py::object view = numpy_view(obj, name, false);
  py::array a = view.is_none() ? py::array(py::module_::import("numpy").attr("asarray")(obj)) : view.cast<py::array>();
  const char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u' && kind != 'O') {
    throw TypeError(std::string(name) + " must hold integer token ids, got dtype " + std::string(py::str(a.dtype())));
  }
  if (a.ndim() != 2) {
    throw ValueError(std::string(name) + " must be 2-D [rows, length], got " + std::to_string(a.ndim()) +
                     "-D with shape " + shape_of(a));
  }
  if (a.shape(0) != rows) {
    throw ValueError(std::string(name) + " has " + std::to_string(a.shape(0)) + " rows but logits has " +
                     std::to_string(rows));
  }
  h.length = static_cast<int64_t>(a.shape(1));
  h.array = to_int64(a, name, vocab);
  check_vocabulary(h, name, vocab);
  return h;
}

py::array_t<int64_t, py::array::c_style> ids_view(py::handle obj, int64_t rows, const char* name) {
  if (obj.is_none()) return py::array_t<int64_t, py::array::c_style>(0);
  py::array a = py::module_::import("numpy").attr("asarray")(obj);
  const char kind = a.dtype().kind();
  if ((kind != 'i' && kind != 'u') || a.ndim() != 1 || a.shape(0) != rows) {
    throw ValueError(std::string(name) + " must be a 1-D integer array with one entry per row (" +
                     std::to_string(rows) + "), got dtype " + std::string(py::str(a.dtype())) + " shape " +
                     shape_of(a));
  }
  return py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
}

MaskView mask_view(py::handle obj, int64_t rows, int64_t vocab, const char* name) {
  if (obj.is_none()) return {};
  if (!py::isinstance<py::array>(obj))
    throw TypeError(std::string(name) + " must be a NumPy array of uint32 words, got " +
                    std::string(py::str(py::type::of(obj).attr("__name__"))));
  py::array a = py::reinterpret_borrow<py::array>(obj);
  const py::dtype dt = a.dtype();
  if (dt.itemsize() != 4 || (dt.kind() != 'u' && dt.kind() != 'i'))
    throw TypeError(std::string(name) + " must hold uint32 (or int32) words, got dtype " + std::string(py::str(dt)));
  const int64_t words = (vocab + 31) / 32;
  if (a.ndim() != 2 || a.shape(0) != rows || a.shape(1) != words)
    throw ValueError(std::string(name) + " must have shape (" + std::to_string(rows) + ", " + std::to_string(words) +
                     ") (rows, ceil(vocab / 32)), got " + std::string(py::str(a.attr("shape"))));
  if (!(a.flags() & py::array::c_style)) throw ValueError(std::string(name) + " must be C-contiguous");
  return {a, static_cast<const uint32_t*>(a.data())};
}

}  // namespace kvgen::bindings
