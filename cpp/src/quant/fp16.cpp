// Half and E8M0 to float by bit manipulation (no F16C needed).
#include "kvgen/quant/fp16.h"

#include <bit>

namespace kvgen::quant {

float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F)  // inf / NaN: all-ones float exponent, mantissa kept
    return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

float e8m0_to_float_half(uint8_t e) {
  return std::bit_cast<float>(e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23);
}

}  // namespace kvgen::quant
