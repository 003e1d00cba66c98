// Subnormal floats inside kvgen's parallel sections: flushed to zero (MXCSR's FTZ and DAZ on
// x86). A product whose operands or result fall below FLT_MIN (1.2e-38) otherwise takes a
// microcode assist, about a hundred cycles per instruction on Intel cores: a Gated DeltaNet
// or Mamba-2 state that decays over a long prompt ends up there, and a Qwen3.5-2B-shaped prefill
// ran 1.2x slower for it. Flushed, such a value counts as zero, which changes no result above
// 1e-38. The pool's workers keep the mode for their lifetime (the pool owns them); a caller's
// thread has it only while it takes part in a section, and gets its own mode back after.
// Elsewhere (no SSE) nothing changes.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace kvgen {

class FlushDenormals {
 public:
#if defined(__x86_64__) || defined(__i386__)
  static constexpr unsigned kFlushToZero = 0x8000u, kDenormalsAreZero = 0x0040u;  // MXCSR bits 15 and 6
  FlushDenormals() : saved_(_mm_getcsr()) {
    const unsigned flushed = saved_ | kFlushToZero | kDenormalsAreZero;
    if (flushed != saved_) _mm_setcsr(flushed);
  }
  ~FlushDenormals() {
    if (_mm_getcsr() != saved_) _mm_setcsr(saved_);
  }
#else
  FlushDenormals() = default;
#endif
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
#if defined(__x86_64__) || defined(__i386__)
  unsigned saved_;
#endif
};

}  // namespace kvgen
