"""kvgen.Model: built-in models (the families of kvgen.families: GPT-2, Llama, Mistral, Qwen,
Gemma, Phi-3, Granite, SmolLM3, Qwen3-MoE) from Hugging Face checkpoint directories or GGUF
files, with their tokenizer and chat template. Each family's module turns the file's config
(or GGUF keys) into the C++ model; this module holds the ``Model`` class over it.

Weights are NumPy arrays the C++ model reads in place or repacks: float32 matrices are used as
read; quantized GGUF matrices stay quantized (repacked into the kernels' tiles,
kvgen.loaders.quantize), as do float16 / bfloat16 ones (the F16 / BF16 kernels) unless ``dtype=``
quantizes them at load; norms and biases are float32. The tokenizer is a Hugging Face
``tokenizers.Tokenizer`` (tokenizer.json, or built from the GGUF metadata), the chat template is
rendered with jinja2 (kvgen.loaders.chat_template).
"""

from __future__ import annotations

import operator
import os
import warnings
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from kvgen import _core
from kvgen._mtp_head import MtpHead
from kvgen.families import Capabilities, capabilities_for, family_of_config, read_gguf
from kvgen.families.composite import text_checkpoint
from kvgen.loaders.checkpoint import (
    read_chat_template,
    read_config,
    read_tokenizer,
    read_weight_types,
    read_weights,
)
from kvgen.loaders.pooling import directory_pooling

_SENTINEL = "\u2063kvgen-end-of-turn\u2063"


class WindowNotStoredWarning(UserWarning):
    """A GGUF file of a family that may window its layers stores no sliding window (llama.cpp's
    converter drops it): kvgen runs full attention, as llama.cpp does (``Model.notes``). Give the
    window with ``Model.load(..., sliding_window=N)``, or silence the warning for checkpoints that
    had none: ``warnings.filterwarnings("ignore", category=kvgen.WindowNotStoredWarning)``."""


ACTIVATIONS = ("int8x2", "int8", "float", "bf16")


KV_CACHE_DTYPES = ("auto", "float32", "float16", "int8")


def _kv_cache_dtype(activations: str, kv_cache_dtype: str) -> str:
    """Model.load's ``kv_cache_dtype``, checked against the activations mode: exact mode
    (float activations) keeps float32 keys and values, so a lossy cache is refused."""
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        raise ValueError(f"kv_cache_dtype={kv_cache_dtype!r:.60} is not one of {', '.join(map(repr, KV_CACHE_DTYPES))}")
    if activations == "float" and kv_cache_dtype in ("float16", "int8"):
        raise ValueError(f"exact=True (float activations) keeps float32 keys and values; kv_cache_dtype="
                         f"{kv_cache_dtype!r} would round them (use 'auto' or 'float32', or drop exact)")
    return kv_cache_dtype


def _activations(exact: bool, activations: Optional[str]) -> str:
    """The activations mode from Model.load's ``exact`` / ``activations`` arguments."""
    if not isinstance(exact, bool):
        raise TypeError(f"exact must be a bool, got {exact!r:.60}")
    if activations is None:
        return "float" if exact else "int8x2"
    if activations not in ACTIVATIONS:
        raise ValueError(f"activations={activations!r:.60} is not one of {', '.join(map(repr, ACTIVATIONS))}")
    if exact and activations != "float":
        raise ValueError(f"exact=True asks for float activations, activations={activations!r} for int8 ones")
    return activations


