// Repacking GGUF blocks into 16-row tiles, and reading rows back as float.
#include "kvgen/quant/packed_matrix.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kvgen/errors.h"
#include "kvgen/limits.h"
#include "kvgen/platform.h"
#include "kvgen/quant/fp16.h"

namespace kvgen::quant {

namespace {

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

float load_half(const uint8_t* p) { return fp16_to_float(load_u16(p)); }

// --- 4/5/6-bit quants of 32 weights x 16 rows (the nibble + high-bit plane formats of
// kernel_abi.h); weight k of row r is in byte 4r + k%4 of vector k/4.

// Where the high bits of weight k of row r are: their byte and bit offset.
template <class L>
int64_t high_bits_byte(int r, int k, int& shift) {
  constexpr int per_byte = 8 / L::kExtraBits;  // vectors sharing a plane byte
  const int v = k / 4;
  shift = L::kExtraBits * (v % per_byte);
  return L::kHighBitsAt + 64 * (v / per_byte) + 4 * r + k % 4;
}

// Stores quant u of weight k (0..31) of row r. The tile starts zeroed.
template <class L>
void set_quant(uint8_t* tile, int r, int k, uint32_t u) {
  const int low = k % 16;
  tile[L::kQuantsAt + 64 * (low / 4) + 4 * r + low % 4] |= static_cast<uint8_t>((u & 0xFu) << (k < 16 ? 0 : 4));
  if constexpr (L::kExtraBits > 0) {
    int shift;
    const int64_t at = high_bits_byte<L>(r, k, shift);
    tile[at] |= static_cast<uint8_t>(((u >> 4) & ((1u << L::kExtraBits) - 1)) << shift);
  }
}

void store_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// Stores the 32 quants u[k] of row r at once: the same places as set_quant, four bytes (one
// row's slice of a vector) per store, each computed in one 32-bit word (a mask or shift of
// the word acts on its four bytes alike: every shifted field stays inside its byte).
template <class L>
void set_row_quants(uint8_t* tile, int r, const uint8_t* u) {
  constexpr uint32_t kLowNibbles = 0x0F0F0F0Fu;
  for (int c = 0; c < 4; ++c)  // weights 4c.. in the low nibbles, 4c + 16.. in the high ones
    store_u32(tile + L::kQuantsAt + 64 * c + 4 * r,
              (load_u32(u + 4 * c) & kLowNibbles) | ((load_u32(u + 4 * c + 16) & kLowNibbles) << 4));
  if constexpr (L::kExtraBits > 0) {
    constexpr int per_byte = 8 / L::kExtraBits;  // vectors sharing a plane byte
    constexpr uint32_t mask = ((1u << L::kExtraBits) - 1) * 0x01010101u;
    for (int p = 0; p < L::kExtraBits; ++p) {
      uint32_t word = 0;
      for (int i = 0; i < per_byte; ++i)
        word |= ((load_u32(u + 4 * (p * per_byte + i)) >> 4) & mask) << (L::kExtraBits * i);
      store_u32(tile + L::kHighBitsAt + 64 * p + 4 * r, word);
    }
  }
}

// The stored (unsigned) quant of weight k (0..31) of row r.
template <class L>
uint32_t get_quant(const uint8_t* tile, int r, int k) {
  if constexpr (L::kBits == 8) return tile[L::kQuantsAt + 64 * (k / 4) + 4 * r + k % 4];
  const int low = k % 16;
  uint32_t u = (tile[L::kQuantsAt + 64 * (low / 4) + 4 * r + low % 4] >> (k < 16 ? 0 : 4)) & 0xFu;
  if constexpr (L::kExtraBits > 0) {
    int shift;
    const int64_t at = high_bits_byte<L>(r, k, shift);
    u |= ((static_cast<uint32_t>(tile[at]) >> shift) & ((1u << L::kExtraBits) - 1)) << 4;
  }
  return u;
}

// --- 32-weight block types

// Copies one file block (row r of the tile) into its places in the tile. Padding rows
// stay d = m = 0: they add nothing.
template <class L>
void pack_block(const uint8_t* block, int r, uint8_t* tile) {
  std::memcpy(tile + L::kScalesAt + 2 * r, block, 2);
  const uint8_t* p = block + 2;
  if constexpr (L::kHasMin) {
    std::memcpy(tile + L::kMinsAt + 2 * r, p, 2);
    p += 2;
  }
  uint8_t* quants = tile + L::kQuantsAt;
  if constexpr (L::kBits == 8) {
    for (int c = 0; c < 8; ++c)
      for (int j = 0; j < 4; ++j) quants[64 * c + 4 * r + j] = static_cast<uint8_t>(p[4 * c + j] ^ 0x80u);  // q + 128
    return;
  }
  if constexpr (L::kBits == 5) {
    const uint32_t high_bits = load_u32(p);
    p += 4;
    for (int k = 0; k < 32; ++k) set_quant<L>(tile, r, k, ((high_bits >> k) & 1u) << 4);
  }
  for (int c = 0; c < 4; ++c) std::memcpy(quants + 64 * c + 4 * r, p + 4 * c, 4);  // both nibbles move together
}

template <class L>
void dequantize_block_row(const uint8_t* tile, int r, float* out) {
  const float d = load_half(tile + L::kScalesAt + 2 * r);
  if constexpr (L::kHasMin) {
    const float m = load_half(tile + L::kMinsAt + 2 * r);
    for (int k = 0; k < 32; ++k) out[k] = d * static_cast<float>(get_quant<L>(tile, r, k)) + m;
  } else {
    // d * (u + offset): exact, as the file's d * q is
    for (int k = 0; k < 32; ++k)
      out[k] = d * static_cast<float>(static_cast<int>(get_quant<L>(tile, r, k)) + L::kOffset);
  }
}

// --- K-quants

// Sub-block j's 6-bit scale and min from Q4_K/Q5_K's 12 packed bytes: bytes 0-3 hold
// sc_0..3 (low 6 bits) and the top bits of sc_4..7, bytes 4-7 likewise m_0..3 and the top
// bits of m_4..7, bytes 8-11 the low nibbles of sc_4..7 and (high nibbles) m_4..7.
void k_scale_min(const uint8_t* s, int j, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// The 32 quants of sub-block j (weights 32j..32j+31) of a file block, each loop over the
// sub-block's bytes with fixed shifts (vectorized: repacking reads every weight of a file).
template <int Bits>
void k_sub_block_quants(const uint8_t* block, int j, uint8_t* u) {
  if constexpr (Bits == 6) {
    // two halves of 128 weights: ql bytes 64h.. hold weights i (low nibble) and i + 64
    // (high nibble); qh bytes 32h.. hold 2 bits each of weights i, +32, +64, +96
    const int h = j / 4, i0 = 32 * (j % 4);  // the sub-block's first weight within its half
    const uint8_t* low = block + 64 * h + i0 % 64;
    const uint8_t* high = block + 128 + 32 * h;
    const int low_shift = 4 * (i0 / 64), high_shift = 2 * (i0 / 32);
    for (int l = 0; l < 32; ++l)
      u[l] = static_cast<uint8_t>(((low[l] >> low_shift) & 0xF) | (((high[l] >> high_shift) & 0x3) << 4));
  } else {
    // 32-byte chunk c holds sub-blocks 2c (low nibbles) and 2c+1 (high nibbles); Q5_K's
    // 32 bytes of 5th bits: bit j of byte l is weight l of sub-block j
    const uint8_t* qs = block + 16 + (Bits == 5 ? 32 : 0) + 32 * (j / 2);
    const int shift = 4 * (j % 2);
    for (int l = 0; l < 32; ++l) u[l] = static_cast<uint8_t>((qs[l] >> shift) & 0xF);
    if constexpr (Bits == 5)
      for (int l = 0; l < 32; ++l) u[l] = static_cast<uint8_t>(u[l] | (((block[16 + l] >> j) & 1) << 4));
  }
}

template <class L>
void pack_super_block(const uint8_t* block, int r, uint8_t* tile) {
  using S = typename L::Sub;
  if constexpr (L::kHasMin) {
    std::memcpy(tile + L::kDAt + 2 * r, block, 2);
    std::memcpy(tile + L::kDminAt + 2 * r, block + 2, 2);
    for (int j = 0; j < 8; ++j)
      k_scale_min(block + 4, j, tile[L::kScalesAt + kGroupRows * j + r], tile[L::kMinsAt + kGroupRows * j + r]);
  } else {
    std::memcpy(tile + L::kDAt + 2 * r, block + 208, 2);
    for (int j = 0; j < 16; ++j) tile[L::kScalesAt + kGroupRows * j + r] = block[192 + j];
  }
  for (int j = 0; j < 8; ++j) {
    uint8_t u[32];
    k_sub_block_quants<L::kBits>(block, j, u);
    set_row_quants<S>(tile + L::kSubTilesAt + j * S::kTileBytes, r, u);
  }
}

template <class L>
void dequantize_super_row(const uint8_t* tile, int r, float* out) {
  using S = typename L::Sub;
  const float d = load_half(tile + L::kDAt + 2 * r);
  for (int w = 0; w < 256; ++w) {
    const uint32_t u = get_quant<S>(tile + L::kSubTilesAt + (w / 32) * S::kTileBytes, r, w % 32);
    if constexpr (L::kHasMin) {
      // gguf: (d * sc) * u - dmin * m in float32; both products are exact, one rounding
      const float scale = d * static_cast<float>(tile[L::kScalesAt + kGroupRows * (w / 32) + r]);
      const float dmin = load_half(tile + L::kDminAt + 2 * r);
      const float min = dmin * static_cast<float>(tile[L::kMinsAt + kGroupRows * (w / 32) + r]);
      out[w] = scale * static_cast<float>(u) - min;
    } else {
      const auto sc = static_cast<int8_t>(tile[L::kScalesAt + kGroupRows * (w / 16) + r]);
      out[w] = d * static_cast<float>(sc) * static_cast<float>(static_cast<int>(u) - 32);  // exact
    }
  }
}

// --- dense F16 / BF16

template <class L>
float dense_value(const uint8_t* p) {
  if constexpr (L::kBrainFloat)
    return std::bit_cast<float>(static_cast<uint32_t>(load_u16(p)) << 16);
  else
    return load_half(p);
}

// --- lookup-table types (IQ4_NL, IQ4_XS, MXFP4)

// Sub-block j's 6-bit scale ls_j of an IQ4_XS block: its low 4 bits in nibble j % 2 of
// byte 4 + j / 2, its high 2 bits at bits 2j of the uint16 at byte 2.
int iq4_xs_scale(const uint8_t* block, int j) {
  const int low = (block[4 + j / 2] >> (4 * (j % 2))) & 0xF;
  const int high = (load_u16(block + 2) >> (2 * j)) & 0x3;
  return low | (high << 4);
}

// A block's kUnits x 16 bytes of nibbles (32 weights each, in Q4_0's nibble order) into row r
// of a tile's units, 4 bytes per chunk (both nibbles move together, as for Q4_0).
template <class L>
void copy_nibble_units(const uint8_t* qs, int r, uint8_t* tile) {
  for (int j = 0; j < L::kUnits; ++j)
    for (int c = 0; c < 4; ++c) std::memcpy(tile + L::kUnitsAt + j * L::Sub::kTileBytes + 64 * c + 4 * r, qs + 16 * j + 4 * c, 4);
}

// One file block into row r of a lookup tile: the scale bytes, then the nibbles.
template <class L>
void pack_lookup_block(const uint8_t* block, int r, uint8_t* tile) {
  const uint8_t* qs;
  if constexpr (L::kScale == ScaleKind::Half) {
    std::memcpy(tile + L::kScalesAt + 2 * r, block, 2);
    qs = block + (L::kSuper ? 8 : 2);
  } else {
    tile[L::kScalesAt + r] = block[0];
    qs = block + 1;
  }
  if constexpr (L::kSuper)
    for (int j = 0; j < L::kUnits; ++j)
      tile[L::kSubScalesAt + kGroupRows * j + r] = static_cast<uint8_t>(static_cast<int8_t>(iq4_xs_scale(block, j) - 32));
  copy_nibble_units<L>(qs, r, tile);
}

template <class L>
float lookup_row_scale(const uint8_t* tile, int r) {
  if constexpr (L::kScale == ScaleKind::Half)
    return load_half(tile + L::kScalesAt + 2 * r);
  else
    return e8m0_to_float_half(tile[L::kScalesAt + r]);
}

template <class L>
void dequantize_lookup_row(const uint8_t* tile, int r, float* out) {
  const float d = lookup_row_scale<L>(tile, r);
  for (int j = 0; j < L::kUnits; ++j) {
    // gguf: (d * (ls - 32)) * value for IQ4_XS, d * value otherwise; every product exact
    const float scale =
        L::kSuper ? d * static_cast<float>(static_cast<int8_t>(tile[L::kSubScalesAt + kGroupRows * j + r])) : d;
    const uint8_t* unit = tile + L::kUnitsAt + j * L::Sub::kTileBytes;
    for (int k = 0; k < 32; ++k)
      out[32 * j + k] = scale * static_cast<float>(L::kValues[get_quant<typename L::Sub>(unit, r, k)]);
  }
}

// --- kvgen's index types (I4S16, I4S16M): file block = 16 values, unit, 16 subs, (min
// unit, 16 min subs,) 128 B of indices (quant_type.h)

float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

constexpr int64_t kIndexValues = 16, kIndexScaleBytes = 4 + 16;  // a unit and its 16 subs

template <class L>
void pack_index_block(const uint8_t* block, int r, uint8_t* tile) {
  if (r == 0) std::memcpy(tile + L::kValuesAt, block, kIndexValues);  // every row's table is the same
  const uint8_t* scales = block + kIndexValues;
  std::memcpy(tile + L::kScaleUnitAt + 4 * r, scales, 4);
  for (int s = 0; s < 16; ++s) tile[L::kSubsAt + kGroupRows * s + r] = scales[4 + s];
  if constexpr (L::kHasMin) {
    const uint8_t* mins = scales + kIndexScaleBytes;
    std::memcpy(tile + L::kMinUnitAt + 4 * r, mins, 4);
    for (int s = 0; s < 16; ++s) tile[L::kMinSubsAt + kGroupRows * s + r] = mins[4 + s];
  }
  copy_nibble_units<L>(scales + (L::kHasMin ? 2 : 1) * kIndexScaleBytes, r, tile);
}

template <class L>
void dequantize_index_row(const uint8_t* tile, int r, float* out) {
  const float unit = load_f32(tile + L::kScaleUnitAt + 4 * r);
  const float min_unit = L::kHasMin ? load_f32(tile + L::kMinUnitAt + 4 * r) : 0.0f;
  for (int w = 0; w < 256; ++w) {
    const int s = w / 16;
    const float scale = unit * static_cast<float>(static_cast<int8_t>(tile[L::kSubsAt + kGroupRows * s + r]));
    const uint32_t u = get_quant<typename L::Sub>(tile + L::kUnitsAt + (w / 32) * L::Sub::kTileBytes, r, w % 32);
    out[w] = scale * static_cast<float>(static_cast<int8_t>(tile[L::kValuesAt + u]));  // exact (kernel_abi.h)
    if constexpr (L::kHasMin)
      out[w] += min_unit * static_cast<float>(static_cast<int8_t>(tile[L::kMinSubsAt + kGroupRows * s + r]));
  }
}

// Whether every block of an index-type matrix carries the first block's table (a tile holds
// one table for its 16 rows).
bool index_tables_agree(const uint8_t* raw, int64_t blocks, int64_t block_bytes) {
  for (int64_t b = 1; b < blocks; ++b)
    if (std::memcmp(raw, raw + b * block_bytes, kIndexValues) != 0) return false;
  return true;
}

// --- one switch per operation over the families

template <class L>
void pack_file_block(const uint8_t* block, int r, uint8_t* tile) {
  if constexpr (L::kFamily == Family::Block)
    pack_block<L>(block, r, tile);
  else if constexpr (L::kFamily == Family::Super)
    pack_super_block<L>(block, r, tile);
  else if constexpr (L::kFamily == Family::Lookup)
    pack_lookup_block<L>(block, r, tile);
  else if constexpr (L::kFamily == Family::Index)
    pack_index_block<L>(block, r, tile);
  else
    std::memcpy(tile + 2 * r, block, 2);
}

template <class L>
void dequantize_tile_row(const uint8_t* tile, int r, float* out) {
  if constexpr (L::kFamily == Family::Block)
    dequantize_block_row<L>(tile, r, out);
  else if constexpr (L::kFamily == Family::Super)
    dequantize_super_row<L>(tile, r, out);
  else if constexpr (L::kFamily == Family::Lookup)
    dequantize_lookup_row<L>(tile, r, out);
  else if constexpr (L::kFamily == Family::Index)
    dequantize_index_row<L>(tile, r, out);
  else
    *out = dense_value<L>(tile + 2 * r);
}

// Groups [g0, g1): each group's tiles are written from its own 16 rows of the file only.
template <class L>
void pack_tiles(const uint8_t* raw, const PackedView& v, int64_t file_block_bytes, uint8_t* tiles, int64_t g0,
                int64_t g1) {
  for (int64_t g = g0; g < g1; ++g)
    for (int64_t b = 0; b < v.blocks; ++b) {
      uint8_t* tile = tiles + (g * v.blocks + b) * L::kTileBytes;
      for (int r = 0; r < kGroupRows && g * kGroupRows + r < v.rows; ++r)
        pack_file_block<L>(raw + ((g * kGroupRows + r) * v.blocks + b) * file_block_bytes, r, tile);
    }
}

// Bytes of tiles one repacking thread takes at least: below that, starting a thread costs
// more than it saves.
constexpr int64_t kBytesPerPackThread = int64_t{1} << 20;

// The threads a repack of `bytes` uses: one per kBytesPerPackThread, at most one per core
// this process may run on.
int pack_threads(int64_t bytes) {
  const int cores = platform::available_cpus();
  return static_cast<int>(std::clamp<int64_t>(bytes / kBytesPerPackThread, 1, cores));
}

// Repacks every group, the groups split evenly over pack_threads() threads (groups are
// independent: no two threads write one tile).
template <class L>
void pack_all(const uint8_t* raw, const PackedView& v, int64_t file_block_bytes, uint8_t* tiles) {
  const int threads = static_cast<int>(std::min<int64_t>(pack_threads(v.groups * v.blocks * L::kTileBytes), v.groups));
  if (threads <= 1) return pack_tiles<L>(raw, v, file_block_bytes, tiles, 0, v.groups);
  std::vector<std::thread> workers;
  workers.reserve(threads - 1);
  const auto first = [&](int t) { return v.groups * t / threads; };
  try {
    for (int t = 1; t < threads; ++t)
      workers.emplace_back([&, t] { pack_tiles<L>(raw, v, file_block_bytes, tiles, first(t), first(t + 1)); });
  } catch (...) {  // no thread to be had: the groups not handed out are packed here
    for (std::thread& w : workers) w.join();
    pack_tiles<L>(raw, v, file_block_bytes, tiles, 0, first(1));
    pack_tiles<L>(raw, v, file_block_bytes, tiles, first(static_cast<int>(workers.size()) + 1), v.groups);
    return;
  }
  pack_tiles<L>(raw, v, file_block_bytes, tiles, 0, first(1));
  for (std::thread& w : workers) w.join();
}

int64_t tile_bytes(QuantType type) {
  int64_t bytes = 0;
  with_layout(type, [&]<class L>() { bytes = L::kTileBytes; });
  return bytes;
}

void check_cols(QuantType type, int64_t cols) {
  const int64_t unit = block_weights(type);
  if (cols < unit || cols % unit != 0) {
    const std::string rule = unit != kSuperBlockSize              ? " (the block size)"
                             : type == QuantType::IQ4_XS ? " (the IQ4_XS super-block size)"
                             : type == QuantType::I4S16 || type == QuantType::I4S16M ? " (the block size)"
                                                         : " (the K-quant super-block size)";
    throw ValueError(std::string(quant_type_name(type)) + " matrix: cols = " + std::to_string(cols) +
                     " must be a positive multiple of " + std::to_string(unit) + (unit > 1 ? rule : ""));
  }
}

}  // namespace

PackedMatrix::PackedMatrix(QuantType type, const uint8_t* raw, int64_t raw_bytes, int64_t rows, int64_t cols) {
  const std::string name = quant_type_name(type);
  if (rows < 1) throw ValueError(name + " matrix: rows = " + std::to_string(rows) + " must be >= 1");
  check_cols(type, cols);
  limits::check_at_most(name + " matrix rows", rows, limits::kMaxVocab);
  limits::check_at_most(name + " matrix cols", cols, limits::kMaxWidth);
  const int64_t blocks = cols / block_weights(type);
  const int64_t expected = limits::checked_mul(limits::checked_mul(rows, blocks, name + " matrix blocks"),
                                               block_bytes(type), name + " matrix bytes");
  if (raw_bytes != expected)
    throw ValueError(name + " matrix [" + std::to_string(rows) + ", " + std::to_string(cols) + "] needs " +
                     std::to_string(expected) + " bytes, got " + std::to_string(raw_bytes));
  if ((type == QuantType::I4S16 || type == QuantType::I4S16M) &&
      !index_tables_agree(raw, rows * blocks, block_bytes(type)))
    throw ValueError(name + " matrix: its blocks hold different value tables (a matrix has one)");
  const int64_t groups = (rows + kGroupRows - 1) / kGroupRows;
  // About the file's size: the padding of the last group, and K-quants' decoded scales.
  tiles_ = platform::ZeroedMemory(limits::checked_mul(groups * blocks, tile_bytes(type), name + " matrix bytes"));
  view_ = PackedView{tiles_.data(), type, rows, cols, blocks, groups};
  bytes_ = tiles_.size();
  with_layout(type, [&]<class L>() { pack_all<L>(raw, view_, block_bytes(type), tiles_.data()); });
}

std::shared_ptr<const PackedMatrix> PackedMatrix::rows_of(std::shared_ptr<const PackedMatrix> whole,
                                                          int64_t first_row, int64_t rows) {
  const PackedView& w = whole->view_;
  if (first_row < 0 || rows < 1 || first_row % kGroupRows != 0 || rows % kGroupRows != 0 || first_row + rows > w.rows)
    throw ValueError("rows [" + std::to_string(first_row) + ", " + std::to_string(first_row + rows) +
                     ") of a packed matrix of " + std::to_string(w.rows) +
                     " rows: need whole groups of 16 rows inside it");
  std::shared_ptr<PackedMatrix> part(new PackedMatrix());
  part->view_ = PackedView{w.data + first_row / kGroupRows * w.blocks * tile_bytes(w.type), w.type, rows, w.cols,
                           w.blocks, rows / kGroupRows};
  part->bytes_ = whole->bytes_ / w.groups * (rows / kGroupRows);
  part->whole_ = std::move(whole);
  return part;
}

void PackedMatrix::dequantize_row(int64_t n, float* out) const {
  if (n < 0 || n >= view_.rows)
    throw ValueError("row " + std::to_string(n) + " is out of range [0, " + std::to_string(view_.rows) + ")");
  const int64_t g = n / kGroupRows;
  const int r = static_cast<int>(n % kGroupRows);
  const int64_t unit = block_weights(view_.type);
  with_layout(view_.type, [&]<class L>() {
    for (int64_t b = 0; b < view_.blocks; ++b)
      dequantize_tile_row<L>(view_.data + (g * view_.blocks + b) * L::kTileBytes, r, out + b * unit);
  });
}

int64_t file_row_bytes(QuantType type, int64_t cols) {
  check_cols(type, cols);
  return cols / block_weights(type) * block_bytes(type);
}

void dequantize_file_row(QuantType type, const uint8_t* raw, int64_t cols, int64_t n, float* out) {
  const int64_t blocks = cols / block_weights(type), unit = block_weights(type);
  const uint8_t* row = raw + n * blocks * block_bytes(type);
  with_layout(type, [&]<class L>() {
    alignas(64) uint8_t tile[L::kTileBytes];  // one block as row 0 of a tile, the other rows zero
    for (int64_t b = 0; b < blocks; ++b) {
      std::memset(tile, 0, sizeof(tile));
      pack_file_block<L>(row + b * block_bytes(type), 0, tile);
      dequantize_tile_row<L>(tile, 0, out + b * unit);
    }
  });
}

}  // namespace kvgen::quant
