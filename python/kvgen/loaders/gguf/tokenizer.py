"""A Hugging Face ``tokenizers.Tokenizer`` built from a GGUF file's tokenizer metadata.

A GGUF file has no ``tokenizer.json``: llama.cpp stores the vocabulary, the merges, the token
types and the special token ids as metadata keys (``tokenizer.ggml.*``). This module rebuilds
the tokenizer those keys describe out of ``tokenizers`` building blocks, mirroring what
``transformers`` does for ``AutoTokenizer.from_pretrained(directory, gguf_file=name)``
(``transformers/integrations/gguf/gguf_tokenizer_mapping.py`` and the ``GPT2Tokenizer`` /
``LlamaTokenizer`` / ``TokenizersBackend`` classes it hands the vocabulary to), so that
``encode``/``decode`` give the same ids and text as that tokenizer.

Two tokenizer models (``tokenizer.ggml.model``) are supported:

* ``"gpt2"``: byte-level BPE (GPT-2, SmolLM2, Llama 3, Qwen2, ...). Tokens are spelled in the
  GPT-2 byte alphabet; a token spelled otherwise is re-spelled byte by byte, as transformers
  does. ``tokenizer.ggml.pre`` picks the split regex for the pre-tokenizers transformers knows.
* ``"llama"``: SentencePiece-style BPE with byte fallback (Llama 2, TinyLlama, Mistral v0.1).
  Merges come from the file, or, as in most such files, are derived from the token scores.
  Two families get transformers' own rules for their vocabularies (``gemma_tokenizer`` and
  ``phi3_tokenizer`` in ``gguf_tokenizer_mapping.py``), picked by ``general.architecture``:

  - Gemma (``gemma``, ``gemma2``, ``gemma3``): ``GemmaTokenizer``'s shape (spaces become
    ``\u2581`` in a normalizer, no prefix space, no strip when decoding); tokens made only of spaces,
    which llama.cpp stores as real spaces, are spelled with ``\u2581`` again, and merges without
    a ``tokenizer.ggml.merges`` key are ordered by the tokens' place in the file, not by score.
  - Phi-3 (``phi3``): the prefix space and the spaces come from a normalizer
    (``Prepend`` + ``Replace``) instead of ``Metaspace``.

Deliberate differences from transformers, all in malformed or unusual files:

* transformers adds its tokenizer classes' default special tokens (``<|endoftext|>`` for
  ``gpt2``; ``<unk>``, ``<s>``, ``</s>`` for ``llama``) and the named special tokens as *new*
  ids past the vocabulary when the vocabulary lacks them; here a special token is only marked
  when the vocabulary has it, so every id stays inside the model's embedding table.
* Special ids (``bos_token_id`` ...) are the file's ids; transformers looks the token's text
  up again, which differs only when the vocabulary lists the same token twice.
* Missing or inconsistent metadata raises ``ValueError`` naming the key (transformers raises
  ``KeyError``/``IndexError`` or a panic from ``tokenizers``).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from kvgen.loaders.gguf.file import GGUFFile
from kvgen.loaders.gguf.metadata import (
    FLOAT_TYPES,
    INTEGER_TYPES,
    read_bool,
    read_int,
    read_number_array,
    read_string,
    read_string_array,
)

__all__ = ["GGUFTokenizerInfo", "tokenizer_from_gguf"]

# llama.cpp's token types (gguf.TokenType).
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6


# Split regexes transformers applies for these `tokenizer.ggml.pre` values (set_split_regex).
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_TEKKEN_SPLIT = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_GPT4O_SPLIT = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN35_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_PRE_TOKENIZER_SPLITS = {
    **dict.fromkeys(["llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                     "jina-v5-nano", "dbrx", "smaug-bpe"], _LLAMA3_SPLIT),
    "tekken": _TEKKEN_SPLIT,
    **dict.fromkeys(["qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez"], _QWEN2_SPLIT),
    "qwen35": _QWEN35_SPLIT,
    **dict.fromkeys(["gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"], _GPT4O_SPLIT),
}

# transformers builds "llama" vocabularies of these architectures with their own rules.
_GEMMA_ARCHITECTURES = frozenset({"gemma", "gemma2", "gemma3", "gemma4"})
_PHI3_ARCHITECTURES = frozenset({"phi3"})


@dataclasses.dataclass(frozen=True)
class GGUFTokenizerInfo:
    """The tokenizer a GGUF file describes, and its special tokens.

    ``tokenizer.encode(text)`` already adds what transformers' ``encode(text)`` adds for this
    file (BOS when ``add_bos_token``, EOS when ``add_eos_token``) through its post-processor;
    pass ``add_special_tokens=False`` to get the bare ids. ``add_bos_token`` is ``True`` for
    ``"llama"`` vocabularies whose file does not say (llama.cpp's and transformers' default).
    """

    tokenizer: Tokenizer
    bos_token_id: Optional[int]
    eos_token_id: Optional[int]
    pad_token_id: Optional[int]
    add_bos_token: bool
    chat_template: Optional[str]
    bos_token: Optional[str]
    eos_token: Optional[str]
    unk_token_id: Optional[int] = None
    add_eos_token: bool = False


# --- building ----------------------------------------------------------------------------------

def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte alphabet: every byte as a printable character."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    codes = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    return dict(zip(printable, map(chr, codes)))


_MERGES_KEY = "tokenizer.ggml.merges"
_BYTE_SPELLING = _bytes_to_unicode()
_BYTE_ALPHABET = frozenset(_BYTE_SPELLING.values())


def _byte_level_vocab(tokens: list[str]) -> dict[str, int]:
    """Vocabulary for a byte-level BPE: tokens already in the byte alphabet as they are, any
    other token re-spelled byte by byte (transformers' ``byte_level_tokenizer``)."""
    alphabet, spelling = _BYTE_ALPHABET, _BYTE_SPELLING
    if alphabet.issuperset("".join(tokens)):  # llama.cpp's files: every token already spelled so
        return dict(zip(tokens, range(len(tokens))))
    return {
        token if alphabet.issuperset(token) else "".join(spelling[b] for b in token.encode("utf-8")): index
        for index, token in enumerate(tokens)
    }


def _parse_merges(merges: list[str]) -> list[tuple[str, str]]:
    """The merges as token pairs; ValueError naming the first entry that is not two tokens
    joined by one space. Whether the tokens are in the vocabulary is checked by the BPE
    model itself as it is built (_bpe)."""
    pairs = [tuple(merge.split(" ")) for merge in merges]
    if any(len(pair) != 2 for pair in pairs):
        index = next(i for i, pair in enumerate(pairs) if len(pair) != 2)
        raise ValueError(f"GGUF metadata {_MERGES_KEY}[{index}] = {merges[index]!r} is not two tokens joined by one "
                         "space")
    return pairs  # type: ignore[return-value]


def _missing_merge_token(pairs: list[tuple[str, str]], vocab: dict[str, int]) -> Optional[int]:
    """The index of the first merge naming a token (or a merged token) missing from vocab."""
    for index, (left, right) in enumerate(pairs):
        if left not in vocab or right not in vocab or left + right not in vocab:
            return index
    return None


def _bpe(vocab: dict[str, int], pairs: list[tuple[str, str]], merges: Optional[list[str]], **options) -> Tokenizer:
    """A tokenizer over the BPE model of vocab and pairs. The model refuses merges naming
    tokens outside vocab; that error becomes a ValueError naming the file's merge entry
    (merges: the file's strings the pairs came from; None when the pairs were derived)."""
    try:
        return Tokenizer(models.BPE(vocab=vocab, merges=pairs, dropout=None, **options))
    except Exception as error:  # tokenizers raises a plain Exception
        index = _missing_merge_token(pairs, vocab) if merges is not None else None
        if index is None:
            raise ValueError(f"GGUF tokenizer: the BPE model cannot be built ({error})") from None
        raise ValueError(f"GGUF metadata {_MERGES_KEY}[{index}] = {merges[index]!r} names a token missing from "
                         "tokenizer.ggml.tokens") from None


def _merges_from_scores(vocab: dict[str, int], scores: dict[str, float]) -> list[tuple[str, str]]:
    """Merges a SentencePiece BPE vocabulary implies: every split of a token into two tokens,
    best score first (transformers' ``generate_merges`` with scores)."""
    merges = []
    for merge, score in scores.items():
        local = []
        for index in range(1, len(merge)):
            left, right = merge[:index], merge[index:]
            if left in vocab and right in vocab:
                local.append((left, right, score))
        local.sort(key=lambda x: (vocab[x[0]], vocab[x[1]]))
        merges.extend(local)
    merges.sort(key=lambda val: (val[2], len(val[0]), len(val[1])), reverse=True)
    return [(left, right) for left, right, _ in merges]


def _check_id(key: str, value: Optional[int], count: int) -> Optional[int]:
    if value is not None and not 0 <= value < count:
        raise ValueError(f"GGUF metadata {key} = {value} is not a token id (the vocabulary has {count} tokens)")
    return value


def tokenizer_from_gguf(reader: GGUFFile) -> GGUFTokenizerInfo:
    """Build the tokenizer described by a GGUF file's metadata.

    ``reader`` is the file as ``kvgen.loaders.gguf.file.read_gguf_file`` parsed it. Supports
    ``tokenizer.ggml.model`` ``"gpt2"`` (byte-level BPE) and ``"llama"`` (SentencePiece BPE
    with byte fallback); encoding and decoding match transformers' tokenizer for the same file
    (``AutoTokenizer.from_pretrained(directory, gguf_file=name)``), and ``encode`` adds BOS/EOS
    as transformers' ``encode`` does. Control tokens (token type 3) are special added tokens,
    user-defined ones (4) plain added tokens, so each encodes to its single id.

    Raises ``ValueError`` naming the key for another tokenizer model or for missing or
    inconsistent metadata (no tokens, merges naming unknown tokens, a special id outside the
    vocabulary, ...).
    """
    model = read_string(reader, "tokenizer.ggml.model")
    if model is None:
        raise ValueError("GGUF metadata tokenizer.ggml.model is missing: the file describes no tokenizer")
    if model == "gemma4":  # llama.cpp's name for Gemma 4's vocabulary: SentencePiece BPE, with merges
        model = "llama"
    if model not in ("gpt2", "llama"):
        raise ValueError(
            f"GGUF metadata tokenizer.ggml.model = {model!r} is not supported; supported: 'gpt2' (byte-level BPE), "
            "'llama' (SentencePiece BPE)"
        )
    architecture = read_string(reader, "general.architecture")
    gemma = model == "llama" and architecture in _GEMMA_ARCHITECTURES
    phi3 = model == "llama" and architecture in _PHI3_ARCHITECTURES

    tokens = read_string_array(reader, "tokenizer.ggml.tokens")
    if not tokens:
        raise ValueError("GGUF metadata tokenizer.ggml.tokens is missing or empty")
    count = len(tokens)
    token_types = read_number_array(reader, "tokenizer.ggml.token_type", INTEGER_TYPES, "integers")
    if token_types is not None and len(token_types) != count:
        raise ValueError(
            f"GGUF metadata tokenizer.ggml.token_type has {len(token_types)} entries for {count} tokens"
        )
    merges = read_string_array(reader, "tokenizer.ggml.merges")

    special_ids = {
        name: _check_id(f"tokenizer.ggml.{key}", read_int(reader, f"tokenizer.ggml.{key}"), count)
        for name, key in [("bos", "bos_token_id"), ("eos", "eos_token_id"), ("unk", "unknown_token_id"),
                          ("pad", "padding_token_id")]
    }
    add_bos = read_bool(reader, "tokenizer.ggml.add_bos_token")
    add_eos = read_bool(reader, "tokenizer.ggml.add_eos_token")
    if add_bos is None:
        add_bos = model == "llama"  # llama.cpp adds BOS to SentencePiece vocabularies that do not say
    add_eos = bool(add_eos)
    chat_template = read_string(reader, "tokenizer.chat_template")

    if model == "gpt2":
        vocab = _byte_level_vocab(tokens)
        pairs = _parse_merges(merges) if merges is not None else []
        tokenizer = _bpe(vocab, pairs, merges, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False)
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        class_defaults = ["<|endoftext|>"]  # GPT2Tokenizer's unk/bos/eos
    else:
        if gemma:  # a token of spaces only is stored as real spaces; GemmaTokenizer spells it with U+2581
            # (for the model only: the added tokens below are the file's spelling, as in transformers)
            spelled = ["\u2581" * len(t) if " " in t and not t.strip() else t for t in tokens]
        else:
            spelled = tokens
        vocab = {token: index for index, token in enumerate(spelled)}
        if merges is not None:
            pairs = _parse_merges(merges)
        elif gemma:  # Gemma's scores do not follow its merge order; the tokens' order in the file does
            pairs = _merges_from_scores(vocab, {token: -index for index, token in enumerate(spelled)})
        else:
            scores = read_number_array(reader, "tokenizer.ggml.scores", FLOAT_TYPES | INTEGER_TYPES, "numbers")
            if scores is None:
                raise ValueError(
                    "GGUF metadata: a 'llama' tokenizer needs tokenizer.ggml.merges or tokenizer.ggml.scores")
            if len(scores) != count:
                raise ValueError(f"GGUF metadata tokenizer.ggml.scores has {len(scores)} entries for {count} tokens")
            pairs = _merges_from_scores(vocab, dict(zip(spelled, scores.tolist())))
        unk = {"unk_token": "<unk>"} if gemma and "<unk>" in vocab else {}
        tokenizer = _bpe(vocab, pairs, merges, fuse_unk=True, byte_fallback=True, **unk)
        if gemma:  # GemmaTokenizer: spaces become U+2581 before the split; nothing to strip when decoding
            tokenizer.normalizer = normalizers.Replace(" ", "\u2581")
            tokenizer.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous", invert=False)
            tokenizer.decoder = decoders.Sequence([
                decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
            ])
            class_defaults = ["<unk>", "<bos>", "<eos>", "<pad>", "<mask>"]  # GemmaTokenizer's
        else:
            if phi3:  # the prefix space comes from a normalizer, on every piece of text between added tokens
                tokenizer.normalizer = normalizers.Sequence([
                    normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581"),
                ])
            else:
                tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first",
                                                                   split=False)
            tokenizer.decoder = decoders.Sequence([
                decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                decoders.Strip(content=" ", left=1, right=0),
            ])
            class_defaults = ["<unk>", "<s>", "</s>"]  # LlamaTokenizer's unk/bos/eos

    split = _PRE_TOKENIZER_SPLITS.get(read_string(reader, "tokenizer.ggml.pre"))
    if split is not None:
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])

    # Added tokens, in transformers' order (a later call can change an earlier token's flags).
    def special(content: str) -> AddedToken:
        return AddedToken(content, normalized=False, special=True)

    in_vocab = [t for t in dict.fromkeys(class_defaults) if t in vocab]
    if in_vocab:
        tokenizer.add_special_tokens([special(t) for t in in_vocab])
    if token_types is not None:
        control = np.flatnonzero(token_types == _CONTROL).tolist()
        control = [tokens[i] for i in control]
        if model == "gpt2":  # a control token outside the byte alphabet is a llama.cpp mislabel; skipped
            control = [t for t in control if _BYTE_ALPHABET.issuperset(t)]
        if control:
            tokenizer.add_special_tokens([special(t) for t in control])
        user = [tokens[i] for i in np.flatnonzero(token_types == _USER_DEFINED).tolist()]
        user = [t for t in user if t in vocab]
        if user:
            tokenizer.add_tokens([AddedToken(t, normalized=False, special=False) for t in user])
    named = {name: (tokens[i] if i is not None else None) for name, i in special_ids.items()}
    in_vocab = [t for t in dict.fromkeys(named.values()) if t is not None and t in vocab]
    if in_vocab:
        tokenizer.add_special_tokens([special(t) for t in in_vocab])

    # transformers' update_post_processor: "[bos] $A [eos]", and the same around $B.
    bos, eos = named["bos"], named["eos"]
    add_bos = add_bos and bos is not None
    add_eos = add_eos and eos is not None
    single = f"{(bos + ':0 ') if add_bos else ''}$A:0{(' ' + eos + ':0') if add_eos else ''}"
    pair = f"{single}{(' ' + bos + ':1') if add_bos else ''} $B:1{(' ' + eos + ':1') if add_eos else ''}"
    specials = ([(bos, special_ids["bos"])] if add_bos else []) + ([(eos, special_ids["eos"])] if add_eos else [])
    tokenizer.post_processor = processors.TemplateProcessing(single=single, pair=pair, special_tokens=specials)

    return GGUFTokenizerInfo(
        tokenizer=tokenizer,
        bos_token_id=special_ids["bos"],
        eos_token_id=special_ids["eos"],
        pad_token_id=special_ids["pad"],
        add_bos_token=add_bos,
        chat_template=chat_template,
        bos_token=bos,
        eos_token=eos,
        unk_token_id=special_ids["unk"],
        add_eos_token=add_eos,
    )
