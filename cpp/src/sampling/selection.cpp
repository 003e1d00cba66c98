// Partial selection: top-k, threshold collection, smallest prefix by mass.
#include "kvgen/sampling/selection.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace kvgen::selection {
namespace {

// Min-heap of (value, position) with the smallest value on top; ties: larger position on
// top, so that among equal values the earliest positions are the ones kept.
struct HeapEntry {
  float value;
  int32_t pos;
};
inline bool heap_less(const HeapEntry& a, const HeapEntry& b) {
  // std heap is a max-heap on the comparator; invert to keep the minimum on top.
  return a.value > b.value || (a.value == b.value && a.pos < b.pos);
}

// Fills the heap with the k largest values of vals[0..n) and returns the k-th largest.
float heap_kth(const float* vals, int64_t n, int64_t k, std::vector<HeapEntry>& heap) {
  heap.clear();
  for (int64_t i = 0; i < k; ++i) heap.push_back({vals[i], static_cast<int32_t>(i)});
  std::make_heap(heap.begin(), heap.end(), heap_less);
  float threshold = heap.front().value;
  constexpr int64_t kBlock = 16;
  int64_t i = k;
  for (; i + kBlock <= n; i += kBlock) {
    float block_max = vals[i];
#pragma omp simd reduction(max : block_max)
    for (int64_t j = i; j < i + kBlock; ++j) block_max = vals[j] > block_max ? vals[j] : block_max;
    if (!(block_max > threshold)) continue;
    for (int64_t j = i; j < i + kBlock; ++j) {
      if (vals[j] > threshold) {
        std::pop_heap(heap.begin(), heap.end(), heap_less);
        heap.back() = {vals[j], static_cast<int32_t>(j)};
        std::push_heap(heap.begin(), heap.end(), heap_less);
        threshold = heap.front().value;
      }
    }
  }
  for (; i < n; ++i) {
    if (vals[i] > threshold) {
      std::pop_heap(heap.begin(), heap.end(), heap_less);
      heap.back() = {vals[i], static_cast<int32_t>(i)};
      std::push_heap(heap.begin(), heap.end(), heap_less);
      threshold = heap.front().value;
    }
  }
  return threshold;
}

thread_local std::vector<HeapEntry> tls_heap;

constexpr int kBucketShift = 20;  // float bits >> 20: sign, exponent, 3 mantissa bits
constexpr int kBuckets = 1 << (32 - kBucketShift);

inline int32_t bucket_of(float key) {
  return static_cast<int32_t>(std::bit_cast<uint32_t>(key) >> kBucketShift);
}

}  // namespace

float kth_largest(const float* vals, int64_t n, int64_t k, Workspace&) {
  return heap_kth(vals, n, k, tls_heap);
}

int64_t collect_at_least(const float* vals, int64_t n, float threshold, int32_t* out) {
  int64_t count = 0;
  constexpr int64_t kBlock = 16;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    int hit = 0;
#pragma omp simd reduction(| : hit)
    for (int64_t j = i; j < i + kBlock; ++j) hit |= (vals[j] >= threshold);
    if (!hit) continue;
    for (int64_t j = i; j < i + kBlock; ++j)
      if (vals[j] >= threshold) out[count++] = static_cast<int32_t>(j);
  }
  for (; i < n; ++i)
    if (vals[i] >= threshold) out[count++] = static_cast<int32_t>(i);
  return count;
}

void sort_descending(const float* vals, int32_t* positions, int64_t count) {
  std::sort(positions, positions + count, [vals](int32_t a, int32_t b) {
    return vals[a] > vals[b] || (vals[a] == vals[b] && a < b);
  });
}

int64_t top_k(const float* vals, int64_t n, int64_t k, int32_t* out, Workspace& ws) {
  if (k >= n) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(i);
    sort_descending(vals, out, n);
    return n;
  }
  const float threshold = kth_largest(vals, n, k, ws);
  const int64_t count = collect_at_least(vals, n, threshold, out);
  sort_descending(vals, out, count);
  return count;
}

int64_t smallest_prefix_by_mass(const float* keys, const float* weights, int64_t n, double target,
                                int64_t min_keep, int32_t* out, Workspace& ws) {
  // Small inputs: sort and walk.
  if (n <= 2048) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(i);
    std::sort(out, out + n, [keys](int32_t a, int32_t b) {
      return keys[a] < keys[b] || (keys[a] == keys[b] && a < b);
    });
    double before = 0.0;
    int64_t kept = 0;
    while (kept < n && (before < target || kept < min_keep)) before += weights[out[kept++]];
    return kept;
  }

  // Histogram over the keys' bit patterns: for floats >= 0 the bits are monotone in the
  // value, so bucket b holds keys smaller than those of bucket b + 1.
  std::vector<double>& mass = ws.bucket_mass;
  std::vector<int32_t>& count = ws.bucket_count;
  mass.assign(kBuckets, 0.0);
  count.assign(kBuckets, 0);
  int32_t* bucket = ws.buckets.data();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t b = bucket_of(keys[i]);
    bucket[i] = b;
    mass[b] += weights[i];
    count[b] += 1;
  }

  int64_t kept = 0;
  double before = 0.0;
  // Buckets kept whole: every item in them has less than `target` before it.
  int32_t b = 0;
  for (; b < kBuckets; ++b) {
    if (count[b] == 0) continue;
    const bool whole_by_mass = before + mass[b] < target;
    const bool whole_by_count = kept + count[b] <= min_keep;
    if (!whole_by_mass && !whole_by_count) break;
    before += mass[b];
    kept += count[b];
  }
  const int32_t first_partial = b;
  // Gather the whole buckets.
  int64_t written = 0;
  for (int64_t i = 0; i < n; ++i)
    if (bucket[i] < first_partial) out[written++] = static_cast<int32_t>(i);
  int32_t* order = ws.positions.data();
  // Walk the remaining buckets item by item, in key order, until the rule stops.
  for (; b < kBuckets && (before < target || written < min_keep); ++b) {
    if (count[b] == 0) continue;
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i)
      if (bucket[i] == b) order[m++] = static_cast<int32_t>(i);
    std::sort(order, order + m, [keys](int32_t x, int32_t y) {
      return keys[x] < keys[y] || (keys[x] == keys[y] && x < y);
    });
    int64_t j = 0;
    while (j < m && (before < target || written < min_keep)) {
      before += weights[order[j]];
      out[written++] = order[j++];
    }
  }
  return written;
}

}  // namespace kvgen::selection
