"""Chat templates render in worker processes, so that no template can hang or exhaust the
process that asked for it: each worker runs with a bounded address space (``RENDER_MEMORY``) and
CPU time, and a rendering that has not answered ``RENDER_SECONDS`` plus a margin after it was
sent has its worker killed (a fresh one starts for the next rendering).

A worker is a plain Python interpreter running this file: it loads
kvgen/loaders/chat_template_sandbox.py by its path (jinja2 and the standard library, nothing of
kvgen's C++ core), reads requests (pickled by the parent) from stdin and answers with JSON on
stdout. A pool keeps up to ``WORKERS`` of them for the threads of one process; the compiled
templates stay cached in each.
"""

from __future__ import annotations

import atexit
import json
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

#: A worker's address space, in bytes (RLIMIT_AS): a template that builds more fails with a
#: MemoryError inside the worker, or the worker dies; the caller gets ChatTemplateLimitError.
RENDER_MEMORY = 1 << 30
#: Worker processes kept at most, whatever the number of threads rendering.
WORKERS = 4
#: Seconds past RENDER_SECONDS after which a rendering's worker is killed.
KILL_MARGIN = 0.75
#: Seconds a worker may take to start.
START_SECONDS = 20.0

_HEADER = struct.Struct("<Q")
_SANDBOX = Path(__file__).with_name("chat_template_sandbox.py")


class WorkerError(RuntimeError):
    """A worker that died or could not start."""


class _Worker:
    """One worker process and its pipes."""

    def __init__(self) -> None:
        # The worker runs Python and Jinja2 only: no preloaded library of the parent's (a sanitizer's
        # runtime reserves terabytes of address space, which the worker's RLIMIT_AS would refuse)
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        self.process = subprocess.Popen([sys.executable, "-I", str(Path(__file__).resolve()), str(_SANDBOX)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        close_fds=True, env=env)
        ready = self._read(time.monotonic() + START_SECONDS)
        if ready is None or json.loads(ready) != {"ready": True}:
            self.kill()
            raise WorkerError("the chat template worker process did not start")

    def ask(self, request: bytes, seconds: float) -> Optional[dict]:
        """The worker's answer to ``request``, or None when it did not answer within ``seconds``
        (then it is killed) or died."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(_HEADER.pack(len(request)) + request)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            self.kill()
            return None
        answer = self._read(time.monotonic() + seconds)
        if answer is None:
            self.kill()
            return None
        return json.loads(answer)

    def _read(self, deadline: float) -> Optional[bytes]:
        header = self._read_exactly(_HEADER.size, deadline)
        if header is None:
            return None
        return self._read_exactly(_HEADER.unpack(header)[0], deadline)

    def _read_exactly(self, n: int, deadline: float) -> Optional[bytes]:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        chunks, got = [], 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, min(n - got, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


class WorkerPool:
    """Up to ``size`` workers shared by the threads of this process."""

    def __init__(self, size: int = WORKERS):
        self.size = size
        self._idle: list[_Worker] = []
        self._started = 0
        self._lock = threading.Condition()

    def ask(self, request: Any, seconds: float) -> Optional[dict]:
        """Sends ``request`` (picklable) to a worker; its JSON answer, or None when the worker
        did not answer within ``seconds`` (killed) or died."""
        data = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
        worker = self._take()
        answer = None
        try:
            answer = worker.ask(data, seconds)
        finally:
            self._give_back(worker if answer is not None else None)
        return answer

    def _take(self) -> _Worker:
        with self._lock:
            while not self._idle and self._started >= self.size:
                self._lock.wait()
            if self._idle:
                return self._idle.pop()
            self._started += 1
        try:
            return _Worker()
        except BaseException:
            self._give_back(None)
            raise

    def _give_back(self, worker: Optional[_Worker]) -> None:
        with self._lock:
            if worker is None:
                self._started -= 1
            else:
                self._idle.append(worker)
            self._lock.notify()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            self._started -= len(idle)
        for worker in idle:
            worker.kill()


_POOL: Optional[WorkerPool] = None
_POOL_LOCK = threading.Lock()


def pool() -> WorkerPool:
    """This process's pool (started on first use; its workers end with the process)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL_PID != os.getpid():
            _set_pool(WorkerPool())
        return _POOL  # type: ignore[return-value]


_POOL_PID = -1


def _set_pool(new: WorkerPool) -> None:
    global _POOL, _POOL_PID
    _POOL, _POOL_PID = new, os.getpid()


@atexit.register
def _close_pool() -> None:
    if _POOL is not None and _POOL_PID == os.getpid():
        _POOL.close()


# ------------------------------------------------------------------------------------ worker side

def _serve(sandbox_path: str) -> None:
    """The worker's loop: read a request, render, answer, until stdin closes."""
    import importlib.util
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (RENDER_MEMORY, RENDER_MEMORY))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the terminal is the parent's to handle
    spec = importlib.util.spec_from_file_location("kvgen_chat_template_sandbox", sandbox_path)
    sandbox = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = sandbox  # type: ignore[union-attr]
    spec.loader.exec_module(sandbox)  # type: ignore[union-attr]
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer

    def answer(value: dict) -> None:
        data = json.dumps(value).encode("ascii")  # ASCII: a lone surrogate in the text travels as its escape
        stdout.write(_HEADER.pack(len(data)) + data)
        stdout.flush()

    answer({"ready": True})
    while True:
        header = stdin.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        request = pickle.loads(stdin.read(_HEADER.unpack(header)[0]))
        used = resource.getrusage(resource.RUSAGE_SELF)
        cpu = int(used.ru_utime + used.ru_stime + sandbox.RENDER_SECONDS + 2)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, resource.RLIM_INFINITY))  # SIGXCPU ends it past this
        try:
            text, spans = sandbox.render(**request)
            reply: dict = {"text": text, "spans": spans}
        except sandbox.ChatTemplateLimitError as error:
            reply = {"error": "limit", "message": str(error)}
        except MemoryError:
            reply = {"error": "limit", "message": "chat template: rendering ran out of memory"}
        except ValueError as error:
            reply = {"error": "value", "message": str(error)}
        except Exception as error:  # noqa: BLE001 - any other failure of the template is the caller's ValueError
            reply = {"error": "value", "message": f"chat template: {type(error).__name__}: {error}"}
        try:
            answer(reply)
        except MemoryError:
            answer({"error": "limit", "message": "chat template: rendering ran out of memory"})


if __name__ == "__main__":
    _serve(sys.argv[1])
