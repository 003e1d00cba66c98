"""``generate_batch``'s run: every prompt submitted at once to one engine of ``max_batch`` slots
(EngineSize.for_batch), which decodes them continuously batched, and the results gathered in
input order."""

from __future__ import annotations

from typing import Sequence

from kvgen.generation.engine import Engine
from kvgen.generation.engine_size import EngineSize
from kvgen.generation.request_setup import RequestSetup
from kvgen.generation.results import GenerationResult


def run_batch(model, prompts: Sequence[Sequence[int]], setups: Sequence[RequestSetup], *, max_batch: int = 8,
              progress: bool = False) -> list[GenerationResult]:
    """Generates for every prompt with its set-up through an engine of ``max_batch`` slots,
    sized to the longest prompt plus its new tokens; results in input order. ``progress``
    shows a tqdm bar."""
    if max_batch < 1:
        raise ValueError(f"max_batch must be >= 1, got {max_batch}")
    if not prompts:
        return []
    size = EngineSize.for_batch(model, prompts, [s.config for s in setups], max_batch)
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            raise ImportError("progress=True shows a tqdm bar: pip install tqdm") from None
        bar = tqdm(total=len(prompts), unit="prompt")
    try:
        with Engine.sized(model, size) as engine:
            return engine.generate(prompts, setups, on_done=(lambda _: bar.update(1)) if bar else None)
    finally:
        if bar is not None:
            bar.close()
