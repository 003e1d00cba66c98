// Repacking GGUF blocks into 16-row tiles, and reading rows back as float.
#include "kvgen/quant/packed_matrix.h"

#include <cstring>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/limits.h"
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

// Copies one file block (row r of the tile) into its places in the tile (layout in
// kernel_abi.h). The tile starts zeroed, so padding rows stay d = m = 0: they add nothing.
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
    for (int c = 0; c < 8; ++c) {
      uint64_t mask;
      std::memcpy(&mask, tile + L::kMasksAt + 8 * c, 8);
      for (int j = 0; j < 4; ++j) mask |= static_cast<uint64_t>((high_bits >> (4 * c + j)) & 1u) << (4 * r + j);
      std::memcpy(tile + L::kMasksAt + 8 * c, &mask, 8);
    }
  }
  for (int c = 0; c < 4; ++c) std::memcpy(quants + 64 * c + 4 * r, p + 4 * c, 4);  // both nibbles move together
}

template <class L>
void pack_tiles(const uint8_t* raw, const PackedView& v, int64_t file_block_bytes, uint8_t* tiles) {
  for (int64_t g = 0; g < v.groups; ++g)
    for (int64_t b = 0; b < v.blocks; ++b) {
      uint8_t* tile = tiles + (g * v.blocks + b) * L::kTileBytes;
      for (int r = 0; r < kGroupRows && g * kGroupRows + r < v.rows; ++r)
        pack_block<L>(raw + ((g * kGroupRows + r) * v.blocks + b) * file_block_bytes, r, tile);
    }
}

// The stored (unsigned) quant of weight k (0..31) of row r in a tile.
template <class L>
uint32_t unpacked_quant(const uint8_t* tile, int r, int k) {
  const uint8_t* quants = tile + L::kQuantsAt;
  if constexpr (L::kBits == 8) return quants[64 * (k / 4) + 4 * r + k % 4];
  const int low = k % 16;
  uint32_t u = (quants[64 * (low / 4) + 4 * r + low % 4] >> (k < 16 ? 0 : 4)) & 0xFu;
  if constexpr (L::kBits == 5) {
    uint64_t mask;
    std::memcpy(&mask, tile + L::kMasksAt + 8 * (k / 4), 8);
    u |= static_cast<uint32_t>((mask >> (4 * r + k % 4)) & 1u) << 4;
  }
  return u;
}

template <class L>
void dequantize_tile_row(const uint8_t* tile, int r, float* out) {
  const float d = fp16_to_float(load_u16(tile + L::kScalesAt + 2 * r));
  if constexpr (L::kHasMin) {
    const float m = fp16_to_float(load_u16(tile + L::kMinsAt + 2 * r));
    for (int k = 0; k < 32; ++k) out[k] = d * static_cast<float>(unpacked_quant<L>(tile, r, k)) + m;
  } else {
    // d * (u + offset): exact, as the file's d * q is
    for (int k = 0; k < 32; ++k) out[k] = d * static_cast<float>(static_cast<int>(unpacked_quant<L>(tile, r, k)) + L::kOffset);
  }
}

}  // namespace

PackedMatrix::PackedMatrix(QuantType type, const uint8_t* raw, int64_t raw_bytes, int64_t rows, int64_t cols) {
  const std::string name = quant_type_name(type);
  if (rows < 1) throw ValueError(name + " matrix: rows = " + std::to_string(rows) + " must be >= 1");
  if (cols < kBlockSize || cols % kBlockSize != 0)
    throw ValueError(name + " matrix: cols = " + std::to_string(cols) + " must be a positive multiple of 32 (the block size)");
  limits::check_at_most(name + " matrix rows", rows, limits::kMaxVocab);
  limits::check_at_most(name + " matrix cols", cols, limits::kMaxWidth);
  const int64_t blocks = cols / kBlockSize;
  const int64_t expected = limits::checked_mul(limits::checked_mul(rows, blocks, name + " matrix blocks"),
                                               block_bytes(type), name + " matrix bytes");
  if (raw_bytes != expected)
    throw ValueError(name + " matrix [" + std::to_string(rows) + ", " + std::to_string(cols) + "] needs " +
                     std::to_string(expected) + " bytes, got " + std::to_string(raw_bytes));
  const int64_t groups = (rows + kGroupRows - 1) / kGroupRows;
  // A tile is exactly 16 file blocks: the padding of the last group is the only overhead.
  tiles_.assign(static_cast<size_t>(limits::checked_mul(groups * kGroupRows * blocks, block_bytes(type), name + " matrix bytes")), 0);
  view_ = PackedView{tiles_.data(), type, rows, cols, blocks, groups};
  with_layout(type, [&]<class L>() { pack_tiles<L>(raw, view_, block_bytes(type), tiles_.data()); });
}

void PackedMatrix::dequantize_row(int64_t n, float* out) const {
  if (n < 0 || n >= view_.rows)
    throw ValueError("row " + std::to_string(n) + " is out of range [0, " + std::to_string(view_.rows) + ")");
  const int64_t g = n / kGroupRows;
  const int r = static_cast<int>(n % kGroupRows);
  with_layout(view_.type, [&]<class L>() {
    for (int64_t b = 0; b < view_.blocks; ++b)
      dequantize_tile_row<L>(view_.data + (g * view_.blocks + b) * L::kTileBytes, r, out + b * kBlockSize);
  });
}

}  // namespace kvgen::quant
