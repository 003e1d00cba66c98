// make_chain: GenerationConfig -> processors, in the order documented in chain.h.
#include "kvgen/sampling/chain.h"

#include <algorithm>
#include <cmath>

#include "kvgen/sampling/llama_samplers.h"

namespace kvgen {

std::string Chain::describe() const {
  std::string out = "[";
  for (size_t i = 0; i < processors_.size(); ++i) out += (i ? ", " : "") + processors_[i]->describe();
  return out + "]";
}

Chain make_chain(const GenerationConfig& cfg, const std::vector<std::string>* token_texts) {
  std::vector<ProcessorPtr> p;
  const auto& eos = cfg.eos_token_id;

  if (!cfg.sequence_bias.empty()) p.push_back(std::make_unique<SequenceBiasProcessor>(cfg.sequence_bias, "SequenceBias"));
  if (!cfg.logit_bias.empty()) {
    SequenceBias single;
    for (const auto& [id, bias] : cfg.logit_bias) single.push_back({{id}, bias});
    p.push_back(std::make_unique<SequenceBiasProcessor>(std::move(single), "LogitBias"));
  }
  if (cfg.repetition_penalty != 1.0) p.push_back(std::make_unique<RepetitionPenalty>(cfg.repetition_penalty));
  if (cfg.presence_penalty != 0.0 || cfg.frequency_penalty != 0.0)
    p.push_back(std::make_unique<PresenceFrequencyPenalty>(cfg.presence_penalty, cfg.frequency_penalty));
  if (cfg.dry_enabled()) {
    DryBreakers breakers = token_texts ? DryBreakers(cfg.dry_sequence_breakers, *token_texts) : DryBreakers();
    p.push_back(std::make_unique<DryPenalty>(cfg.dry_multiplier, cfg.dry_base, cfg.dry_allowed_length,
                                             cfg.dry_penalty_last_n, std::move(breakers)));
  }
  if (cfg.no_repeat_ngram_size > 0) p.push_back(std::make_unique<NoRepeatNGram>(cfg.no_repeat_ngram_size));
  if (!cfg.bad_words_ids.empty()) {
    // HF drops single-token bad words that are EOS tokens, then bans the rest (-inf).
    SequenceBias banned;
    for (const auto& seq : cfg.bad_words_ids) {
      const bool is_eos = seq.size() == 1 && std::find(eos.begin(), eos.end(), seq[0]) != eos.end();
      if (!is_eos) banned.push_back({seq, -INFINITY});
    }
    if (!banned.empty()) p.push_back(std::make_unique<SequenceBiasProcessor>(std::move(banned), "NoBadWords"));
  }
  if (!eos.empty() && cfg.min_length > 0) p.push_back(std::make_unique<MinLength>(cfg.min_length, eos, false));
  if (!eos.empty() && cfg.min_new_tokens && *cfg.min_new_tokens > 0)
    p.push_back(std::make_unique<MinLength>(*cfg.min_new_tokens, eos, true));
  if (cfg.forced_bos_token_id)
    p.push_back(std::make_unique<ForcedTokens>(std::vector<int64_t>{*cfg.forced_bos_token_id},
                                               ForcedTokens::When::HistoryLengthOne, cfg.max_length,
                                               cfg.max_new_tokens));
  if (!cfg.forced_eos_token_id.empty())
    p.push_back(std::make_unique<ForcedTokens>(cfg.forced_eos_token_id, ForcedTokens::When::OneBeforeMaxLength,
                                               cfg.max_length, cfg.max_new_tokens));
  if (cfg.remove_invalid_values) p.push_back(std::make_unique<InfNanRemove>());
  if (!cfg.suppress_tokens.empty()) p.push_back(std::make_unique<SuppressTokens>(cfg.suppress_tokens, false, false));
  if (!cfg.begin_suppress_tokens.empty())
    p.push_back(std::make_unique<SuppressTokens>(cfg.begin_suppress_tokens, true, cfg.forced_bos_token_id.has_value()));
  if (cfg.has_constraint()) p.push_back(std::make_unique<AllowedTokens>());

  if (!cfg.is_greedy()) {
    // HF: len(eos) + 1 under beam sampling, 2 when there is no EOS token.
    const int64_t min_keep = cfg.num_beams > 1 ? std::max<int64_t>(static_cast<int64_t>(eos.size()), 1) + 1 : 1;
    // top-k before temperature: see (*) in chain.h.
    const bool temperature = cfg.temperature != 1.0;
    if (cfg.mirostat != 0) {  // llama.cpp: temperature, then mirostat alone
      if (temperature) p.push_back(std::make_unique<Temperature>(static_cast<float>(cfg.temperature)));
      p.push_back(std::make_unique<MirostatTruncation>(static_cast<int>(cfg.mirostat), min_keep));
      if (cfg.renormalize_logits) p.push_back(std::make_unique<LogSoftmax>());
      return Chain(std::move(p));
    }
    if (cfg.top_n_sigma > 0.0) p.push_back(std::make_unique<TopNSigma>(cfg.top_n_sigma, min_keep));
    if (cfg.top_k != 0) p.push_back(std::make_unique<TopK>(cfg.top_k, min_keep));
    if (temperature) p.push_back(std::make_unique<Temperature>(static_cast<float>(cfg.temperature)));
    if (cfg.top_p < 1.0) p.push_back(std::make_unique<TopP>(cfg.top_p, min_keep));
    if (cfg.min_p) p.push_back(std::make_unique<MinP>(*cfg.min_p, min_keep));
    if (cfg.typical_p < 1.0) p.push_back(std::make_unique<Typical>(cfg.typical_p, min_keep));
    if (cfg.epsilon_cutoff > 0.0) p.push_back(std::make_unique<ProbabilityCutoff>(cfg.epsilon_cutoff, false, min_keep));
    if (cfg.eta_cutoff > 0.0) p.push_back(std::make_unique<ProbabilityCutoff>(cfg.eta_cutoff, true, min_keep));
    if (cfg.xtc_probability > 0.0) p.push_back(std::make_unique<Xtc>(cfg.xtc_probability, cfg.xtc_threshold, min_keep));
  }
  if (cfg.renormalize_logits) p.push_back(std::make_unique<LogSoftmax>());
  return Chain(std::move(p));
}

}  // namespace kvgen
