// Portable C++ kernels over the packed tiles: the reference for the SIMD paths and the
// fallback on any CPU. Compiled without instruction-set flags. Each 16-row tile is
// unpacked once into small stack arrays and used for all activation rows.
#include <algorithm>
#include <cstring>

#include "kvgen/quant/fp16.h"
#include "kvgen/quant/kernel_abi.h"

namespace kvgen::quant {

namespace {

// One tile unpacked: w[r][k] = d[r] * u[r][k] + min[r].
struct Tile {
  float d[kGroupRows];
  float min[kGroupRows];
  uint8_t u[kGroupRows][kBlockSize];
};

float load_half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_float(h);
}

template <class L>
void unpack_tile(const uint8_t* tile, Tile& t) {
  const uint8_t* quants = tile + L::kQuantsAt;
  for (int r = 0; r < kGroupRows; ++r) {
    t.d[r] = load_half(tile + L::kScalesAt + 2 * r);
    t.min[r] = L::kHasMin ? load_half(tile + L::kMinsAt + 2 * r) : static_cast<float>(L::kOffset) * t.d[r];
    for (int k = 0; k < kBlockSize; ++k) {
      if constexpr (L::kBits == 8) {
        t.u[r][k] = quants[64 * (k / 4) + 4 * r + k % 4];
      } else {
        const int low = k % 16;
        t.u[r][k] = static_cast<uint8_t>((quants[64 * (low / 4) + 4 * r + low % 4] >> (k < 16 ? 0 : 4)) & 0xF);
      }
    }
    if constexpr (L::kBits == 5) {
      for (int k = 0; k < kBlockSize; ++k) {
        uint64_t mask;
        std::memcpy(&mask, tile + L::kMasksAt + 8 * (k / 4), 8);
        t.u[r][k] |= static_cast<uint8_t>(((mask >> (4 * r + k % 4)) & 1u) << 4);
      }
    }
  }
}

void store_group(const float (*acc)[kGroupRows], int64_t rows_here, int64_t m_count, float* out, int64_t ldo) {
  for (int64_t m = 0; m < m_count; ++m)
    for (int64_t r = 0; r < rows_here; ++r) out[m * ldo + r] = acc[m][r];
}

constexpr int64_t kMaxTile = 8;  // activation rows per pass over the weights

template <class L>
void matmul_int8(const PackedView& w, const Int8View& x, float* out, int64_t ldo, int64_t g0, int64_t g1) {
  const int64_t blocks = w.blocks;
  Tile t;
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t rows_here = std::min(kGroupRows, w.rows - g * kGroupRows);
    for (int64_t m0 = 0; m0 < x.rows; m0 += kMaxTile) {
      const int64_t mt = std::min(kMaxTile, x.rows - m0);
      float acc[kMaxTile][kGroupRows] = {};
      for (int64_t b = 0; b < blocks; ++b) {
        unpack_tile<L>(w.data + (g * blocks + b) * L::kTileBytes, t);
        for (int64_t m = 0; m < mt; ++m) {
          const int8_t* xq = x.q + (m0 + m) * x.cols + b * kBlockSize;
          const float dx = x.d[(m0 + m) * blocks + b], sx = x.s[(m0 + m) * blocks + b];
          for (int r = 0; r < kGroupRows; ++r) {
            int32_t dot = 0;
            for (int k = 0; k < kBlockSize; ++k) dot += static_cast<int32_t>(t.u[r][k]) * xq[k];
            acc[m][r] += t.d[r] * dx * static_cast<float>(dot);
            acc[m][r] += t.min[r] * sx;
          }
        }
      }
      store_group(acc, rows_here, mt, out + m0 * ldo + g * kGroupRows, ldo);
    }
  }
}

template <class L>
void matmul_float(const PackedView& w, const float* x, int64_t rows, int64_t ldx, float* out, int64_t ldo,
                  int64_t g0, int64_t g1) {
  const int64_t blocks = w.blocks;
  Tile t;
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t rows_here = std::min(kGroupRows, w.rows - g * kGroupRows);
    for (int64_t m0 = 0; m0 < rows; m0 += kMaxTile) {
      const int64_t mt = std::min(kMaxTile, rows - m0);
      float acc[kMaxTile][kGroupRows] = {};
      for (int64_t b = 0; b < blocks; ++b) {
        unpack_tile<L>(w.data + (g * blocks + b) * L::kTileBytes, t);
        float wf[kGroupRows][kBlockSize];  // the tile's weights, dequantized once for all rows of x
        for (int r = 0; r < kGroupRows; ++r)
          for (int k = 0; k < kBlockSize; ++k) wf[r][k] = t.d[r] * static_cast<float>(t.u[r][k]) + t.min[r];
        for (int64_t m = 0; m < mt; ++m) {
          const float* xb = x + (m0 + m) * ldx + b * kBlockSize;
          for (int r = 0; r < kGroupRows; ++r)
            for (int k = 0; k < kBlockSize; ++k) acc[m][r] += wf[r][k] * xb[k];
        }
      }
      store_group(acc, rows_here, mt, out + m0 * ldo + g * kGroupRows, ldo);
    }
  }
}

void matmul_int8_any(const PackedView& w, const Int8View& x, float* out, int64_t ldo, int64_t g0, int64_t g1) {
  with_layout(w.type, [&]<class L>() { matmul_int8<L>(w, x, out, ldo, g0, g1); });
}

void matmul_float_any(const PackedView& w, const float* x, int64_t rows, int64_t ldx, float* out, int64_t ldo,
                      int64_t g0, int64_t g1) {
  with_layout(w.type, [&]<class L>() { matmul_float<L>(w, x, rows, ldx, out, ldo, g0, g1); });
}

}  // namespace

KernelTable portable_kernels() { return {matmul_int8_any, matmul_float_any}; }

}  // namespace kvgen::quant
