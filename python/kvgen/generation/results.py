"""The results of a generation, shared by the loop over external logits (``_generate``) and
the loop with a built-in model (``_model_generator``): GenerationResult, GenerationStats."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional

import numpy as np


@dataclass
class GenerationResult:
    """The output of a generation, per input and per returned sequence.

    ``sequences[i][k]`` are the token ids of the k-th sequence of input i (generated part
    only, unless the prompt was kept), best first under beam search. ``scores[i][k]`` is
    the beam score (sum of log-probs / length ** length_penalty, HF ``sequences_scores``)
    or, without beams, the sum of the token log-probs. ``token_logprobs[i][k]`` are the
    log-probabilities of each generated token under the processed distribution (HF
    ``compute_transition_scores`` on beam scores; on sampling scores with
    ``normalize_logits=True``); ``raw_token_logprobs`` the same under the raw logits,
    when asked for. ``finish_reasons[i][k]`` is "eos", "stop", "length", "interrupted"
    (Ctrl-C during ``generate()``), or None (still running).
    With ``GenerationConfig(top_logprobs=n)``, ``top_token_ids[i][k]`` (int64) and
    ``top_logprobs[i][k]`` (float32) are (generated tokens, n) arrays: at each token, the n
    most likely tokens of the processed distribution, most likely first, and their
    log-probabilities (OpenAI's ``top_logprobs``); ``raw_top_*`` the same from the raw
    logits when raw log-probs are asked for. None when n is 0.
    """

    sequences: list[list[np.ndarray]]
    scores: list[list[float]]
    token_logprobs: list[list[np.ndarray]]
    raw_token_logprobs: Optional[list[list[np.ndarray]]]
    finish_reasons: list[list[Optional[str]]]
    prompt_lengths: list[int]
    #: texts[i][k]: the decoded sequences, when generated with a model that has a tokenizer
    texts: Optional[list[list[str]]] = None
    top_token_ids: Optional[list[list[np.ndarray]]] = None
    top_logprobs: Optional[list[list[np.ndarray]]] = None
    raw_top_token_ids: Optional[list[list[np.ndarray]]] = None
    raw_top_logprobs: Optional[list[list[np.ndarray]]] = None

    def __repr__(self) -> str:
        n = sum(len(s) for s in self.sequences)
        text = ""
        if self.texts is not None:  # the best text of the first inputs, shortened
            best = [_shortened(per[0]) for per in self.texts[:_SHOWN_INPUTS]]
            more = ", ..." if len(self.texts) > _SHOWN_INPUTS else ""
            text = f"texts=[{', '.join(best)}{more}], "
        return (f"GenerationResult({len(self.sequences)} inputs, {n} sequences, {text}"
                f"finish_reasons={self.finish_reasons})")


_SHOWN_INPUTS = 3
_SHOWN_CHARACTERS = 40


def _shortened(text: str) -> str:
    """repr(text), cut to _SHOWN_CHARACTERS characters with "..." when longer."""
    return repr(text if len(text) <= _SHOWN_CHARACTERS else text[:_SHOWN_CHARACTERS - 3] + "...")


def _result(hyps: list, strip_prompt: bool) -> GenerationResult:
    """The GenerationResult of the core's hypotheses (one list of dicts per input, best first)."""
    start = (lambda h: h["prompt_length"]) if strip_prompt else (lambda h: 0)
    raw = [[h["raw_logprobs"] for h in per] for per in hyps]
    has_raw = all(r is not None for per in raw for r in per)
    return GenerationResult(
        sequences=[[h["tokens"][start(h):] for h in per] for per in hyps],
        scores=[[h["score"] for h in per] for per in hyps],
        token_logprobs=[[h["logprobs"] for h in per] for per in hyps],
        raw_token_logprobs=raw if has_raw else None,
        finish_reasons=[[h["finish_reason"] for h in per] for per in hyps],
        prompt_lengths=[per[0]["prompt_length"] for per in hyps],
        top_token_ids=_per_hypothesis(hyps, "top_ids"),
        top_logprobs=_per_hypothesis(hyps, "top_logprobs"),
        raw_top_token_ids=_per_hypothesis(hyps, "raw_top_ids"),
        raw_top_logprobs=_per_hypothesis(hyps, "raw_top_logprobs"),
    )


def _per_hypothesis(hyps: list, key: str) -> Optional[list[list[np.ndarray]]]:
    """hyps' ``key`` entries as [input][sequence], or None when any is missing."""
    values = [[h.get(key) for h in per] for per in hyps]
    return values if all(v is not None for per in values for v in per) else None


class TextPiece(str):
    """A piece of streamed text (a ``str``) with what produced it: ``token_ids`` (the tokens
    decoded into this piece, often one), ``logprobs`` (each one's log-probability under the
    processed distribution) and, with ``GenerationConfig(top_logprobs=n)``, ``top_logprobs``:
    per token a dict {token id: log-prob} of the n most likely tokens, most likely first
    (vLLM's convention); None when n is 0."""

    token_ids: list[int]
    logprobs: list[float]
    top_logprobs: Optional[list[dict[int, float]]]

    @classmethod
    def of(cls, text: str, token_ids: Iterable[int], steps: list[tuple[Any, ...]]) -> "TextPiece":
        """The piece ``text`` of ``token_ids``, with each token's (logprob, top ids, top
        log-probs) in ``steps``, one tuple per token."""
        piece = cls(text)
        piece.token_ids = [int(t) for t in token_ids]
        piece.logprobs = [float(step[0]) for step in steps]
        has_top = bool(steps) and steps[0][1] is not None
        piece.top_logprobs = ([{int(i): float(lp) for i, lp in zip(step[1], step[2])} for step in steps]
                              if has_top else None)
        return piece


@dataclass
class GenerationStats:
    """Timing of the last generation: the prefill (prompt pass and first token) and the
    decode steps that followed."""

    prompt_tokens: int = 0   # summed over prompts
    new_tokens: int = 0      # generated tokens of the returned best sequence(s)
    prefill_seconds: float = 0.0
    decode_seconds: float = 0.0
    decode_steps: int = 0    # forward passes after the prefill: one token per running row each, or more
                             # where speculative decoding accepted drafts
    decode_tokens: int = 0   # tokens of the longest sequence after its first (0: one per decode step)
    drafted_tokens: int = 0  # speculative decoding: draft tokens verified, summed over rows
    accepted_tokens: int = 0  # of which accepted
    cached_tokens: int = 0   # prompt tokens found in the generator's prefix cache (not prefilled again)

    @property
    def prefill_tokens_per_second(self) -> float:
        """Prompt tokens over the prefill time."""
        return self.prompt_tokens / self.prefill_seconds if self.prefill_seconds > 0 else 0.0

    @property
    def decode_tokens_per_second(self) -> float:
        """Tokens per second of each sequence after its first (decode steps per second
        without speculative decoding)."""
        tokens = self.decode_tokens or self.decode_steps
        return tokens / self.decode_seconds if self.decode_seconds > 0 else 0.0

    @property
    def acceptance_rate(self) -> Optional[float]:
        """Speculative decoding: accepted / drafted tokens (None when nothing was drafted)."""
        return self.accepted_tokens / self.drafted_tokens if self.drafted_tokens else None

    def __repr__(self) -> str:
        return (f"GenerationStats(prompt_tokens={self.prompt_tokens}, new_tokens={self.new_tokens}, "
                f"prefill_seconds={self.prefill_seconds:.4f}, decode_seconds={self.decode_seconds:.4f}, "
                f"decode_steps={self.decode_steps}, prefill_tokens_per_second={self.prefill_tokens_per_second:.1f}, "
                f"decode_tokens_per_second={self.decode_tokens_per_second:.1f})")

    def summary(self) -> str:
        """One line: prompt and new tokens, prefill and decode speed."""
        prefill = (f"prefill {self.prefill_tokens_per_second:.1f} tok/s" if self.prefill_seconds > 0
                   else "no prefill")
        # a rate needs a decode step to stand on: after one token (all of it the prefill's) there is none
        if self.decode_steps == 0 or self.decode_seconds <= 0:
            decode = "no decode step (the first token comes from the prefill)"
        else:
            steps = "step" if self.decode_steps == 1 else "steps"
            decode = f"decode {self.decode_tokens_per_second:.1f} tok/s over {self.decode_steps} {steps}"
            if self.drafted_tokens:
                decode += (f", {self.accepted_tokens}/{self.drafted_tokens} drafted tokens accepted "
                           f"({100 * self.acceptance_rate:.0f}%)")  # type: ignore[operator]
        return f"{self.prompt_tokens} prompt tokens, {self.new_tokens} new tokens; {prefill}, {decode}"
