// Partial selection: top-k, threshold collection, smallest prefix by mass.
#include "kvgen/sampling/selection.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

namespace kvgen::selection {
namespace {

// Histogram buckets of width 1/64 over keys in [0, 64); larger keys share the last
// bucket. Keys are in nats (logit or surprisal differences), so a bucket near a real
// threshold holds a handful of tokens even over a 150k vocabulary.
constexpr int32_t kBuckets = 4096;
constexpr float kBucketsPerUnit = 64.0f;

}  // namespace

float kth_largest(const float* vals, int64_t n, int64_t k, Workspace& ws) {
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  // scratch layout: [block maxima | their copy for nth_element | candidates]
  float* block_max = ws.select_values.data();
  float* order = block_max + blocks;
  float* cand = order + blocks;
  // 1. The max of each block of 64. The k-th largest block max is a lower bound t0 of
  //    the k-th largest value: k different blocks hold a value >= t0.
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t e = std::min((b + 1) * kBlock, n);
    float m = vals[b * kBlock];
#pragma omp simd reduction(max : m)
    for (int64_t j = b * kBlock; j < e; ++j) m = vals[j] > m ? vals[j] : m;
    block_max[b] = m;
  }
  float t0 = -std::numeric_limits<float>::infinity();
  if (blocks >= k) {
    std::copy(block_max, block_max + blocks, order);
    std::nth_element(order, order + (k - 1), order + blocks, std::greater<float>());
    t0 = order[k - 1];
  }
  // 2. Every value >= t0 is a candidate (at least k, usually a few more; they sit in the
  //    blocks whose max >= t0), and the k-th largest candidate is the answer.
  int64_t count = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    if (block_max[b] < t0) continue;
    const int64_t e = std::min((b + 1) * kBlock, n);
    for (int64_t j = b * kBlock; j < e; ++j) {  // branchless compaction
      cand[count] = vals[j];
      count += vals[j] >= t0;
    }
  }
  std::nth_element(cand, cand + (k - 1), cand + count, std::greater<float>());
  return cand[k - 1];
}

int64_t collect_at_least(const float* vals, int64_t n, float threshold, int32_t* out) {
  int64_t count = 0;
  constexpr int64_t kBlock = 64;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    int hit = 0;
#pragma omp simd reduction(| : hit)
    for (int64_t j = i; j < i + kBlock; ++j) hit |= (vals[j] >= threshold);
    if (!hit) continue;
    for (int64_t j = i; j < i + kBlock; ++j) {  // branchless: many rows keep half their tokens
      out[count] = static_cast<int32_t>(j);
      count += vals[j] >= threshold;
    }
  }
  for (; i < n; ++i) {
    out[count] = static_cast<int32_t>(i);
    count += vals[i] >= threshold;
  }
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

namespace {

// torch.topk's result when it does not depend on how ties fall: when no value is NaN and
// the k + 1 largest values are distinct, the k largest are one set in one descending
// order, which partial_sort and nth_element + sort both return. Found from block maxima
// (the (k + 1)-th largest block max t0 is at most the (k + 1)-th largest value, so the
// values >= t0 hold the k + 1 largest), without forming n pairs or a heap over them.
// The values are rows (count, width), value j * width + t being rows[j * width + t] +
// shifts[j] in float32 (shifts null: + 0 left out). Writes the k positions and returns
// true, or returns false (nothing decided: ties or NaN among the candidates, too few
// blocks, too many candidates). maxima: scratch, grows.
bool distinct_top_k(const float* rows, int64_t count, int64_t width, const float* shifts, int64_t k, int64_t* out,
                    std::vector<std::pair<float, int64_t>>& scratch, std::vector<float>& maxima) {
  constexpr int64_t kBlock = 64, kMaxCandidates = 1024;
  const int64_t per_row = width / kBlock;  // whole blocks of a row; its tail's values are all candidates
  const int64_t blocks = count * per_row;
  if (blocks < k + 1 || k + 1 > kMaxCandidates) return false;
  // maxima: [block maxima | their copy for nth_element]; scratch: candidates
  if (static_cast<int64_t>(maxima.size()) < 2 * blocks) maxima.resize(2 * blocks);
  if (static_cast<int64_t>(scratch.size()) < kMaxCandidates) scratch.resize(kMaxCandidates);
  int nan = 0;
  for (int64_t j = 0; j < count; ++j) {
    const float* row = rows + j * width;
    const float shift = shifts ? shifts[j] : 0.0f;
    for (int64_t b = 0; b < per_row; ++b) {
      float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m) reduction(| : nan)
      for (int64_t t = b * kBlock; t < (b + 1) * kBlock; ++t) {
        const float v = shifts ? row[t] + shift : row[t];
        m = v > m ? v : m;
        nan |= v != v;
      }
      maxima[j * per_row + b] = m;
    }
    for (int64_t t = per_row * kBlock; t < width; ++t) {
      const float v = shifts ? row[t] + shift : row[t];
      nan |= v != v;
    }
  }
  if (nan) return false;
  float* order = maxima.data() + blocks;
  std::copy(maxima.data(), maxima.data() + blocks, order);
  std::nth_element(order, order + k, order + blocks, std::greater<float>());
  const float t0 = order[k];
  std::pair<float, int64_t>* cand = scratch.data();
  int64_t found = 0;
  const auto take = [&](int64_t j, int64_t from, int64_t to) {
    const float* row = rows + j * width;
    const float shift = shifts ? shifts[j] : 0.0f;
    for (int64_t t = from; t < to; ++t) {
      const float v = shifts ? row[t] + shift : row[t];
      if (v >= t0) {
        if (found == kMaxCandidates) return false;
        cand[found++] = {v, j * width + t};
      }
    }
    return true;
  };
  for (int64_t j = 0; j < count; ++j) {
    for (int64_t b = 0; b < per_row; ++b)
      if (maxima[j * per_row + b] >= t0 && !take(j, b * kBlock, (b + 1) * kBlock)) return false;
    if (!take(j, per_row * kBlock, width)) return false;
  }
  if (found < k + 1) return false;
  const auto larger = [](const std::pair<float, int64_t>& x, const std::pair<float, int64_t>& y) {
    return x.first > y.first;
  };
  std::partial_sort(cand, cand + k + 1, cand + found, larger);
  for (int64_t i = 0; i < k; ++i)
    if (!(cand[i].first > cand[i + 1].first)) return false;
  for (int64_t i = 0; i < k; ++i) out[i] = cand[i].second;
  return true;
}

