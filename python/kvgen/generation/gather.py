"""Many requests of one engine at once: ``generate_all`` submits them together and gathers
their results in input order (Engine.generate, ``generate_batch``'s run)."""

from __future__ import annotations

import queue
from typing import Any, Callable, Optional, Sequence

from kvgen.generation.request import StepUpdate
from kvgen.generation.request_setup import RequestSetup
from kvgen.generation.results import GenerationResult


def generate_all(engine: Any, prompts: Sequence[Sequence[int]], setups: Sequence[RequestSetup],
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
