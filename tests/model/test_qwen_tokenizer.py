"""Qwen2's real vocabulary through llama.cpp's converter: Qwen's BPE ranks (shipped on PyPI in the
dashscope wheel as qwen.tiktoken) rebuilt into transformers' Qwen2Tokenizer, written beside a tiny
random Qwen2 checkpoint and converted to GGUF by llama.cpp's own convert_hf_to_gguf.py, which
recognises the tokenizer as Qwen2's. kvgen's tokenizer from that GGUF encodes and decodes a
multilingual text with code and emoji as the Qwen2Tokenizer does."""

from __future__ import annotations

import unicodedata

import gguf
import pytest
from family_models import qwen_tiktoken, save_qwen2_tokenizer, vocabulary_gguf
from llama_cpp_convert import DEFAULT_CACHE

import kvgen

TEXTS = [
    "Hello world! Grüße aus Zürich! 你好，世界 — こんにちは Привет 😀🎉👩‍💻",
    "def add(a, b):\n    return a + b  # 12345 3.14159\n\n\tindented\r\n",
    "I'm sure they'll say it's OK, isn't it? DON'T SHOUT, WE'RE HERE.   runs   of spaces ",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<|endoftext|>",
    "Ünïcödé ﬁ ligatures, e\u0301 (combining), Ａ full-width, ١٢٣ Arabic digits, 𝔘𝔫𝔦",
    "",
]


@pytest.fixture(scope="module")
def qwen2_file(tmp_path_factory):
    directory = tmp_path_factory.mktemp("qwen2-vocab")
    hf_tok = save_qwen2_tokenizer(directory, qwen_tiktoken(DEFAULT_CACHE.parent / "qwen-vocabulary"))
    return hf_tok, vocabulary_gguf(directory, hf_tok, "qwen2", "qwen2.gguf", hidden_size=32, intermediate_size=32,
                                   num_hidden_layers=1)


def test_llama_cpp_recognises_qwen2s_tokenizer(qwen2_file):
    hf_tok, path = qwen2_file
    fields = gguf.GGUFReader(str(path)).fields
    assert fields["tokenizer.ggml.pre"].contents() == "qwen2"
    assert hf_tok.encode("Hello world") == [9707, 1879]  # Qwen2's own ids for it


def test_qwen2_vocabulary_from_gguf_equals_transformers(qwen2_file):
    """Against Qwen2Tokenizer on NFC text (Qwen2's tokenizer.json normalizes to NFC; a GGUF file
    does not say so, and neither transformers' GGUF tokenizer nor kvgen's does), and against
    transformers' tokenizer for the GGUF file on the text as it is."""
    import transformers

    hf_tok, path = qwen2_file
    model = kvgen.Model.load(path)
    hf_gguf = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    for text in TEXTS:
        assert model.encode(text) == hf_gguf.encode(text), text
        text = unicodedata.normalize("NFC", text)
        ids = hf_tok.encode(text)
        assert model.encode(text) == ids, text
        assert model.decode(ids) == hf_tok.decode(ids)
        assert model.decode(ids, skip_special_tokens=True) == hf_tok.decode(ids, skip_special_tokens=True)
    assert model.eos_token == hf_tok.eos_token == "<|endoftext|>"
