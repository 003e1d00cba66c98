// Partial selection over a row of candidates, so that no filter sorts the vocabulary:
// top-k through a lower bound from block maxima and nth_element over the few values above
// it, threshold collection, and
// "smallest prefix by mass" (top-p, typical) through a histogram of the keys.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kvgen/sampling/candidates.h"

namespace kvgen::selection {

// Positions of the values >= the k-th largest (so ties with it are kept, as in Hugging
// Face's TopKLogitsWarper), in descending value order (ties by position). Returns
// their count (>= k when n >= k). out: room for n positions.
int64_t top_k(const float* vals, int64_t n, int64_t k, int32_t* out, Workspace& ws);

// The k-th largest value (k >= 1, k <= n).
float kth_largest(const float* vals, int64_t n, int64_t k, Workspace& ws);

// Positions i with vals[i] >= threshold, in position order. Returns their count.
int64_t collect_at_least(const float* vals, int64_t n, float threshold, int32_t* out);

// Sorts positions[0..count) by descending vals (ties by position).
void sort_descending(const float* vals, int32_t* positions, int64_t count);

// Scratch of torch_top_k: reused, grows.
struct TopKScratch {
  std::vector<std::pair<float, int64_t>> pairs;  // (value, position) pairs or candidates
  std::vector<float> maxima;                     // block maxima and their copy
  std::vector<float> values;                     // torch_top_k_shifted's values, when they tie
};

// The positions of the k largest of vals[0..n) (1 <= k <= n) in torch.topk's order on the
// CPU (largest, sorted), ties included: torch runs libstdc++'s std::partial_sort over
// (value, position) pairs compared by value alone when k * 64 <= n, else std::nth_element
// at k - 1 and std::sort of the first k - 1, with NaN above every number. Ties land where
// those algorithms put them (neither position order nor stable), so when the k + 1
// largest values are not distinct (or a value is NaN) this runs the same algorithms on
// the same pairs. When they are distinct, any correct top-k gives the one descending
// order: it is found from block maxima and a few candidates, without n pairs. out: room for k.
void torch_top_k(const float* vals, int64_t n, int64_t k, int64_t* out, TopKScratch& scratch);

// torch_top_k of the values rows[j * width + t] + shifts[j] (float32 sums, as torch adds a
// (count, 1) tensor to a (count, width) one), positions j * width + t, without writing the
// sums unless their largest tie: beam search's accumulated log-probs over beams x vocab.
void torch_top_k_shifted(const float* rows, int64_t count, int64_t width, const float* shifts, int64_t k,
                         int64_t* out, TopKScratch& scratch);

// Walks items in ascending `keys` order (keys >= 0 in nats, +inf allowed) and keeps item j while
// the weight of the items before it is < target, or fewer than min_keep are kept: the
// rule of Hugging Face's top-p and typical warpers. Writes kept positions to out, in
// ascending-key order only within ties of the histogram, so the result is unsorted.
// Returns the count. Uses ws.buckets, ws.positions and the histogram as scratch, so out
// must be another buffer (ws.chosen).
int64_t smallest_prefix_by_mass(const float* keys, const float* weights, int64_t n, double target,
                                int64_t min_keep, int32_t* out, Workspace& ws);

}  // namespace kvgen::selection
