// Portable C++ kernels over the packed tiles: the reference for the SIMD paths and the
// fallback on any CPU. Compiled without instruction-set flags. Each 16-row x 32-weight
// unit of a tile is unpacked once into small stack arrays and used for all activation rows.
#include <algorithm>
#include <bit>
#include <cstring>

#include "kvgen/quant/fp16.h"
#include "kvgen/quant/kernel_abi.h"

namespace kvgen::quant {

namespace {

#include "unit_scales.inc"  // Unit, load_half, units_per_tile, unit_base, unit_value, unit_scales

// The stored quants u of a unit (Q: UnitQuants' layout, from the unit's base) into q[k][r]
// (kernel_abi.h): byte 4r+j of nibble vector v holds weight 4v+j (v < 4 low nibbles of
// chunk v, else high nibbles of chunk v - 4), and its high bits are in plane v / (8/E), at
// bits E * (v % (8/E)). 8-bit: byte 4r+j of chunk c is weight 4c+j.
template <class Q>
void unpack_quants(const uint8_t* base, int32_t (*q)[kGroupRows]) {
  if constexpr (Q::kBits == 8) {
    for (int k = 0; k < kBlockSize; ++k)
      for (int r = 0; r < kGroupRows; ++r) q[k][r] = base[Q::kQuantsAt + 64 * (k / 4) + 4 * r + k % 4];
    return;
  }
  for (int v = 0; v < 8; ++v)
    for (int r = 0; r < kGroupRows; ++r)
      for (int j = 0; j < 4; ++j)
        q[4 * v + j][r] = (base[Q::kQuantsAt + 64 * (v % 4) + 4 * r + j] >> (v < 4 ? 0 : 4)) & 0xF;
  if constexpr (Q::kExtraBits > 0) {
    constexpr int per_byte = 8 / Q::kExtraBits, mask = (1 << Q::kExtraBits) - 1;
    for (int v = 0; v < 8; ++v)
      for (int r = 0; r < kGroupRows; ++r)
        for (int j = 0; j < 4; ++j) {
          const int plane_byte = base[Q::kHighBitsAt + 64 * (v / per_byte) + 4 * r + j];
          q[4 * v + j][r] |= ((plane_byte >> (Q::kExtraBits * (v % per_byte))) & mask) << 4;
        }
  }
}

template <class L>
void unpack_unit(const uint8_t* tile, int j, Unit& t) {
  unit_scales<L>(tile, j, t);
  unpack_quants<typename UnitQuants<L>::type>(unit_base<L>(tile, j), t.q);
  if constexpr (L::kFamily != Family::Block)
    for (int k = 0; k < kBlockSize; ++k)
      for (int r = 0; r < kGroupRows; ++r) t.q[k][r] = unit_value<L>(tile, t.q[k][r]);
}

void store_group(const float (*acc)[kGroupRows], int64_t rows_here, int64_t m_count, float* out, int64_t ldo) {
  for (int64_t m = 0; m < m_count; ++m)
    for (int64_t r = 0; r < rows_here; ++r) out[m * ldo + r] = acc[m][r];
}

constexpr int64_t kMaxTile = 8;  // activation rows per pass over the weights

template <class L>
void matmul_int8(const PackedView& w, const Int8View& x, float* out, int64_t ldo, int64_t g0, int64_t g1) {
  constexpr int units = units_per_tile<L>();
  const int64_t xblocks = x.cols / kBlockSize;
  Unit t;
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t rows_here = std::min(kGroupRows, w.rows - g * kGroupRows);
    for (int64_t m0 = 0; m0 < x.rows; m0 += kMaxTile) {
      const int64_t mt = std::min(kMaxTile, x.rows - m0);
      float acc[kMaxTile][kGroupRows] = {};
      for (int64_t b = 0; b < w.blocks; ++b)
        for (int j = 0; j < units; ++j) {
          unpack_unit<L>(w.data + (g * w.blocks + b) * L::kTileBytes, j, t);
          const int64_t xb = b * units + j;  // the activations' 32-block
          for (int64_t m = 0; m < mt; ++m) {
            const int8_t* xq = x.q + (m0 + m) * x.cols + xb * kBlockSize;
            const float dx = x.d[(m0 + m) * xblocks + xb], sx = x.s[(m0 + m) * xblocks + xb];
            int32_t dot[2][kGroupRows] = {};  // per 16-weight half
            for (int k = 0; k < kBlockSize; ++k)
              for (int r = 0; r < kGroupRows; ++r) dot[k / 16][r] += t.q[k][r] * xq[k];
            for (int r = 0; r < kGroupRows; ++r) {
              if constexpr (split_scales<L>())
                acc[m][r] += t.scale[0][r] * dx * static_cast<float>(dot[0][r]) +
                             t.scale[1][r] * dx * static_cast<float>(dot[1][r]);
              else
                acc[m][r] += t.scale[0][r] * dx * static_cast<float>(dot[0][r] + dot[1][r]);
              if constexpr (split_mins<L>()) {
                const int32_t* hs = x.half_sums + 2 * ((m0 + m) * xblocks + xb);
                acc[m][r] += t.min[0][r] * dx * static_cast<float>(hs[0]) + t.min[1][r] * dx * static_cast<float>(hs[1]);
              } else {
                acc[m][r] += t.min[0][r] * sx;
              }
            }
          }
        }
      store_group(acc, rows_here, mt, out + m0 * ldo + g * kGroupRows, ldo);
    }
  }
}

template <class L>
void matmul_float_quantized(const PackedView& w, const float* x, int64_t rows, int64_t ldx, float* out, int64_t ldo,
                            int64_t g0, int64_t g1) {
  constexpr int units = units_per_tile<L>();
  Unit t;
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t rows_here = std::min(kGroupRows, w.rows - g * kGroupRows);
    for (int64_t m0 = 0; m0 < rows; m0 += kMaxTile) {
      const int64_t mt = std::min(kMaxTile, rows - m0);
      float acc[kMaxTile][kGroupRows] = {};
      for (int64_t b = 0; b < w.blocks; ++b)
        for (int j = 0; j < units; ++j) {
          unpack_unit<L>(w.data + (g * w.blocks + b) * L::kTileBytes, j, t);
          float wf[kBlockSize][kGroupRows];  // the unit's weights, dequantized once for all rows of x
          for (int k = 0; k < kBlockSize; ++k)
            for (int r = 0; r < kGroupRows; ++r) wf[k][r] = t.scale[k / 16][r] * static_cast<float>(t.q[k][r]) + t.min[k / 16][r];
          for (int64_t m = 0; m < mt; ++m) {
            const float* xb = x + (m0 + m) * ldx + (b * units + j) * kBlockSize;
            for (int k = 0; k < kBlockSize; ++k)
              for (int r = 0; r < kGroupRows; ++r) acc[m][r] += wf[k][r] * xb[k];
          }
        }
      store_group(acc, rows_here, mt, out + m0 * ldo + g * kGroupRows, ldo);
    }
  }
}

