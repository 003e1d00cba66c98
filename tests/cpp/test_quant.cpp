// Quantized weights: PackedMatrix repacks GGUF blocks built here by hand (dequantize_row
// must give back each weight, d * (u + offset) or d * u + m), and the int8 and float
// matmuls match the plain product on every CPU path this machine runs. Scales, minimums
// and activations are small powers of two and integers, so every product and sum is
// exact in float32 and the kernels must agree with the plain product bit for bit. The
// lookup-table types (IQ4_NL, MXFP4) likewise, with the values of their 16-entry tables,
// and kvgen's index types (I4S16, I4S16M) with a table of int8 values and scales and mins.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "check.h"
#include "kvgen/errors.h"
#include "kvgen/quant/activations.h"
#include "kvgen/quant/matmul.h"

using namespace kvgen::quant;

namespace {

// fp16 bits of the scales d (1, 0.5, 0.25, 2) and minimums m (-2, 0.5, -0.25, 1).
constexpr uint16_t kScaleBits[] = {0x3C00, 0x3800, 0x3400, 0x4000};
constexpr float kScales[] = {1.0f, 0.5f, 0.25f, 2.0f};
constexpr uint16_t kMinBits[] = {0xC000, 0x3800, 0xB400, 0x3C00};
constexpr float kMins[] = {-2.0f, 0.5f, -0.25f, 1.0f};

struct Format {
  int bits;     // 8, 5 or 4
  bool has_min;  // the *_1 types
  int offset;   // w = d * (u + offset) without a minimum
};

Format format_of(QuantType type) {
  switch (type) {
    case QuantType::Q8_0: return {8, false, -128};
    case QuantType::Q4_0: return {4, false, -8};
    case QuantType::Q4_1: return {4, true, 0};
    case QuantType::Q5_0: return {5, false, -16};
    case QuantType::Q5_1: return {5, true, 0};
    default: break;  // this file builds 32-weight block types only (K-quants, F16: tests/test_quant_kernels.py)
  }
  return {};
}

// A [rows, cols] weight matrix in the file's block format, and the float value of each
// weight (row-major).
struct FileMatrix {
  std::vector<uint8_t> raw;
  std::vector<float> weights;
};

void append_u16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v & 0xFF));
  out.push_back(static_cast<uint8_t>(v >> 8));
}

// One block of 32 unsigned quants u in GGUF's layout: d, [m], then for 8 bits the
// int8 q = u - 128; for 4 and 5 bits byte j = low nibbles of u[j] | u[j + 16] << 4,
// preceded (5 bits) by a 32-bit word whose bit k is bit 4 of u[k].
void append_block(std::vector<uint8_t>& out, Format f, const uint32_t* u, int scale, int min) {
  append_u16(out, kScaleBits[scale]);
  if (f.has_min) append_u16(out, kMinBits[min]);
  if (f.bits == 8) {
    for (int k = 0; k < 32; ++k) out.push_back(static_cast<uint8_t>(u[k] ^ 0x80u));
    return;
  }
  if (f.bits == 5) {
    uint32_t high = 0;
    for (int k = 0; k < 32; ++k) high |= ((u[k] >> 4) & 1u) << k;
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(high >> (8 * i)));
  }
  for (int j = 0; j < 16; ++j) out.push_back(static_cast<uint8_t>((u[j] & 0xFu) | (u[j + 16] & 0xFu) << 4));
}

FileMatrix file_matrix(QuantType type, int64_t rows, int64_t cols) {
  const Format f = format_of(type);
  const uint32_t levels = 1u << f.bits;
  FileMatrix m;
  m.weights.resize(rows * cols);
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t b = 0; b < cols / 32; ++b) {
      const int scale = static_cast<int>((n + b) % 4), min = static_cast<int>((n + 2 * b) % 4);
      uint32_t u[32];
      for (int k = 0; k < 32; ++k) {
        u[k] = static_cast<uint32_t>(n * 7 + (b * 32 + k) * 5 + 3) % levels;
        const float q = static_cast<float>(static_cast<int>(u[k]) + f.offset);
        m.weights[n * cols + b * 32 + k] = f.has_min ? kScales[scale] * q + kMins[min] : kScales[scale] * q;
      }
      append_block(m.raw, f, u, scale, min);
    }
  return m;
}

