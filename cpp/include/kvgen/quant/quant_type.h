// The GGUF block-quantized types that kvgen computes on directly, and their file sizes.
#pragma once

#include <cstdint>
#include <string>

namespace kvgen::quant {

// GGUF's 32-weight block types (ggml's names). Each block holds one fp16 scale d, for
// the *_1 types an fp16 minimum m, and 32 quants: w = d * q (+ m).
enum class QuantType : int32_t { Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 };

// Weights per block, for every type here.
inline constexpr int64_t kBlockSize = 32;

// "Q8_0", "Q4_0", ... (as GGUF / gguf-py name them).
const char* quant_type_name(QuantType type);

// The type named `name` (case-insensitive); ValueError listing the allowed names otherwise.
QuantType parse_quant_type(const std::string& name);

// Bytes of one 32-weight block in a GGUF file: Q8_0 34, Q4_0 18, Q4_1 20, Q5_0 22, Q5_1 24.
int64_t block_bytes(QuantType type);

}  // namespace kvgen::quant
