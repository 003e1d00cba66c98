// Top-n log-probabilities (OpenAI's top_logprobs): the n most likely tokens of a row and
// their log-probabilities, found in one pass with a bounded insertion (n <= 20), so the
// vocabulary is never sorted.
#pragma once

#include <cstdint>

namespace kvgen {

// The top-n alternatives of every row at one step, (rows, n) row-major; raw_* are null
// unless the raw log-probabilities are kept. n = 0: none.
struct StepTops {
  int64_t n = 0;
  const int64_t* ids = nullptr;
  const float* logprobs = nullptr;
  const int64_t* raw_ids = nullptr;
  const float* raw_logprobs = nullptr;
};

// The ids of the n largest entries of row, largest first, equal values by smaller id (-1
// past the end of a vocabulary smaller than n).
void top_ids(const float* row, int64_t vocab, int64_t n, int64_t* ids);

}  // namespace kvgen
