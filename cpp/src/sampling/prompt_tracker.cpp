// PromptTracker: per-thread sequences, continued or restarted by each call's history.
#include "kvgen/sampling/prompt_tracker.h"

#include <algorithm>

namespace kvgen {

bool PromptTracker::Sequence::continued_by(const int64_t* ids, int64_t n_rows, int64_t n_length) const {
  if (n_length == 0 || n_rows != rows || n_length < prompt_length || n_length > length + 1) return false;
  const int64_t n = n_length - 1;  // the tokens before each row's newest one
  const auto same = [&](const int64_t* row, int64_t s) { return std::equal(row, row + n, history.data() + s * length); };
  for (int64_t r = 0; r < n_rows; ++r) {
    const int64_t* row = ids + r * n_length;
    if (same(row, r)) continue;
    bool found = false;
    for (int64_t s = 0; s < n_rows && !found; ++s) found = same(row, s);
    if (!found) return false;
  }
  return true;
}

int64_t PromptTracker::prompt_length(const int64_t* ids, int64_t rows, int64_t length) {
  std::lock_guard<std::mutex> lock(mutex_);
  Sequence& seq = sequences_[std::this_thread::get_id()];
  if (!seq.continued_by(ids, rows, length)) seq.prompt_length = length;
  seq.rows = rows;
  seq.length = length;
  seq.history.assign(ids, ids + (length ? rows * length : 0));
  return seq.prompt_length;
}

std::optional<int64_t> PromptTracker::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sequences_.find(std::this_thread::get_id());
  if (it == sequences_.end()) return std::nullopt;
  return it->second.prompt_length;
}

void PromptTracker::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  sequences_.erase(std::this_thread::get_id());
}

}  // namespace kvgen
