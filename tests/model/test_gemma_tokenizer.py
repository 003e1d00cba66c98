"""Gemma's SentencePiece tokenizer through llama.cpp's converter: a Gemma-style SentencePiece model
(trained offline with the ``sentencepiece`` package) beside tiny random Gemma 2 and Gemma 3
checkpoints, converted to GGUF by llama.cpp's own ``convert_hf_to_gguf.py``. kvgen's tokenizer from
the GGUF metadata (``tokenizer.ggml.model = "llama"``, scores and token types, no merges) encodes,
decodes and renders the chat template as transformers' ``GemmaTokenizer`` of the directory does,
and as transformers' own tokenizer for the GGUF file; greedy generation from text equals
transformers' model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import transformers
from family_models import random_family_model, save_gemma_tokenizer
from gguf_models import GGUF_CORPUS, TOKENIZER_TEXTS
from hf_models import assert_generate_equals_hf
from llama_cpp_convert import convert, converter

import kvgen

TEXTS = TOKENIZER_TEXTS + [
    "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
    "<bos><eos>text between<pad><mask><unk>",
    "ⓐ ẞ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ﷽ \u200b zero\u00a0width",  # unseen characters: byte fallback
]
CORPUS = GGUF_CORPUS + ["Crème brûlée, naïve café — 你好，世界！ こんにちは Привет 😀"] * 5


@pytest.fixture(scope="module")
def gemma_files(tmp_path_factory):
    """family -> (transformers model, GemmaTokenizer, GGUF path)."""
    tokenizer_dir = tmp_path_factory.mktemp("gemma-tokenizer")
    hf_tok = save_gemma_tokenizer(tokenizer_dir, CORPUS)
    out, jobs = {}, []
    for family in ("gemma2", "gemma3"):
        base = tmp_path_factory.mktemp(family)
        model = random_family_model(family, vocab_size=len(hf_tok), bos_token_id=hf_tok.bos_token_id,
                                    eos_token_id=hf_tok.eos_token_id, pad_token_id=hf_tok.pad_token_id)
        model.save_pretrained(base / "hf")
        for f in tokenizer_dir.iterdir():
            (base / "hf" / f.name).write_bytes(f.read_bytes())
        jobs.append((base / "hf", base / "f32.gguf", "f32"))
        out[family] = (model, hf_tok, base / "f32.gguf")
    convert(converter(), jobs)
    return out


def test_the_trained_tokenizer_is_gemma_shaped(gemma_files):
    """The reference really has what the GGUF path must handle: no merges in the file, whitespace
    pieces, byte fallback, Gemma's special tokens at Gemma's ids."""
    import gguf

    _, hf_tok, path = gemma_files["gemma2"]
    fields = gguf.GGUFReader(str(path)).fields
    assert fields["tokenizer.ggml.model"].contents() == "llama" and "tokenizer.ggml.merges" not in fields
    tokens = fields["tokenizer.ggml.tokens"].contents()
    assert tokens[:4] == ["<pad>", "<eos>", "<bos>", "<unk>"] and "<0xF0>" in tokens
    types = dict(zip(tokens, fields["tokenizer.ggml.token_type"].contents()))
    assert types["<start_of_turn>"] == 3 and types["\n\n"] == 4  # control, user-defined
    assert types["  "] == 4 and "\u2581\u2581" not in types  # llama.cpp spells runs of spaces as spaces
    assert hf_tok.tokenize("a  b") == ["a", "\u2581\u2581", "b"]
    assert "<0xE2>" in hf_tok.tokenize("ⓐ")  # not in the corpus


@pytest.mark.parametrize("family", ["gemma2", "gemma3"])
def test_encode_and_decode_equal_transformers(gemma_files, family):
    _, hf_tok, path = gemma_files[family]
    model = kvgen.Model.load(path)
    hf_gguf = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    for text in TEXTS:
        ids = hf_tok.encode(text)
        assert model.encode(text) == ids == hf_gguf.encode(text), text
        assert ids[0] == hf_tok.bos_token_id
        for skip in (False, True):
            assert model.decode(ids, skip_special_tokens=skip) == hf_tok.decode(ids, skip_special_tokens=skip)
    rng = np.random.default_rng(1)
    for _ in range(30):
        ids = rng.integers(0, len(hf_tok), size=12).tolist()
        assert model.decode(ids) == hf_tok.decode(ids)
    assert (model.bos_token, model.eos_token) == (hf_tok.bos_token, hf_tok.eos_token)


@pytest.mark.parametrize("family", ["gemma2", "gemma3"])
def test_chat_template_renders_as_transformers(gemma_files, family):
    _, hf_tok, path = gemma_files[family]
    model = kvgen.Model.load(path)
    chat = [{"role": "user", "content": "Hi 😀  there"}, {"role": "assistant", "content": " Hello\n"},
            {"role": "user", "content": "2+2?"}]
    text = model.apply_chat_template(chat)
    assert text == hf_tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    # the template writes <bos> itself: tokenized as transformers tokenizes a rendered chat
    assert model.encode(text, add_special_tokens=False) == hf_tok.encode(text, add_special_tokens=False)


@pytest.mark.parametrize("family", ["gemma2", "gemma3"])
def test_greedy_generation_from_text_equals_transformers(gemma_files, family):
    hf, hf_tok, path = gemma_files[family]
    model = kvgen.Model.load(path, exact=True)
    prompts = [model.encode(t) for t in ("Hello, world!", "你好 😀", "def f(x):\n")]
    assert_generate_equals_hf(model, hf, prompts, hf_tok.pad_token_id, do_sample=False, max_new_tokens=8)


def test_files_without_the_family_rules_differ(tmp_path, gemma_files):
    """The Gemma rules matter: the same vocabulary read with Llama's SentencePiece rules (Metaspace
    prefix, score-ordered merges) encodes these texts differently, so the checks above can fail."""
    import gguf

    _, hf_tok, path = gemma_files["gemma2"]
    reader = gguf.GGUFReader(str(path))
    llama = Path(tmp_path / "llama.gguf")
    writer = gguf.GGUFWriter(str(llama), "llama")
    for key in ("tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
                "tokenizer.ggml.token_type"):
        field = reader.fields[key]
        value = field.contents()
        if key == "tokenizer.ggml.model":
            writer.add_tokenizer_model(value)
        elif key == "tokenizer.ggml.tokens":
            writer.add_token_list(value)
        elif key == "tokenizer.ggml.scores":
            writer.add_token_scores(value)
        else:
            writer.add_token_types(value)
    writer.add_tensor("t", np.zeros(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    from kvgen.loaders.gguf.file import read_gguf_file
    from kvgen.loaders.gguf.tokenizer import tokenizer_from_gguf

    as_llama = tokenizer_from_gguf(read_gguf_file(llama)).tokenizer
    differ = [t for t in TEXTS if as_llama.encode(t, add_special_tokens=False).ids
              != hf_tok.encode(t, add_special_tokens=False)]
    assert len(differ) >= len(TEXTS) // 2
