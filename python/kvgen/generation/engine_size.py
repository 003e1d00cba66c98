"""How large an engine is built, by the rule of each entry point: ``EngineSize``, which
``Engine.sized`` (kvgen.generation.engine, the one place an Engine is constructed) takes.

- ``serving``: ``kvgen serve`` and ``kvgen batch``: ``max_batch`` slots of the model's context,
  drafts as long as speculation allows (and so prompt scoring's chunks);
- ``for_batch``: ``generate_batch``: ``max_batch`` slots as long as the longest prompt plus its
  new tokens;
- ``for_request``: one request alone (``generate`` without the prefix cache, a call of several
  rows): its rows, as long as its longest prompt plus new tokens;
- ``kept``: the engine a ModelGenerator keeps between calls (kvgen.generation.engine_pool).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from kvgen import _core
from kvgen.generation.speculation import MAX_DRAFT_TOKENS

#: Positions the kept engine holds at least (the model's context when shorter), so that a
#: conversation grows in it without building it again.
KEPT_CONTEXT = 4096
#: Slots of the kept engine: a conversation keeps its slot while another prompt runs in between.
KEPT_SLOTS = 2


@dataclass(frozen=True)
class EngineSize:
    """An engine's size: its slots, their positions, the longest draft a row verifies (the slot
    cache returns every position's logits of chunks up to one longer), and the prefix cache."""

    slots: int
    context: int
    draft_tokens: int = MAX_DRAFT_TOKENS
    prefix_cache: bool = False

    @property
    def verify_positions(self) -> int:
        """The longest chunk whose every position's logits the slot cache returns."""
        return min(self.context, max(self.draft_tokens, 0) + 1)

    @classmethod
    def serving(cls, model: Any, max_batch: int, prefix_cache: bool = True) -> EngineSize:
        """``kvgen serve`` and ``kvgen batch``: requests of any length up to the model's context."""
        return cls(max_batch, model.context_length, MAX_DRAFT_TOKENS, prefix_cache)

    @classmethod
    def for_batch(cls, model: Any, prompts: Sequence[Sequence[int]], configs: Sequence[Any],
                  max_batch: int) -> EngineSize:
        """``generate_batch``: sized to the longest prompt plus its new tokens (a longer request
        fails when it is submitted, naming the overflow)."""
        need = max(len(p) + max(_core._TokenSelector(c).max_new_tokens(len(p)), 0) for p, c in zip(prompts, configs))
        return cls(max_batch, max(1, min(need, model.context_length)))

    @classmethod
    def for_request(cls, request: Any) -> EngineSize:
        """One request alone (kvgen.generation.request.Request): its rows, its positions, its drafts."""
        return cls(request.rows, max(1, request.positions), request.speculation_tokens if request.speculates else 0)

    @classmethod
    def kept(cls, model: Any, request: Any, current: Optional[EngineSize]) -> EngineSize:
        """The kept engine for a one-row ``request``: ``current`` (the kept engine's size, None
        when there is none) grown to hold it, at least KEPT_CONTEXT positions."""
        draft = request.speculation_tokens if request.speculates else 0
        slots = current.slots if current is not None else KEPT_SLOTS
        context = max(request.positions, current.context if current is not None else 1,
                      min(KEPT_CONTEXT, model.context_length))
        drafts = max(draft, current.verify_positions - 1 if current is not None else 0)
        return cls(slots, context, drafts, prefix_cache=True)

    def holds(self, request: Any) -> bool:
        """Whether a request fits this size's positions and drafts."""
        draft = request.speculation_tokens if request.speculates else 0
        return request.positions <= self.context and draft + 1 <= self.verify_positions
