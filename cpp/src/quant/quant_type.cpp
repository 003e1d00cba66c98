// Names and file block sizes of the GGUF weight types.
#include "kvgen/quant/quant_type.h"

#include <cctype>

#include "kvgen/errors.h"

namespace kvgen::quant {

namespace {
constexpr QuantType kAll[] = {QuantType::Q8_0, QuantType::Q4_0, QuantType::Q4_1, QuantType::Q5_0, QuantType::Q5_1,
                              QuantType::Q4_K, QuantType::Q5_K, QuantType::Q6_K, QuantType::F16,  QuantType::BF16, QuantType::IQ4_NL, QuantType::IQ4_XS,
                              QuantType::MXFP4, QuantType::I4S16, QuantType::I4S16M};

std::string all_names() {
  std::string out;
  for (QuantType t : kAll) out += std::string(out.empty() ? "" : ", ") + quant_type_name(t);
  return out;
}
}  // namespace

const char* quant_type_name(QuantType type) {
  switch (type) {
    case QuantType::Q8_0: return "Q8_0";
    case QuantType::Q4_0: return "Q4_0";
    case QuantType::Q4_1: return "Q4_1";
    case QuantType::Q5_0: return "Q5_0";
    case QuantType::Q5_1: return "Q5_1";
    case QuantType::Q4_K: return "Q4_K";
    case QuantType::Q5_K: return "Q5_K";
    case QuantType::Q6_K: return "Q6_K";
    case QuantType::F16: return "F16";
    case QuantType::BF16: return "BF16";
    case QuantType::IQ4_NL: return "IQ4_NL";
    case QuantType::IQ4_XS: return "IQ4_XS";
    case QuantType::MXFP4: return "MXFP4";
    case QuantType::I4S16: return "I4S16";
    case QuantType::I4S16M: return "I4S16M";
  }
  return "?";
}

QuantType parse_quant_type(const std::string& name) {
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (QuantType t : kAll)
    if (upper == quant_type_name(t)) return t;
  throw ValueError("quantized type '" + name + "' is not one of " + all_names());
}

int64_t block_weights(QuantType type) {
  switch (type) {
    case QuantType::Q4_K:
    case QuantType::Q5_K:
    case QuantType::Q6_K:
    case QuantType::IQ4_XS:
    case QuantType::I4S16:
    case QuantType::I4S16M: return kSuperBlockSize;
    case QuantType::F16:
    case QuantType::BF16: return 1;
    default: return kBlockSize;
  }
}

int64_t block_bytes(QuantType type) {
  switch (type) {
    case QuantType::Q8_0: return 2 + 32;                  // d, 32 x int8
    case QuantType::Q4_0: return 2 + 16;                  // d, 32 nibbles
    case QuantType::Q4_1: return 2 + 2 + 16;              // d, m, 32 nibbles
    case QuantType::Q5_0: return 2 + 4 + 16;              // d, 32 fifth bits, 32 nibbles
    case QuantType::Q5_1: return 2 + 2 + 4 + 16;          // d, m, 32 fifth bits, 32 nibbles
    case QuantType::Q4_K: return 2 + 2 + 12 + 128;        // d, dmin, 8 x (6-bit sc, 6-bit m), 256 nibbles
    case QuantType::Q5_K: return 2 + 2 + 12 + 32 + 128;   // Q4_K's and 256 fifth bits
    case QuantType::Q6_K: return 128 + 64 + 16 + 2;       // 256 nibbles, 256 x 2 high bits, 16 x int8 sc, d
    case QuantType::F16:
    case QuantType::BF16: return 2;
    case QuantType::IQ4_NL: return 2 + 16;                // d, 32 nibbles (grid indices)
    case QuantType::IQ4_XS: return 2 + 2 + 4 + 128;       // d, 8 x 2 high bits of ls, 8 x 4 low bits, 256 nibbles
    case QuantType::MXFP4: return 1 + 16;                 // E8M0 exponent, 32 nibbles (E2M1 codes)
    case QuantType::I4S16: return 16 + 4 + 16 + 128;      // 16 values, unit, 16 x int8 sub, 256 indices
    case QuantType::I4S16M: return 16 + 4 + 16 + 4 + 16 + 128;  // I4S16's, with a min unit and 16 min subs
  }
  return 0;
}

bool has_int8_kernel(QuantType type) { return type != QuantType::F16 && type != QuantType::BF16; }

}  // namespace kvgen::quant