constexpr QuantType kTypes[] = {QuantType::Q8_0, QuantType::Q4_0, QuantType::Q4_1, QuantType::Q5_0,
                                QuantType::Q5_1};
// 17 rows: a full group of 16 and one of a single row (zero padding); 2 blocks.
constexpr int64_t kRows = 17, kCols = 64;
// 5 activation rows: more than AVX2's 4 per tile read, fewer than AVX-512's 8.
constexpr int64_t kBatch = 5;

void repack_keeps_every_weight() {
  for (QuantType type : kTypes) {
    const FileMatrix file = file_matrix(type, kRows, kCols);
    CHECK_EQ(static_cast<int64_t>(file.raw.size()), kRows * kCols / 32 * block_bytes(type));
    const PackedMatrix w(type, file.raw.data(), static_cast<int64_t>(file.raw.size()), kRows, kCols);
    CHECK_EQ(w.groups(), int64_t{2});
    CHECK_EQ(w.bytes(), 2 * 16 * kCols / 32 * block_bytes(type));  // the 17th row's group is padded to 16
    const int before = kvgen::test::failure_count();
    for (int64_t n = 0; n < kRows; ++n) {
      std::vector<float> row(kCols);
      w.dequantize_row(n, row.data());
      const std::vector<float> expected(file.weights.begin() + n * kCols, file.weights.begin() + (n + 1) * kCols);
      CHECK_EQ(row, expected);
    }
    if (kvgen::test::failure_count() != before) std::cerr << "  (" << quant_type_name(type) << ")\n";
  }
}

// rows_of: the second of two 16-row matrices stacked in one repack (a 3-D tensor of
// experts) reads as that matrix repacked alone, shares the buffer, and outlives the handle.
void rows_of_a_stacked_repack_read_as_their_own_matrix() {
  for (QuantType type : kTypes) {
    const FileMatrix stacked = file_matrix(type, 32, kCols);
    auto whole = std::make_shared<const PackedMatrix>(type, stacked.raw.data(),
                                                      static_cast<int64_t>(stacked.raw.size()), 32, kCols);
    const auto second = PackedMatrix::rows_of(whole, 16, 16);
    const int64_t half = static_cast<int64_t>(stacked.raw.size()) / 2;
    const PackedMatrix alone(type, stacked.raw.data() + half, half, 16, kCols);
    CHECK(second->view().data == whole->view().data + whole->bytes() / 2);
    whole.reset();  // the part keeps the buffer
    CHECK_EQ(second->rows(), int64_t{16});
    CHECK_EQ(second->groups(), int64_t{1});
    CHECK_EQ(second->bytes(), alone.bytes());
    for (int64_t n = 0; n < 16; ++n) {
      std::vector<float> row(kCols), expected(kCols);
      second->dequantize_row(n, row.data());
      alone.dequantize_row(n, expected.data());
      CHECK_EQ(row, expected);
    }
  }
  const FileMatrix file = file_matrix(QuantType::Q8_0, 32, 64);
  const auto whole =
      std::make_shared<const PackedMatrix>(QuantType::Q8_0, file.raw.data(), static_cast<int64_t>(file.raw.size()), 32, 64);
  CHECK_THROWS(PackedMatrix::rows_of(whole, 8, 16), kvgen::ValueError);   // not a whole group
  CHECK_THROWS(PackedMatrix::rows_of(whole, 16, 32), kvgen::ValueError);  // past the end
  CHECK_THROWS(PackedMatrix::rows_of(whole, 0, 0), kvgen::ValueError);
}

