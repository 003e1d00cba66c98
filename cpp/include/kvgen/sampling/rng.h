// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11): the draw for a
// sequence at a step is a pure function of (seed, sequence id, step, lane), so the same
// seed gives the same tokens whatever the batch size, the row order or the thread.
#pragma once

#include <array>
#include <cstdint>

namespace kvgen {

class Philox4x32 {
 public:
  using Block = std::array<uint32_t, 4>;

  // 128-bit counter (c0..c3) encrypted under a 64-bit key (seed) in 10 rounds.
  static Block generate(uint64_t seed, Block counter) {
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      const uint64_t p0 = static_cast<uint64_t>(kMul0) * counter[0];
      const uint64_t p1 = static_cast<uint64_t>(kMul1) * counter[2];
      counter = {static_cast<uint32_t>(p1 >> 32) ^ counter[1] ^ k0, static_cast<uint32_t>(p1),
                 static_cast<uint32_t>(p0 >> 32) ^ counter[3] ^ k1, static_cast<uint32_t>(p0)};
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    return counter;
  }

  // A uniform double in [0, 1) with 53 random bits for (seed, sequence, step, lane).
  static double uniform(uint64_t seed, uint64_t sequence, uint64_t step, uint32_t lane = 0) {
    const Block out = generate(seed, {static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32),
                                      static_cast<uint32_t>(sequence),
                                      static_cast<uint32_t>(sequence >> 32) ^ (lane << 16)});
    const uint64_t bits = (static_cast<uint64_t>(out[0]) << 21) ^ (out[1] >> 11);
    return static_cast<double>(bits & ((1ull << 53) - 1)) * 0x1.0p-53;
  }

 private:
  static constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  static constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
};

}  // namespace kvgen
