"""Speculative decoding's drafters and the draft length: what the engine (kvgen.generation.engine)
feeds after a row's next token so that one forward pass checks several positions.

- ``NgramLookup``: prompt lookup decoding (transformers' ``prompt_lookup_num_tokens`` and
  ``max_matching_ngram_size``; llama.cpp's ``llama-lookup`` / ``--spec-type ngram``; vLLM's
  ``ngram`` speculator): the last n tokens of a row (n from the largest size down to 1) are
  looked up in the row's own tokens, prompt and text so far, and the tokens that followed an
  earlier occurrence are the draft. Of the occurrences, the one whose match reaches furthest
  back (up to MAX_MATCH tokens; the latest among equals) is taken: in a long passage a 2-gram
  such as "of the" occurs in many places, and the latest one is seldom the place being
  copied. The match's length is returned with the draft: it predicts acceptance well.
  Its q is one-hot (the verifier's rule for n-gram drafts). The index is a dict per n-gram
  size from n-gram to its occurrences, updated as tokens arrive.
- ``DraftModel``: a smaller kvgen Model with the target's vocabulary drafting greedily, one
  row per slot of its own slot cache (``_ModelSlots``), rolled back with the target's verdicts.
- ``MatchLengths``: prompt lookup's DraftLength per match length (a bucket of them): on the
  1,034-token grounded benchmark passage the first draft token was right after 15% of
  1-token matches, 25-30% of 2-token, 50% of 3-token, 65-90% of 4-5, 80-100% of 6-8 and
  96-98% of matches of 12 tokens or more (SmolLM2-135M, greedy and temperature 0.7), so one
  acceptance estimate per row mixed the copied stretches with the model's own text. Each
  bucket's estimate starts at those measured rates (MatchLengths.PRIORS) and learns from the
  row's verdicts.
- ``DraftLength``: per row, how many tokens to draft this step. Verifying k drafts costs a
  forward pass over k + 1 tokens, about 1 + beta * k decode steps (beta measured by the engine);
  it pays when the expected tokens per step, (1 - a^(k+1)) / (1 - a) for a per-position
  acceptance rate a, exceed that cost. a is a decayed estimate from the verdicts; while the
  row does not draft (k = 0) the drafter's proposal is still compared with the token the
  row then gets ("shadow" drafts: P(token == draft) is the acceptance probability of a
  one-hot draft, greedy or sampled), so drafting resumes when the text becomes predictable,
  at no cost. Open-ended text thus decodes at close to plain speed.
"""

from __future__ import annotations

import weakref
from typing import Any, Optional, Sequence

import numpy as np

#: transformers' default n-gram size for prompt lookup (``max_matching_ngram_size=None``).
DEFAULT_NGRAM_SIZE = 2


