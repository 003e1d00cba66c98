"""Mistral's real tekken vocabulary through llama.cpp's converter: Mistral-Nemo's tekken.json
(shipped on PyPI in the mistral_common wheel) converted by transformers' own tekken converter,
written beside a tiny random Mistral checkpoint and converted to GGUF by llama.cpp's own
convert_hf_to_gguf.py, which recognises the tokenizer as Mistral-Nemo's ("tekken"). kvgen's
tokenizer from that GGUF encodes and decodes a multilingual text with code and emoji as the
converted tokenizer does, and as Mistral's own Tekkenizer does."""

from __future__ import annotations

import pytest
import torch
import transformers
from family_models import save_tekken_tokenizer, tekken_packages
from gguf_models import MULTILINGUAL_TEXTS
from llama_cpp_convert import DEFAULT_CACHE, convert, converter

import kvgen
from kvgen.loaders.gguf.file import read_gguf_file
from kvgen.loaders.gguf.metadata import read_bool, read_string

TEXTS = MULTILINGUAL_TEXTS + ["[INST] hi [/INST]<s></s> [TOOL_CALLS]"]


@pytest.fixture(scope="module")
def tekken_file(tmp_path_factory):
    """(transformers' tokenizer, Tekkenizer's ids and decodings of TEXTS, the GGUF path)."""
    directory = tmp_path_factory.mktemp("tekken-vocab")
    tekken = save_tekken_tokenizer(directory, tekken_packages(DEFAULT_CACHE.parent / "tekken-vocabulary"), TEXTS)
    hf_tok = transformers.AutoTokenizer.from_pretrained(directory)
    config = transformers.MistralConfig(vocab_size=len(hf_tok), hidden_size=32, intermediate_size=32,
                                        num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                                        max_position_embeddings=64, bos_token_id=hf_tok.bos_token_id,
                                        eos_token_id=hf_tok.eos_token_id)
    torch.manual_seed(0)
    transformers.MistralForCausalLM(config).save_pretrained(directory)
    path = directory / "mistral.gguf"
    convert(converter(), [(directory, path, "f32")])
    return hf_tok, tekken, path


def test_llama_cpp_recognises_mistral_nemos_tokenizer(tekken_file):
    hf_tok, _, path = tekken_file
    file = read_gguf_file(path)  # gguf-py's reader takes half a minute over 131,072 tokens and their merges
    assert read_string(file, "tokenizer.ggml.pre") == "tekken"
    assert read_bool(file, "tokenizer.ggml.add_bos_token") is True
    assert len(hf_tok) == 131072 and hf_tok.convert_tokens_to_ids(["<s>", "</s>", "[INST]"]) == [1, 2, 3]


def test_tekken_vocabulary_from_gguf_equals_transformers_and_tekkenizer(tekken_file):
    """Encoding (BOS added, as the file says) and decoding equal transformers' tokenizer of the
    directory, and, on plain text, Mistral's Tekkenizer (which reads "[INST]" in text as text,
    where transformers and llama.cpp read a special token)."""
    hf_tok, tekken, path = tekken_file
    model = kvgen.Model.load(path)
    assert model.bos_token == "<s>" and model.eos_token == "</s>"
    for text, tekken_ids, tekken_text in zip(TEXTS, tekken["ids"], tekken["texts"]):
        ids = hf_tok.encode(text)
        assert model.encode(text) == ids, text
        assert ids[0] == hf_tok.bos_token_id and ids[-1:] != [hf_tok.eos_token_id]
        if "[INST]" not in text:
            assert ids == tekken_ids, text
            assert model.decode(ids, skip_special_tokens=True) == tekken_text
        assert model.decode(ids) == hf_tok.decode(ids)
        assert model.decode(ids, skip_special_tokens=True) == hf_tok.decode(ids, skip_special_tokens=True)


def test_mistral_chat_template_travels_through_the_converter(tekken_file):
    """The chat template transformers' converter attached (mistral_common's, for this
    vocabulary) reaches the GGUF file, and kvgen renders it as transformers does."""
    hf_tok, _, path = tekken_file
    model = kvgen.Model.load(path)
    assert hf_tok.chat_template and model.chat_template == hf_tok.chat_template
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi 😀"},
            {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "2+2?"}]
    assert model.apply_chat_template(chat) == hf_tok.apply_chat_template(chat, tokenize=False,
                                                                         add_generation_prompt=True)
