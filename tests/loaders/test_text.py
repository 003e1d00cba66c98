"""Text in, text out: a GPT-2 directory with a tokenizer.json (Hugging Face tokenizers)."""

from __future__ import annotations

import pytest
import torch
import transformers
from hf_models import hf_generate, save_text_gpt2

import kvgen


@pytest.fixture(scope="module")
def text_model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("text_gpt2")
    hf, tokenizer = save_text_gpt2(directory)
    return hf, kvgen.Model.load(directory), tokenizer


def test_generate_text_equals_hf_greedy_decoded(text_model):
    hf, kv, tok = text_model
    prompt = "Once upon a time"
    config = kvgen.GenerationConfig(max_new_tokens=20)
    text = kvgen.Generator(kv, config).generate(prompt)
    ids = tok.encode(prompt).ids
    hf_gen, _ = hf_generate(hf, [ids], 0, max_new_tokens=20, do_sample=False)
    assert isinstance(text, str) and text == tok.decode(hf_gen[0].tolist())
    texts = kvgen.Generator(kv, config).generate([prompt, "The robot"])
    assert texts[0] == text and isinstance(texts[1], str)


def test_stream_yields_whole_characters_that_add_up(text_model):
    _, kv, tok = text_model
    config = kvgen.GenerationConfig(do_sample=True, temperature=1.5, top_k=0, max_new_tokens=40, seed=5)
    generator = kvgen.Generator(kv, config)
    pieces = list(generator.stream("Über allen 你好"))
    full = generator.last_result.texts[0][0]
    assert "".join(pieces) == full and len(pieces) > 3
    # a piece never ends inside a multi-byte character (a random model may still emit
    # invalid bytes, which decode to U+FFFD inside a piece, never at its cut)
    assert all(not p.endswith("\ufffd") for p in pieces[:-1])
    assert any(ord(ch) > 127 for ch in full)


def test_stop_strings_from_text(text_model):
    _, kv, tok = text_model
    free = kvgen.Generator(kv, kvgen.GenerationConfig(max_new_tokens=30)).generate("The robot")
    stop = free[5:8]  # a piece of what greedy decoding writes
    assert len(stop) == 3
    gen = kvgen.Generator(kv, kvgen.GenerationConfig(max_new_tokens=30, stop_strings=[stop]))
    text = gen.generate("The robot")
    assert stop in text and text.index(stop) + len(stop) > len(text) - 8  # stopped right after it
    assert gen.last_result.finish_reasons[0][0] == "stop"
    assert len(text) < len(free)


def test_text_without_a_tokenizer_is_a_clear_error(tmp_path):
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=50, n_positions=16, n_embd=16, n_layer=1,
                                                              n_head=2))
    hf.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="the model has no tokenizer"):
        kvgen.Generator(kvgen.Model.load(tmp_path), kvgen.GenerationConfig()).generate("hello")