void repack_rejects_bad_shapes() {
  const FileMatrix file = file_matrix(QuantType::Q8_0, 2, 64);
  const auto bytes = static_cast<int64_t>(file.raw.size());
  CHECK_THROWS(PackedMatrix(QuantType::Q8_0, file.raw.data(), bytes, 2, 48), kvgen::ValueError);
  CHECK_THROWS(PackedMatrix(QuantType::Q8_0, file.raw.data(), bytes - 1, 2, 64), kvgen::ValueError);
  CHECK_THROWS(PackedMatrix(QuantType::Q8_0, file.raw.data(), bytes, 0, 64), kvgen::ValueError);
}

// Activations (kBatch, kCols): integers in [-127, 127] with a +-127 in every block, so
// that the int8 quantization has d = 1 and q = x exactly.
std::vector<float> activations(int64_t cols = kCols) {
  std::vector<float> x(kBatch * cols);
  for (int64_t m = 0; m < kBatch; ++m)
    for (int64_t k = 0; k < cols; ++k) x[m * cols + k] = static_cast<float>((m * 11 + k * 13) % 255 - 127);
  for (int64_t m = 0; m < kBatch; ++m)
    for (int64_t b = 0; b < cols / 32; ++b) x[m * cols + b * 32 + m] = m % 2 ? -127.0f : 127.0f;
  return x;
}

// out[m * ldo + n] = sum_k x[m, k] * W[n, k], the plain product.
std::vector<float> plain_product(const std::vector<float>& x, const std::vector<float>& weights, int64_t ldo,
                                 float fill, int64_t cols = kCols) {
  std::vector<float> out(kBatch * ldo, fill);
  for (int64_t m = 0; m < kBatch; ++m)
    for (int64_t n = 0; n < kRows; ++n) {
      double sum = 0.0;
      for (int64_t k = 0; k < cols; ++k) sum += static_cast<double>(x[m * cols + k]) * weights[n * cols + k];
      out[m * ldo + n] = static_cast<float>(sum);
    }
  return out;
}

void matmuls_match_the_plain_product_on_every_cpu_path() {
  const std::vector<float> x = activations();
  QuantizedActivations xq(kBatch, kCols);
  xq.quantize(x.data(), kBatch, kCols);
  // ldo > N: the columns past N are never written, so they keep the fill value.
  const int64_t ldo = kRows + 3;
  constexpr float kFill = 12345.0f;
  for (CpuPath path : supported_cpu_paths()) {
    std::cout << "  cpu path " << cpu_path_name(path) << std::endl;
    for (QuantType type : kTypes) {
      const FileMatrix file = file_matrix(type, kRows, kCols);
      const PackedMatrix w(type, file.raw.data(), static_cast<int64_t>(file.raw.size()), kRows, kCols);
      const std::vector<float> expected = plain_product(x, file.weights, ldo, kFill);
      const int before = kvgen::test::failure_count();

      std::vector<float> out(kBatch * ldo, kFill);
      matmul_int8(w, xq, out.data(), ldo, all_groups(w), path);
      CHECK_EQ(out, expected);

      std::fill(out.begin(), out.end(), kFill);
      matmul_float(w, x.data(), kBatch, kCols, out.data(), ldo, all_groups(w), path);
      CHECK_EQ(out, expected);

      if (has_bf16_kernels(path)) {  // integers and powers of two: exact in bf16 as well
        Bf16Activations xb(kBatch, kCols, path);
        xb.convert(x.data(), kBatch, kCols);
        std::fill(out.begin(), out.end(), kFill);
        matmul_bf16(w, xb, out.data(), ldo, all_groups(w), path);
        CHECK_EQ(out, expected);
      }

      // Only the second group (row 16): every other column keeps the fill.
      std::fill(out.begin(), out.end(), kFill);
      matmul_int8(w, xq, out.data(), ldo, GroupRange{1, 2}, path);
      std::vector<float> second_group(kBatch * ldo, kFill);
      for (int64_t m = 0; m < kBatch; ++m) second_group[m * ldo + 16] = expected[m * ldo + 16];
      CHECK_EQ(out, second_group);

      if (kvgen::test::failure_count() != before)
        std::cerr << "  (on cpu path " << cpu_path_name(path) << ", " << quant_type_name(type) << ")\n";
    }
  }
}