class NgramLookup:
    """Prompt lookup over one row's tokens (prompt + generated): ``extend`` as tokens arrive,
    ``match()`` for where the row's last n-gram (the largest n <= max_ngram that occurs)
    occurred before and how long the match is, ``propose(k)`` for the k tokens after it."""

    #: how far back a match is followed to choose among an n-gram's occurrences
    MAX_MATCH = 32
    #: how many of an n-gram's latest occurrences are compared
    MAX_CANDIDATES = 32

    def __init__(self, tokens: Sequence[int], max_ngram: int = DEFAULT_NGRAM_SIZE):
        if max_ngram < 1:
            raise ValueError(f"max_matching_ngram_size must be >= 1, got {max_ngram}")
        self.max_ngram = max_ngram
        self.tokens: list[int] = []
        # per size n: n-gram -> the positions just after its occurrences that have a successor, oldest first
        self._index: list[dict[tuple[int, ...], list[int]]] = [dict() for _ in range(max_ngram + 1)]
        self.extend(tokens)

    def extend(self, tokens: Sequence[int]) -> None:
        """Appends the row's new tokens."""
        t = self.tokens
        for token in tokens:
            t.append(int(token))
            end = len(t) - 1  # the n-grams ending just before the new token now have a successor
            for n in range(1, min(self.max_ngram, end) + 1):
                self._index[n].setdefault(tuple(t[end - n:end]), []).append(end)

    def match(self) -> tuple[int, int]:
        """(start, length): the draft starts at tokens[start], after an earlier occurrence of the
        row's last `length` tokens (length >= the n-gram size, at most MAX_MATCH); (-1, 0)
        when no n-gram of the row's end occurred before."""
        t = self.tokens
        size = len(t)
        for n in range(min(self.max_ngram, size), 0, -1):
            positions = self._index[n].get(tuple(t[size - n:]))
            if not positions:
                continue
            best, best_length = -1, 0
            for start in reversed(positions[-self.MAX_CANDIDATES:]):  # latest first: it wins ties
                length, i, j = n, start - n - 1, size - n - 1
                while length < self.MAX_MATCH and i >= 0 and t[i] == t[j]:
                    length, i, j = length + 1, i - 1, j - 1
                if length > best_length:
                    best, best_length = start, length
                    if length == self.MAX_MATCH:
                        break
            return best, best_length
        return -1, 0

    def propose(self, k: int) -> list[int]:
        """Up to k draft tokens (fewer where the match runs into the end; [] for no match)."""
        if k < 1:
            return []
        start, _length = self.match()
        return self.tokens[start:start + k] if start >= 0 else []


# (draft tokenizer, target tokenizer) pairs whose vocabularies were compared equal: comparing
# two 50k-token vocabularies takes about 0.1 s, and a call with a draft model builds a DraftModel
_VOCAB_CHECKED: "weakref.WeakKeyDictionary[Any, weakref.WeakSet[Any]]" = weakref.WeakKeyDictionary()


def _same_vocab(draft: Any, target: Any) -> bool:
    """Whether two tokenizers map the same tokens to the same ids (a pair found equal is remembered)."""
    if draft is target:
        return True
    try:
        if target in _VOCAB_CHECKED.get(draft, ()):
            return True
    except TypeError:  # not weakly referenceable: compared every time
        pass
    if draft.get_vocab() != target.get_vocab():
        return False
    try:
        _VOCAB_CHECKED.setdefault(draft, weakref.WeakSet()).add(target)
    except TypeError:
        pass
    return True


