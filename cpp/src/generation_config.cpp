// Range checks of GenerationConfig: each error names the field and the allowed range.
#include "kvgen/generation_config.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "kvgen/errors.h"

namespace kvgen {
namespace {

template <class T>
[[noreturn]] void fail(const char* field, const T& value, const char* allowed) {
  std::ostringstream msg;
  msg << "GenerationConfig." << field << " = " << value << " is out of range: " << allowed;
  throw ValueError(msg.str());
}

void check_token(const char* field, int64_t id) {
  if (id < 0) fail(field, id, "token ids must be >= 0");
}

void check_vocab(const char* field, int64_t id, int64_t vocab_size) {
  if (id >= vocab_size) {
    std::ostringstream msg;
    msg << "GenerationConfig." << field << " contains token id " << id
        << ", outside the vocabulary of the logits (vocab size " << vocab_size << ")";
    throw ValueError(msg.str());
  }
}

// The kernels compute in float32: a value that is finite in double but overflows float32
// (1e300) would turn finite logits into inf or NaN, so every float field must be finite
// as a float32. Compared in double: a cast of an out-of-range double to float is UB.
bool finite_float32(double x) { return std::fabs(x) <= static_cast<double>(std::numeric_limits<float>::max()); }

void check_float32(const char* field, double value) {
  if (!finite_float32(value)) fail(field, value, "must be finite as a float32 (|value| <= 3.4028235e+38)");
}

// A divisor or factor that must stay > 0 once rounded to float32 (1e-50 rounds to 0,
// and logits / 0 is inf or NaN).
void check_positive_float32(const char* field, double value, const char* allowed) {
  if (!(value > 0.0) || !finite_float32(value) || !(static_cast<float>(value) > 0.0f)) fail(field, value, allowed);
}

// Bias values: finite float32 numbers. -inf is refused too: bad_words_ids and
// suppress_tokens ban tokens.
void check_bias(const char* field, double bias) {
  if (!finite_float32(bias))
    fail(field, bias,
         "biases must be finite float32 values (|bias| <= 3.4028235e+38); "
         "to ban tokens use bad_words_ids or suppress_tokens");
}

}  // namespace

void GenerationConfig::validate() const {
  if (max_new_tokens && *max_new_tokens < 1) fail("max_new_tokens", *max_new_tokens, "must be >= 1 (or None)");
  if (max_length && *max_length < 1) fail("max_length", *max_length, "must be >= 1 (or None)");
  if (min_new_tokens && *min_new_tokens < 0) fail("min_new_tokens", *min_new_tokens, "must be >= 0 (or None)");
  if (min_length < 0) fail("min_length", min_length, "must be >= 0");

  if (temperature != 0.0)
    check_positive_float32("temperature", temperature,
                           "must be 0 (greedy) or a positive float32 (> 0 once rounded to float32, <= 3.4028235e+38)");
  if (top_k < 0) fail("top_k", top_k, "must be >= 0 (0 disables top-k)");
  if (!(top_p > 0.0 && top_p <= 1.0)) fail("top_p", top_p, "must be in (0, 1] (1 disables top-p)");
  if (min_p && !(*min_p >= 0.0 && *min_p <= 1.0)) fail("min_p", *min_p, "must be in [0, 1] (or None)");
  if (!(typical_p > 0.0 && typical_p <= 1.0))
    fail("typical_p", typical_p, "must be in (0, 1] (1 disables typical sampling)");
  if (!(epsilon_cutoff >= 0.0 && epsilon_cutoff < 1.0))
    fail("epsilon_cutoff", epsilon_cutoff, "must be in [0, 1) (0 disables it)");
  if (!(eta_cutoff >= 0.0 && eta_cutoff < 1.0))
    fail("eta_cutoff", eta_cutoff, "must be in [0, 1) (0 disables it)");

  check_positive_float32("repetition_penalty", repetition_penalty,
                         "must be a positive float32 (> 0 once rounded to float32, <= 3.4028235e+38; 1 disables it)");
  if (!(presence_penalty >= -2.0 && presence_penalty <= 2.0))
    fail("presence_penalty", presence_penalty, "must be in [-2, 2] (OpenAI's range)");
  if (!(frequency_penalty >= -2.0 && frequency_penalty <= 2.0))
    fail("frequency_penalty", frequency_penalty, "must be in [-2, 2] (OpenAI's range)");
  if (no_repeat_ngram_size < 0) fail("no_repeat_ngram_size", no_repeat_ngram_size, "must be >= 0");
  for (const auto& seq : bad_words_ids) {
    if (seq.empty()) throw ValueError("GenerationConfig.bad_words_ids contains an empty sequence");
    for (int64_t id : seq) check_token("bad_words_ids", id);
  }
  for (int64_t id : suppress_tokens) check_token("suppress_tokens", id);
  for (int64_t id : begin_suppress_tokens) check_token("begin_suppress_tokens", id);
  for (const auto& [seq, bias] : sequence_bias) {
    if (seq.empty()) throw ValueError("GenerationConfig.sequence_bias contains an empty sequence");
    for (int64_t id : seq) check_token("sequence_bias", id);
    check_bias("sequence_bias", bias);
  }
  for (const auto& [id, bias] : logit_bias) {
    check_token("logit_bias", id);
    check_bias("logit_bias", bias);
  }
  if (forced_bos_token_id) check_token("forced_bos_token_id", *forced_bos_token_id);
  for (int64_t id : forced_eos_token_id) check_token("forced_eos_token_id", id);

  for (const auto& seq : stop_sequences) {
    if (seq.empty()) throw ValueError("GenerationConfig.stop_sequences contains an empty sequence");
    for (int64_t id : seq) check_token("stop_sequences", id);
  }
  for (const auto& text : stop_strings)
    if (text.empty()) throw ValueError("GenerationConfig.stop_strings contains an empty string");

  if (num_beams < 1) fail("num_beams", num_beams, "must be >= 1");
  check_float32("length_penalty", length_penalty);
  if (num_return_sequences < 1) fail("num_return_sequences", num_return_sequences, "must be >= 1");
  if (num_return_sequences > num_beams && (num_beams > 1 || is_greedy())) {
    std::ostringstream msg;
    msg << "GenerationConfig.num_return_sequences = " << num_return_sequences
        << " is out of range: must be <= num_beams (= " << num_beams << ")"
        << (num_beams == 1 ? " unless sampling (do_sample=True, temperature > 0)" : "");
    throw ValueError(msg.str());
  }
  for (int64_t id : eos_token_id) check_token("eos_token_id", id);
  if (pad_token_id) check_token("pad_token_id", *pad_token_id);
  if (bos_token_id) check_token("bos_token_id", *bos_token_id);
}

void GenerationConfig::validate_vocab(int64_t vocab_size) const {
  for (const auto& seq : bad_words_ids)
    for (int64_t id : seq) check_vocab("bad_words_ids", id, vocab_size);
  for (int64_t id : suppress_tokens) check_vocab("suppress_tokens", id, vocab_size);
  for (int64_t id : begin_suppress_tokens) check_vocab("begin_suppress_tokens", id, vocab_size);
  for (const auto& [seq, bias] : sequence_bias)
    for (int64_t id : seq) check_vocab("sequence_bias", id, vocab_size);
  for (const auto& [id, bias] : logit_bias) check_vocab("logit_bias", id, vocab_size);
  if (forced_bos_token_id) check_vocab("forced_bos_token_id", *forced_bos_token_id, vocab_size);
  for (int64_t id : forced_eos_token_id) check_vocab("forced_eos_token_id", id, vocab_size);
  for (int64_t id : eos_token_id) check_vocab("eos_token_id", id, vocab_size);
  if (pad_token_id) check_vocab("pad_token_id", *pad_token_id, vocab_size);
  if (bos_token_id) check_vocab("bos_token_id", *bos_token_id, vocab_size);
  for (const auto& seq : stop_sequences)
    for (int64_t id : seq) check_vocab("stop_sequences", id, vocab_size);
}

}  // namespace kvgen
