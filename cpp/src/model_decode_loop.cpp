// ModelDecodeLoop: prefill, then one forward + one Generator step per token.
#include "kvgen/model_decode_loop.h"

#include <algorithm>
#include <sstream>

#include "kvgen/errors.h"
#include "kvgen/limits.h"

namespace kvgen {

ModelDecodeLoop::ModelDecodeLoop(Model& model, GenerationConfig config) : model_(model), gen_(std::move(config)) {}

void ModelDecodeLoop::start(const std::vector<std::vector<int64_t>>& prompts, const std::vector<int64_t>& sequence_ids,
                            const uint32_t* allowed) {
  const ModelConfig& mc = model_.config();
  int64_t longest = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const int64_t len = static_cast<int64_t>(prompts[i].size());
    const int64_t more = std::max<int64_t>(gen_.max_new_tokens(len), 0);
    // compared without forming len + more, which a max_new_tokens near 2**63 overflows
    if (len > mc.context_length || more > mc.context_length - len) {
      std::ostringstream msg;
      msg << "context overflow: prompt " << i << " has " << len << " tokens and may generate " << more
          << " more, beyond the model's context of " << mc.context_length
          << " positions; shorten the prompt or lower max_new_tokens";
      throw ValueError(msg.str());
    }
    longest = std::max(longest, len + more);  // the cache is sized by this, at most the context
  }
  gen_.append_tokens(prompts, sequence_ids);  // validates the prompts, the rows and the config
  const int64_t rows = gen_.rows(), per_input = gen_.rows_per_input();
  limits::checked_mul(rows, mc.vocab_size, "logits (rows x vocab_size)");
  KVCache::bytes_for(mc.layers, rows, longest, mc.kv_heads, mc.head_dim, mc.layer_windows);  // overflow-checked before allocating
  cache_.emplace(model_.make_cache(rows, longest));
  logits_ = xt::xtensor<float, 2>::from_shape({static_cast<size_t>(rows), static_cast<size_t>(mc.vocab_size)});
  fed_.assign(rows, 0);

  // Prefill the first row of each input, a chunk of every prompt per batched pass (a row's
  // logits come from its last chunk); the other rows copy it.
  int64_t longest_prompt = 0;
  for (const auto& p : prompts) longest_prompt = std::max(longest_prompt, static_cast<int64_t>(p.size()));
  for (int64_t start = 0; start < longest_prompt; start += kPrefillChunk) {
    chunks_.clear();
    for (size_t i = 0; i < prompts.size(); ++i) {
      const int64_t len = static_cast<int64_t>(prompts[i].size());
      if (len > start)
        chunks_.push_back({static_cast<int64_t>(i) * per_input, prompts[i].data() + start,
                           std::min(kPrefillChunk, len - start)});
    }
    model_.forward(chunks_, *cache_, logits_.data(), false);
  }
  for (int64_t b = 0; b < gen_.batch_size(); ++b)
    for (int64_t k = 1; k < per_input; ++k) {
      cache_->copy_row(b * per_input, b * per_input + k);
      std::copy(logits_.data() + b * per_input * mc.vocab_size, logits_.data() + (b * per_input + 1) * mc.vocab_size,
                logits_.data() + (b * per_input + k) * mc.vocab_size);
    }
  gen_.step(logits_.data(), rows, mc.vocab_size, allowed);
}

void ModelDecodeLoop::forward() {
  if (!cache_) throw ValueError("call start(prompts) first");
  if (gen_.done()) throw ValueError("the generation is finished (is_done() is True): nothing more to step");
  if (forwarded_step_ == gen_.steps()) throw ValueError("forward() was already called for this step: call step()");
  if (const int64_t* parents = gen_.beam_indices()) cache_->reorder(parents);
  const int64_t* next = gen_.next_tokens();
  chunks_.clear();
  for (int64_t r = 0; r < gen_.rows(); ++r) {
    if (!gen_.row_running(r)) continue;
    fed_[r] = next[r];
    chunks_.push_back({r, &fed_[r], 1});
  }
  model_.forward(chunks_, *cache_, logits_.data(), false);
  forwarded_step_ = gen_.steps();
}

void ModelDecodeLoop::step(const uint32_t* allowed) {
  if (forwarded_step_ != gen_.steps()) throw ValueError("call forward() before step()");
  gen_.step(logits_.data(), gen_.rows(), model_.config().vocab_size, allowed);
}

}  // namespace kvgen
