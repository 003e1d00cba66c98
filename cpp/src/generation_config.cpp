// Range checks of GenerationConfig: each error names the field and the allowed range.
// Field-specific ranges are written here; the checks every field of a kind needs are
// applied to each field of the schema (generation_config_fields.def).
#include "kvgen/generation_config.h"

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "kvgen/errors.h"
#include "kvgen/limits.h"

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

void check_nonempty(const char* field, bool empty, const char* what) {
  if (empty) throw ValueError(std::string("GenerationConfig.") + field + " contains an empty " + what);
}

// ---- generic checks by field kind: the value can be used by the kernels ---------------
// Kinds without one (Int, Bool, ...) take any value their type holds: their ranges, if
// any, are field-specific.
template <class Kind, class T>
void check_kind(Kind, const char*, const T&) {}

void check_kind(config_field::Float, const char* field, double value) { check_float32(field, value); }

void check_kind(config_field::OptionalFloat, const char* field, const std::optional<double>& value) {
  if (value) check_float32(field, *value);
}

void check_kind(config_field::OptionalToken, const char* field, const std::optional<int64_t>& id) {
  if (id) check_token(field, *id);
}

void check_tokens(const char* field, const std::vector<int64_t>& ids) {
  for (int64_t id : ids) check_token(field, id);
}

void check_kind(config_field::TokenList, const char* field, const std::vector<int64_t>& ids) {
  check_tokens(field, ids);
}

void check_kind(config_field::TokenIds, const char* field, const std::vector<int64_t>& ids) {
  check_tokens(field, ids);
}

void check_kind(config_field::TokenSequences, const char* field, const std::vector<std::vector<int64_t>>& seqs) {
  for (const auto& seq : seqs) {
    check_nonempty(field, seq.empty(), "sequence");
    check_tokens(field, seq);
  }
}

void check_kind(config_field::Strings, const char* field, const std::vector<std::string>& texts) {
  for (const auto& text : texts) check_nonempty(field, text.empty(), "string");
}

void check_kind(config_field::SequenceBiasMap, const char* field, const SequenceBias& biases) {
  for (const auto& [seq, bias] : biases) {
    check_nonempty(field, seq.empty(), "sequence");
    check_tokens(field, seq);
    check_bias(field, bias);
  }
}

void check_kind(config_field::LogitBiasMap, const char* field, const std::map<int64_t, double>& biases) {
  for (const auto& [id, bias] : biases) {
    check_token(field, id);
    check_bias(field, bias);
  }
}

// ---- vocabulary checks by field kind: every token id is < vocab_size -------------------
template <class Kind, class T>
void check_kind_vocab(Kind, const char*, const T&, int64_t) {}

void check_kind_vocab(config_field::OptionalToken, const char* field, const std::optional<int64_t>& id,
                      int64_t vocab_size) {
  if (id) check_vocab(field, *id, vocab_size);
}

void check_ids_vocab(const char* field, const std::vector<int64_t>& ids, int64_t vocab_size) {
  for (int64_t id : ids) check_vocab(field, id, vocab_size);
}

void check_kind_vocab(config_field::TokenList, const char* field, const std::vector<int64_t>& ids,
                      int64_t vocab_size) {
  check_ids_vocab(field, ids, vocab_size);
}

void check_kind_vocab(config_field::TokenIds, const char* field, const std::vector<int64_t>& ids,
                      int64_t vocab_size) {
  check_ids_vocab(field, ids, vocab_size);
}

void check_kind_vocab(config_field::TokenSequences, const char* field, const std::vector<std::vector<int64_t>>& seqs,
                      int64_t vocab_size) {
  for (const auto& seq : seqs) check_ids_vocab(field, seq, vocab_size);
}

void check_kind_vocab(config_field::SequenceBiasMap, const char* field, const SequenceBias& biases,
                      int64_t vocab_size) {
  for (const auto& [seq, bias] : biases) check_ids_vocab(field, seq, vocab_size);
}

