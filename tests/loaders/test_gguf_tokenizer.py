"""kvgen's tokenizer from GGUF metadata against transformers' tokenizer for the same file
(``AutoTokenizer.from_pretrained(directory, gguf_file=name)``): the real SmolLM2 GGUF, small
synthetic GGUF files (byte-level and SentencePiece BPE), and malformed metadata."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest
import transformers
from gguf_models import (
    TOKENIZER_TEXTS,
    add_gguf_tokenizer,
    train_byte_level_bpe,
    train_sentencepiece_bpe,
    write_tokenizer_gguf,
)

from kvgen.loaders.gguf.file import read_gguf_file
from kvgen.loaders.gguf.tokenizer import GGUFTokenizerInfo, tokenizer_from_gguf

TEXTS = TOKENIZER_TEXTS + [
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|><|im_end|>text between<|im_start|><|im_start|>",
    "<think>hello world</think>",
    "<repo_name>kvgen<file_sep>main.py<jupyter_code>x = 1<jupyter_output>",
    "</s>Hi<s> there </s> <unk>",
    "(hello) [world] {x}; WE'RE HERE 1999\n\n\tindented",
]


def hf_gguf_tokenizer(path) -> transformers.PreTrainedTokenizerBase:
    path = Path(path)
    return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def kvgen_tokenizer(path) -> GGUFTokenizerInfo:
    return tokenizer_from_gguf(read_gguf_file(path))


# --- SmolLM2 ------------------------------------------------------------------------------------

@pytest.fixture
def smollm2(smollm2_tokenizer_info, smollm2_hf_tokenizer):
    """kvgen's and transformers' tokenizers for the SmolLM2 GGUF (session fixtures in conftest.py)."""
    return smollm2_tokenizer_info, smollm2_hf_tokenizer


@pytest.mark.parametrize("text", TEXTS)
def test_smollm2_encode_matches_transformers(smollm2, text):
    info, hf = smollm2
    assert info.tokenizer.encode(text).ids == hf.encode(text)
    assert info.tokenizer.encode(text, add_special_tokens=False).ids == hf.encode(text, add_special_tokens=False)


def test_smollm2_special_tokens_encode_whole(smollm2):
    info, hf = smollm2
    for token in ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]:
        assert info.tokenizer.encode(token).ids == [hf.convert_tokens_to_ids(token)]
    assert info.tokenizer.encode("<|im_start|>user").ids[0] == info.bos_token_id


def test_smollm2_batch_encode_matches_transformers(smollm2):
    info, hf = smollm2
    assert [e.ids for e in info.tokenizer.encode_batch(TEXTS)] == hf(TEXTS)["input_ids"]


@pytest.mark.parametrize("skip_special_tokens", [False, True])
def test_smollm2_decode_matches_transformers(smollm2, skip_special_tokens):
    info, hf = smollm2
    rng = np.random.default_rng(0)
    vocab = info.tokenizer.get_vocab_size()
    specials = [0, 1, 2, 3, 16]
    for length in [0, 1, 2, 5, 17, 64]:
        for _ in range(5):
            ids = rng.integers(0, vocab, size=length).tolist()
            if length:
                ids[rng.integers(0, length)] = int(rng.choice(specials))
            assert (info.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)
                    == hf.decode(ids, skip_special_tokens=skip_special_tokens)), ids
    for text in TEXTS:  # a round trip through transformers' ids
        ids = hf.encode(text)
        assert info.tokenizer.decode(ids, skip_special_tokens=False) == hf.decode(ids) == text


def test_smollm2_special_ids_and_strings_match_transformers(smollm2):
    info, hf = smollm2
    assert (info.bos_token_id, info.eos_token_id, info.pad_token_id, info.unk_token_id) == (
        hf.bos_token_id, hf.eos_token_id, hf.pad_token_id, hf.unk_token_id)
    assert (info.bos_token, info.eos_token) == (hf.bos_token, hf.eos_token)
    assert info.add_bos_token == hf.add_bos_token
    assert info.add_eos_token == hf.add_eos_token
    assert info.chat_template == hf.chat_template and info.chat_template
    assert info.tokenizer.get_vocab_size() == len(hf)
    assert info.tokenizer.get_vocab() == hf.get_vocab()



# --- synthetic GGUF files -------------------------------------------------------------------

@pytest.fixture(scope="module")
def byte_level():
    return train_byte_level_bpe(300, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                added_tokens=["<think>", "</think>"])


@pytest.fixture(scope="module")
def sentencepiece():
    return train_sentencepiece_bpe(400)


BYTE_LEVEL_CASES = {
    "plain": dict(bos="<|endoftext|>", eos="<|endoftext|>"),
    "chatml": dict(bos="<|im_start|>", eos="<|im_end|>", unk="<|endoftext|>", pad="<|endoftext|>",
                   add_bos_token=False),
    "bos_eos_llama3_split": dict(pre="llama-bpe", bos="<|im_start|>", eos="<|im_end|>", add_bos_token=True,
                                 add_eos_token=True),
    "qwen2_split_no_specials": dict(pre="qwen2"),
    "smollm_chatml": dict(pre="smollm", bos="<|im_start|>", eos="<|im_end|>", add_bos_token=False),
    "tekken_split": dict(pre="tekken", bos="<|endoftext|>", eos="<|im_end|>"),
}

SENTENCEPIECE_CASES = {
    "scores_default_bos": dict(model="llama", merges=False, bos="<s>", eos="</s>", unk="<unk>"),
    "merges_no_bos": dict(model="llama", bos="<s>", eos="</s>", unk="<unk>", add_bos_token=False),
    "scores_bos_eos": dict(model="llama", merges=False, bos="<s>", eos="</s>", unk="<unk>", add_bos_token=True,
                           add_eos_token=True),
}


def _compare(path):
    info, hf = kvgen_tokenizer(path), hf_gguf_tokenizer(path)
    for text in TEXTS:
        assert info.tokenizer.encode(text).ids == hf.encode(text), text
        ids = hf.encode(text)
        for skip in (False, True):
            assert info.tokenizer.decode(ids, skip_special_tokens=skip) == hf.decode(ids, skip_special_tokens=skip)
    rng = np.random.default_rng(1)
    for _ in range(20):
        ids = rng.integers(0, info.tokenizer.get_vocab_size(), size=12).tolist()
        assert info.tokenizer.decode(ids, skip_special_tokens=False) == hf.decode(ids, skip_special_tokens=False)
    assert (info.bos_token_id, info.eos_token_id, info.pad_token_id) == (hf.bos_token_id, hf.eos_token_id,
                                                                         hf.pad_token_id)
    assert (info.bos_token, info.eos_token) == (hf.bos_token, hf.eos_token)
    assert (info.add_bos_token, info.add_eos_token) == (hf.add_bos_token, hf.add_eos_token)
    assert info.tokenizer.get_vocab() == hf.get_vocab()
    return info, hf


@pytest.mark.parametrize("case", sorted(BYTE_LEVEL_CASES))
def test_byte_level_gguf_matches_transformers(tmp_path, byte_level, case):
    path = write_tokenizer_gguf(tmp_path / "tok.gguf", byte_level, **BYTE_LEVEL_CASES[case])
    info, _ = _compare(path)
    assert info.tokenizer.encode("<think>", add_special_tokens=False).ids == [byte_level.token_to_id("<think>")]
    assert info.tokenizer.encode("<|im_end|>", add_special_tokens=False).ids == [byte_level.token_to_id("<|im_end|>")]


@pytest.mark.parametrize("case", sorted(SENTENCEPIECE_CASES))
def test_sentencepiece_gguf_matches_transformers(tmp_path, sentencepiece, case):
    path = write_tokenizer_gguf(tmp_path / "tok.gguf", sentencepiece, **SENTENCEPIECE_CASES[case])
    info, _ = _compare(path)
    if case == "scores_default_bos":  # a "llama" vocabulary without add_bos_token gets BOS
        assert info.add_bos_token and info.tokenizer.encode("hi").ids[0] == sentencepiece.token_to_id("<s>")


def test_chat_template_and_flags_are_read(tmp_path, byte_level):
    template = "{% for m in messages %}{{ m.content }}{% endfor %}"
    path = write_tokenizer_gguf(tmp_path / "tok.gguf", byte_level, bos="<|im_start|>", eos="<|im_end|>",
                                add_bos_token=True, chat_template=template)
    info = kvgen_tokenizer(path)
    assert info.chat_template == template
    assert info.add_bos_token and info.tokenizer.encode("a").ids == [byte_level.token_to_id("<|im_start|>"),
                                                                     byte_level.token_to_id("a")]
    assert info.tokenizer.encode("a", add_special_tokens=False).ids == [byte_level.token_to_id("a")]


# --- malformed metadata ------------------------------------------------------------------------

def _raises(tmp_path, match, tokenizer=None, **kwargs):
    path = write_tokenizer_gguf(tmp_path / "bad.gguf", tokenizer, **kwargs)
    with pytest.raises(ValueError, match=match):
        kvgen_tokenizer(path)


@pytest.mark.parametrize("model", ["bert", "t5", "rwkv"])
def test_unknown_tokenizer_model_is_refused(tmp_path, byte_level, model):
    _raises(tmp_path, f"tokenizer.ggml.model = '{model}'", byte_level, model=model)


def test_missing_tokenizer_is_refused(tmp_path):
    _raises(tmp_path, "tokenizer.ggml.model is missing")


def test_missing_tokens_are_refused(tmp_path):
    _raises(tmp_path, "tokenizer.ggml.tokens is missing", metadata={"tokenizer.ggml.model": "gpt2"})


@pytest.mark.parametrize("key, name", [("bos", "bos_token_id"), ("eos", "eos_token_id"), ("unk", "unknown_token_id"),
                                       ("pad", "padding_token_id")])
def test_special_id_out_of_range_is_refused(tmp_path, byte_level, key, name):
    _raises(tmp_path, f"tokenizer.ggml.{name} = 10000", byte_level, **{key: 10_000})


def test_merges_naming_unknown_tokens_are_refused(tmp_path, byte_level):
    _raises(tmp_path, r"tokenizer.ggml.merges\[1\]", byte_level, merges=False,
            metadata={"tokenizer.ggml.merges": ["Ġ t", "Ġ zzzz"]})
    _raises(tmp_path, r"tokenizer.ggml.merges\[0\]", byte_level, merges=False,
            metadata={"tokenizer.ggml.merges": ["a b c"]})
    # both tokens known, the token they merge into is not
    _raises(tmp_path, r"tokenizer.ggml.merges\[1\]", byte_level, merges=False,
            metadata={"tokenizer.ggml.merges": ["Ġ t", "} {"]})


def test_sentencepiece_merges_naming_unknown_tokens_are_refused(tmp_path, sentencepiece):
    _raises(tmp_path, r"tokenizer.ggml.merges\[1\].*missing from tokenizer.ggml.tokens", sentencepiece,
            model="llama", merges=False, metadata={"tokenizer.ggml.merges": ["▁ t", "▁ zzzz"]})


def test_token_types_of_wrong_length_are_refused(tmp_path, byte_level):
    _raises(tmp_path, "tokenizer.ggml.token_type", byte_level, token_types=[1, 1, 1])


def _write(writer) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_sentencepiece_without_scores_or_merges_is_refused(tmp_path, sentencepiece):
    _raises(tmp_path, "tokenizer.ggml.scores", sentencepiece, model="llama", merges=False, scores=[])
    path = tmp_path / "noscores.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tokenizer_model("llama")
    writer.add_token_list(["<unk>", "a"])
    writer.add_tensor("t", np.zeros(4, dtype=np.float32))
    _write(writer)
    with pytest.raises(ValueError, match="tokenizer.ggml.merges or tokenizer.ggml.scores"):
        kvgen_tokenizer(path)


@pytest.fixture(scope="module")
def gemma_vocabulary():
    return train_sentencepiece_bpe(400, special_tokens=("<pad>", "<eos>", "<bos>", "<unk>", "<mask>",
                                                        "<start_of_turn>", "<end_of_turn>"))


@pytest.mark.parametrize("architecture", ["gemma2", "gemma3"])  # transformers reads no "gemma" GGUF config
@pytest.mark.parametrize("merges", [False, True], ids=["scores", "merges"])
def test_gemma_sentencepiece_matches_transformers(tmp_path, gemma_vocabulary, architecture, merges):
    """Gemma's rules (spaces normalized to U+2581 without a prefix, merges in file order when
    the file has none); tests/model/test_gemma_tokenizer.py runs llama.cpp's own Gemma files."""
    path = write_tokenizer_gguf(tmp_path / "tok.gguf", gemma_vocabulary, architecture=architecture, model="llama",
                                merges=merges, bos="<bos>", eos="<eos>", unk="<unk>", pad="<pad>")
    info, hf = _compare(path)
    assert info.tokenizer.encode(" a").ids == hf.encode(" a")
    assert info.tokenizer.decode(hf.encode(" a"), skip_special_tokens=False) == hf.decode(hf.encode(" a"))


