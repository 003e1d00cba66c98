"""The results of a generation, shared by the loop over external logits (``_generate``) and
the loop with a built-in model (``_model_generator``): GenerationResult, GenerationStats."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

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
    """

    sequences: list[list[np.ndarray]]
    scores: list[list[float]]
    token_logprobs: list[list[np.ndarray]]
    raw_token_logprobs: Optional[list[list[np.ndarray]]]
    finish_reasons: list[list[Optional[str]]]
    prompt_lengths: list[int]
    #: texts[i][k]: the decoded sequences, when generated with a model that has a tokenizer
    texts: Optional[list[list[str]]] = None

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
    )


@dataclass
class GenerationStats:
    """Timing of the last generation: the prefill (prompt pass and first token) and the
    decode steps that followed."""

    prompt_tokens: int = 0   # summed over prompts
    new_tokens: int = 0      # generated tokens of the returned best sequence(s)
    prefill_seconds: float = 0.0
    decode_seconds: float = 0.0
    decode_steps: int = 0    # one token per running row each

    @property
    def prefill_tokens_per_second(self) -> float:
        """Prompt tokens over the prefill time."""
        return self.prompt_tokens / self.prefill_seconds if self.prefill_seconds > 0 else 0.0

    @property
    def decode_tokens_per_second(self) -> float:
        """Decode steps per second (tokens per second of each sequence)."""
        return self.decode_steps / self.decode_seconds if self.decode_seconds > 0 else 0.0

    def __repr__(self) -> str:
        return (f"GenerationStats(prompt_tokens={self.prompt_tokens}, new_tokens={self.new_tokens}, "
                f"prefill_seconds={self.prefill_seconds:.4f}, decode_seconds={self.decode_seconds:.4f}, "
                f"decode_steps={self.decode_steps}, prefill_tokens_per_second={self.prefill_tokens_per_second:.1f}, "
                f"decode_tokens_per_second={self.decode_tokens_per_second:.1f})")

    def summary(self) -> str:
        """One line: prompt and new tokens, prefill and decode speed."""
        return (f"{self.prompt_tokens} prompt tokens, {self.new_tokens} new tokens; prefill "
                f"{self.prefill_tokens_per_second:.1f} tok/s, decode {self.decode_tokens_per_second:.1f} tok/s")
