// ModelConfig::validate: positive sizes within kvgen's limits, consistent with each other.
#include "kvgen/runtime/model_config.h"

#include <algorithm>

#include "kvgen/errors.h"
#include "kvgen/limits.h"

namespace kvgen {
namespace {

enum Field { kVocab, kContext, kHidden, kLayers, kHeads, kKvHeads, kHeadDim, kIntermediate };

// The config key a field comes from, as the user's config.json (or the GGUF loader's
// translation of its header) spells it.
const char* key(const std::string& arch, Field f) {
  static const char* gpt2[] = {"vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "n_head", "n_embd / n_head",
                               "n_inner"};
  static const char* llama[] = {"vocab_size",          "max_position_embeddings", "hidden_size", "num_hidden_layers",
                                "num_attention_heads", "num_key_value_heads",     "head_dim",    "intermediate_size"};
  return (arch == "gpt2" ? gpt2 : llama)[f];  // the other families use Llama's key names
}

void check_size(const std::string& arch, Field f, int64_t value, int64_t limit) {
  const std::string name = arch + " config: " + key(arch, f);
  if (value < 1) throw ValueError(name + " = " + std::to_string(value) + " must be a positive integer");
  limits::check_at_most(name, value, limit);
}

}  // namespace

void ModelConfig::validate() const {
  const std::string& a = architecture;
  if (a != "gpt2" && a != "llama" && a != "gemma" && a != "lfm2" && a != "qwen35" &&
      a != "granitehybrid")
    throw ValueError("architecture '" + a + "' is not one of gpt2, llama, gemma, lfm2, qwen35, granitehybrid");
  check_size(a, kVocab, vocab_size, limits::kMaxVocab);
  check_size(a, kContext, context_length, limits::kMaxContext);
  check_size(a, kHidden, hidden, limits::kMaxWidth);
  check_size(a, kLayers, layers, limits::kMaxLayers);
  check_size(a, kHeads, heads, limits::kMaxHeads);
  check_size(a, kKvHeads, kv_heads, limits::kMaxHeads);
  check_size(a, kHeadDim, head_dim, limits::kMaxWidth);
  check_size(a, kIntermediate, intermediate, limits::kMaxWidth);
  const std::string prefix = a + " config: ";
  if (heads % kv_heads != 0)
    throw ValueError(prefix + key(a, kHeads) + " = " + std::to_string(heads) + " is not a multiple of " +
                     key(a, kKvHeads) + " = " + std::to_string(kv_heads));
  const int64_t width = limits::checked_mul(heads, head_dim, prefix + key(a, kHeads) + " x " + key(a, kHeadDim));
  limits::check_at_most(prefix + key(a, kHeads) + " x " + key(a, kHeadDim), width, limits::kMaxWidth);
  if (a != "gpt2" && head_dim % 2 != 0)
    throw ValueError(prefix + "head_dim = " + std::to_string(head_dim) + " must be even (rotary embeddings rotate pairs)");
  if (a == "gpt2" && width != hidden)
    throw ValueError(prefix + "n_embd = " + std::to_string(hidden) + " is not a multiple of n_head = " +
                     std::to_string(heads));
  if (!layer_windows.empty() && static_cast<int64_t>(layer_windows.size()) != layers)
    throw ValueError(prefix + std::to_string(layer_windows.size()) + " sliding windows for " + std::to_string(layers) +
                     " layers");
  for (int64_t w : layer_windows) {
    if (w < 0) throw ValueError(prefix + "sliding_window = " + std::to_string(w) + " must not be negative");
    limits::check_at_most(prefix + "sliding_window", w, limits::kMaxContext);
  }
  if (experts != 0) {
    if (experts < 0) throw ValueError(prefix + "num_experts = " + std::to_string(experts) + " must not be negative");
    limits::check_at_most(prefix + "num_experts", experts, limits::kMaxExperts);
    if (experts_per_token < 1 || experts_per_token > experts)
      throw ValueError(prefix + "num_experts_per_tok = " + std::to_string(experts_per_token) + " is not in [1, " +
                       "num_experts = " + std::to_string(experts) + "]");
    if (expert_intermediate < 1)
      throw ValueError(prefix + "moe_intermediate_size = " + std::to_string(expert_intermediate) +
                       " must be a positive integer");
    limits::check_at_most(prefix + "moe_intermediate_size", expert_intermediate, limits::kMaxWidth);
  }
  if (!recurrent_layers.empty()) {
    if (static_cast<int64_t>(recurrent_layers.size()) != layers)
      throw ValueError(prefix + std::to_string(recurrent_layers.size()) + " recurrent layer shapes for " +
                       std::to_string(layers) + " layers");
    StateCache::bytes_for(recurrent_layers, 1);  // every width within its limit, one row's state within kMaxBytes
  }
  const KVLayers& kl = kv_layers;
  for (const auto* v : {&kl.kv_heads, &kl.head_dims, &kl.sources})
    if (!v->empty() && static_cast<int64_t>(v->size()) != layers)
      throw ValueError(prefix + std::to_string(v->size()) + " per-layer key/value entries for " +
                       std::to_string(layers) + " layers");
  for (int64_t l = 0; l < layers; ++l) {
    const std::string at = prefix + "layer " + std::to_string(l) + ": ";
    const int64_t kvh = kv_heads_of(l), hd = head_dim_of(l);
    if (kvh < 1 || hd < 1 || kvh > limits::kMaxHeads || hd > limits::kMaxWidth || hd % 2 != 0 || heads % kvh != 0)
      throw ValueError(at + "kv heads " + std::to_string(kvh) + " and head_dim " + std::to_string(hd) +
                       " must be positive, within limits, head_dim even and heads a multiple of kv heads");
    limits::check_at_most(at + "heads x head_dim", heads * hd, limits::kMaxWidth);
    const int64_t src = kv_source(l);
    if (src == l) continue;
    if (src < 0 || src > l || kv_source(src) != src)
      throw ValueError(at + "reads the keys and values of layer " + std::to_string(src) +
                       ", which is not an earlier layer that keeps its own");
    if (kv_heads_of(src) != kvh || head_dim_of(src) != hd || window(src) != window(l) || recurrent(src) ||
        recurrent(l))
      throw ValueError(at + "reads the keys and values of layer " + std::to_string(src) +
                       ", whose shape or window differs");
  }
}

int64_t ModelConfig::max_head_dim() const {
  int64_t m = head_dim;
  for (int64_t l = 0; l < layers; ++l) m = std::max(m, head_dim_of(l));
  return m;
}

int64_t ModelConfig::max_kv_heads() const {
  int64_t m = kv_heads;
  for (int64_t l = 0; l < layers; ++l) m = std::max(m, kv_heads_of(l));
  return m;
}

}  // namespace kvgen
