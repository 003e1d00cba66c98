"""Gives freed heap memory back to the system once the server is idle (glibc's ``malloc_trim``
through ctypes; elsewhere nothing). glibc keeps what the engine's per-request buffers and the
responses freed, so without it a server's RSS only grows."""

from __future__ import annotations

import asyncio
import ctypes
import sys
import time
from typing import Callable

from starlette.concurrency import run_in_threadpool


class Trimmer:
    """``malloc_trim(0)`` once nothing is in flight, at most once a second. Create it before
    any thread starts: it sets glibc's allocator limits."""

    # glibc's mallopt parameters
    _M_MMAP_THRESHOLD, _M_ARENA_MAX = -3, -8

    def __init__(self):
        self._trim = None
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL("libc.so.6")
                self._trim = libc.malloc_trim
                # Each engine request's generator holds vocabulary-sized step buffers (about
                # 0.4 MB with a 49k vocabulary), freed when it finishes. glibc's dynamic mmap
                # threshold would move such blocks into the heap after the first free, where
                # they stay; a fixed threshold keeps them mmapped (returned on free), and two
                # arenas bound what the worker threads' allocations keep. Set before any thread.
                libc.mallopt(self._M_MMAP_THRESHOLD, 256 << 10)
                libc.mallopt(self._M_ARENA_MAX, 2)
            except (OSError, AttributeError):
                pass
        self._last = 0.0
        self._pending = False
        self._again = False
        self._tasks: set = set()  # held until done

    def soon(self, idle: Callable[[], bool]) -> None:
        """Schedules ``maybe(idle)`` on the running loop (nothing outside a loop)."""
        try:
            task = asyncio.get_running_loop().create_task(self.maybe(idle))
        except RuntimeError:  # called by a finalizer, outside the loop
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def maybe(self, idle: Callable[[], bool]) -> None:
        """Trims once ``idle()``, at most once a second; a call while a trim is pending makes
        that one check again."""
        if self._trim is None:
            return
        if self._pending:
            self._again = True
            return
        self._pending = True
        try:
            while True:
                self._again = False
                await asyncio.sleep(max(0.2, self._last + 1.0 - time.monotonic()))  # a burst's last answers first
                if idle():
                    await run_in_threadpool(self._trim, 0)
                    self._last = time.monotonic()
                if not self._again:
                    return
        finally:
            self._pending = False
