"""Embeddings: a text's final-normed hidden states (the LM head's input, which the C++ forward
hands out instead of logits for the chunks that ask: ``_ModelSlots.forward(..., hidden=...)``),
pooled into one vector and L2-normalised.

Poolings (kvgen.loaders.pooling names them): ``"last"``, the last token's hidden state (decoder
embedding models such as Qwen3-Embedding: sentence-transformers' ``lasttoken``); ``"mean"``, the
mean over the text's tokens (transformers' masked mean); ``"cls"``, the first token's.
``Model.embed`` feeds the texts here, all of them in each forward pass, a chunk of
PREFILL_CHUNK tokens each, as the engine cuts prompts (a text past LongRoPE's switch in one
piece, alone, as the engine feeds it); kvgen serve's /v1/embeddings runs the same pooling in
the engine (kvgen.generation.engine).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from kvgen import _core
from kvgen.loaders.pooling import POOLINGS

#: Prompts are fed from their start in chunks of this many tokens (the engine's cut).
PREFILL_CHUNK = _core._PREFILL_CHUNK
#: Bytes of KV cache one call of embed_prompts allocates at most: texts are embedded in groups
#: whose rows x longest text fit (a text alone may take more: the model's context bounds it).
EMBED_CACHE_BYTES = 256 << 20
#: F.normalize's floor on the norm (transformers' and sentence-transformers' normalisation).
NORM_EPS = 1e-12


def choose_pooling(asked: Optional[str], declared: Optional[str], where: object) -> str:
    """The pooling to compute: ``asked`` when given, else what the model's files declare
    (``declared``, read by kvgen.loaders.pooling from ``where``), else ``"last"``. ValueError
    for a pooling kvgen does not compute."""
    if asked is not None:
        if asked not in POOLINGS:
            raise ValueError(f"pooling={asked!r:.60} is not one of {', '.join(map(repr, POOLINGS))}")
        return asked
    if declared is None:
        return "last"
    if declared not in POOLINGS:
        raise ValueError(f"{where}: the model declares {declared!r} pooling, which kvgen does not compute; pass "
                         f"pooling= one of {', '.join(map(repr, POOLINGS))} to choose another")
    return declared


class Pooler:
    """One text's pooled hidden state, from the hidden states of its chunks, in order."""

    def __init__(self, pooling: str, length: int, hidden_size: int):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling={pooling!r:.60} is not one of {', '.join(map(repr, POOLINGS))}")
        self.pooling, self.length = pooling, length
        self.seen = 0
        self._sum = np.zeros(hidden_size, dtype=np.float64) if pooling == "mean" else None
        self._vector: Optional[np.ndarray] = None

    @property
    def complete(self) -> bool:
        """Every token's hidden state has been added."""
        return self.seen == self.length

    def add(self, start: int, hidden: np.ndarray) -> None:
        """The hidden states (float32 [count, hidden], read now) of positions ``start .. start + count - 1``."""
        if start != self.seen or start + hidden.shape[0] > self.length:
            raise RuntimeError(f"the text's chunk at {start} does not follow the {self.seen} of {self.length} "
                               "positions pooled")
        if self.pooling == "mean":
            self._sum += hidden.sum(axis=0, dtype=np.float64)
        elif self.pooling == "cls" and start == 0:
            self._vector = hidden[0].copy()
        self.seen += hidden.shape[0]
        if self.pooling == "last" and self.complete:
            self._vector = hidden[-1].copy()

    def vector(self) -> np.ndarray:
        """The pooled float32 vector (hidden,), once complete."""
        if not self.complete:
            raise RuntimeError(f"{self.seen} of the text's {self.length} positions are pooled")
        if self._sum is not None:
            return (self._sum / self.length).astype(np.float32)
        assert self._vector is not None
        return self._vector


def normalized(vectors: np.ndarray) -> np.ndarray:
    """Each row divided by its L2 norm (at least NORM_EPS), as torch's F.normalize."""
    norms = np.linalg.norm(vectors.astype(np.float64), axis=-1, keepdims=True)
    return (vectors / np.maximum(norms, NORM_EPS)).astype(np.float32)