// A two-level product as the models run it: the path's own kernel (AVX-512), or both
// levels' 2 kBatch rows in one int8 product and the halves added (the projector's way).
void two_level_product(const PackedMatrix& w, const QuantizedActivations& x2, CpuPath path, std::vector<float>& out,
                       int64_t ldo, GroupRange groups) {
  if (has_int8x2_kernels(path)) {
    CHECK(matmul_int8x2(w, x2, out.data(), ldo, groups, path));
    return;
  }
  std::vector<float> halves(2 * kBatch * ldo, 0.0f);
  matmul_int8(w, x2, halves.data(), ldo, groups, path);
  for (int64_t m = 0; m < kBatch; ++m)
    for (int64_t n = groups.first * 16; n < std::min(w.rows(), groups.last * 16); ++n)
      out[m * ldo + n] = halves[m * ldo + n] + halves[(kBatch + m) * ldo + n];
}

// IQ4_NL / MXFP4 blocks: d (fp16 from kScaleBits; MXFP4: the exponent byte 128 + log2 d,
// 2^(e - 128) being its halved scale) and 32 indices u, weight = d * value[u].
FileMatrix lookup_file_matrix(QuantType type, int64_t rows, int64_t cols) {
  const bool mxfp4 = type == QuantType::MXFP4;
  const int8_t* values = mxfp4 ? kE2m1Values : kIq4Values;
  constexpr uint8_t kExponents[] = {128, 127, 126, 129};  // 2^(e - 128) = kScales
  FileMatrix m;
  m.weights.resize(rows * cols);
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t b = 0; b < cols / 32; ++b) {
      const int scale = static_cast<int>((n + b) % 4);
      if (mxfp4)
        m.raw.push_back(kExponents[scale]);
      else
        append_u16(m.raw, kScaleBits[scale]);
      uint32_t u[32];
      for (int k = 0; k < 32; ++k) {
        u[k] = static_cast<uint32_t>(n * 7 + (b * 32 + k) * 5 + 3) % 16;
        m.weights[n * cols + b * 32 + k] = kScales[scale] * static_cast<float>(values[u[k]]);
      }
      for (int j = 0; j < 16; ++j) m.raw.push_back(static_cast<uint8_t>(u[j] | u[j + 16] << 4));
    }
  return m;
}

// The lookup-table types on every path, in one and two levels: the two-level product by
// levels (what the AVX-512 path runs for them, with the AVX2 kernel) is tested here through
// each path's one-level kernel. Integer activations with a +-127 per block quantize exactly,
// so the second level is zero and every product is the plain one.
void lookup_types_match_the_plain_product_in_one_and_two_levels() {
  const std::vector<float> x = activations();
  QuantizedActivations xq(kBatch, kCols), x2(2 * kBatch, kCols);
  xq.quantize(x.data(), kBatch, kCols);
  x2.quantize_two_level(x.data(), kBatch, kCols);
  const int64_t ldo = kRows + 3;
  constexpr float kFill = 12345.0f;
  for (CpuPath path : supported_cpu_paths())
    for (QuantType type : {QuantType::IQ4_NL, QuantType::MXFP4}) {
      const FileMatrix file = lookup_file_matrix(type, kRows, kCols);
      CHECK_EQ(static_cast<int64_t>(file.raw.size()), kRows * kCols / 32 * block_bytes(type));
      const PackedMatrix w(type, file.raw.data(), static_cast<int64_t>(file.raw.size()), kRows, kCols);
      const std::vector<float> expected = plain_product(x, file.weights, ldo, kFill);
      const int before = kvgen::test::failure_count();
      for (int64_t n = 0; n < kRows; ++n) {
        std::vector<float> row(kCols);
        w.dequantize_row(n, row.data());
        CHECK_EQ(row, std::vector<float>(file.weights.begin() + n * kCols, file.weights.begin() + (n + 1) * kCols));
      }
      std::vector<float> out(kBatch * ldo, kFill);
      matmul_int8(w, xq, out.data(), ldo, all_groups(w), path);
      CHECK_EQ(out, expected);
      std::fill(out.begin(), out.end(), kFill);
      matmul_float(w, x.data(), kBatch, kCols, out.data(), ldo, all_groups(w), path);
      CHECK_EQ(out, expected);
      std::fill(out.begin(), out.end(), kFill);
      two_level_product(w, x2, path, out, ldo, all_groups(w));
      CHECK_EQ(out, expected);
      std::fill(out.begin(), out.end(), kFill);  // the second group only: row 16
      two_level_product(w, x2, path, out, ldo, GroupRange{1, 2});
      std::vector<float> second_group(kBatch * ldo, kFill);
      for (int64_t m = 0; m < kBatch; ++m) second_group[m * ldo + 16] = expected[m * ldo + 16];
      CHECK_EQ(out, second_group);
      if (kvgen::test::failure_count() != before)
        std::cerr << "  (on cpu path " << cpu_path_name(path) << ", " << quant_type_name(type) << ")\n";
    }
}