// torch's algorithm itself (torch_top_k), over n pairs.
void torch_top_k_pairs(const float* vals, int64_t n, int64_t k, int64_t* out,
                       std::vector<std::pair<float, int64_t>>& scratch) {
  using Item = std::pair<float, int64_t>;  // (value, position), as torch's queue
  if (static_cast<int64_t>(scratch.size()) < n) scratch.resize(n);  // grows only: no refill of n pairs per call
  for (int64_t i = 0; i < n; ++i) scratch[i] = {vals[i], i};
  // torch's comparator: NaN first, then larger first; positions never compared
  const auto first = [](const Item& x, const Item& y) {
    return (std::isnan(x.first) && !std::isnan(y.first)) || x.first > y.first;
  };
  const auto begin = scratch.begin();
  if (k * 64 <= n) {
    std::partial_sort(begin, begin + k, begin + n, first);
  } else {
    std::nth_element(begin, begin + (k - 1), begin + n, first);
    std::sort(begin, begin + (k - 1), first);
  }
  for (int64_t i = 0; i < k; ++i) out[i] = scratch[i].second;
}

}  // namespace

void torch_top_k(const float* vals, int64_t n, int64_t k, int64_t* out, TopKScratch& scratch) {
  if (k < n && distinct_top_k(vals, 1, n, nullptr, k, out, scratch.pairs, scratch.maxima)) return;
  torch_top_k_pairs(vals, n, k, out, scratch.pairs);
}

void torch_top_k_shifted(const float* rows, int64_t count, int64_t width, const float* shifts, int64_t k,
                         int64_t* out, TopKScratch& scratch) {
  const int64_t n = count * width;
  if (k < n && distinct_top_k(rows, count, width, shifts, k, out, scratch.pairs, scratch.maxima)) return;
  if (static_cast<int64_t>(scratch.values.size()) < n) scratch.values.resize(n);
  float* values = scratch.values.data();  // (count * width) the shifted values, for torch's algorithm
  for (int64_t j = 0; j < count; ++j)
    for (int64_t t = 0; t < width; ++t) values[j * width + t] = rows[j * width + t] + shifts[j];
  torch_top_k_pairs(values, n, k, out, scratch.pairs);
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

  // Histogram of the keys: bucket b holds keys smaller than those of bucket b + 1.
  std::vector<double>& mass = ws.bucket_mass;
  std::vector<int32_t>& count = ws.bucket_count;
  mass.assign(kBuckets, 0.0);
  count.assign(kBuckets, 0);
  int32_t* bucket = ws.buckets.data();
  constexpr float kLast = static_cast<float>(kBuckets - 1);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float scaled = keys[i] * kBucketsPerUnit;  // +inf and NaN-free: keys >= 0
    bucket[i] = static_cast<int32_t>(scaled < kLast ? scaled : kLast);
  }
  for (int64_t i = 0; i < n; ++i) {
    mass[bucket[i]] += weights[i];
    count[bucket[i]] += 1;
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
  // One pass gathers the whole buckets into out and the first partial one into order.
  int32_t* order = ws.positions.data();
  int64_t written = 0, m = 0;
  for (int64_t i = 0; i < n; ++i) {  // branchless: the kept share is often near one half
    out[written] = static_cast<int32_t>(i);
    written += bucket[i] < first_partial;
    order[m] = static_cast<int32_t>(i);
    m += bucket[i] == first_partial;
  }
  // Walk the partial buckets item by item, in key order, until the rule stops. Only
  // min_keep can reach past the first one.
  for (; b < kBuckets && (before < target || written < min_keep); ++b) {
    if (count[b] == 0) continue;
    if (b != first_partial) {
      m = 0;
      for (int64_t i = 0; i < n; ++i)
        if (bucket[i] == b) order[m++] = static_cast<int32_t>(i);
    }
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
