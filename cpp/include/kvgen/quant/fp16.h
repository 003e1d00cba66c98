// IEEE half precision and MXFP4's E8M0 scales to float, in portable code (the SIMD kernels
// use cvtph and shifts instead).
#pragma once

#include <cstdint>

namespace kvgen::quant {

// The float value of the binary16 `bits` (exact: every half is a float); NaN stays NaN.
float fp16_to_float(uint16_t bits);

// MXFP4's block scale halved (its values are stored doubled): 2^(e - 128), as gguf-py's
// e8m0_to_fp32_half gives it (e = 0, 1: the float32 subnormals 2^-128, 2^-127; e = 255: 2^127).
float e8m0_to_float_half(uint8_t e);

}  // namespace kvgen::quant