// kvgen's index blocks (I4S16, I4S16M): per 256 weights the matrix's 16 values (kIndexValues),
// a float32 unit (kScales) and 16 int8 subs in [-3, 3], for I4S16M a min unit (kMins) and 16
// min subs in [-2, 2], then 128 bytes of 4-bit indices (byte 16j + i: weight 32j + i low,
// 32j + 16 + i high); weight = (unit * sub) * value + min_unit * min_sub of its 16. Every
// product and partial sum stays exact (below 2^22 in quarters).
constexpr int8_t kIndexValues[16] = {-20, -15, -11, -8, -6, -4, -2, -1, 0, 1, 3, 5, 7, 10, 14, 20};

FileMatrix index_file_matrix(QuantType type, int64_t rows, int64_t cols) {
  const bool with_min = type == QuantType::I4S16M;
  FileMatrix m;
  m.weights.resize(rows * cols);
  const auto append_f32 = [&](float v) {
    uint8_t b[4];
    std::memcpy(b, &v, 4);
    m.raw.insert(m.raw.end(), b, b + 4);
  };
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t b = 0; b < cols / 256; ++b) {
      for (int8_t v : kIndexValues) m.raw.push_back(static_cast<uint8_t>(v));
      const float unit = kScales[(n + b) % 4], min_unit = kMins[(n + 2 * b) % 4];
      int sub[16], min_sub[16];
      append_f32(unit);
      for (int s = 0; s < 16; ++s) {
        sub[s] = static_cast<int>((n + b + s) % 7) - 3;
        m.raw.push_back(static_cast<uint8_t>(static_cast<int8_t>(sub[s])));
      }
      if (with_min) {
        append_f32(min_unit);
        for (int s = 0; s < 16; ++s) {
          min_sub[s] = static_cast<int>((n + 2 * b + 3 * s) % 5) - 2;
          m.raw.push_back(static_cast<uint8_t>(static_cast<int8_t>(min_sub[s])));
        }
      }
      int index[256];
      for (int k = 0; k < 256; ++k) {
        index[k] = static_cast<int>((n * 7 + (b * 256 + k) * 5 + 3) % 16);
        const float w = unit * static_cast<float>(sub[k / 16]) * static_cast<float>(kIndexValues[index[k]]);
        m.weights[n * cols + b * 256 + k] = with_min ? w + min_unit * static_cast<float>(min_sub[k / 16]) : w;
      }
      for (int j = 0; j < 8; ++j)
        for (int i = 0; i < 16; ++i)
          m.raw.push_back(static_cast<uint8_t>(index[32 * j + i] | (index[32 * j + 16 + i] << 4)));
    }
  return m;
}

