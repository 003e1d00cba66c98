// Names and file block sizes of the GGUF quantized types.
#include "kvgen/quant/quant_type.h"

#include <cctype>

#include "kvgen/errors.h"

namespace kvgen::quant {

namespace {
constexpr QuantType kAll[] = {QuantType::Q8_0, QuantType::Q4_0, QuantType::Q4_1, QuantType::Q5_0, QuantType::Q5_1};
}

const char* quant_type_name(QuantType type) {
  switch (type) {
    case QuantType::Q8_0: return "Q8_0";
    case QuantType::Q4_0: return "Q4_0";
    case QuantType::Q4_1: return "Q4_1";
    case QuantType::Q5_0: return "Q5_0";
    case QuantType::Q5_1: return "Q5_1";
  }
  return "?";
}

QuantType parse_quant_type(const std::string& name) {
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (QuantType t : kAll)
    if (upper == quant_type_name(t)) return t;
  throw ValueError("quantized type '" + name + "' is not one of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1");
}

int64_t block_bytes(QuantType type) {
  switch (type) {
    case QuantType::Q8_0: return 2 + 32;          // d, 32 x int8
    case QuantType::Q4_0: return 2 + 16;          // d, 32 nibbles
    case QuantType::Q4_1: return 2 + 2 + 16;      // d, m, 32 nibbles
    case QuantType::Q5_0: return 2 + 4 + 16;      // d, 32 fifth bits, 32 nibbles
    case QuantType::Q5_1: return 2 + 2 + 4 + 16;  // d, m, 32 fifth bits, 32 nibbles
  }
  return 0;
}

}  // namespace kvgen::quant
