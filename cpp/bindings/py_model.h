// PyModel: a built-in model plus the Python arrays its weights live in (kept alive
// while the model is), shared by the model and generator bindings.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>

#include "kvgen/runtime/model.h"

namespace kvgen::bindings {

namespace py = pybind11;

struct PyModel {
  py::dict arrays;               // name -> numpy array owning the weights
  std::unique_ptr<Model> model;
  std::mutex mutex;              // one forward pass at a time (activations are shared)
  Model& core() { return *model; }
};

}  // namespace kvgen::bindings
