// IEEE half precision to float, in portable code (the SIMD kernels use cvtph instead).
#pragma once

#include <cstdint>

namespace kvgen::quant {

// The float value of the binary16 `bits` (exact: every half is a float); NaN stays NaN.
float fp16_to_float(uint16_t bits);

}  // namespace kvgen::quant
