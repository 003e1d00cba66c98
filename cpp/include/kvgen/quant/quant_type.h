// The GGUF weight types that kvgen computes on directly, and their file sizes.
#pragma once

#include <cstdint>
#include <string>

namespace kvgen::quant {

// GGUF's weight types (ggml's names), in three families:
// * 32-weight blocks: one fp16 scale d, for the *_1 types an fp16 minimum m, and 32
//   quants: w = d * q (+ m).
// * K-quants, 256-weight super-blocks of sub-blocks with 6- or 8-bit scales:
//   Q4_K / Q5_K: w = d * sc_j * q - dmin * m_j (8 sub-blocks of 32, 4- or 5-bit q);
//   Q6_K: w = d * sc_j * (q - 32) (16 sub-blocks of 16, 6-bit q, int8 sc_j).
// * Dense 16-bit floats: F16 (IEEE half) and BF16 (bfloat16), one weight per "block".
// * Lookup-table types, w = scale * value[u] with u a 4-bit index into 16 int8 values:
//   IQ4_NL (32-weight blocks, fp16 d, the non-linear 4-bit grid), IQ4_XS (256-weight
//   super-blocks, fp16 d and a 6-bit scale per 32: scale = d * (ls - 32), the same grid),
//   MXFP4 (32-weight blocks, an E8M0 power-of-two scale, E2M1 values).
// * kvgen's own index types, which no GGUF file holds: the GGUF types whose weights are
//   small integers times a scale per 16 weights (Q2_K, Q3_K, the IQ3 / IQ2 / IQ1 grids,
//   TQ1_0, TQ2_0) arrive as them, decoded by the loader (kvgen.loaders.index_types) so that
//   w = scale * q (+ min) is the file's value bit for bit. Each q is one of the tensor's
//   (at most 16) values, stored as a 4-bit index into a table of them; each scale is a
//   float32 unit per 256 weights times an int8 per 16. A 256-weight block is
//     table 16 x int8, unit float32, sub 16 x int8,
//     (I4S16M: min unit float32, min sub 16 x int8,) 128 B of indices
//   (byte 16j + i: weight 32j + i in its low nibble, 32j + 16 + i in its high one);
//   w = (unit * sub_s) * table[index] + min_unit * min_sub_s for weight 16 s + i.
enum class QuantType : int32_t { Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, F16, BF16, IQ4_NL, IQ4_XS, MXFP4,
                                 I4S16, I4S16M };

// Weights per 32-weight block, and per block of the activations quantized to int8.
inline constexpr int64_t kBlockSize = 32;
// Weights per K-quant super-block.
inline constexpr int64_t kSuperBlockSize = 256;

// "Q8_0", "Q4_K", "F16", ... (as GGUF / gguf-py's GGMLQuantizationType name them).
const char* quant_type_name(QuantType type);

// The type named `name` (case-insensitive); ValueError listing the allowed names otherwise.
QuantType parse_quant_type(const std::string& name);

// Weights per block of `type` in a GGUF file: 32, 256 (K-quants, IQ4_XS, I4S16, I4S16M) or 1 (F16, BF16). A
// matrix's cols must be a multiple of it.
int64_t block_weights(QuantType type);

// Bytes of one block in a GGUF file: Q8_0 34, Q4_0 18, Q4_1 20, Q5_0 22, Q5_1 24,
// Q4_K 144, Q5_K 176, Q6_K 210, F16 and BF16 2, IQ4_NL 18, IQ4_XS 136, MXFP4 17, I4S16 164,
// I4S16M 184.
int64_t block_bytes(QuantType type);

// Whether matmul_int8 (int8 activations) runs on `type`: false for the dense F16 / BF16,
// which only have the float-activation kernel (matmul_float).
bool has_int8_kernel(QuantType type);

}  // namespace kvgen::quant
