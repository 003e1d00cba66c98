// Exception types of the C++ core; the bindings turn them into the Python exception of
// the same name, so a bad argument reaches the user as a clear ValueError/TypeError.
#pragma once

#include <stdexcept>
#include <string>

namespace kvgen {

// A value out of its allowed range, a shape that does not match, a token id outside
// the vocabulary. Becomes Python's ValueError.
struct ValueError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A value of the wrong kind (dtype, layout). Becomes Python's TypeError.
struct TypeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace kvgen