// The index types on every path, in one and two levels (the two-level product by levels, as the
// AVX-512 path runs it with the AVX2 kernel), bit for bit against the plain product.
void index_types_match_the_plain_product_in_one_and_two_levels() {
  constexpr int64_t kCols256 = 512;
  const std::vector<float> x = activations(kCols256);
  QuantizedActivations xq(kBatch, kCols256), x2(2 * kBatch, kCols256);
  xq.quantize(x.data(), kBatch, kCols256);
  x2.quantize_two_level(x.data(), kBatch, kCols256);
  const int64_t ldo = kRows + 3;
  constexpr float kFill = 12345.0f;
  for (CpuPath path : supported_cpu_paths())
    for (QuantType type : {QuantType::I4S16, QuantType::I4S16M}) {
      const FileMatrix file = index_file_matrix(type, kRows, kCols256);
      CHECK_EQ(static_cast<int64_t>(file.raw.size()), kRows * kCols256 / 256 * block_bytes(type));
      const PackedMatrix w(type, file.raw.data(), static_cast<int64_t>(file.raw.size()), kRows, kCols256);
      const std::vector<float> expected = plain_product(x, file.weights, ldo, kFill, kCols256);
      const int before = kvgen::test::failure_count();
      for (int64_t n = 0; n < kRows; ++n) {
        std::vector<float> row(kCols256);
        w.dequantize_row(n, row.data());
        CHECK_EQ(row, std::vector<float>(file.weights.begin() + n * kCols256,
                                         file.weights.begin() + (n + 1) * kCols256));
      }
      std::vector<float> out(kBatch * ldo, kFill);
      matmul_int8(w, xq, out.data(), ldo, all_groups(w), path);
      CHECK_EQ(out, expected);
      std::fill(out.begin(), out.end(), kFill);
      matmul_float(w, x.data(), kBatch, kCols256, out.data(), ldo, all_groups(w), path);
      CHECK_EQ(out, expected);
      std::fill(out.begin(), out.end(), kFill);
      two_level_product(w, x2, path, out, ldo, all_groups(w));
      CHECK_EQ(out, expected);
      if (kvgen::test::failure_count() != before)
        std::cerr << "  (on cpu path " << cpu_path_name(path) << ", " << quant_type_name(type) << ")\n";
    }
}

// Every CPU path quantizes activations (one and two levels) to the very bytes and floats
// of the portable code: random blocks at many scales, and blocks of zeros, of ties at
// .5, of one value, holding NaN or inf, and of subnormals.
void quantized_activations_are_the_portable_ones_on_every_cpu_path() {
  constexpr int64_t kRowsQ = 5, kColsQ = 8 * 32;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(kRowsQ * (kColsQ + 3));  // row stride kColsQ + 3
  const int64_t ld = kColsQ + 3;
  for (int64_t m = 0; m < kRowsQ; ++m)
    for (int64_t k = 0; k < kColsQ; ++k) x[m * ld + k] = normal(rng) * std::ldexp(1.0f, static_cast<int>(k / 32) * 3 - 9);
  float* r = x.data() + 2 * ld;  // row 2: special blocks
  for (int k = 0; k < 32; ++k) r[k] = 0.0f;
  for (int k = 0; k < 32; ++k) r[32 + k] = (k % 2 ? -0.5f : 0.5f) * static_cast<float>(k) * (127.0f / 31.0f);
  for (int k = 0; k < 32; ++k) r[64 + k] = -3.0f;
  r[96 + 5] = std::numeric_limits<float>::quiet_NaN();
  r[128 + 31] = -std::numeric_limits<float>::infinity();
  for (int k = 0; k < 32; ++k) r[160 + k] = std::numeric_limits<float>::denorm_min() * static_cast<float>(k - 16);
  const auto bytes = [](const Int8View& v) {
    const int64_t blocks = v.rows * v.cols / 32;
    std::vector<uint32_t> out(v.q, v.q + v.rows * v.cols);
    for (int64_t i = 0; i < blocks; ++i) {
      uint32_t d, s;
      std::memcpy(&d, v.d + i, 4);
      std::memcpy(&s, v.s + i, 4);
      out.push_back(d);
      out.push_back(s);
      out.push_back(static_cast<uint32_t>(v.half_sums[2 * i]));
      out.push_back(static_cast<uint32_t>(v.half_sums[2 * i + 1]));
    }
    return out;
  };
  QuantizedActivations portable(2 * kRowsQ, kColsQ, CpuPath::Portable);
  // rows 0-1 are one gang of 16 blocks (the AVX-512 quantizer's unit), rows 2-3 another, which a
  // NaN or inf block sends block by block; the second round makes those two blocks finite, so that
  // the gang of zeros, ties, constants and subnormals runs whole
  for (bool finite : {false, true}) {
    if (finite) r[96 + 5] = 1.5f, r[128 + 31] = -1e30f;
    for (CpuPath path : supported_cpu_paths()) {
      std::cout << "  cpu path " << cpu_path_name(path) << (finite ? ", finite" : "") << std::endl;
      QuantizedActivations xq(2 * kRowsQ, kColsQ, path);
      for (int64_t rows : {int64_t{1}, int64_t{2}, kRowsQ}) {
        portable.quantize(x.data(), rows, ld);
        xq.quantize(x.data(), rows, ld);
        CHECK_EQ(bytes(xq.view()), bytes(portable.view()));
        portable.quantize_two_level(x.data(), rows, ld);
        xq.quantize_two_level(x.data(), rows, ld);
        CHECK_EQ(bytes(xq.view()), bytes(portable.view()));
      }
    }
  }
}

