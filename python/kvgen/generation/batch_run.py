"""``generate_batch``'s run: every prompt submitted at once to one engine of ``max_batch`` slots
(EngineSize.for_batch), which decodes them continuously batched, and the results gathered in
input order."""

from __future__ import annotations

import queue
from typing import Callable, Optional, Sequence

from kvgen.generation.engine import Engine
from kvgen.generation.engine_size import EngineSize
from kvgen.generation.request import StepUpdate
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
            return generate_all(engine, prompts, setups, on_done=(lambda _: bar.update(1)) if bar else None)
    finally:
        if bar is not None:
            bar.close()


def generate_all(engine: Engine, prompts: Sequence[Sequence[int]], setups: Sequence[RequestSetup],
              on_done: Optional[Callable[[int], None]] = None) -> list[GenerationResult]:
    """Runs every prompt with its set-up (Engine.submit), all queued at once, ``slots`` rows at
    a time, and returns the results in input order; ``on_done(i)`` as prompt i finishes (from the
    scheduler thread). Ctrl-C cancels them all."""
    finished: queue.SimpleQueue = queue.SimpleQueue()

    def listener(i: int) -> Callable[[StepUpdate], None]:
        return lambda update: finished.put(i) if update.done else None

    requests = [engine.submit(p, c, on_update=listener(i)) for i, (p, c) in enumerate(zip(prompts, setups))]
    try:
        for _ in requests:
            while True:  # a timeout, so that Ctrl-C reaches this thread
                try:
                    i = finished.get(timeout=0.1)
                    break
                except queue.Empty:
                    if any(r.done() and r.error is not None for r in requests):
                        return [r.wait() for r in requests]  # raises the first error
            if on_done is not None:
                on_done(i)
        return [r.wait() for r in requests]
    finally:
        for r in requests:
            if not r.done():
                r.cancel()
