// GenerationConfig: every knob of a generation run, with Hugging Face field names,
// defaults and meanings (transformers' GenerationConfig and its generate() defaults).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kvgen {

// Hugging Face's `early_stopping` takes True, False or the string "never".
enum class EarlyStopping { False, True, Never };

// A token sequence and the bias added to the logit of its last token when the
// sequence's prefix ends the history (HF `sequence_bias`).
using SequenceBias = std::vector<std::pair<std::vector<int64_t>, double>>;

// Hugging Face's length rule: max_new_tokens wins; else max_length; else 20 new tokens.
inline int64_t total_length_limit(std::optional<int64_t> max_length, std::optional<int64_t> max_new_tokens,
                                  int64_t prompt_len) {
  constexpr int64_t kDefaultNewTokens = 20;
  if (max_new_tokens) return prompt_len + *max_new_tokens;
  return max_length ? *max_length : prompt_len + kDefaultNewTokens;
}

// Floating-point fields are double, as Python's float; the kernels use float32, so
// validate() requires every one (biases included) to be finite as a float32, and the
// divisors (temperature, repetition_penalty) to stay > 0 once rounded to float32.
struct GenerationConfig {
  // ---- length -------------------------------------------------------------------
  std::optional<int64_t> max_new_tokens;   // new tokens to generate; wins over max_length
  std::optional<int64_t> max_length;       // prompt + new tokens; neither set: 20 new tokens (HF)
  std::optional<int64_t> min_new_tokens;   // EOS is masked until this many new tokens
  int64_t min_length = 0;                  // EOS is masked while prompt + new < min_length

  // ---- strategy -----------------------------------------------------------------
  bool do_sample = false;                  // false: greedy / beam search; true: sampling
  double temperature = 1.0;                // divides logits; 0 means greedy (vLLM, llama.cpp)
  int64_t top_k = 50;                      // keep the k best tokens (ties kept); 0 = off
  double top_p = 1.0;                      // nucleus: smallest set with mass >= top_p; 1 = off
  std::optional<double> min_p;              // keep p >= min_p * p_max; None = off
  double typical_p = 1.0;                  // locally typical sampling mass; 1 = off
  double epsilon_cutoff = 0.0;             // drop p < epsilon; 0 = off
  double eta_cutoff = 0.0;                 // drop p < min(eta, sqrt(eta) * exp(-entropy)); 0 = off

  // ---- logits processors -------------------------------------------------------
  double repetition_penalty = 1.0;         // CTRL penalty on every token in the history; 1 = off
  double presence_penalty = 0.0;           // OpenAI: minus this once per token seen in the history
  double frequency_penalty = 0.0;          // OpenAI: minus this times the token's count in the history
  int64_t no_repeat_ngram_size = 0;        // ban tokens that would repeat an n-gram; 0 = off
  std::vector<std::vector<int64_t>> bad_words_ids;  // sequences that may never be generated
  std::vector<int64_t> suppress_tokens;    // tokens masked at every step
  std::vector<int64_t> begin_suppress_tokens;  // tokens masked at the first generated position
  SequenceBias sequence_bias;              // sequence -> bias on its last token
  std::map<int64_t, double> logit_bias;     // OpenAI: token id -> bias added at every step
  std::optional<int64_t> forced_bos_token_id;  // forced as the first generated token
  std::vector<int64_t> forced_eos_token_id;    // forced when max_length is reached
  bool remove_invalid_values = false;      // NaN -> 0, +-inf -> +-float max (HF InfNanRemove)
  bool renormalize_logits = false;         // log-softmax after all processors

  // ---- stopping (besides EOS and length) -------------------------------------
  std::vector<std::vector<int64_t>> stop_sequences;  // kvgen: stop when the output ends with one
  std::vector<std::string> stop_strings;   // HF: stop when the text ends with one (needs token texts)

  // ---- beam search -------------------------------------------------------------
  int64_t num_beams = 1;                   // 1 = no beam search
  double length_penalty = 1.0;             // beam score = sum logprob / length ** length_penalty
  EarlyStopping early_stopping = EarlyStopping::False;
  int64_t num_return_sequences = 1;        // sequences returned per input

  // ---- special tokens ----------------------------------------------------------
  std::vector<int64_t> eos_token_id;       // one or several end-of-sequence tokens
  std::optional<int64_t> pad_token_id;     // fills finished rows
  std::optional<int64_t> bos_token_id;     // beginning-of-sequence token

  // ---- randomness --------------------------------------------------------------
  std::optional<uint64_t> seed;            // None = a fresh random seed per call

  // Throws kvgen::ValueError naming the first field out of its allowed range.
  void validate() const;

  // Throws kvgen::ValueError when a token id in the config (pad and bos included) is
  // >= vocab_size. The Sampler calls it when it first sees the vocabulary.
  void validate_vocab(int64_t vocab_size) const;

  // True when tokens are picked by argmax of the processed logits (no warpers).
  bool is_greedy() const { return !do_sample || temperature == 0.0; }

  bool operator==(const GenerationConfig&) const = default;
};

}  // namespace kvgen
