// The processor chain: one factory turns a GenerationConfig into the ordered list of
// processors, in Hugging Face's order (GenerationMixin._get_logits_processor), with
// llama.cpp's samplers (L) where llama.cpp's default chain puts them relative to these:
//
//   1. sequence_bias                      8. forced_eos_token_id
//   2. logit_bias                (kvgen)  9. remove_invalid_values
//   3. repetition_penalty                10. suppress_tokens
//   4. presence/frequency_penalty (kvgen) 11. begin_suppress_tokens
//   4b. DRY                         (L)  12. allowed tokens (kvgen: json_schema, regex,
//   5. no_repeat_ngram_size                  grammar, choices; llguidance's bitmask)
//   6. bad_words_ids                     -- warpers, only when sampling (do_sample and
//   7. min_length, min_new_tokens,          temperature > 0) --
//      forced_bos_token_id               12b. top_n_sigma (L)   17. typical_p
//                                        13. temperature        18. epsilon_cutoff
//                                        14. top_k (*)          19. eta_cutoff
//                                        15. top_p              19b. XTC (L)
//                                        16. min_p
//                                        20. renormalize_logits (always last)
//
// The allowed-token mask comes after every logits processor (a bias cannot revive a
// token the grammar forbids) and before the warpers (top-k, top-p, ... see only allowed
// tokens). Under beam search the TokenSelector also applies it before the log-softmax, so
// beam scores are log-probabilities over the allowed tokens.
//
// Mirostat (L, mirostat = 1 or 2) is a sampler: as in llama.cpp, it replaces the warpers
// after the temperature (13 then mirostat's truncation; 12b, 14-19b are not applied), and
// the token is drawn from what it keeps; the TokenSelector updates each row's mu from the draw.
// DRY sits with the penalties (llama.cpp: penalties, DRY, top-n-sigma, top-k, typical,
// top-p, min-p, XTC, temperature); llama.cpp's XTC and top-n-sigma see the logits before
// the temperature, kvgen's (HF's warper order) after it: the same tokens at temperature 1,
// and top-n-sigma's kept set does not depend on the temperature at all.
//
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

// Builds the chain for a validated config. token_texts (the text of every token id) give
// DRY its sequence breakers; without them DRY runs without breakers.
Chain make_chain(const GenerationConfig& config, const std::vector<std::string>* token_texts = nullptr);

}  // namespace kvgen
