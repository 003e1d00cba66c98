"""The step generator: the core's generation loop over logits computed elsewhere, one step at a
time, with constrained decoding's masks (kvgen.generation.constraints). ``kvgen.Generator`` is its
public face; the engine (kvgen.generation.engine) runs one per request over the built-in model's
logits."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from kvgen import _core
from kvgen._core import GenerationConfig, StepResult, VerifyResult
from kvgen.generation.constraints import Constraint, RowMatchers, constraint_field
from kvgen.generation.results import GenerationResult, _result

#: model_fn(input_ids, beam_indices) -> logits [rows, vocab] float32.
#: input_ids[r] holds the new tokens of row r (its whole prompt at the first call, one
#: token after); beam_indices (None at the first call and without beam search) gives,
#: for each row, the row of the previous step it continues: reorder the KV cache with it
#: before appending the new tokens.
ModelFn = Callable[[list, Optional[np.ndarray]], np.ndarray]


class TokenSelector(_core._TokenSelector):
    """The step generator: the core's step loop over logits computed elsewhere (kvgen.Generator is
    its public face), with the rows' allowed tokens computed by llguidance when the config has a
    constraint; each step fills the masks of the next one in the mask worker, overlapping the
    caller's forward pass. The engine runs one per request."""

    def __init__(self, config: GenerationConfig, batch_size: Optional[int] = None, *, tokenizer: Any = None,
                 token_strings: Optional[Sequence[str | bytes]] = None, output_raw_logprobs: bool = False,
                 constraint: Optional[Constraint] = None) -> None:
        super().__init__(config, batch_size, token_strings=token_strings, output_raw_logprobs=output_raw_logprobs)
        field = constraint_field(config)
        if field is not None and tokenizer is None and constraint is None:
            raise ValueError(f"GenerationConfig.{field} needs the vocabulary: pass tokenizer= (a tokenizers.Tokenizer, "
                             "a transformers fast tokenizer or a kvgen.Model) to the Generator")
        if field is not None and config.num_beams > 1 and config.eos_token_id is None:
            raise ValueError(f"beam search under GenerationConfig.{field} needs eos_token_id: a beam ends where "
                             "its grammar does by picking EOS")
        # a constraint compiled by the caller (the request set-up) for this config's field
        if field is None:
            constraint = None
        elif constraint is None or constraint.field != field:
            constraint = Constraint(config, tokenizer)
        self._constraint = constraint
        self._matchers: Optional[RowMatchers] = None

    def step(self, logits: Any, *, allowed_tokens: Any = None) -> StepResult:
        """Processes the next-token logits [rows, vocab] (float32, C-contiguous, read in
        place) and picks a token per row; returns a StepResult. Under a constraint the
        allowed tokens come from the tokenizer; ``allowed_tokens`` (a bitmask of your own)
        belongs to the core class ``kvgen._core._TokenSelector``."""
        if self._constraint is None:
            return super().step(logits, allowed_tokens=allowed_tokens)
        if allowed_tokens is not None:
            raise ValueError("this Generator computes the allowed tokens from its tokenizer: pass no allowed_tokens")
        if self._matchers is None:
            self._constraint.check_vocab(int(logits.shape[-1]))
            self._matchers = self._constraint.rows(self.rows)
            self._matchers.fill()
        running = RowMatchers.running(self)
        result = super().step(logits, allowed_tokens=self._matchers.wait())
        self._matchers.follow(self, result.tokens, result.beam_indices, running)
        done = self.is_done()
        if not done:
            self._matchers.fill_in_background()  # overlaps the caller's next forward pass
        return StepResult(result.tokens, result.beam_indices, done, result.logprobs, result.top_token_ids,
                          result.top_logprobs, result.raw_top_token_ids, result.raw_top_logprobs)

    def verify(self, logits: Any, drafts: Any, draft_lengths: Any = None, *, draft_probs: Any = None,
               allowed_tokens: Any = None) -> VerifyResult:
        """Speculative verification: checks each row's draft tokens against your model's logits
        and appends what the row keeps, in one call; returns a VerifyResult.

        Shapes (k draft tokens per row at most, ``positions = k + 1``):

        - ``logits`` float32 [rows, k + 1, vocab], C-contiguous, read in place (NumPy or a CPU
          tensor): position j holds the logits after the row's history and its first j drafts
          (one forward pass over ``[next token, draft_0, ..., draft_{k-1}]``); positions past
          ``draft_lengths[r] + 1`` are never read.
        - ``drafts`` integer [rows, k]: the draft tokens (entries past ``draft_lengths[r]`` are
          ignored); None when k = 0.
        - ``draft_lengths`` integer [rows] in 0 .. k (None: k for every row).
        - ``draft_probs`` float32 [rows, k, vocab] or None: the draft model's probabilities q
          that each draft was sampled from; None means one-hot q (prompt lookup / n-gram drafts).
        - ``allowed_tokens`` [rows, k + 1, ceil(vocab / 32)] uint32 or None: an allowed-token
            bitmask per position, computed along the draft prefix; only on the core class
          ``kvgen._core._TokenSelector``: with a tokenizer, this Generator computes them with
          llguidance (a row's drafts are cut where its grammar refuses one or ends, which keeps
          the output exact; the cut drafts count in ``rollback``).

        At each position the whole processor chain runs with the history as it is there (the
        earlier drafts appended). Greedy: drafts are kept while each equals the processed
        argmax; then that argmax is appended (the correction, or the bonus token after the last
        draft). Sampling: draft x is kept with probability min(1, p(x) / q(x)); at the first
        rejection a token is drawn from normalize(max(p - q, 0)); after the last draft a bonus
        token is drawn from p. The tokens are distributed exactly as step() by step() sampling,
        and the draws are keyed by (seed, row, token index), so a seeded run repeats and a row's
        tokens do not depend on the other rows. Stopping rules apply token by token: a row that
        stops keeps the tokens up to its stop. Beam search is out of scope (ValueError).

        After the call, drop ``result.rollback[r]`` positions from the end of row r's KV cache
        (the rejected drafts) and feed ``result.tokens[r]``. ``drafted_tokens`` and
        ``accepted_tokens`` count each row's drafts and accepted ones over the generation."""
        if self._constraint is None:
            return super().verify(logits, drafts, draft_lengths, draft_probs=draft_probs,
                                  allowed_tokens=allowed_tokens)
        if allowed_tokens is not None:
            raise ValueError("this Generator computes the allowed tokens from its tokenizer: pass no allowed_tokens")
        if self.num_beams > 1:
            raise ValueError("verify() does not support beam search (num_beams > 1): speculative decoding keeps one "
                             "continuation per row; use step()")
        shape = tuple(getattr(logits, "shape", ()))
        if len(shape) != 3:
            raise ValueError(f"logits must be 3-D [rows, positions, vocab], got shape {shape}")
        rows, k, vocab = int(shape[0]), int(shape[1]) - 1, int(shape[2])
        ids = np.zeros((rows, k), np.int64) if drafts is None and k == 0 else np.asarray(drafts)
        if ids.dtype.kind not in "iu" or ids.shape != (rows, k):
            raise ValueError(f"drafts must be integer ids of shape ({rows}, {k}) (rows, k), got dtype {ids.dtype} "
                             f"shape {ids.shape}")
        lengths = np.full(rows, k, np.int64) if draft_lengths is None else np.asarray(draft_lengths, np.int64)
        if lengths.shape != (rows,) or (lengths < 0).any() or (lengths > k).any():
            raise ValueError(f"draft_lengths must hold one value in 0 .. {k} per row ({rows}), got {lengths}")
        for r in range(rows):
            bad = [(j, int(t)) for j, t in enumerate(ids[r, :lengths[r]]) if not 0 <= t < vocab]
            if bad:
                raise ValueError(f"drafts[{r}, {bad[0][0]}] = {bad[0][1]} is outside the vocabulary [0, {vocab})")
        if self._matchers is None:
            self._constraint.check_vocab(vocab)
            self._matchers = self._constraint.rows(self.rows)
            self._matchers.fill()
        running = RowMatchers.running(self)
        self._matchers.wait()
        masks, cut = self._matchers.masks_along_drafts(ids, lengths, running)
        result = super().verify(logits, ids, cut, draft_probs=draft_probs, allowed_tokens=masks)
        self._matchers.follow_emitted(self, result.emitted, running)
        done = self.is_done()
        if not done:
            self._matchers.fill_in_background()  # overlaps the caller's next forward pass
        # the cut drafts were fed to the caller's cache too: they roll back with the rejected ones
        return VerifyResult(result.tokens, done, result.accepted, result.rollback + (lengths - cut), result.num_emitted,
                            result.emitted, result.emitted_logprobs, result.logprobs)

    @property
    def acceptance_rate(self) -> Optional[float]:
        """Accepted / drafted tokens over every row and verify() call so far; None before any draft."""
        drafted = int(self.drafted_tokens.sum()) if self.rows else 0
        return int(self.accepted_tokens.sum()) / drafted if drafted else None

    def result(self, strip_prompt: bool = True) -> GenerationResult:
        """The sequences so far (all finished once ``is_done()``), per input."""
        return _result(self._hypotheses(), strip_prompt)

    def stream(self, model_fn: ModelFn, prompts: Sequence[Sequence[int]],
               sequence_ids: Optional[Sequence[int]] = None) -> Iterator[StepResult]:
        """Appends ``prompts`` (with ``sequence_ids``, see the class) and steps with
        ``model_fn``'s logits until done, yielding each step."""
        self.append_tokens(prompts, sequence_ids=sequence_ids)
        per_prompt = self.rows // self.batch_size
        inputs = [np.asarray(p, dtype=np.int64) for p in prompts for _ in range(per_prompt)]
        beam_indices = None
        while not self.is_done():
            step = self.step(model_fn(inputs, beam_indices))
            yield step
            inputs = [np.array([t], dtype=np.int64) for t in step.tokens]
            beam_indices = step.beam_indices

    def __repr__(self) -> str:
        state = "done" if self.is_done() else f"step {self.step_count}"
        return f"{type(self).__name__}(batch_size={self.batch_size}, rows={self.rows}, {state}, config={self.config!r})"