class DraftModel:
    """A draft model's side of speculation for one engine: its own slot cache (one slot per
    engine slot), fed the tokens each row keeps, drafting greedily. ``model`` must share the
    target's vocabulary (ValueError otherwise)."""

    def __init__(self, model: Any, target: Any, slots: int, context: int):
        from kvgen import _core

        if model.vocab_size != target.vocab_size:
            raise ValueError(f"the draft model's vocabulary ({model.vocab_size} tokens) is not the target's "
                             f"({target.vocab_size}): a draft model must share the target's tokenizer")
        tok_d, tok_t = getattr(model, "tokenizer", None), getattr(target, "tokenizer", None)
        if tok_d is not None and tok_t is not None and hasattr(tok_d, "get_vocab") and hasattr(tok_t, "get_vocab"):
            if not _same_vocab(tok_d, tok_t):
                raise ValueError("the draft model's tokenizer maps tokens to other ids than the target's")
        if context > model.context_length:
            raise ValueError(f"the draft model's context ({model.context_length}) is shorter than the engine's "
                             f"({context})")
        self.model = model
        # a hybrid draft model's state cannot step back: a snapshot per slot before its drafts
        self._recurrent = bool(getattr(getattr(model, "capabilities", None), "recurrent_state", False))
        self._slots = _core._ModelSlots(model._core, slots, context, snapshots=slots if self._recurrent else 0)
        #: what a draft token costs here: the draft model's passes and the target's verification
        self.cost = CostModel()
        self._logits = self._slots.logits
        self._fed: list[int] = [0] * slots  # tokens of each slot's row in the draft cache
        self._drafts_fed: list[int] = [0] * slots  # of which drafts not yet verified

    def reset(self, slot: int) -> None:
        """A new request starts at the slot."""
        self._slots.reset(slot)
        self._fed[slot] = self._drafts_fed[slot] = 0

    def catch_up(self, rows: dict[int, Sequence[int]]) -> None:
        """rows: slot -> the row's tokens (prompt and generated); feeds each slot what it has
        not seen, in prefill-sized chunks (one batched pass per chunk). The engine calls it
        with the prompts when a request starts (prefill work), ``propose`` with what the rows
        kept since they last drafted."""
        from kvgen import _core

        # one row: longer chunks (as the engine's own prefill of a lone prompt)
        size = _core._PREFILL_CHUNK * (1 if len(rows) > 1 else 4)
        while True:
            chunks = []
            for s, tokens in rows.items():
                if self._fed[s] < len(tokens):
                    chunk = np.asarray(tokens[self._fed[s]:self._fed[s] + size], dtype=np.int64)
                    chunks.append((s, chunk))
                    self._fed[s] += chunk.size
            if not chunks:
                break
            self._slots.forward(chunks)

    def propose(self, rows: dict[int, tuple[list[int], int]]) -> dict[int, list[int]]:
        """rows: slot -> (the row's tokens, prompt and generated, ending with the token the
        target is fed next; k >= 1). Catches each slot up on its tokens, then drafts k tokens
        per row greedily, one batched forward per draft position; slot -> drafts. A row that
        does not draft is left out: it catches up when it drafts again."""
        drafts: dict[int, list[int]] = {s: [] for s in rows}
        self.catch_up({s: tokens for s, (tokens, _k) in rows.items()})
        active = [s for s, (_t, k) in rows.items() if k > 0]
        if self._recurrent:  # the state before the drafts, for rollback
            for s in active:
                self._slots.snapshot(s, s)
        longest = max((rows[s][1] for s in active), default=0)
        for i in range(longest):
            chunks = []
            for s in active:
                if i < rows[s][1]:
                    token = int(self._logits[s].argmax())
                    drafts[s].append(token)
                    if i + 1 < rows[s][1]:
                        chunks.append((s, np.array([token], dtype=np.int64)))
            if chunks:
                self._slots.forward(chunks)
        # the drafts fed (all but the last) stay in the cache until the verdict (rollback)
        for s in active:
            self._drafts_fed[s] = max(len(drafts[s]) - 1, 0)
            self._fed[s] += self._drafts_fed[s]
        return drafts

    def rollback(self, slot: int, kept: int, accepted: int) -> None:
        """The verdict on the slot's last drafts: the row's tokens before them were `kept` and
        it accepted `accepted` drafts; the draft cache keeps what agrees with that."""
        drafted = self._drafts_fed[slot]
        valid = kept + min(accepted, drafted)
        self._drafts_fed[slot] = 0
        if self._fed[slot] > valid:
            if not self._recurrent:
                self._slots.truncate(slot, valid)
            elif drafted:  # back to the state before the drafts: catch_up feeds the accepted ones again
                valid = self._fed[slot] - drafted
                self._slots.resume(slot, valid, slot)
            else:  # nothing drafted to go back over: the row is fed again from its start
                valid = 0
                self._slots.reset(slot)
            self._fed[slot] = valid


