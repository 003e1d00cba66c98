"""A request's speculative decoding in the engine (kvgen.generation.engine): per row, the
drafter's state (kvgen.generation.drafters), the draft length chosen for each step, and the
bookkeeping of the verdicts that the token selector's ``verify`` returns. The engine feeds
each row ``[next token, drafts...]`` as one chunk, asks the slot cache for the logits of all
its positions, verifies them with the request's token selector and rolls the slot back by
the rejected drafts (``_ModelSlots.truncate``; a hybrid model's slot resumes from a snapshot of
its state and computes its accepted tokens again: kvgen.generation.speculative_rows). Beam
search is out of scope (ValueError)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from kvgen._core import GenerationConfig
from kvgen.generation.drafters import DEFAULT_NGRAM_SIZE, DraftLength, DraftModel, MatchLengths, NgramLookup

#: The longest draft a request may ask for (GenerationConfig.prompt_lookup_num_tokens' bound).
MAX_DRAFT_TOKENS = 64
#: The draft length with a draft model when the config names none (transformers'
#: num_assistant_tokens is 20, for GPUs; on a CPU a verification pass grows with its tokens).
DEFAULT_ASSISTANT_TOKENS = 5
#: A draft-model row that stopped drafting (low acceptance) tries one draft token this often.
PROBE_EVERY = 8


def wants_speculation(config: GenerationConfig, assistant: Any = None) -> bool:
    """Whether a request of this config (and draft model) speculates; ValueError for beam search."""
    if config.prompt_lookup_num_tokens is None and assistant is None:
        return False
    if config.num_beams > 1:
        raise ValueError("speculative decoding (prompt_lookup_num_tokens / assistant_model) does not support "
                         "beam search (num_beams > 1): use greedy or sampling")
    if config.prompt_lookup_num_tokens is not None and assistant is not None:
        raise ValueError("choose one drafter: prompt_lookup_num_tokens or assistant_model, not both")
    return True


class Speculation:
    """One request's drafting state: a drafter and a DraftLength per row (prompt lookup: per
    row and match length, MatchLengths)."""

    def __init__(self, config: GenerationConfig, prompts: Sequence[np.ndarray], rows_per_prompt: int,
                 assistant: Optional[DraftModel] = None):
        self.assistant = assistant
        self.max_tokens = (config.prompt_lookup_num_tokens if assistant is None
                           else config.prompt_lookup_num_tokens or DEFAULT_ASSISTANT_TOKENS)
        ngram = config.max_matching_ngram_size or DEFAULT_NGRAM_SIZE
        self.tokens: list[list[int]] = []           # per row: prompt + generated (for the draft model)
        self.lookups: list[Optional[NgramLookup]] = []
        for p in prompts:
            for _ in range(rows_per_prompt):
                self.tokens.append([int(t) for t in p])
                self.lookups.append(NgramLookup(p, ngram) if assistant is None else None)
        # a draft model starts trusted (it is there to agree with the target); prompt lookup
        # keeps an estimate per match length, each starting at its measured rate, and learns
        # from the verdicts and its shadow drafts
        drafting_model = assistant is not None
        self.lengths = [DraftLength(self.max_tokens, prior_rate=0.8) for _ in self.tokens] if drafting_model else []
        self.match_lengths = [MatchLengths(self.max_tokens) for _ in self.tokens] if not drafting_model else []
        # prompt lookup: the DraftLength that chose each row's last draft (or shadow), for its verdict
        self.judged: list[Optional[DraftLength]] = [None] * len(self.tokens)
        self.idle = [0] * len(self.tokens)  # draft model: plain steps since the row last drafted
        self.shadow: list[Optional[int]] = [None] * len(self.tokens)  # a plain step's unverified proposal
        self.drafted = 0
        self.accepted = 0

    def _extend(self, row: int, tokens: Sequence[int]) -> None:
        self.tokens[row].extend(int(t) for t in tokens)
        lookup = self.lookups[row]
        if lookup is not None:
            lookup.extend(tokens)

    def drafts(self, first_slot: int, running: Sequence[bool], room: Sequence[int], beta: float) -> list[list[int]]:
        """Each row's drafts for this step (rows that do not draft: []). ``room``: per row, the
        most drafts its slot and its remaining new tokens take."""
        out: list[list[int]] = [[] for _ in running]
        if self.assistant is not None:
            want = {}
            for r, run in enumerate(running):
                if run:
                    k = self.lengths[r].choose(beta)
                    if k == 0:  # a draft costs a draft-model pass: probe once in a while instead of shadowing
                        self.idle[r] += 1
                        k = 1 if self.idle[r] >= PROBE_EVERY else 0
                    k = max(min(k, room[r]), 0)
                    if k:  # a row that does not draft is not fed to the draft model (it catches up later)
                        self.idle[r] = 0
                        want[first_slot + r] = (self.tokens[r], k)
            if want:
                proposed = self.assistant.propose(want)
                for slot, d in proposed.items():
                    out[slot - first_slot] = d
            return out
        for r, run in enumerate(running):
            self.shadow[r] = self.judged[r] = None
            if not run:
                continue
            lookup = self.lookups[r]
            assert lookup is not None
            start, length = lookup.match()
            if start < 0:
                continue
            lengths = self.match_lengths[r][length]
            self.judged[r] = lengths
            k = min(lengths.choose(beta), room[r])
            if k > 0:
                out[r] = lookup.tokens[start:start + k]
            else:  # no draft: remember what one would have been, to learn whether to draft again
                self.shadow[r] = lookup.tokens[start]
        return out

    def after_step(self, tokens: np.ndarray, was_running: Sequence[bool]) -> None:
        """A plain step gave each running row one token."""
        for r, run in enumerate(was_running):
            if not run:
                continue
            token = int(tokens[r])
            judged = self.judged[r]
            if self.shadow[r] is not None and judged is not None:
                judged.observe(int(token == self.shadow[r]), 1)
            self.shadow[r] = self.judged[r] = None
            self._extend(r, [token])

    def after_verify(self, emitted: Sequence[Sequence[int]], accepted: Sequence[int], drafted: Sequence[int],
                     was_running: Sequence[bool], first_slot: int) -> None:
        """A verification: row r kept its first accepted[r] of drafted[r] drafts and emitted these tokens."""
        for r, run in enumerate(was_running):
            if not run:
                continue
            if drafted[r]:
                judged = self.lengths[r] if self.assistant is not None else self.judged[r]
                assert judged is not None
                judged.observe(int(accepted[r]), int(drafted[r]))
                self.drafted += int(drafted[r])
                self.accepted += int(accepted[r])
            if self.assistant is not None:
                self.assistant.rollback(first_slot + r, len(self.tokens[r]), int(accepted[r]))
            self._extend(r, emitted[r])

