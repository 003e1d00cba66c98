// The kvgen._core extension module: each binding file registers its part.
#include <pybind11/pybind11.h>

#include "kvgen/errors.h"

namespace py = pybind11;

namespace kvgen::bindings {
void register_generation_config(py::module_& m);
void register_sampling(py::module_& m);
void register_generator(py::module_& m);
void register_model(py::module_& m);
void register_slots(py::module_& m);
void register_quant(py::module_& m);
void register_recurrent(py::module_& m);
}  // namespace kvgen::bindings

PYBIND11_MODULE(_core, m) {
  m.doc() = "kvgen C++ core: generation config, logits processors, sampling and the generation loop.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const kvgen::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    }
  });
  kvgen::bindings::register_generation_config(m);
  kvgen::bindings::register_sampling(m);
  kvgen::bindings::register_model(m);
  kvgen::bindings::register_slots(m);
  kvgen::bindings::register_generator(m);
  kvgen::bindings::register_quant(m);
  kvgen::bindings::register_recurrent(m);
}