def token_lists(model: Any, texts: Any) -> list[list[int]]:
    """``texts`` (a string, a list of strings, a token-id list or a list of those) as token-id
    lists, each checked: non-empty, ids in the vocabulary, within the model's context."""
    def is_ids(value: Any) -> bool:
        return isinstance(value, (list, tuple, np.ndarray)) and len(value) > 0 and all(
            isinstance(t, (int, np.integer)) and not isinstance(t, (bool, np.bool_)) for t in value)

    if isinstance(texts, str) or is_ids(texts):
        texts = [texts]
    if not isinstance(texts, (list, tuple)) or not texts:
        raise ValueError("texts must be a string, a non-empty list of strings, or token-id lists")
    out = []
    for i, text in enumerate(texts):
        if isinstance(text, str):
            ids = model.encode(text)
        elif is_ids(text):
            ids = [int(t) for t in text]
            bad = next((t for t in ids if not 0 <= t < model.vocab_size), None)
            if bad is not None:
                raise ValueError(f"texts[{i}]: token id {bad} is outside the vocabulary [0, {model.vocab_size})")
        else:
            raise ValueError(f"texts[{i}]: expected a string or a non-empty list of token ids, got "
                             f"{type(text).__name__}")
        if not ids:
            raise ValueError(f"texts[{i}] encodes to no tokens")
        if len(ids) > model.context_length:
            raise ValueError(f"texts[{i}] has {len(ids)} tokens, more than the model's {model.context_length} "
                             "positions")
        out.append(ids)
    return out


def embed_prompts(core: Any, prompts: Sequence[Sequence[int]], pooling: str, recompute_past: int = 0) -> np.ndarray:
    """The pooled final hidden states (float32 [len(prompts), hidden], not normalised) of the
    checked token-id lists ``prompts`` on the C++ model ``core`` (``_core._Model``), in groups
    whose KV cache takes at most EMBED_CACHE_BYTES. ``recompute_past``: LongRoPE's switch
    (Capabilities.recompute_past; 0: none): a prompt longer than it is computed with the long
    factors throughout, in one piece and a forward pass of its own, as the engine computes it."""
    out = np.empty((len(prompts), core.hidden_size), dtype=np.float32)
    past = [i for i, p in enumerate(prompts) if recompute_past and len(p) > recompute_past]
    for i in past:
        out[i] = _embed_group(core, [prompts[i]], pooling, piece=len(prompts[i]))[0]
    rest = [i for i in range(len(prompts)) if i not in set(past)]
    first = 0
    while first < len(rest):
        end, longest = first + 1, len(prompts[rest[first]])
        while end < len(rest) and core.kv_cache_bytes(end + 1 - first, max(longest, len(prompts[rest[end]]))) \
                <= EMBED_CACHE_BYTES:
            longest = max(longest, len(prompts[rest[end]]))
            end += 1
        out[rest[first:end]] = _embed_group(core, [prompts[i] for i in rest[first:end]], pooling)
        first = end
    return out


def _embed_group(core: Any, prompts: Sequence[Sequence[int]], pooling: str, piece: int = PREFILL_CHUNK) -> np.ndarray:
    """embed_prompts for prompts that share one KV cache: each forward pass feeds every prompt
    still running its next ``piece`` tokens."""
    arrays = [np.asarray(p, dtype=np.int64) for p in prompts]
    longest = max(a.size for a in arrays)
    width = core.hidden_size
    slots = _core._ModelSlots(core, len(arrays), longest)
    poolers = [Pooler(pooling, a.size, width) for a in arrays]
    for start in range(0, longest, piece):
        chunks, hidden = [], []
        for slot, a in enumerate(arrays):
            if a.size > start:
                tokens = a[start:start + piece]
                chunks.append((slot, tokens))
                hidden.append((slot, np.empty((tokens.size, width), dtype=np.float32)))
        slots.forward(chunks, hidden=hidden)
        for slot, states in hidden:
            poolers[slot].add(start, states)
    return np.stack([p.vector() for p in poolers])
