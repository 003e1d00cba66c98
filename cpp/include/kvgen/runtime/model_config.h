// ModelConfig: the sizes of a built-in model, read from a Hugging Face config or a GGUF
// header (by the facade, kvgen._model), and their one validation. Every architecture's
// constructor calls validate() before it allocates anything, so a hostile file cannot
// size a table or overflow a product; the tensors' shapes are then checked against these
// sizes (TensorMap::get).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvgen/runtime/kv_layers.h"
#include "kvgen/runtime/state_cache.h"

namespace kvgen {

struct ModelConfig {
  std::string architecture;   // "gpt2", "llama" (and the families like it), "gemma" (Gemma 2 and 3)
  int64_t vocab_size = 0;
  int64_t context_length = 0; // positions the model supports
  int64_t hidden = 0;         // C
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;       // < heads under grouped-query attention
  int64_t head_dim = 0;
  int64_t intermediate = 0;   // MLP width
  // Sliding-window attention: layer_windows[l] > 0 = layer l attends to its last
  // layer_windows[l] positions (the token itself included) and its cache keeps only a
  // ring of them (kv_cache.h); 0 = every position. Empty = every layer attends to all.
  std::vector<int64_t> layer_windows;
  // Mixture of experts (0 = none): experts of each MoE layer, how many each token uses,
  // and one expert's MLP width.
  int64_t experts = 0;
  int64_t experts_per_token = 0;
  int64_t expert_intermediate = 0;
  // Hybrid models: per layer, the recurrent state it keeps per sequence (state_cache.h); a
  // layer whose shape is all zeros attends (keeps KV rows). Empty = every layer attends.
  std::vector<RecurrentLayerShape> recurrent_layers;
  // Per layer, a key/value shape of its own or another layer's keys and values (kv_layers.h).
  KVLayers kv_layers;

  // The attention window of `layer` (0 = all positions).
  int64_t window(int64_t layer) const { return layer_windows.empty() ? 0 : layer_windows[layer]; }
  // The kv heads and head_dim of `layer`, and the layer whose keys and values it attends over.
  int64_t kv_heads_of(int64_t layer) const { return kv_layers.kv_heads_of(layer, kv_heads); }
  int64_t head_dim_of(int64_t layer) const { return kv_layers.head_dim_of(layer, head_dim); }
  int64_t kv_source(int64_t layer) const { return kv_layers.source(layer); }
  // The largest head_dim and kv heads of any layer (the scratch's sizes).
  int64_t max_head_dim() const;
  int64_t max_kv_heads() const;

  // Whether `layer` keeps a recurrent state (and no KV rows of its own).
  bool recurrent(int64_t layer) const {
    if (recurrent_layers.empty()) return false;
    const RecurrentLayerShape& s = recurrent_layers[layer];
    return s.conv_channels > 0 || s.heads > 0;
  }

  // ValueError for an architecture kvgen does not run, or one naming the config key
  // (Hugging Face name of the architecture) when a size is not positive, is above its
  // limit in kvgen/limits.h, or disagrees with another: heads a multiple of kv_heads,
  // heads x head_dim within kMaxWidth, head_dim even for rotary embeddings (llama),
  // hidden = heads x head_dim (gpt2); one window per layer, each within the context
  // limit; experts within kMaxExperts with 1 <= experts_per_token <= experts; one recurrent
  // shape per layer, each within the limits of StateCache (state_cache.h); kv_layers' vectors
  // one entry per layer, heads a multiple of each layer's kv heads, each layer's head_dim
  // even and within kMaxWidth, a source an earlier layer (or itself) of the same shape and
  // window that reads no other layer's.
  void validate() const;
};

}  // namespace kvgen
