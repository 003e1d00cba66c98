// Limits: the largest sizes kvgen accepts, in one place. Every size that comes from a
// user, a config or a model file is checked against these (and against the file it
// came from) before anything is allocated; the error names the limit. The README's
// "Limits" section lists them.
#pragma once

#include <cstdint>
#include <string>

#include "kvgen/errors.h"

namespace kvgen::limits {

// Vocabulary: token ids are stored as int32 in the sampler's candidate lists.
inline constexpr int64_t kMaxVocab = (int64_t{1} << 31) - 1;
// Positions a model may declare (context_length, max_position_embeddings, n_positions).
// Tables that depend on the position are sized by what a generation uses, not by this.
inline constexpr int64_t kMaxContext = int64_t{1} << 24;  // 16,777,216
// Tokens in one row (prompt + generated) of a TokenSelector; its history grows as it goes.
inline constexpr int64_t kMaxSequenceLength = int64_t{1} << 24;
// Rows of one TokenSelector: prompts x (num_beams or num_return_sequences).
inline constexpr int64_t kMaxRows = int64_t{1} << 16;  // 65,536
// Model widths read from a config or file (hidden, intermediate, heads x head_dim).
inline constexpr int64_t kMaxWidth = int64_t{1} << 20;
// Alternatives per token of GenerationConfig.top_logprobs (OpenAI's limit).
inline constexpr int64_t kMaxTopLogprobs = 20;
// Layers and attention heads.
inline constexpr int64_t kMaxLayers = 4096;
inline constexpr int64_t kMaxHeads = 4096;
// Experts of a mixture-of-experts layer (Qwen3-MoE has 128).
inline constexpr int64_t kMaxExperts = 4096;

// Throws ValueError "<what> = <value> is above kvgen's limit of <limit> (<why>)".
inline void check_at_most(const std::string& what, int64_t value, int64_t limit, const char* why = nullptr) {
  if (value > limit)
    throw ValueError(what + " = " + std::to_string(value) + " is above kvgen's limit of " + std::to_string(limit) +
                     (why ? std::string(" (") + why + ")" : std::string()));
}

// a * b, or ValueError naming `what` when the product does not fit in int64.
inline int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  int64_t out;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &out))
    throw ValueError(what + ": the size " + std::to_string(a) + " x " + std::to_string(b) + " overflows");
  return out;
}

}  // namespace kvgen::limits
