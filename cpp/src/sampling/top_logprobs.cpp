// Top-n ids by bounded insertion: one pass over the row, an O(n) insertion only for the
// entries that beat the current n-th; blocks with no such entry are skipped after one
// vectorised comparison, so a row costs little more than reading it.
#include "kvgen/sampling/top_logprobs.h"

#include <algorithm>

namespace kvgen {
namespace {

// Inserts entry i (value v) into ids[0..count) kept in descending value order (equal
// values: the earlier id first); the last entry falls off once count == n.
void insert(const float* row, float v, int64_t i, int64_t n, int64_t& count, int64_t* ids) {
  int64_t at = count < n ? count++ : n - 1;
  while (at > 0 && v > row[ids[at - 1]]) {
    ids[at] = ids[at - 1];
    --at;
  }
  ids[at] = i;
}

}  // namespace

void top_ids(const float* row, int64_t vocab, int64_t n, int64_t* ids) {
  if (n <= 0) return;
  constexpr int64_t kBlock = 64;
  int64_t count = 0;
  for (int64_t start = 0; start < vocab; start += kBlock) {
    const int64_t end = std::min(vocab, start + kBlock);
    if (count == n) {  // full: only a strictly larger value enters (an equal one has a larger id)
      const float floor = row[ids[n - 1]];
      int hit = 0;
#pragma omp simd reduction(| : hit)
      for (int64_t j = start; j < end; ++j) hit |= (row[j] > floor);
      if (!hit) continue;
    }
    for (int64_t j = start; j < end; ++j)
      if (count < n || row[j] > row[ids[n - 1]]) insert(row, row[j], j, n, count, ids);
  }
  for (int64_t j = count; j < n; ++j) ids[j] = -1;  // a vocabulary smaller than n
}

}  // namespace kvgen
