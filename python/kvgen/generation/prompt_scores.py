"""Prompt scoring (the server's ``prompt_logprobs`` and ``echo`` with ``logprobs``): each prompt
token's log-probability given the tokens before it, its rank and the most likely tokens there.

The engine feeds a scored prompt in chunks that return the logits of every position (see
kvgen.generation.pass_plan) and hands each chunk's logits to the request's PromptScorer, so a
prompt is scored while other requests decode, holding one chunk's logits at a time.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from kvgen.generation.pass_plan import PREFILL_CHUNK, ScoredPiece

#: One prompt token's score: (token, its log-probability given the tokens before it, the ``top``
#: most likely (token, log-probability) pairs there (most likely first), its rank there (1: the
#: most likely)); the first token has none: (token, None, [], None).
TokenScore = tuple[int, Optional[float], list[tuple[int, float]], Optional[int]]


def _top_ids(logp: np.ndarray, top: int) -> np.ndarray:
    """``np.argsort(-logp, kind="stable")[:top]`` (ties in id order) without sorting the vocabulary."""
    if top <= 0:
        return np.empty(0, dtype=np.int64)
    if top >= logp.size or np.isnan(logp).any():
        return np.argsort(-logp, kind="stable")[:top]
    kth = np.partition(logp, logp.size - top)[logp.size - top]  # the top-th largest
    candidates = np.flatnonzero(logp >= kth)  # in id order, ties at the boundary included
    return candidates[np.argsort(-logp[candidates], kind="stable")][:top]


def score_positions(logits: np.ndarray, next_tokens: np.ndarray, top: int) -> list[TokenScore]:
    """The scores of ``next_tokens[i]`` after the logits ``logits[i]`` (float32 [n, vocab]):
    log-softmax in float64, row by row."""
    out: list[TokenScore] = []
    for row, token in zip(logits, next_tokens.tolist()):
        row = row.astype(np.float64)
        peak = row.max()
        logp = row - peak - np.log(np.exp(row - peak).sum())  # log-softmax
        chosen = float(logp[token])
        best = _top_ids(logp, top)
        out.append((token, chosen, [(int(t), float(logp[t])) for t in best], 1 + int((logp > chosen).sum())))
    return out


class PromptScorer:
    """Collects one prompt's token scores from the logits of its chunks, in order."""

    def __init__(self, prompt: np.ndarray, top: int):
        self.prompt, self.top = prompt, top
        self.scores: list[TokenScore] = [(int(prompt[0]), None, [], None)]

    @property
    def complete(self) -> bool:
        """Every token is scored."""
        return len(self.scores) == self.prompt.size

    def add(self, start: int, logits: np.ndarray) -> None:
        """The logits of positions ``start .. start + n - 1`` (float32 [n, vocab], read now):
        they score the tokens after them (none after the prompt's last)."""
        if start + 1 != len(self.scores):
            raise RuntimeError(f"the prompt's chunk at {start} comes after {len(self.scores)} scored tokens")
        n = min(logits.shape[0], self.prompt.size - 1 - start)
        self.scores += score_positions(logits[:n], self.prompt[start + 1:start + 1 + n], self.top)


def check_scoring(longest: int, verify_positions: int, recompute_past: Optional[int]) -> None:
    """ValueError unless an engine whose chunks return at most ``verify_positions`` positions'
    logits, on a model with LongRoPE's switch at ``recompute_past`` (None: none), can score a
    prompt of ``longest`` tokens."""
    if verify_positions < min(PREFILL_CHUNK, longest):
        raise ValueError(f"this engine returns the logits of {verify_positions} positions per chunk, fewer than a "
                         f"prompt chunk ({PREFILL_CHUNK}): it cannot score prompts")
    if recompute_past and longest > recompute_past:
        raise ValueError(f"prompt log-probs are computed for prompts of at most {recompute_past} tokens on this "
                         "model (its original context: a longer prompt is computed in one piece)")


def score_pieces(pieces: Sequence[ScoredPiece], every_logits: np.ndarray, next_logits: np.ndarray) -> None:
    """After a pass: each scored chunk's logits (``every_logits``: the slot cache's verify_logits,
    [slots, width, vocab]) go to its request; a chunk that ends its prompt also sets the slot's
    next-token logits (``next_logits`` [slots, vocab]), as a chunk without every position's does."""
    for piece in pieces:
        logits = every_logits[piece.slot, :piece.count]
        piece.request.add_scores(piece.prompt, piece.start, logits)
        if piece.start + piece.count == piece.request.prompts[piece.prompt].size:
            next_logits[piece.slot] = logits[-1]
