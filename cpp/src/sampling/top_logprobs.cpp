// Top-n ids by bounded insertion: one pass over the row, an O(n) insertion
// only for the entries that beat the current n-th.
#include "kvgen/sampling/top_logprobs.h"

namespace kvgen {

void top_ids(const float* row, int64_t vocab, int64_t n, int64_t* ids) {
  if (n <= 0) return;
  int64_t count = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    const float v = row[i];
    // full: only a strictly larger value enters (an equal one has a larger id)
    if (count == n && !(v > row[ids[n - 1]])) continue;
    int64_t at = count < n ? count++ : n - 1;
    while (at > 0 && v > row[ids[at - 1]]) {
      ids[at] = ids[at - 1];
      --at;
    }
    ids[at] = i;
  }
  for (int64_t j = count; j < n; ++j) ids[j] = -1;  // a vocabulary smaller than n
}

}  // namespace kvgen
