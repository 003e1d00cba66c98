"""Mistral (kvgen.families.mistral) against MistralForCausalLM: a sliding window on every layer,
shorter than the sequences, so that it binds. llama.cpp's converter writes a Mistral checkpoint
as a Llama file without the window: read as Llama, it equals the same weights without it."""

from __future__ import annotations

import numpy as np
import transformers
from family_check import check_family, logits
from family_models import VOCAB

from kvgen.families import mistral

WINDOW = 7
CONFIG = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5, initializer_range=0.3,
              pad_token_id=None, bos_token_id=1, eos_token_id=2, rope_theta=1000000.0, tie_word_embeddings=False)


def random_mistral(**settings) -> transformers.MistralForCausalLM:
    transformers.set_seed(0)
    return transformers.MistralForCausalLM(transformers.MistralConfig(**CONFIG, **settings)).eval()


def test_mistral_equals_transformers(tmp_path, smollm2_file):
    hf = random_mistral(sliding_window=WINDOW)
    full = random_mistral(sliding_window=None)
    full.load_state_dict(hf.state_dict())
    ids = np.arange(3, 43)[None]
    assert not np.allclose(logits(hf, ids), logits(full, ids), atol=1e-3)  # the window binds
    models = check_family("mistral", hf, tmp_path, smollm2_file, gguf_family="llama", gguf_reference=full)
    # what the engine reads: a window, so no prefix reuse inside a prefill chunk
    assert not models["f32"].capabilities.partial_prefix_reuse
    assert models["gguf"].capabilities.partial_prefix_reuse


def test_the_window_covers_every_layer():
    config = random_mistral(sliding_window=WINDOW).config.to_dict()
    assert mistral.FAMILY.sizes(config).layer_windows == [WINDOW, WINDOW]
    assert not any(mistral.FAMILY.sizes({**config, "sliding_window": None}).layer_windows)  # full attention
