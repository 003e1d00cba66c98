// PromptTracker: the prompt length of a LogitsProcessor's calls when the caller does not
// give it, found per calling thread as Hugging Face's generate() builds its processors
// for each prompt: a call that continues the thread's last sequence keeps its prompt
// length; any other call starts a new sequence whose prompt is all of its history.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

namespace kvgen {

class PromptTracker {
 public:
  // The prompt length for the calling thread's history ids (rows, length) row-major,
  // recorded as its sequence's latest call. The history continues the thread's sequence
  // when it has as many rows, is no shorter than the prompt and at most one token longer
  // than the last call, and each row's tokens before its newest one are those of some row
  // of the last call (beam search reorders the rows; assisted decoding calls again from a
  // shorter length).
  int64_t prompt_length(const int64_t* ids, int64_t rows, int64_t length);
  // The calling thread's current prompt length (none before its first call).
  std::optional<int64_t> current() const;
  // Forgets the calling thread's sequence: its next call starts a new one.
  void reset();

 private:
  struct Sequence {
    int64_t prompt_length = 0;
    int64_t rows = 0;
    int64_t length = 0;
    std::vector<int64_t> history;  // (rows, length) the ids of the last call

    bool continued_by(const int64_t* ids, int64_t rows, int64_t length) const;
  };

  mutable std::mutex mutex_;  // guards sequences_
  std::unordered_map<std::thread::id, Sequence> sequences_;  // per calling thread
};

}  // namespace kvgen
