// ModelConfig: the sizes of a built-in model, read from a Hugging Face config or a GGUF
// header (by the facade, kvgen._model), and their one validation. Every architecture's
// constructor calls validate() before it allocates anything, so a hostile file cannot
// size a table or overflow a product; the tensors' shapes are then checked against these
// sizes (TensorMap::get).
#pragma once

#include <cstdint>
#include <string>

namespace kvgen {

struct ModelConfig {
  std::string architecture;   // "gpt2", "llama"
  int64_t vocab_size = 0;
  int64_t context_length = 0; // positions the model supports
  int64_t hidden = 0;         // C
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;       // < heads under grouped-query attention
  int64_t head_dim = 0;
  int64_t intermediate = 0;   // MLP width

  // ValueError for an architecture other than gpt2 / llama, or one naming the config key
  // (Hugging Face name of the architecture) when a size is not positive, is above its
  // limit in kvgen/limits.h, or disagrees with another: heads a multiple of kv_heads,
  // heads x head_dim within kMaxWidth, head_dim even for rotary embeddings (llama),
  // hidden = heads x head_dim (gpt2).
  void validate() const;
};

}  // namespace kvgen
