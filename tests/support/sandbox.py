"""Running untrusted-input cases in a worker process with a memory and a time limit.

Fuzz and hardening tests hand kvgen hostile files and values. A case that crashes the
process, hangs, or allocates without bound must fail its test, not take the test run
(or the machine) down with it. ``Sandbox`` keeps one worker process (spawned, so it
shares nothing with pytest's process) that runs cases one after another under
``resource.setrlimit(RLIMIT_AS)``; the parent waits for each result with a timeout. A
worker that dies or times out is reported as such and replaced for the next case.

A case is a module-level function (importable by the worker) and picklable arguments.
Its outcome says whether it returned, which exception it raised (type name and
message), or how the worker ended (signal, exit code, timeout).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Optional

# Address space of a worker: Python, NumPy, kvgen and a few small models fit in well
# under this; a case that tries to allocate gigabytes from a forged header gets a
# MemoryError (or a C++ std::bad_alloc, which pybind11 turns into MemoryError).
DEFAULT_MEMORY_BYTES = 3 << 30
DEFAULT_TIMEOUT_S = 30.0


@dataclass
class Outcome:
    """How one case ended."""

    status: str          # "returned", "raised", "crashed", "timeout"
    error_type: str = ""  # the exception's type name when status == "raised"
    message: str = ""    # exception message, return value repr, or how the worker died

    def describe(self) -> str:
        return f"{self.status} {self.error_type}: {self.message}".strip()


def under_sanitizer() -> bool:
    """Whether AddressSanitizer is preloaded (CI's sanitizer stage). Its shadow memory
    takes terabytes of address space, so RLIMIT_AS cannot be set; ASAN_OPTIONS'
    hard_rss_limit_mb bounds memory there instead."""
    return "libasan" in os.environ.get("LD_PRELOAD", "")


def _worker(conn, memory_bytes: int) -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import numpy  # noqa: F401  imported before the limit: its own start-up is not the case's cost

    import kvgen  # noqa: F401

    if not under_sanitizer():
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        func, args = job
        try:
            value = func(*args)
            out = ("returned", "", repr(value)[:500])
        except BaseException as e:  # noqa: BLE001  every kind of failure is the result
            detail = f"{e}"[:2000]
            if not isinstance(e, (ValueError, TypeError, FileNotFoundError)):
                detail += "\n" + "".join(traceback.format_exception(e))[-3000:]
            out = ("raised", type(e).__name__, detail)
        conn.send(out)


class Sandbox:
    """A worker process that runs cases under a memory limit, each with a time limit."""

    def __init__(self, memory_bytes: int = DEFAULT_MEMORY_BYTES, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.memory_bytes, self.timeout_s = memory_bytes, timeout_s
        self._ctx = mp.get_context("spawn")
        self._proc: Optional[Any] = None
        self._conn: Any = None

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_worker, args=(child, self.memory_bytes), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join()
            self._conn.close()
        self._proc = None

    def run(self, func: Callable, *args: Any, timeout_s: Optional[float] = None) -> Outcome:
        """Runs ``func(*args)`` in the worker and says how it ended."""
        if self._proc is None or not self._proc.is_alive():
            self._stop()
            self._start()
        self._conn.send((func, args))
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            ready = self._conn.poll(limit)
            if ready:
                status, error_type, message = self._conn.recv()
                return Outcome(status, error_type, message)
        except (EOFError, ConnectionError):
            ready = True
        if not ready:
            self._stop()
            return Outcome("timeout", message=f"no result after {limit:.0f} s")
        self._proc.join(5)
        code = self._proc.exitcode
        self._stop()
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        return Outcome("crashed", message=f"the worker died ({how})")

    def close(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._conn.close()
            self._proc.join(5)
        self._stop()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# Exceptions a hostile input may end in: a clear refusal naming what is wrong.
CLEAN_ERRORS = ("ValueError", "TypeError")


def is_clean_refusal(outcome: Outcome, allowed: tuple[str, ...] = CLEAN_ERRORS) -> bool:
    """Whether the case ended in one of the ``allowed`` exceptions (or returned normally)."""
    return outcome.status == "returned" or (outcome.status == "raised" and outcome.error_type in allowed)