@pytest.mark.parametrize("merges", [False, True], ids=["scores", "merges"])
def test_phi3_sentencepiece_matches_transformers(tmp_path, sentencepiece, merges):
    """Phi-3's rule: the prefix space from a normalizer, so "  hi" keeps both spaces and gains one."""
    path = write_tokenizer_gguf(tmp_path / "tok.gguf", sentencepiece, architecture="phi3", model="llama",
                                merges=merges, bos="<s>", eos="</s>", unk="<unk>")
    info, hf = _compare(path)
    llama = kvgen_tokenizer(write_tokenizer_gguf(tmp_path / "llama.gguf", sentencepiece, model="llama", merges=merges,
                                                 bos="<s>", eos="</s>", unk="<unk>"))
    for text in ("  hi", "a<s> b"):  # text starting with a space; text after an added token
        assert info.tokenizer.encode(text).ids == hf.encode(text)
        assert info.tokenizer.encode(text).ids != llama.tokenizer.encode(text).ids


def test_helper_writes_what_it_is_given(tmp_path, byte_level):
    """add_gguf_tokenizer round trip through gguf's reader (the helper the model tests use)."""
    path = tmp_path / "h.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    add_gguf_tokenizer(writer, byte_level, bos="<|im_start|>", eos=2, add_bos_token=False)
    writer.add_tensor("t", np.zeros(4, dtype=np.float32))
    _write(writer)
    fields = gguf.GGUFReader(str(path)).fields
    assert fields["tokenizer.ggml.tokens"].contents() == [byte_level.id_to_token(i)
                                                          for i in range(byte_level.get_vocab_size())]
    assert fields["tokenizer.ggml.bos_token_id"].contents() == byte_level.token_to_id("<|im_start|>")
    assert fields["tokenizer.ggml.eos_token_id"].contents() == 2
    types = fields["tokenizer.ggml.token_type"].contents()
    assert types[byte_level.token_to_id("<|im_end|>")] == 3 and types[byte_level.token_to_id("<think>")] == 4
