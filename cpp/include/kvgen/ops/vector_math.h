// Raw-pointer vector kernels over float rows: a vectorisable exp, max, softmax sums.
// Loops are written so that g++ -O3 turns them into SIMD code (no calls, no branches
// inside; reductions marked `omp simd`, compiled with -fopenmp-simd, no OpenMP runtime),
// which is what keeps a pass over a 50k-151k vocabulary at a few microseconds.
#pragma once

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <bit>
#include <limits>

namespace kvgen::ops {

inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// exp(x) for float, within ~2 ulp of std::exp over [-87.3, 88.7]; 0 below, inf above,
// exp(-inf) = 0, exp(nan) = nan. Cody-Waite range reduction, degree-6 polynomial on
// [-ln2/2, ln2/2] (Cephes expf coefficients), 2^n built from the exponent bits.
inline float fast_exp(float x) {
  const float hi = 88.7228f, lo = -87.3365f;
  float xc = x < lo ? lo : (x > hi ? hi : x);
  // round to nearest through the 1.5 * 2^23 trick: vectorises, unlike nearbyint
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  float y = p * scale;
  y = x < lo ? 0.0f : y;
  y = x > hi ? std::numeric_limits<float>::infinity() : y;
  return x != x ? x : y;
}

// max over x[0..n); -inf for an all -inf row; NaN-free input assumed.
inline float max_of(const float* x, int64_t n) {
  float m = kNegInf;
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// sum of exp(x[i] - shift): float lanes over blocks of 64 (8 terms per lane), blocks
// added in double. Long float sums would round a 150k-token tail away next to a 1.0
// and move a top-p cut by a token; 8-term partial sums keep it within a few ulp.
inline double sum_exp(const float* x, int64_t n, float shift) {
  constexpr int64_t kBlock = 64;
  double total = 0.0;
  int64_t b = 0;
  for (; b + kBlock <= n; b += kBlock) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = b; i < b + kBlock; ++i) s += fast_exp(x[i] - shift);
    total += s;
  }
  if (b < n) {  // the last, short block
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = b; i < n; ++i) s += fast_exp(x[i] - shift);
    total += s;
  }
  return total;
}

// out[i] = exp(x[i] - shift); returns their sum (summed as sum_exp).
inline double exp_into(float* out, const float* x, int64_t n, float shift) {
  constexpr int64_t kBlock = 64;
  double total = 0.0;
  int64_t b = 0;
  for (; b + kBlock <= n; b += kBlock) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = b; i < b + kBlock; ++i) {
      out[i] = fast_exp(x[i] - shift);
      s += out[i];
    }
    total += s;
  }
  if (b < n) {  // the last, short block
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = b; i < n; ++i) {
      out[i] = fast_exp(x[i] - shift);
      s += out[i];
    }
    total += s;
  }
  return total;
}

// x[i] *= factor over the row.
inline void scale(float* x, int64_t n, float factor) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}

// true when any element is NaN.
inline bool has_nan(const float* x, int64_t n) {
  int any = 0;
#pragma omp simd reduction(| : any)
  for (int64_t i = 0; i < n; ++i) any |= (x[i] != x[i]);
  return any != 0;
}

// index of the first element equal to value, scanning blocks with a SIMD test; n if none.
inline int64_t find_first(const float* x, int64_t n, float value) {
  constexpr int64_t kBlock = 64;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = b + kBlock < n ? b + kBlock : n;
    int hit = 0;
#pragma omp simd reduction(| : hit)
    for (int64_t i = b; i < e; ++i) hit |= (x[i] == value);
    if (hit)
      for (int64_t i = b; i < e; ++i)
        if (x[i] == value) return i;
  }
  return n;
}

// index of the first maximum (torch.argmax's tie rule); 0 for an empty or all -inf row.
inline int64_t argmax(const float* x, int64_t n) {
  const int64_t i = find_first(x, n, max_of(x, n));
  return i < n ? i : 0;
}

// First index whose inclusive prefix sum of w exceeds target; blocks are summed with
// SIMD first. Never returns an index whose weight is not positive: where rounding
// leaves target >= the total (a block's float sum may exceed target while its items,
// added in double, do not), the walk goes on, and at the end falls back to the last
// positive weight. Precondition: some w[i] > 0 (else -1, which callers rule out).
inline int64_t find_cumulative(const float* w, int64_t n, double target) {
  constexpr int64_t kBlock = 256;
  double before = 0.0;
  int64_t last_positive = -1;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(b + kBlock, n);
    float block = 0.0f;
#pragma omp simd reduction(+ : block)
    for (int64_t i = b; i < e; ++i) block += w[i];
    if (!(block > 0.0f)) continue;
    if (before + block > target) {
      for (int64_t i = b; i < e; ++i) {
        if (!(w[i] > 0.0f)) continue;
        before += w[i];
        last_positive = i;
        if (before > target) return i;
      }
      continue;
    }
    before += block;
    for (int64_t i = e - 1; i >= b; --i)
      if (w[i] > 0.0f) {
        last_positive = i;
        break;
      }
  }
  return last_positive;
}

