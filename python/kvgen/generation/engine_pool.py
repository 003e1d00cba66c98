"""The engine a ModelGenerator keeps between calls (``prefix_cache=True``), so that a call whose
prompt starts with an earlier call's prompt (the next turn of a chat, a shared system prompt)
reuses that prompt's cached positions.

The kept engine has KEPT_SLOTS slots of at least KEPT_CONTEXT positions (the model's context
when shorter; kvgen.generation.engine_size), taking memory only once used; it is built again,
empty, when a one-row call needs more positions or longer drafts, or when the model's mode now
asks for another KV cache type (exact mode keeps float32 keys and values, the int8 modes halves).
A call of several rows, with a draft model (whose cache is sized by the engine's context), or
made while another call holds the kept engine, gets an engine of its own size; an interrupted
call drops the kept engine with its cache.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

from kvgen.generation.engine import Engine
from kvgen.generation.engine_size import EngineSize
from kvgen.generation.request import Request


class EnginePool:
    """Engines for one model's calls: ``acquire(request)`` an engine for a request, stepped by
    the caller, and ``release`` it after; the kept engine (with ``prefix_cache``) is lent to one
    call at a time."""

    def __init__(self, model: Any, prefix_cache: bool = True):
        self.model = model
        self.prefix_cache = prefix_cache
        self.kept: Optional[Engine] = None  # None until a call keeps one
        self._busy = False                  # a call holds self.kept
        self._lock = threading.Lock()

    def acquire(self, request: Request) -> Engine:
        """For a one-row ``request`` without a draft model, the kept engine when it is free (built
        again when it does not hold the request); else an engine of the request's own size.
        ValueError when the request does not fit the model's context."""
        request.check_context(self.model.context_length)
        if self.prefix_cache and request.rows == 1 and request.assistant_model is None:
            with self._lock:
                if not self._busy:
                    engine = self.kept
                    if (engine is None or not engine.size.holds(request)
                            or self.model.kv_cache_bytes(engine.slots, engine.context, engine.state_snapshots)
                            != engine.kv_cache_bytes):
                        self.kept = None
                        engine = Engine.sized(self.model, EngineSize.kept(self.model, request,
                                                                          engine.size if engine else None))
                    self.kept, self._busy = engine, True
                    return engine
        return Engine.sized(self.model, EngineSize.for_request(request))

    def release(self, engine: Engine, request: Request, clean: bool) -> None:
        """Ends a call's use of ``engine``: a request left unfinished is cancelled and dropped
        (``clean``: the engine stopped between steps) or, after Ctrl-C or an error part-way
        through a step, the kept engine is dropped with its cache."""
        if engine is not self.kept:
            return
        try:
            if clean and not request.done():
                request.cancel()
                engine.step()  # frees its slot; a cancelled request runs no forward pass
        except BaseException:
            clean = False
            raise
        finally:
            with self._lock:
                if not clean or not request.done():
                    self.kept = None
                self._busy = False
