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

// Field kinds of the schema (generation_config_fields.def): each sets a field's C++ type;
// validate() and validate_vocab() apply the kind's generic checks, bind_config.cpp its Python
// conversions and stub annotation.
namespace config_field {
struct Int { using type = int64_t; };
struct OptionalInt { using type = std::optional<int64_t>; };           // None = off / unset
struct Float { using type = double; };                                 // finite as a float32
struct OptionalFloat { using type = std::optional<double>; };
struct Bool { using type = bool; };
struct OptionalToken { using type = std::optional<int64_t>; };         // a token id or None
struct TokenList { using type = std::vector<int64_t>; };               // Python: a list, None when empty
struct TokenIds { using type = std::vector<int64_t>; };                // Python: an int or a list (HF's eos)
struct TokenSequences { using type = std::vector<std::vector<int64_t>>; };  // non-empty id sequences
struct Strings { using type = std::vector<std::string>; };             // non-empty strings
struct SequenceBiasMap { using type = SequenceBias; };
struct LogitBiasMap { using type = std::map<int64_t, double>; };       // token id -> bias
struct EarlyStoppingRule { using type = EarlyStopping; };
struct Seed { using type = std::optional<uint64_t>; };                 // None = a fresh seed per call
struct OptionalText { using type = std::optional<std::string>; };      // a str or None
struct JsonText { using type = std::optional<std::string>; };          // JSON text; Python: a dict or a str
}  // namespace config_field

// Every knob of a generation run; the members, their defaults and docs are listed in
// generation_config_fields.def. Floating-point fields are double, as Python's float; the
// kernels use float32, so validate() requires every one (biases included) to be finite as a
// float32, and the divisors (temperature, repetition_penalty) to stay > 0 once rounded.
struct GenerationConfig {
#define KVGEN_CONFIG_FIELD(kind, name, default_value, doc) config_field::kind::type name = default_value;
#include "kvgen/generation_config_fields.def"

  // Throws kvgen::ValueError naming a field out of its allowed range: the field-specific
  // ranges and relations first, then the generic checks of each field's kind.
  void validate() const;

  // Throws kvgen::ValueError when a token id in the config (pad and bos included) is
  // >= vocab_size. The Sampler calls it when it first sees the vocabulary.
  void validate_vocab(int64_t vocab_size) const;

  // The seed of this run's draws: `seed`, or a fresh random one when it is None.
  uint64_t resolved_seed() const;

  // True when the output is constrained (json_schema, regex, grammar or choices): each
  // step then needs the allowed-token bitmask of every row.
  bool has_constraint() const { return json_schema || regex || grammar || !choices.empty(); }

  // True when tokens are picked by argmax of the processed logits (no warpers).
  bool is_greedy() const { return !do_sample || temperature == 0.0; }

  // DRY penalizes (llama.cpp: multiplier 0 or penalty_last_n 0 turn it off).
  bool dry_enabled() const { return dry_multiplier != 0.0 && dry_penalty_last_n != 0; }
  // Mirostat picks the tokens: sampling with mirostat 1 or 2.
  bool uses_mirostat() const { return mirostat != 0 && !is_greedy(); }

  bool operator==(const GenerationConfig&) const = default;
};

}  // namespace kvgen