// The second level of a two-level quantization has the fixed scale d1 / 256 on every CPU
// path: d2 = d1 / 256 exactly, and the two levels hold each value to within one step d2 (half
// a step, but where |r / d2| rounds to 128 and is clamped to 127). Blocks of zeros, of values
// at the first level's steps (residual 0) and holding NaN keep their meaning.
void second_level_has_the_first_levels_scale_over_256() {
  constexpr int64_t kRowsS = 3, kColsS = 64 * 32;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(kRowsS * kColsS);
  for (int64_t i = 0; i < kRowsS * kColsS; ++i) x[i] = normal(rng) * std::ldexp(1.0f, static_cast<int>(i / 32 % 16) - 8);
  for (int k = 0; k < 32; ++k) x[k] = 0.0f;                             // block 0: zeros
  for (int k = 0; k < 32; ++k) x[64 + k] = static_cast<float>(127 - 8 * k);  // block 2: integers, max 127: d1 = 1
  x[96 + 3] = std::numeric_limits<float>::quiet_NaN();                  // block 3: NaN
  for (CpuPath path : supported_cpu_paths()) {
    QuantizedActivations xq(2 * kRowsS, kColsS, path);
    xq.quantize_two_level(x.data(), kRowsS, kColsS);
    const Int8View v = xq.view();
    const int64_t blocks = kColsS / 32;
    const int before = kvgen::test::failure_count();
    for (int64_t m = 0; m < kRowsS; ++m)
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t first = m * blocks + b, second = (kRowsS + m) * blocks + b;
        const float d1 = v.d[first], d2 = v.d[second];
        if (m == 0 && b == 3) {  // NaN: both levels NaN, their quants 0
          CHECK(std::isnan(d1) && std::isnan(d2) && std::isnan(v.s[second]));
          for (int k = 0; k < 32; ++k) CHECK_EQ(int{v.q[second * 32 + k]}, 0);
          continue;
        }
        CHECK_EQ(d2, d1 / 256.0f);
        int32_t sum = 0;
        for (int k = 0; k < 32; ++k) {
          const double value = x[m * kColsS + b * 32 + k];
          const double held = double{d1} * v.q[first * 32 + k] + double{d2} * v.q[second * 32 + k];
          CHECK(std::abs(held - value) <= 1.0001 * double{d2});
          sum += v.q[second * 32 + k];
        }
        CHECK_EQ(v.s[second], d2 * static_cast<float>(sum));
        if (m == 0 && b == 2)  // integers at the first level's steps: nothing left over
          for (int k = 0; k < 32; ++k) CHECK_EQ(int{v.q[second * 32 + k]}, 0);
      }
    if (kvgen::test::failure_count() != before) std::cerr << "  (on cpu path " << cpu_path_name(path) << ")\n";
  }
}

