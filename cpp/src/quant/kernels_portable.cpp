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

// 16 rows x 32 weights unpacked: w[r][k] = scale[r][k / 16] * q[r][k] + min[r]. The two
// scales per row differ only for Q6_K (a scale per 16 weights).
struct Unit {
  float scale[kGroupRows][2];
  float min[kGroupRows];
  int32_t q[kGroupRows][kBlockSize];
};

float load_half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_float(h);
}

// Quant k (0..31) of row r in the nibble (+ high-bit planes) format of a 4/5/6-bit tile
// or sub-tile: byte 4r + k%4 of vector v = k/4, whose high bits are in plane v / (8/E).
template <class L>
int32_t small_quant(const uint8_t* tile, int r, int k) {
  const int low = k % 16;
  int32_t u = (tile[L::kQuantsAt + 64 * (low / 4) + 4 * r + low % 4] >> (k < 16 ? 0 : 4)) & 0xF;
  if constexpr (L::kExtraBits > 0) {
    constexpr int per_byte = 8 / L::kExtraBits;
    const int v = k / 4;
    const int plane_byte = tile[L::kHighBitsAt + 64 * (v / per_byte) + 4 * r + k % 4];
    u |= ((plane_byte >> (L::kExtraBits * (v % per_byte))) & ((1 << L::kExtraBits) - 1)) << 4;
  }
  return u;
}

template <class L>
void unpack_block_tile(const uint8_t* tile, Unit& t) {
  for (int r = 0; r < kGroupRows; ++r) {
    const float d = load_half(tile + L::kScalesAt + 2 * r);
    t.scale[r][0] = t.scale[r][1] = d;
    t.min[r] = L::kHasMin ? load_half(tile + L::kMinsAt + 2 * r) : static_cast<float>(L::kOffset) * d;
    for (int k = 0; k < kBlockSize; ++k)
      t.q[r][k] = L::kBits == 8 ? tile[L::kQuantsAt + 64 * (k / 4) + 4 * r + k % 4] : small_quant<L>(tile, r, k);
  }
}

// Sub-block j (0..7) of a K-quant tile.
template <class L>
void unpack_super_unit(const uint8_t* tile, int j, Unit& t) {
  using S = typename L::Sub;
  const uint8_t* sub = tile + L::kSubTilesAt + j * S::kTileBytes;
  for (int r = 0; r < kGroupRows; ++r) {
    const float d = load_half(tile + L::kDAt + 2 * r);
    if constexpr (L::kHasMin) {
      t.scale[r][0] = t.scale[r][1] = d * static_cast<float>(tile[L::kScalesAt + kGroupRows * j + r]);
      t.min[r] = -(load_half(tile + L::kDminAt + 2 * r) * static_cast<float>(tile[L::kMinsAt + kGroupRows * j + r]));
    } else {  // Q6_K: q = u - 32, a scale per half
      for (int h = 0; h < 2; ++h)
        t.scale[r][h] = d * static_cast<float>(static_cast<int8_t>(tile[L::kScalesAt + kGroupRows * (2 * j + h) + r]));
      t.min[r] = 0.0f;
    }
    for (int k = 0; k < kBlockSize; ++k) t.q[r][k] = small_quant<S>(sub, r, k) - (L::kHasMin ? 0 : 32);
  }
}

template <class L>
constexpr int units_per_tile() {
  if constexpr (L::kFamily == Family::Super)
    return L::kSubBlocks;
  else
    return 1;
}

template <class L>
void unpack_unit(const uint8_t* tile, int j, Unit& t) {
  if constexpr (L::kFamily == Family::Super)
    unpack_super_unit<L>(tile, j, t);
  else
    unpack_block_tile<L>(tile, t);
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
            for (int r = 0; r < kGroupRows; ++r) {
              int32_t dot[2] = {0, 0};
              for (int k = 0; k < kBlockSize; ++k) dot[k / 16] += t.q[r][k] * xq[k];
              if (t.scale[r][0] == t.scale[r][1])
                acc[m][r] += t.scale[r][0] * dx * static_cast<float>(dot[0] + dot[1]);
              else
                acc[m][r] += t.scale[r][0] * dx * static_cast<float>(dot[0]) +
                             t.scale[r][1] * dx * static_cast<float>(dot[1]);
              acc[m][r] += t.min[r] * sx;
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
          float wf[kGroupRows][kBlockSize];  // the unit's weights, dequantized once for all rows of x
          for (int r = 0; r < kGroupRows; ++r)
            for (int k = 0; k < kBlockSize; ++k)
              wf[r][k] = t.scale[r][k / 16] * static_cast<float>(t.q[r][k]) + t.min[r];
          for (int64_t m = 0; m < mt; ++m) {
            const float* xb = x + (m0 + m) * ldx + (b * units + j) * kBlockSize;
            for (int r = 0; r < kGroupRows; ++r)
              for (int k = 0; k < kBlockSize; ++k) acc[m][r] += wf[r][k] * xb[k];
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

KernelTable portable_kernels() { return {matmul_int8_any, matmul_float_any}; }

}  // namespace kvgen::quant
