"""Decode at long context: a token's attention is cut into blocks of 256 positions that the
threads share (cpp/src/runtime/attention.cpp), and the KV cache is kept in half precision
outside exact mode on int8-kernel weights. Transformers is the oracle."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from engine_steps import decode_step_logits, decode_step_logits_at
from llama_models import hf_from_gguf, random_llama, write_llama_gguf

import kvgen

# head_dim 64 (the AVX-512 path), three query heads per kv head
SHAPE = dict(vocab_size=211, hidden_size=96, head_dim=64, num_attention_heads=6, num_key_value_heads=2,
             num_hidden_layers=2, max_position_embeddings=700)
PROMPTS = ([(7 * i) % 211 for i in range(590)], [(5 * i + 3) % 211 for i in range(517)])
NEW = 8  # the decode steps cross position 512, a block boundary, for both rows


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    hf = random_llama(seed=3, **SHAPE)
    directory = tmp_path_factory.mktemp("long")
    hf.save_pretrained(directory)
    return hf, directory


def decode_logits(model, prompts=PROMPTS, new=NEW) -> list:
    """Each decode step's raw logits of every row (greedy, no processors), with their sequences."""
    return decode_step_logits(model, prompts, new)


@pytest.mark.parametrize("threads", [1, 2])
def test_decode_over_several_blocks_matches_transformers(llama, threads):
    hf, directory = llama
    model = kvgen.Model.load(directory)  # float32 weights: a float32 cache
    assert model.kv_cache_bytes(1, 10) == 2 * 2 * 2 * 64 * 10 * 4
    before = kvgen.get_num_threads()
    kvgen.set_num_threads(threads)
    try:
        steps = decode_logits(model)
    finally:
        kvgen.set_num_threads(before)
    assert len(steps) == NEW
    # 1e-3: float32 sums over 600 positions of logits up to ~5 (the per-head loops this code
    # replaced were off by as much, up to 7e-4)
    for step in steps:
        for seq, logits in step:
            with torch.inference_mode():
                full = hf(torch.as_tensor(seq[None, :-1])).logits[0, -1].numpy()
            np.testing.assert_allclose(logits, full, atol=1e-3, rtol=1e-3)


def test_int8_mode_keeps_a_half_cache_and_exact_mode_a_float32_one(llama):
    hf, directory = llama
    path = write_llama_gguf(hf, directory / "q8_0.gguf", "Q8_0")
    model = kvgen.Model.load(path)
    per_position = 2 * hf.config.num_hidden_layers * hf.config.num_key_value_heads * hf.config.head_dim
    assert model.kv_cache_bytes(1, 100) == 2 * per_position * 100  # halves
    half = decode_logits(model)
    model.exact = True
    assert model.kv_cache_bytes(1, 100) == 4 * per_position * 100
    exact = decode_logits(model)
    # exact mode is transformers' arithmetic on the dequantized weights; the default mode (two-level
    # int8 activations, half keys and values) stays within 2% of the largest logit of it (measured:
    # 0.4%), on its own greedy sequences
    reference = hf_from_gguf(path)
    for run, bound in ((exact, None), (half, 0.02)):
        for step in run:
            for seq, logits in step:
                with torch.inference_mode():
                    full = reference(torch.as_tensor(seq[None, :-1])).logits[0, -1].numpy()
                if bound is None:
                    np.testing.assert_allclose(logits, full, atol=1e-3, rtol=1e-3)
                else:
                    assert np.abs(logits - full).max() < bound * np.abs(full).max()


# (head_dim, query heads, kv heads): the half cache's register kernels at each width, with
# groups that take several passes over a block (7 heads), one pass, or one head per kv head
@pytest.mark.parametrize("head_dim, heads, kv_heads", [(128, 8, 2), (256, 4, 2), (64, 7, 1), (64, 2, 2)])
def test_half_cache_decode_across_a_block_boundary(tmp_path, head_dim, heads, kv_heads):
    hidden = 96 if 96 % heads == 0 else 32 * heads
    hf = random_llama(seed=5, vocab_size=211, hidden_size=hidden, head_dim=head_dim, num_attention_heads=heads,
                      num_key_value_heads=kv_heads, num_hidden_layers=1, max_position_embeddings=300)
    path = write_llama_gguf(hf, tmp_path / "q8_0.gguf", "Q8_0")
    model = kvgen.Model.load(path)
    assert model.kv_cache_bytes(1, 10) == 2 * 2 * kv_heads * head_dim * 10  # halves
    prompt = [[(11 * i + 2) % 211 for i in range(251)]]  # decode steps at positions 251..256: 1 block, then 2
    one, two = decode_step_logits_at(model, prompt, 6)
    assert len(one) == len(two) == 6
    reference = hf_from_gguf(path)
    for step_one, step_two in zip(one, two, strict=True):
        (seq, logits), (seq_two, logits_two) = step_one[0], step_two[0]
        np.testing.assert_array_equal(seq, seq_two)
        np.testing.assert_array_equal(logits, logits_two)  # the same sums at any thread count
        with torch.inference_mode():
            full = reference(torch.as_tensor(seq[None, :-1])).logits[0, -1].numpy()
        # the bound of the int8-mode test above (int8 activations, half keys and values)
        assert np.abs(logits - full).max() < 0.02 * np.abs(full).max()
