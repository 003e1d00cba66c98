// The processor chain: one factory turns a GenerationConfig into the ordered list of
// processors, in Hugging Face's order (GenerationMixin._get_logits_processor):
//
//   1. sequence_bias                      8. forced_eos_token_id
//   2. logit_bias                (kvgen)  9. remove_invalid_values
//   3. repetition_penalty                10. suppress_tokens
//   4. presence/frequency_penalty (kvgen) 11. begin_suppress_tokens
//   5. no_repeat_ngram_size              12. allowed tokens (kvgen: json_schema, regex,
//   6. bad_words_ids                         grammar, choices; llguidance's bitmask)
//   7. min_length, min_new_tokens,       -- warpers, only when sampling (do_sample and
//      forced_bos_token_id                  temperature > 0) --
//                                        13. temperature   16. min_p        19. eta_cutoff
//                                        14. top_k (*)     17. typical_p
//                                        15. top_p         18. epsilon_cutoff
//                                        20. renormalize_logits (always last)
//
// The allowed-token mask comes after every logits processor (a bias cannot revive a
// token the grammar forbids) and before the warpers (top-k, top-p, ... see only allowed
// tokens). Under beam search the Generator also applies it before the log-softmax, so
// beam scores are log-probabilities over the allowed tokens.
// Under beam sampling the warpers keep at least len(eos_token_id) + 1 tokens, as HF.
// (*) top-k runs before the temperature: dividing by T > 0 keeps the order, so the
// kept set is the same (unless two different logits round to one quotient, where HF
// keeps that extra tie) and only k values are divided instead of the vocabulary.
#pragma once

#include <string>
#include <vector>

#include "kvgen/generation_config.h"
#include "kvgen/sampling/processors.h"

namespace kvgen {

class Chain : public LogitsProcessor {
 public:
  explicit Chain(std::vector<ProcessorPtr> processors) : processors_(std::move(processors)) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override {
    for (const auto& p : processors_) p->apply(c, ctx, ws);
  }
  std::string describe() const override;
  size_t size() const { return processors_.size(); }
  const LogitsProcessor& operator[](size_t i) const { return *processors_[i]; }

 private:
  std::vector<ProcessorPtr> processors_;
};

// Builds the chain for a validated config.
Chain make_chain(const GenerationConfig& config);

}  // namespace kvgen