// Where the quantizer writes the two-level passes (the AVX-512 path, 8 rows or more), every
// full pass holds the rows the view holds: both levels' quants, d2, s1 + s2 and the combined half sums of each
// row and block, whether one call quantized the rows or threads did in parts.
void two_level_passes_hold_the_rows_of_the_view() {
  constexpr int64_t kRowsP = 19, kColsP = 4 * 32;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(kRowsP * kColsP);
  for (float& v : x) v = normal(rng);
  for (CpuPath path : supported_cpu_paths()) {
    QuantizedActivations xq(2 * kRowsP, kColsP, path);
    for (int parts : {1, 3}) {
      if (parts == 1) {
        xq.quantize_two_level(x.data(), kRowsP, kColsP);
      } else {  // three uneven ranges of blocks, as the projector's threads take them
        xq.begin_parts(kRowsP, kColsP, true);
        const int64_t blocks = xq.blocks(kRowsP);
        for (int64_t i = 0; i < parts; ++i)
          xq.quantize_blocks(x.data(), kRowsP, kColsP, true, blocks * i * i / 9, blocks * (i + 1) * (i + 1) / 9);
      }
      const Int8View v = xq.view();
      if (!v.passes) {
        CHECK(!runs_avx512(path));  // the AVX-512 quantizer writes them
        continue;
      }
      const int64_t blocks = kColsP / 32;
      for (int64_t m = 0; m < kRowsP; ++m)  // two full passes and a last one of 3 rows
        for (int64_t b = 0; b < blocks; ++b) {
          const TwoLevelPassBlock& pass = v.passes[m / kTwoLevelPassRows * blocks + b];
          const int r = static_cast<int>(m % kTwoLevelPassRows);
          const int64_t first = m * blocks + b, second = (kRowsP + m) * blocks + b;
          CHECK(std::equal(pass.rows[r], pass.rows[r] + 32, v.q + first * 32));
          CHECK(std::equal(pass.rows[kTwoLevelPassRows + r], pass.rows[kTwoLevelPassRows + r] + 32, v.q + second * 32));
          CHECK_EQ(pass.d2[r], v.d[second]);
          CHECK_EQ(pass.s[r], v.s[first] + v.s[second]);
          for (int h = 0; h < 2; ++h)
            CHECK_EQ(pass.half_sums[r][h], v.half_sums[2 * first + h] * 256 + v.half_sums[2 * second + h]);
        }
      xq.quantize(x.data(), kRowsP, kColsP);  // one level: no passes
      CHECK(xq.view().passes == nullptr);
      xq.quantize_two_level(x.data(), 1, kColsP);  // one row: its own kernels read it in place
      CHECK(xq.view().passes == nullptr);
    }
  }
}

}  // namespace

int main() {
  return kvgen::test::run_all({
      TEST_CASE(repack_keeps_every_weight),
      TEST_CASE(repack_rejects_bad_shapes),
      TEST_CASE(rows_of_a_stacked_repack_read_as_their_own_matrix),
      TEST_CASE(matmuls_match_the_plain_product_on_every_cpu_path),
      TEST_CASE(lookup_types_match_the_plain_product_in_one_and_two_levels),
      TEST_CASE(index_types_match_the_plain_product_in_one_and_two_levels),
      TEST_CASE(second_level_has_the_first_levels_scale_over_256),
      TEST_CASE(two_level_passes_hold_the_rows_of_the_view),
      TEST_CASE(quantized_activations_are_the_portable_ones_on_every_cpu_path),
  });
}