// ---- softmax with infinite entries ---------------------------------------------------
// kvgen's rule for a row that holds +inf (in the input, or from processing finite
// values): the +inf entries are the only candidates and share the mass equally, so
// each has log-probability -log(count) and every other entry -inf. A row whose entries
// are all -inf has no mass: weights 0, log-probabilities -inf. Callers branch on the
// row max they already have, so a finite row pays no extra pass.

inline constexpr float kPosInf = std::numeric_limits<float>::infinity();

// number of entries equal to value.
inline int64_t count_equal(const float* x, int64_t n, float value) {
  int64_t count = 0;
#pragma omp simd reduction(+ : count)
  for (int64_t i = 0; i < n; ++i) count += (x[i] == value);
  return count;
}

// Unnormalised softmax weights of a row whose max is m, into out; returns their sum.
// Finite m: exp(x - m) (exp_into). m = +inf: 1 at the +inf entries, 0 elsewhere (sum =
// their count). m = -inf: all 0.
inline double softmax_weights_into(float* out, const float* x, int64_t n, float m) {
  if (m == kPosInf) {
    int64_t count = 0;
#pragma omp simd reduction(+ : count)
    for (int64_t i = 0; i < n; ++i) {
      out[i] = x[i] == kPosInf ? 1.0f : 0.0f;
      count += (x[i] == kPosInf);
    }
    return static_cast<double>(count);
  }
  if (m == kNegInf) {
    std::fill(out, out + n, 0.0f);
    return 0.0;
  }
  return exp_into(out, x, n, m);
}

// Sum of the weights softmax_weights_into would write, without writing them.
inline double softmax_sum(const float* x, int64_t n, float m) {
  if (m == kPosInf) return static_cast<double>(count_equal(x, n, kPosInf));
  if (m == kNegInf) return 0.0;
  return sum_exp(x, n, m);
}

// Log-probability of an entry x of a row with max m and log_sum = log(softmax_sum):
// (x - m) - log_sum for a finite m; for m = +inf, -log_sum (= -log count) at +inf, -inf
// elsewhere; -inf for m = -inf. T (float or double) is the precision of the last
// subtraction, so callers keep the rounding they had.
template <class T>
inline T log_softmax_at(float x, float m, T log_sum) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  if (m == kPosInf) return x == kPosInf ? T(0) - log_sum : -inf;  // 0 - log 1 = +0, not -0
  if (m == kNegInf) return -inf;
  return static_cast<T>(x - m) - log_sum;
}

// Log-sum-exp of a row: max + log(sum exp(x - max)); +inf when an entry is +inf, -inf
// when every entry is -inf (never NaN for NaN-free input).
inline float log_sum_exp(const float* x, int64_t n) {
  const float m = max_of(x, n);
  if (m == kPosInf || m == kNegInf) return m;
  return m + static_cast<float>(std::log(sum_exp(x, n, m)));
}

// Log-probability of each +inf entry of a row holding some: -log(count of +inf).
inline float log_prob_of_inf(const float* x, int64_t n) {
  return 0.0f - static_cast<float>(std::log(static_cast<double>(count_equal(x, n, kPosInf))));
}

// out[i] = log-softmax of x given lse = log_sum_exp(x, n): x[i] - lse for a finite lse
// (the arithmetic of x - logsumexp(x), so finite rows match torch.log_softmax as
// before); for lse = +inf, -log(count of +inf) at the +inf entries and -inf elsewhere;
// for lse = -inf, all -inf. out may equal x.
inline void log_softmax_into(float* out, const float* x, int64_t n, float lse) {
  if (lse == kPosInf) {
    const float lp = log_prob_of_inf(x, n);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] == kPosInf ? lp : kNegInf;
    return;
  }
  if (lse == kNegInf) {
    std::fill(out, out + n, kNegInf);
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] - lse;
}

// The log-softmax of entry i alone, given lse = log_sum_exp(x, n): the value
// log_softmax_into would write at i (a pass over the row only when lse = +inf).
inline float log_softmax_entry(const float* x, int64_t n, int64_t i, float lse) {
  if (lse == kPosInf)
    return x[i] == kPosInf ? log_prob_of_inf(x, n) : kNegInf;
  if (lse == kNegInf) return kNegInf;
  return x[i] - lse;
}

}  // namespace kvgen::ops