template <class L>
float dense_value(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return L::kBrainFloat ? std::bit_cast<float>(static_cast<uint32_t>(h) << 16) : fp16_to_float(h);
}

// F16 / BF16: one tile per column.
template <class L>
void matmul_float_dense(const PackedView& w, const float* x, int64_t rows, int64_t ldx, float* out, int64_t ldo,
                        int64_t g0, int64_t g1) {
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t rows_here = std::min(kGroupRows, w.rows - g * kGroupRows);
    for (int64_t m0 = 0; m0 < rows; m0 += kMaxTile) {
      const int64_t mt = std::min(kMaxTile, rows - m0);
      float acc[kMaxTile][kGroupRows] = {};
      for (int64_t k = 0; k < w.blocks; ++k) {
        const uint8_t* tile = w.data + (g * w.blocks + k) * L::kTileBytes;
        float wk[kGroupRows];
        for (int r = 0; r < kGroupRows; ++r) wk[r] = dense_value<L>(tile + 2 * r);
        for (int64_t m = 0; m < mt; ++m)
          for (int r = 0; r < kGroupRows; ++r) acc[m][r] += wk[r] * x[(m0 + m) * ldx + k];
      }
      store_group(acc, rows_here, mt, out + m0 * ldo + g * kGroupRows, ldo);
    }
  }
}

void matmul_int8_any(const PackedView& w, const Int8View& x, float* out, int64_t ldo, int64_t g0, int64_t g1) {
  with_layout(w.type, [&]<class L>() {
    if constexpr (L::kFamily != Family::Dense) matmul_int8<L>(w, x, out, ldo, g0, g1);  // matmul.cpp refuses dense
  });
}

void matmul_float_any(const PackedView& w, const float* x, int64_t rows, int64_t ldx, float* out, int64_t ldo,
                      int64_t g0, int64_t g1) {
  with_layout(w.type, [&]<class L>() {
    if constexpr (L::kFamily == Family::Dense)
      matmul_float_dense<L>(w, x, rows, ldx, out, ldo, g0, g1);
    else
      matmul_float_quantized<L>(w, x, rows, ldx, out, ldo, g0, g1);
  });
}

}  // namespace

KernelTable portable_kernels() { return {matmul_int8_any, matmul_float_any, nullptr}; }

}  // namespace kvgen::quant
