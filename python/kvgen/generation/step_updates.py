"""What a request's listener is told after each engine step (StepUpdate): the new tokens with
their log-probabilities and top alternatives shaped per row, for a plain step and for a verified
one (which may emit several tokens per row: one update per position)."""

from __future__ import annotations

from typing import Optional

from kvgen._core import StepResult, VerifyResult
from kvgen.generation.request import Request, StepUpdate

TopLogprobs = list[tuple[int, float]]  # (token id, log-probability), most likely first


def step_update(r: Request, step: StepResult, was_running: list[bool], reasons: list[Optional[str]]) -> StepUpdate:
    """The update of a plain step: each row's token (None for rows done before it), with its
    log-probability and top-n alternatives when asked for (not under beam search, whose rows
    are hypotheses that the step reorders)."""
    tokens = [int(t) if was else None for t, was in zip(step.tokens, was_running)]
    logprobs: Optional[list[Optional[float]]] = None
    top: Optional[list[Optional[TopLogprobs]]] = None
    if r.logprobs and not r.beams:
        logprobs = [float(lp) if t is not None else None for lp, t in zip(step.logprobs.tolist(), tokens)]
        if step.top_token_ids is not None and step.top_logprobs is not None:
            top = [list(zip(ids, lps)) if t is not None else None
                   for ids, lps, t in zip(step.top_token_ids.tolist(), step.top_logprobs.tolist(), tokens)]
    return StepUpdate(tokens, logprobs, reasons, step.done, top)


def verified_updates(r: Request, result: VerifyResult, emitted: list[list[int]], reasons: list[Optional[str]],
                     done: bool) -> list[StepUpdate]:
    """The updates of a verified step, one per position of the longest row's emitted tokens
    (a row with fewer gets None); each row's finish reason comes with its last token."""
    lps = [[float(x) for x in lp] for lp in result.emitted_logprobs] if r.logprobs else None
    tops = _emitted_top_logprobs(r, emitted) if r.logprobs else None
    count = max((len(e) for e in emitted), default=0)
    updates = []
    for i in range(count):
        tokens = [e[i] if i < len(e) else None for e in emitted]
        last = [i == len(e) - 1 for e in emitted]
        updates.append(StepUpdate(
            tokens, [lp[i] if i < len(lp) else None for lp in lps] if lps is not None else None,
            [reason if is_last else None for reason, is_last in zip(reasons, last)],
            done and i == count - 1,
            [top[i] if i < len(top) else None for top in tops] if tops is not None else None))
    return updates


def _emitted_top_logprobs(r: Request, emitted: list[list[int]]) -> Optional[list[list[TopLogprobs]]]:
    """Per row, the top-n (id, log-prob) pairs of each token the verify step emitted (its last
    ones in the row's hypothesis); None when the config asks for none."""
    if not r.selector.config.top_logprobs:
        return None
    rows = [h for per in r.selector._hypotheses() for h in per]
    tops = []
    for h, e in zip(rows, emitted):
        ids, lps, count = h["top_ids"], h["top_logprobs"], len(h["logprobs"])
        if ids is None or lps is None or not e:
            tops.append([])
            continue
        tops.append([list(zip(ids[i].tolist(), lps[i].tolist())) for i in range(count - len(e), count)])
    return tops
