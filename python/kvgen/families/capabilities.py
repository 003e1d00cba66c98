"""What the engine and the server may do with a model: facts they act on, never a family's name.

A family module (kvgen.families) derives a model's ``Capabilities`` from its file when it
loads; ``Model.capabilities`` holds them. The engine plans its passes from these fields alone,
so a new family that keeps the defaults runs every engine feature unchanged, and one that
cannot (a recurrent state that cannot be cut mid-chunk, rows computed again at a position)
says so here, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Capabilities:
    """Facts about a loaded model that change how the engine schedules it."""

    #: A cached prefix may end inside a prefill chunk: the rest of the chunk is computed with
    #: the cached positions' rows padded, bit for bit as a fresh prefill. False where a row's
    #: result depends on more than its own positions' products: a sliding window (the chunk's
    #: attention spans differ), LongRoPE (the factors follow the sequence's length).
    partial_prefix_reuse: bool = True
    #: 0, or the sequence length past which every position of a row is computed again with other
    #: rotary factors (LongRoPE's original context): a prompt longer than this is fed in one
    #: piece, and a row whose generation crosses it is recomputed from its first token.
    recompute_past: int = 0
    #: None when speculative decoding (prompt lookup, a draft model) can run; otherwise why not,
    #: in words that end a ValueError's message.
    speculation_refused: Optional[str] = None
    #: Recurrent layers keep a fixed-size state per slot beside the KV rows (a hybrid model).
    recurrent_state: bool = False

    def check_speculation(self, what: str = "speculative decoding") -> None:
        """ValueError naming ``what`` (the flag or field that asked for it) when the model
        cannot verify drafts."""
        if self.speculation_refused:
            raise ValueError(f"{what} does not run with this model: {self.speculation_refused}")


def windowed(config: object) -> bool:
    """Whether a Hugging Face config dict gives its layers a sliding window."""
    return bool(isinstance(config, dict) and config.get("sliding_window"))


def capabilities_of(*, sliding_window: bool, long_rope_context: int) -> Capabilities:
    """The capabilities of a transformer whose layers keep only KV rows: ``sliding_window``
    when any layer attends over a window, ``long_rope_context`` LongRoPE's switch (0: none)."""
    refused = None
    if long_rope_context:
        refused = "a LongRoPE model (Phi-3 with long factors) computes its rows again at the switch"
    return Capabilities(partial_prefix_reuse=not sliding_window and not long_rope_context,
                        recompute_past=long_rope_context, speculation_refused=refused)
