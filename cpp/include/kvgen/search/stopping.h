// Stopping rules of one sequence: EOS tokens, stop token sequences, stop strings
// (matched on the token texts the caller supplies) and the length limit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvgen/generation_config.h"

namespace kvgen {

enum class FinishReason : uint8_t { None = 0, Eos, Stop, Length };

// "eos", "stop", "length", or "" for None.
const char* finish_reason_name(FinishReason reason);

class StopRules {
 public:
  explicit StopRules(const GenerationConfig& config);

  // Text (bytes) of every token id, needed when the config has stop_strings.
  void set_token_texts(std::vector<std::string> texts);
  bool needs_token_texts() const { return !stop_strings_.empty() && texts_.empty(); }
  // Throws ValueError unless every id of a `vocab`-column vocabulary has a text (when
  // there are stop strings), so that check() cannot fail in the middle of a step.
  void check_token_texts(int64_t vocab) const;

  // New tokens a sequence with this prompt length may generate (>= 1 is checked by the
  // caller): total_length_limit - prompt_len, computed without overflowing.
  int64_t max_new_tokens(int64_t prompt_len) const {
    if (max_new_tokens_) return *max_new_tokens_;
    if (max_length_) return *max_length_ - prompt_len;
    return total_length_limit(std::nullopt, std::nullopt, 0);  // the default count
  }

  // Why `history` (len tokens, the first prompt_len of them the prompt) followed by
  // `token` stops; None when it goes on. EOS wins over a stop sequence or string, which
  // win over the length limit.
  FinishReason check(const int64_t* history, int64_t len, int64_t prompt_len, int64_t token) const;

 private:
  bool ends_with_stop_sequence(const int64_t* history, int64_t len, int64_t prompt_len, int64_t token) const;
  bool ends_with_stop_string(const int64_t* history, int64_t len, int64_t token) const;

  std::vector<int64_t> eos_;
  std::vector<std::vector<int64_t>> stop_sequences_;
  std::vector<std::string> stop_strings_;
  size_t longest_stop_string_ = 0;
  std::vector<std::string> texts_;
  // (longest stop string + 2 x longest token text) bytes: the text check() matches, kept
  // so that a step allocates nothing; check() is const but writes it, so one StopRules
  // serves one thread at a time (as the TokenSelector that owns it).
  mutable std::string tail_;
  std::optional<int64_t> max_length_, max_new_tokens_;
};

}  // namespace kvgen