def _token_id(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < 2**63:
        raise ValueError(f"model config: {key} must hold non-negative integer token ids, got {value!r:.60}")
    return int(value)


def _token_ids(config: dict, key: str) -> Union[int, list, None]:
    """config[key]: None, a token id or a list of them (ValueError naming the key otherwise)."""
    value = config.get(key)
    if isinstance(value, (list, tuple)):
        return [_token_id(v, key) for v in value]
    return None if value is None else _token_id(value, key)


def _first_id(value: Union[int, list, None]) -> Optional[int]:
    if isinstance(value, list):
        return value[0] if value else None
    return value


def _looks_like_hub_id(path: Path) -> bool:
    """``owner/name`` as on the Hugging Face Hub: two parts, relative, no file suffix."""
    parts = path.parts
    return len(parts) == 2 and not path.is_absolute() and not path.suffix and not parts[0].startswith(".")


def _not_found_message(path: Path) -> str:
    message = (f"{path}: no such file or directory (kvgen.Model.load takes a Hugging Face model directory or a "
               ".gguf file)")
    if _looks_like_hub_id(path):
        message += (f". kvgen loads local files and does not download: {str(path)!r} looks like a Hugging Face Hub "
                    f"id; get a local copy with `huggingface-cli download {path.as_posix()} --local-dir DIR` or "
                    f"huggingface_hub.snapshot_download({path.as_posix()!r}, local_dir=DIR), then Model.load(DIR)")
    return message


class Model:
    """A built-in model with its tokenizer, loaded with ``Model.load(path)``.

    ``path`` is a Hugging Face directory (config.json + safetensors in float32, float16 or
    bfloat16) or a GGUF file, of one of the families in ``kvgen.families`` (gpt2,
    llama, mistral, qwen2, qwen3, qwen3moe, gemma2, gemma3, granite, smollm3, phi3, ministral3,
    ernie4_5; and the text model of gemma3 / mistral3 vision-language checkpoints).
    ``forward(input_ids)`` gives raw logits; ``kvgen.Generator(model, config)`` generates
    with it (KV-cached, prefill in 32-token chunks); ``apply_chat_template(messages)``
    formats a conversation.
    """

    def __init__(self, core: "_core._Model", config: dict, path: Optional[Path], tokenizer: Any = None, *,
                 bos_token_id: Optional[int] = None, eos_token_id: Union[int, list, None] = None,
                 chat_template: Optional[str] = None, bos_token: Optional[str] = None,
                 eos_token: Optional[str] = None, description: str = "", family: Optional[str] = None,
                 tensor_types: Optional[dict[str, int]] = None, pooling: Optional[str] = None):
        self._core = core
        self.family = family or core.architecture  # the model family (kvgen.families)
        self.tensor_types = dict(tensor_types or {})  # the file's tensors by type: {"Q4_K": 120, "F32": 49}
        self.config = config
        self.path = path
        self.tokenizer = tokenizer
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        self.chat_template = chat_template
        self.bos_token, self.eos_token = bos_token, eos_token
        self.description = description
        # the embeddings' pooling the files declare (kvgen.loaders.pooling), None when they declare none
        self.pooling = pooling
        # what the engine may do with it, as the family's module reads the file
        # (kvgen.families.capabilities): the engine never reads the config
        self.capabilities: Capabilities = capabilities_for(self.family, config, core)
        # LongRoPE's switch (0: none): a sequence longer than this many positions is computed
        # with the long factors from its first position on (kvgen.generation.engine)
        self._long_rope_context = self.capabilities.recompute_past
        self._token_strings: Optional[list[str]] = None
        # what kvgen computes as llama.cpp does because the file does not store it (a GGUF file
        # without the sliding window its checkpoint had): each a warning at load, shown by kvgen info
        self.notes: list[str] = []
        # the multi-token-prediction head over its core (a family's build_mtp; set at load), None without one
        self._mtp_head: Optional[MtpHead] = None
        if chat_template is not None:
            self._probe_chat_template()

    @classmethod
    def load(cls, path: Union[str, os.PathLike], *, dtype: Optional[str] = None, exact: bool = False,
             activations: Optional[str] = None, kv_cache_dtype: str = "auto",
             sliding_window: Optional[int] = None) -> "Model":
        """Loads a Hugging Face model directory or a GGUF file (see the class docstring).

        A GGUF file's quantized matrices stay quantized in memory and are computed on
        directly. ``dtype="q8_0"`` or ``"q4_0"`` quantizes a directory's float matrices the
        same way at load (GGUF files keep their own types). ``exact=True`` is
        ``activations="float"``; see ``Model.activations`` for the modes.
        ``kv_cache_dtype`` is what the KV cache stores keys and values as (see
        ``Model.kv_cache_dtype``): ``"int8"`` takes half the memory of the default and reads
        half the bytes per decode step at long context, at a small loss of fidelity;
        exact mode accepts only ``"auto"`` and ``"float32"`` (ValueError otherwise).
        ``sliding_window``: a GGUF file's sliding window where the file stores none (llama.cpp's
        converter drops Mistral's and Qwen2's): every layer attends over the last
        ``sliding_window`` positions, or the layers ``attention.sliding_window_pattern`` flags;
        a llama file given one is read as Mistral (see ``Model.notes``).
        """
        mode = _activations(exact, activations)
        kv = _kv_cache_dtype(mode, kv_cache_dtype)
        model = cls._load_path(Path(path), dtype, mode, sliding_window)
        model._core.kv_cache_dtype = kv
        return model

    @classmethod
    def _load_path(cls, p: Path, dtype: Optional[str], mode: str, sliding_window: Optional[int] = None) -> "Model":
        if p.is_dir():
            if sliding_window is not None:
                raise ValueError(f"{p}: sliding_window={sliding_window!r:.40} applies to GGUF files; a directory's "
                                 "config.json states its window (sliding_window, layer_types)")
            return cls._load_directory(p, dtype, mode)
        if not p.exists():
            raise FileNotFoundError(_not_found_message(p))
        from kvgen.loaders.gguf.model import is_gguf

        if not is_gguf(p):
            raise ValueError(f"{p}: not a GGUF file (no GGUF magic) and not a model directory")
        if dtype is not None:
            raise ValueError(f"{p}: dtype={dtype!r} applies to Hugging Face directories; a GGUF file's tensors keep "
                             "the types they were saved with")
        return cls._load_gguf(p, mode, sliding_window)

    @classmethod
    def _load_directory(cls, directory: Path, dtype: Optional[str], activations: str) -> "Model":
        # a vision-language checkpoint: its text model (its other towers are never read)
        config, rename = text_checkpoint(read_config(directory), directory)
        family = family_of_config(config, directory)
        try:
            arrays = family.checkpoint_arrays(config, read_weights(directory, rename), dtype)
            core = family.build_core(config, arrays, activations=activations)
            mtp = family.build_mtp(config, arrays, core, activations=activations)
        except (ValueError, TypeError) as e:
            if str(directory) in str(e):
                raise
            raise type(e)(f"{directory}: {e}") from None
        tokenizer = read_tokenizer(directory)
        pooling = directory_pooling(directory)
        bos, eos = _token_ids(config, "bos_token_id"), _token_ids(config, "eos_token_id")
        model = cls(core, config, directory, tokenizer, bos_token_id=_first_id(bos), eos_token_id=eos,
                    chat_template=read_chat_template(directory), family=family.name,
                    tensor_types=read_weight_types(directory, rename), pooling=pooling)
        model._mtp_head = MtpHead(mtp, model) if mtp is not None else None
        return model

    @classmethod
    def _load_gguf(cls, path: Path, activations: str, sliding_window: Optional[int] = None) -> "Model":
        g = read_gguf(path, sliding_window)  # the file's keys and tensors, translated by its family's module
        core = g.family.build_core(g.config, g.arrays, rope_freqs=g.rope_freqs, activations=activations,
                                   norms_plus_one=g.norms_plus_one)
        mtp = g.family.build_mtp(g.config, g.arrays, core, activations=activations, norms_plus_one=g.norms_plus_one)
        g.arrays = {}  # the quantized blocks were repacked: let the file's map go
        t = g.tokenizer
        types = ", ".join(f"{n} x{k}" for n, k in g.metadata.get("tensor_types", {}).items())
        description = f"{g.metadata.get('name') or path.name} ({types})"
        facts = dict(description=description, family=g.family.name, tensor_types=g.metadata.get("tensor_types"),
                     pooling=g.pooling)
        if t is None:
            model = cls(core, g.config, path, **facts)
        else:
            model = cls(core, g.config, path, t.tokenizer, bos_token_id=t.bos_token_id, eos_token_id=t.eos_token_id,
                        chat_template=t.chat_template, bos_token=t.bos_token, eos_token=t.eos_token, **facts)
        model.notes = list(g.notes)
        model._mtp_head = MtpHead(mtp, model) if mtp is not None else None
        for note in model.notes:
            warnings.warn(f"{path}: {note}", WindowNotStoredWarning, stacklevel=4)
        return model

    @property
    def mtp_head(self) -> Optional[MtpHead]:
        """The file's multi-token-prediction head (Qwen3.5 / 3.6, Qwen3-Next checkpoints and
        llama.cpp's files of them converted without ``--no-mtp``), or None. Pass it as
        ``assistant_model`` to draft with it: each draft costs a pass over the head's one layer
        instead of a draft model (kvgen.generation.mtp; ``generate(..., assistant_model=
        model.mtp_head)``). The greedy and sampled results are those of plain decoding."""
        return self._mtp_head

    def forward(self, input_ids) -> np.ndarray:
        """Logits [rows, length, vocab] for ``input_ids`` [rows, length] (or one 1-D row).

        The array is a new one that the caller owns (the forward pass writes into it, no
        copy is made): later calls, from this thread or others, never change it. A token id
        outside [0, vocab_size) is a ValueError naming its position and value.
        """
        return self._core.forward(input_ids)

    def embed(self, texts, *, pooling: Optional[str] = None, normalize: bool = True) -> np.ndarray:
        """Embeddings of ``texts`` (a string, a list of strings, a token-id list or a list of
        those): float32 [n, hidden_size], one row per text, each its final-normed hidden states
        (the LM head's input) pooled, then divided by its L2 norm unless ``normalize=False``.

        ``pooling``: ``"last"`` (the last token's hidden state: decoder embedding models such as
        Qwen3-Embedding), ``"mean"`` (the mean over the text's tokens) or ``"cls"`` (the first
        token's); None takes what the model's files declare (``Model.pooling``: a
        sentence-transformers directory's ``1_Pooling/config.json``, a GGUF file's
        ``pooling_type``), else ``"last"``. Texts are encoded with the tokenizer's special tokens
        (as sentence-transformers encodes them); a text of no tokens or longer than the context
        is a ValueError naming it. The texts run together, in 32-token chunks, with the GIL
        released during each forward pass (kvgen._embedding).
        """
        from kvgen._embedding import choose_pooling, embed_prompts, normalized, token_lists

        if not isinstance(normalize, bool):
            raise TypeError(f"normalize must be a bool, got {normalize!r:.60}")
        chosen = choose_pooling(pooling, self.pooling, self.path)
        vectors = embed_prompts(self._core, token_lists(self, texts), chosen, self.capabilities.recompute_past)
        return normalized(vectors) if normalize else vectors

    @property
    def architecture(self) -> str:
        """The core model that computes it: "gpt2", "llama" (every Llama-like family,
        Qwen3-MoE included) or "gemma" (Gemma 2 and 3); ``family`` names the family."""
        return self._core.architecture

    @property
    def activations(self) -> str:
        """What quantized matrices multiply (settable at any time; float32, F16 and BF16
        weights always meet float activations):

        - ``"int8x2"`` (the default): activations quantized to int8 per 32-value block in
          two levels, the second quantizing the first one's rounding error, so each value
          keeps about 15 bits, with integer dot products. Decode as fast as one level (it is
          bound by the weight bytes); on SmolLM2, over a 1,100-token text, the argmax equals
          transformers' at all positions but one near-tie and perplexity is within 0.01%.
          Prefill and batches of many rows, which are bound by arithmetic, do twice the
          integer work (with AVX-512 the two levels share one pass and one scaling per block).
        - ``"int8"``: one level (llama.cpp's arithmetic): the fastest prefill and batches;
          the argmax differs from transformers' at about 4% of positions.
        - ``"float"`` (``exact=True``): float32 activations, transformers' computation on
          the dequantized weights up to summation order; about 0.6x the decode speed.
        - ``"bf16"``: activations and the dequantized weights rounded to bfloat16, float32
          sums (``vdpbf16ps``); only on CPUs with AVX512_BF16 (AMD Zen 4 and later, Intel
          Xeons of the 4th generation and later), ValueError elsewhere. Each 16-row group of
          a matrix is decoded once per product and shared by all its rows, so prompts
          (prefill, embeddings) run faster than in ``"int8x2"`` where the rows are many, and
          decode runs slower (docs/guide/quantization.md has the figures and the fidelity).
        """
        return self._core.activations

    @activations.setter
    def activations(self, value: str) -> None:
        self._set_activations(_activations(False, value))

    def _set_activations(self, mode: str) -> None:
        """Switches the activations mode, refused where the KV cache's dtype does not allow it."""
        _kv_cache_dtype(mode, self.kv_cache_dtype)
        self._core.activations = mode

    @property
    def kv_cache_dtype(self) -> str:
        """What the KV cache stores keys and values as (read-only; ``Model.load``'s
        ``kv_cache_dtype``):

        - ``"auto"`` (the default): IEEE half with int8 activations on quantized weights,
          float32 in exact mode and for float weights.
        - ``"float32"``, ``"float16"``: that type whatever the activations.
        - ``"int8"``: int8 with one float scale per position and KV head (max|x| / 127,
          round to nearest): a quarter of float32's bytes plus 4 bytes per 64-128 values,
          half the default's memory and half the bytes a decode step reads per cached
          position. Lossy: see docs/guide/quantization.md (KV cache precision) for its fidelity
          (llama.cpp's ``--cache-type-k/-v q8_0``, vLLM's ``kv_cache_dtype``).
        """
        return self._core.kv_cache_dtype

    @property
    def exact(self) -> bool:
        """Exact mode: ``activations == "float"``. Setting True selects float activations,
        False the default two-level int8 ones."""
        return self._core.activations == "float"

    @exact.setter
    def exact(self, value: bool) -> None:
        self._set_activations(_activations(value, None))

    @property
    def weight_bytes(self) -> int:
        """Bytes of the weights the model holds, quantized matrices at their packed size:
        about what one decode step reads."""
        return self._core.weight_bytes

    @property
    def vocab_size(self) -> int:
        """Size of the output vocabulary."""
        return self._core.vocab_size

    @property
    def context_length(self) -> int:
        """Positions the model supports (prompt + generated tokens)."""
        return self._core.context_length

    def kv_cache_bytes(self, rows: int, positions: int, snapshots: int = 0) -> int:
        """Bytes of a KV cache for ``rows`` sequences of ``positions`` tokens (a hybrid model's
        recurrent state included, with ``snapshots`` spare copies of one row's state: an
        engine's prefix cache and speculative rollback, kvgen.generation.engine.state_snapshots).
        The most it holds: a snapshot's memory is allocated when it is first taken."""
        return self._core.kv_cache_bytes(rows, positions, snapshots)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids of ``text``; ``add_special_tokens`` adds BOS where the tokenizer does."""
        return self._need_tokenizer().encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        """Text of token ids: integers in [0, vocab_size) (ValueError naming the first
        other id; TypeError for a non-integer)."""
        tokenizer = self._need_tokenizer()
        return tokenizer.decode([self._checked_id(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def _checked_id(self, token) -> int:
        if isinstance(token, (bool, np.bool_)):
            raise TypeError(f"decode: token id {token!r} is a bool, not an integer")
        try:
            i = operator.index(token)
        except TypeError:
            raise TypeError(f"decode: token id {token!r:.60} is not an integer") from None
        if not 0 <= i < self.vocab_size:
            raise ValueError(f"decode: token id {i} is outside the vocabulary [0, {self.vocab_size})")
        return i

    def token_strings(self) -> list[str]:
        """The text of every token id, for stop strings (computed once)."""
        if self._token_strings is None:
            tok = self._need_tokenizer()
            self._token_strings = [tok.decode([i], skip_special_tokens=False) for i in range(self.vocab_size)]
        return self._token_strings

    def apply_chat_template(self, messages: Sequence[dict], add_generation_prompt: bool = True, **extra) -> str:
        """The prompt text for a conversation (a list of {"role", "content"} dicts), rendered
        with the model's chat template as transformers' ``apply_chat_template(tokenize=False)``."""
        from kvgen.loaders.chat_template import render_chat

        # a str stays one (the check says to pass a list of messages), not a list of characters
        given: Any = messages if isinstance(messages, str) else list(messages)
        return render_chat(self._need_chat_template(), given, add_generation_prompt=add_generation_prompt,
                           bos_token=self.bos_token, eos_token=self.eos_token, **extra)

    def _probe_chat_template(self) -> None:
        """Renders the chat template once (the end-of-turn probe's conversation): a template
        past the rendering limits (time, memory, size, recursion, compiling included:
        kvgen.loaders.chat_template) is a ValueError at load, not a hang; other errors, and
        limits that only a longer conversation reaches, fail the chat that meets them."""
        from kvgen.loaders.chat_template import ChatTemplateLimitError, render_chat

        try:
            render_chat(self.chat_template, [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": _SENTINEL}],
                        add_generation_prompt=False, bos_token=self.bos_token, eos_token=self.eos_token)
        except ChatTemplateLimitError as e:
            raise ValueError(f"{self.path}: the chat template exceeds kvgen's rendering limits ({e})") from None
        except (ValueError, TypeError):
            pass

    def encode_chat(self, messages: Sequence[dict], add_generation_prompt: bool = True, *,
                    special_tokens_in_content: bool = False, **extra) -> list[int]:
        """The token ids of a conversation rendered with the chat template (no BOS added).

        Only the template's own text becomes special tokens: text from the caller (a message's
        content, name or tool calls, the tools, ...) that spells a special token (``<|im_end|>``)
        is encoded as plain text, so that a user cannot forge a turn of another role. The
        rendering tracks which characters came from the caller (``render_chat_spans``); the
        whole text is encoded as transformers' ``apply_chat_template(tokenize=True)`` does, and
        when a special token of that encoding touches the caller's text, the caller's spans are
        encoded apart as plain text instead. ``special_tokens_in_content=True`` encodes the
        whole rendered text as it is, special-token text in contents included."""
        from kvgen.loaders.chat_template import render_chat_spans

        given: Any = messages if isinstance(messages, str) else list(messages)
        rendered = render_chat_spans(self._need_chat_template(), given, add_generation_prompt=add_generation_prompt,
                                     bos_token=self.bos_token, eos_token=self.eos_token, **extra)
        tokenizer = self._need_tokenizer()
        text, spans = rendered.text, rendered.user_spans
        whole = tokenizer.encode(text, add_special_tokens=False)
        if special_tokens_in_content or not self._special_token_in_spans(whole.ids, whole.offsets, spans):
            return whole.ids
        plain = self._plain_text_tokenizer()
        ids: list[int] = []
        at = 0
        for start, end in spans:
            if start > at:
                ids += tokenizer.encode(text[at:start], add_special_tokens=False).ids
            ids += plain.encode(text[start:end], add_special_tokens=False).ids
            at = end
        if at < len(text):
            ids += tokenizer.encode(text[at:], add_special_tokens=False).ids
        return ids

    def _special_token_in_spans(self, ids: Sequence[int], offsets: Sequence[tuple[int, int]],
                                spans: Sequence[tuple[int, int]]) -> bool:
        """Whether any special token among ``ids`` (at character ``offsets``) overlaps one of
        the sorted, disjoint ``spans``."""
        import bisect

        if not spans:
            return False
        specials = self._special_token_ids()
        starts = [a for a, _ in spans]
        for token, (start, end) in zip(ids, offsets):
            if token in specials:
                i = bisect.bisect_right(starts, max(start, end - 1)) - 1
                if i >= 0 and spans[i][1] > start and end > spans[i][0]:
                    return True
        return False

    def _special_token_ids(self) -> frozenset:
        """The ids of the tokenizer's special added tokens (those a user must not forge)."""
        if getattr(self, "_special_ids", None) is None:
            decoder = self._need_tokenizer().get_added_tokens_decoder()
            self._special_ids = frozenset(i for i, token in decoder.items() if token.special)
        return self._special_ids

    def _plain_text_tokenizer(self) -> Any:
        """A copy of the tokenizer that encodes special-token text as plain text."""
        if getattr(self, "_plain_tokenizer", None) is None:
            from tokenizers import Tokenizer

            plain = Tokenizer.from_str(self._need_tokenizer().to_str())
            plain.encode_special_tokens = True
            self._plain_tokenizer = plain
        return self._plain_tokenizer

    @property
    def end_of_turn_token_id(self) -> Optional[int]:
        """The special token the chat template puts after an assistant reply (e.g.
        ``<|im_end|>``), found by rendering a reply (once per template); the EOS id when the
        template ends turns with plain text; None without a chat template."""
        if self.chat_template is None or self.tokenizer is None:
            return None
        key = (self.chat_template, self.bos_token, self.eos_token, self.eos_token_id)
        cached = getattr(self, "_end_of_turn", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        from kvgen.loaders.chat_template import render_chat

        text = render_chat(self.chat_template, [{"role": "user", "content": "hi"},
                                                {"role": "assistant", "content": _SENTINEL}],
                           add_generation_prompt=False, bos_token=self.bos_token, eos_token=self.eos_token)
        after = text[text.find(_SENTINEL) + len(_SENTINEL):] if _SENTINEL in text else ""
        specials = {tok.content: i for i, tok in self.tokenizer.get_added_tokens_decoder().items() if tok.special}
        matches = [s for s in specials if s and after.lstrip(" ").startswith(s)]
        found = specials[max(matches, key=len)] if matches else _first_id(self.eos_token_id)
        self._end_of_turn = (key, found)
        return found

    def _need_tokenizer(self):
        if self.tokenizer is None:
            raise ValueError(f"{self.path}: the model has no tokenizer; pass token ids instead of text")
        return self.tokenizer

    def _need_chat_template(self) -> str:
        if self.chat_template is None:
            raise ValueError(f"{self.path}: the model has no chat template (tokenizer.chat_template in GGUF, "
                             "chat_template in tokenizer_config.json)")
        return self.chat_template

    def __repr__(self) -> str:
        c = self._core
        return (f"Model({self.family}, layers={c.num_layers}, hidden={c.hidden_size}, heads={c.num_heads}, "
                f"kv_heads={c.num_kv_heads}, vocab={c.vocab_size}, context={c.context_length}, "
                f"tokenizer={self.tokenizer is not None}, chat_template={self.chat_template is not None}, "
                f"kv_cache_dtype={self.kv_cache_dtype!r}, path={str(self.path)!r})")
