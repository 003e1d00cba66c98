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

// 16 rows x 32 weights unpacked, rows innermost (so loops over the rows vectorize):
// w[r][k] = scale[k / 16][r] * q[k][r] + min[k / 16][r]. The two scales of a row differ only
// for Q6_K and the index types (a scale per 16 weights), the two mins only for I4S16M.
struct Unit {
  float scale[2][kGroupRows];
  float min[2][kGroupRows];
  int32_t q[kBlockSize][kGroupRows];
};

float load_half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_float(h);
}

// The quants u of a 4/5/6-bit tile or sub-tile into q[k][r] (kernel_abi.h): byte 4r+j of
// nibble vector v holds weight 4v+j (v < 4 low nibbles of chunk v, else high nibbles of
// chunk v - 4), and its high bits are in plane v / (8/E), at bits E * (v % (8/E)).
template <class L>
void unpack_quants(const uint8_t* tile, int32_t (*q)[kGroupRows]) {
  for (int v = 0; v < 8; ++v)
    for (int r = 0; r < kGroupRows; ++r)
      for (int j = 0; j < 4; ++j)
        q[4 * v + j][r] = (tile[L::kQuantsAt + 64 * (v % 4) + 4 * r + j] >> (v < 4 ? 0 : 4)) & 0xF;
  if constexpr (L::kExtraBits > 0) {
    constexpr int per_byte = 8 / L::kExtraBits, mask = (1 << L::kExtraBits) - 1;
    for (int v = 0; v < 8; ++v)
      for (int r = 0; r < kGroupRows; ++r)
        for (int j = 0; j < 4; ++j) {
          const int plane_byte = tile[L::kHighBitsAt + 64 * (v / per_byte) + 4 * r + j];
          q[4 * v + j][r] |= ((plane_byte >> (L::kExtraBits * (v % per_byte))) & mask) << 4;
        }
  }
}

template <class L>
void unpack_block_tile(const uint8_t* tile, Unit& t) {
  for (int r = 0; r < kGroupRows; ++r) {
    const float d = load_half(tile + L::kScalesAt + 2 * r);
    t.scale[0][r] = t.scale[1][r] = d;
    t.min[0][r] = t.min[1][r] = L::kHasMin ? load_half(tile + L::kMinsAt + 2 * r) : static_cast<float>(L::kOffset) * d;
    if constexpr (L::kBits == 8)
      for (int k = 0; k < kBlockSize; ++k) t.q[k][r] = tile[L::kQuantsAt + 64 * (k / 4) + 4 * r + k % 4];
  }
  if constexpr (L::kBits != 8) unpack_quants<L>(tile, t.q);
}

// Sub-block j (0..7) of a K-quant tile.
template <class L>
void unpack_super_unit(const uint8_t* tile, int j, Unit& t) {
  using S = typename L::Sub;
  const uint8_t* sub = tile + L::kSubTilesAt + j * S::kTileBytes;
  for (int r = 0; r < kGroupRows; ++r) {
    const float d = load_half(tile + L::kDAt + 2 * r);
    if constexpr (L::kHasMin) {
      t.scale[0][r] = t.scale[1][r] = d * static_cast<float>(tile[L::kScalesAt + kGroupRows * j + r]);
      t.min[0][r] = t.min[1][r] =
          -(load_half(tile + L::kDminAt + 2 * r) * static_cast<float>(tile[L::kMinsAt + kGroupRows * j + r]));
    } else {  // Q6_K: q = u - 32, a scale per half
      for (int h = 0; h < 2; ++h)
        t.scale[h][r] = d * static_cast<float>(static_cast<int8_t>(tile[L::kScalesAt + kGroupRows * (2 * j + h) + r]));
      t.min[0][r] = t.min[1][r] = 0.0f;
    }
  }
  unpack_quants<S>(sub, t.q);
  if constexpr (!L::kHasMin)
    for (int k = 0; k < kBlockSize; ++k)
      for (int r = 0; r < kGroupRows; ++r) t.q[k][r] -= 32;
}

// Unit j (0..kUnits-1) of a lookup-table tile: q = the table's value of each index, min 0.
template <class L>
void unpack_lookup_unit(const uint8_t* tile, int j, Unit& t) {
  for (int r = 0; r < kGroupRows; ++r) {
    float d;
    if constexpr (L::kScale == ScaleKind::Half)
      d = load_half(tile + L::kScalesAt + 2 * r);
    else
      d = e8m0_to_float_half(tile[L::kScalesAt + r]);
    if constexpr (L::kSuper) d *= static_cast<float>(static_cast<int8_t>(tile[L::kSubScalesAt + kGroupRows * j + r]));
    t.scale[0][r] = t.scale[1][r] = d;
    t.min[0][r] = t.min[1][r] = 0.0f;
  }
  unpack_quants<typename L::Sub>(tile + L::kUnitsAt + j * L::Sub::kTileBytes, t.q);
  for (int k = 0; k < kBlockSize; ++k)
    for (int r = 0; r < kGroupRows; ++r) t.q[k][r] = L::kValues[t.q[k][r]];
}

float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

// Unit j (0..7) of an index tile (I4S16, I4S16M): q = the tile's value of each index, a
// scale (and min) per 16 weights, unit * sub (exact, kernel_abi.h).
template <class L>
void unpack_index_unit(const uint8_t* tile, int j, Unit& t) {
  for (int h = 0; h < 2; ++h)
    for (int r = 0; r < kGroupRows; ++r) {
      const int s = 2 * j + h;
      t.scale[h][r] = load_f32(tile + L::kScaleUnitAt + 4 * r) *
                      static_cast<float>(static_cast<int8_t>(tile[L::kSubsAt + kGroupRows * s + r]));
      t.min[h][r] = L::kHasMin ? load_f32(tile + L::kMinUnitAt + 4 * r) *
                                     static_cast<float>(static_cast<int8_t>(tile[L::kMinSubsAt + kGroupRows * s + r]))
                               : 0.0f;
    }
  unpack_quants<typename L::Sub>(tile + L::kUnitsAt + j * L::Sub::kTileBytes, t.q);
  for (int k = 0; k < kBlockSize; ++k)
    for (int r = 0; r < kGroupRows; ++r) t.q[k][r] = static_cast<int8_t>(tile[L::kValuesAt + t.q[k][r]]);
}

template <class L>
constexpr int units_per_tile() {
  if constexpr (L::kFamily == Family::Super)
    return L::kSubBlocks;
  else if constexpr (L::kFamily == Family::Lookup || L::kFamily == Family::Index)
    return L::kUnits;
  else
    return 1;
}

// Whether a unit's two 16-weight halves have their own scales (Q6_K, the index types).
template <class L>
constexpr bool split_scales() {
  if constexpr (L::kFamily == Family::Super)
    return !L::kHasMin;
  else
    return L::kFamily == Family::Index;
}

// Whether a unit's two 16-weight halves have their own mins (I4S16M): the min term then
// takes the activations' sums per 16 rather than per 32.
template <class L>
constexpr bool split_mins() {
  if constexpr (L::kFamily == Family::Index)
    return L::kHasMin;
  else
    return false;
}

template <class L>
void unpack_unit(const uint8_t* tile, int j, Unit& t) {
  if constexpr (L::kFamily == Family::Super)
    unpack_super_unit<L>(tile, j, t);
  else if constexpr (L::kFamily == Family::Lookup)
    unpack_lookup_unit<L>(tile, j, t);
  else if constexpr (L::kFamily == Family::Index)
    unpack_index_unit<L>(tile, j, t);
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
