// StopRules: EOS, stop sequences, stop strings, length.
#include "kvgen/search/stopping.h"

#include <algorithm>

#include "kvgen/errors.h"

namespace kvgen {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::Eos: return "eos";
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::None: break;
  }
  return "";
}

StopRules::StopRules(const GenerationConfig& config)
    : eos_(config.eos_token_id),
      stop_sequences_(config.stop_sequences),
      stop_strings_(config.stop_strings),
      max_length_(config.max_length),
      max_new_tokens_(config.max_new_tokens) {
  for (const auto& s : stop_strings_) longest_stop_string_ = std::max(longest_stop_string_, s.size());
}

void StopRules::set_token_texts(std::vector<std::string> texts) {
  texts_ = std::move(texts);
  size_t longest_text = 0;
  for (const auto& t : texts_) longest_text = std::max(longest_text, t.size());
  if (!stop_strings_.empty()) tail_.reserve(longest_stop_string_ + 2 * longest_text);
}

void StopRules::check_token_texts(int64_t vocab) const {
  if (stop_strings_.empty() || static_cast<int64_t>(texts_.size()) >= vocab) return;
  throw ValueError("token_strings has " + std::to_string(texts_.size()) + " entries, but the logits have " +
                   std::to_string(vocab) + " columns: stop_strings needs the text of every token id that can be "
                   "generated (pad token_strings with \"\" for ids without text)");
}

bool StopRules::ends_with_stop_sequence(const int64_t* history, int64_t len, int64_t prompt_len, int64_t token) const {
  const int64_t generated = len - prompt_len + 1;  // including token
  for (const auto& seq : stop_sequences_) {
    const int64_t n = static_cast<int64_t>(seq.size());
    if (n > generated || seq.back() != token) continue;
    if (std::equal(seq.begin(), seq.end() - 1, history + len - (n - 1))) return true;
  }
  return false;
}

bool StopRules::ends_with_stop_string(const int64_t* history, int64_t len, int64_t token) const {
  // The text of the last tokens, enough to hold the longest stop string ending inside
  // the new token's text: a stop string matches when the new token completes it (the
  // token may run past its end), as Hugging Face's StopStringCriteria.
  const auto text_of = [this](int64_t id) -> const std::string& {
    if (id < 0 || id >= static_cast<int64_t>(texts_.size()))
      throw ValueError("token id " + std::to_string(id) + " has no entry in token_strings (" +
                       std::to_string(texts_.size()) + " entries)");
    return texts_[id];
  };
  const std::string& last = text_of(token);
  std::string& tail = tail_;  // reserved by set_token_texts: no allocation
  tail.assign(last);
  for (int64_t i = len - 1; i >= 0 && tail.size() < longest_stop_string_ + last.size(); --i)
    tail.insert(0, text_of(history[i]));
  const size_t last_start = tail.size() - last.size();
  for (const auto& s : stop_strings_) {
    // occurrences ending after last_start, i.e. starting after last_start - s.size()
    const size_t from = last_start + 1 > s.size() ? last_start + 1 - s.size() : 0;
    if (tail.find(s, from) != std::string::npos) return true;
  }
  return false;
}

FinishReason StopRules::check(const int64_t* history, int64_t len, int64_t prompt_len, int64_t token) const {
  if (std::find(eos_.begin(), eos_.end(), token) != eos_.end()) return FinishReason::Eos;
  if (!stop_sequences_.empty() && ends_with_stop_sequence(history, len, prompt_len, token)) return FinishReason::Stop;
  if (!stop_strings_.empty() && ends_with_stop_string(history, len, token)) return FinishReason::Stop;
  if (len + 1 - prompt_len >= max_new_tokens(prompt_len)) return FinishReason::Length;
  return FinishReason::None;
}

}  // namespace kvgen