void check_kind_vocab(config_field::LogitBiasMap, const char* field, const std::map<int64_t, double>& biases,
                      int64_t vocab_size) {
  for (const auto& [id, bias] : biases) check_vocab(field, id, vocab_size);
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

  if (!(dry_multiplier >= 0.0)) fail("dry_multiplier", dry_multiplier, "must be >= 0 (0 disables DRY)");
  if (!(dry_base >= 1.0)) fail("dry_base", dry_base, "must be >= 1");
  if (dry_allowed_length < 0) fail("dry_allowed_length", dry_allowed_length, "must be >= 0");
  if (dry_penalty_last_n < -1)
    fail("dry_penalty_last_n", dry_penalty_last_n, "must be >= -1 (-1: the whole history, 0 disables DRY)");
  if (!(xtc_probability >= 0.0 && xtc_probability <= 1.0))
    fail("xtc_probability", xtc_probability, "must be in [0, 1] (0 disables XTC)");
  if (!(xtc_threshold >= 0.0 && xtc_threshold <= 1.0))
    fail("xtc_threshold", xtc_threshold, "must be in [0, 1] (above 0.5 XTC does nothing)");
  if (mirostat < 0 || mirostat > 2) fail("mirostat", mirostat, "must be 0 (off), 1 or 2");
  if (!(mirostat_tau >= 0.0)) fail("mirostat_tau", mirostat_tau, "must be >= 0");
  if (!(mirostat_eta >= 0.0)) fail("mirostat_eta", mirostat_eta, "must be >= 0");
  if (prompt_lookup_num_tokens && (*prompt_lookup_num_tokens < 1 || *prompt_lookup_num_tokens > 64))
    fail("prompt_lookup_num_tokens", *prompt_lookup_num_tokens, "must be in [1, 64] (or None: off)");
  if (max_matching_ngram_size && (*max_matching_ngram_size < 1 || *max_matching_ngram_size > 64))
    fail("max_matching_ngram_size", *max_matching_ngram_size, "must be in [1, 64] (or None: 2)");
  if (top_logprobs < 0 || top_logprobs > limits::kMaxTopLogprobs)
    fail("top_logprobs", top_logprobs, "must be in [0, 20] (0: none)");

  if (num_beams < 1) fail("num_beams", num_beams, "must be >= 1");
  if (num_return_sequences < 1) fail("num_return_sequences", num_return_sequences, "must be >= 1");
  if (num_return_sequences > num_beams && (num_beams > 1 || is_greedy())) {
    std::ostringstream msg;
    msg << "GenerationConfig.num_return_sequences = " << num_return_sequences
        << " is out of range: must be <= num_beams (= " << num_beams << ")"
        << (num_beams == 1 ? " unless sampling (do_sample=True, temperature > 0)" : "");
    throw ValueError(msg.str());
  }

  std::string constraints;  // names of the constraint fields that are set
  for (const auto& [name, set] : {std::pair{"json_schema", json_schema.has_value()}, {"regex", regex.has_value()},
                                  {"grammar", grammar.has_value()}, {"choices", !choices.empty()}})
    if (set) constraints += (constraints.empty() ? "" : " and ") + std::string(name);
  if (constraints.find(" and ") != std::string::npos)
    throw ValueError("GenerationConfig: " + constraints + " are set together; json_schema, regex, grammar and choices "
                     "are exclusive (at most one constraint)");

  // Then what every field of its kind needs (finite float32, token ids >= 0, non-empty
  // sequences), after the ranges above so that a field with a range reports that range.
#define KVGEN_CONFIG_FIELD(kind, name, default_value, doc) check_kind(config_field::kind{}, #name, name);
#include "kvgen/generation_config_fields.def"
}

void GenerationConfig::validate_vocab(int64_t vocab_size) const {
#define KVGEN_CONFIG_FIELD(kind, name, default_value, doc) \
  check_kind_vocab(config_field::kind{}, #name, name, vocab_size);
#include "kvgen/generation_config_fields.def"
}

uint64_t GenerationConfig::resolved_seed() const {
  if (seed) return *seed;
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace kvgen