class DraftLength:
    """Per row: the draft length that maximises the expected tokens per unit of cost, from
    a decayed per-position acceptance estimate (see the module docstring)."""

    #: weight of the past in the acceptance estimate per observed position
    DECAY = 0.9
    #: prior pseudo-counts (accepted + rejected = 2 PRIOR) at the prior rate, until verdicts come in
    PRIOR = 1.0

    def __init__(self, max_tokens: int, prior_rate: float = 0.5):
        self.max_tokens = max_tokens
        self.accepted = 2 * self.PRIOR * prior_rate
        self.rejected = 2 * self.PRIOR * (1 - prior_rate)

    @property
    def rate(self) -> float:
        """The estimated probability that a draft position is accepted."""
        return self.accepted / (self.accepted + self.rejected)

    def choose(self, beta: float) -> int:
        """0 .. max_tokens: the k maximising (1 - a^(k+1)) / (1 - a) / (1 + beta * k)."""
        a = min(self.rate, 0.999)
        best_k, best = 0, 1.0
        expected, power = 1.0, 1.0
        for k in range(1, self.max_tokens + 1):
            power *= a
            expected += power
            value = expected / (1.0 + beta * k)
            if value > best * 1.02:  # a k must beat the shorter ones clearly
                best_k, best = k, value
        return best_k

    def observe(self, accepted: int, drafted: int) -> None:
        """A verdict: the first `accepted` of `drafted` positions were accepted (the next one,
        when accepted < drafted, was rejected)."""
        for _ in range(accepted):
            self.accepted = self.accepted * self.DECAY + 1.0
            self.rejected *= self.DECAY
        if accepted < drafted:
            self.accepted *= self.DECAY
            self.rejected = self.rejected * self.DECAY + 1.0


class MatchLengths:
    """Prompt lookup's draft lengths for one row: a DraftLength per bucket of match lengths
    (see the module docstring), each starting at the acceptance measured for its bucket."""

    #: the shortest match length of each bucket
    BUCKETS = (1, 2, 3, 4, 6, 9, 16)
    #: each bucket's prior acceptance rate (measured on the grounded benchmark passage)
    PRIORS = (0.15, 0.25, 0.5, 0.7, 0.8, 0.9, 0.95)

    def __init__(self, max_tokens: int):
        self.buckets = [DraftLength(max_tokens, prior_rate=p) for p in self.PRIORS]

    def __getitem__(self, match_length: int) -> DraftLength:
        """The DraftLength of matches of this length (>= 1)."""
        b = 0
        while b + 1 < len(self.BUCKETS) and match_length >= self.BUCKETS[b + 1]:
            b += 1
        return self.buckets[b]


class CostModel:
    """An estimate of beta: the cost of one more token in a decode forward pass, as a fraction
    of a decode row's, timed over the passes of a model's engines (decayed averages, with a
    prior worth a few passes so that one pass slowed by other work on the machine does not
    switch drafting off for good). Each pass without drafts also fades the drafted passes'
    betas toward the prior: at a beta near 1 no draft pays, so no drafted pass would come to
    correct a beta that a loaded machine inflated, and drafting would stay off for the model."""

    PRIOR_BETA = 0.5
    PRIOR_WEIGHT = 3.0
    DECAY = 0.9
    #: weight left to the drafted passes' betas after a pass without drafts
    IDLE_DECAY = 0.97
    #: the most one drafted pass's beta counts for (the estimate itself stops at 1)
    MAX_PASS_BETA = 1.5

    def __init__(self) -> None:
        self.row_seconds: Optional[float] = None  # per decode row of a pass without drafts
        self._beta_sum = 0.0                       # decayed sum of the passes' betas
        self._weight = 0.0                         # and of their weights

    @property
    def beta(self) -> float:
        beta = (self.PRIOR_BETA * self.PRIOR_WEIGHT + self._beta_sum) / (self.PRIOR_WEIGHT + self._weight)
        return min(max(beta, 0.05), 1.0)

    def observe(self, seconds: float, rows: int, extra: int) -> None:
        """A decode pass of `rows` rows carrying `extra` draft tokens took `seconds`."""
        if rows < 1:
            return
        if extra == 0:
            per_row = seconds / rows
            self.row_seconds = per_row if self.row_seconds is None else 0.8 * self.row_seconds + 0.2 * per_row
            self._beta_sum *= self.IDLE_DECAY
            self._weight *= self.IDLE_DECAY
        elif self.row_seconds is not None and self.row_seconds > 0:
            # one pass slowed by other work counts as a costly pass, not as ten
            beta = min(max(seconds - self.row_seconds * rows, 0.0) / extra / self.row_seconds, self.MAX_PASS_BETA)
            self._beta_sum = self._beta_sum * self.DECAY + beta
            self._weight = self._weight * self.DECAY + 1.0
