"""``kvgen serve`` as a subprocess for the server tests: started on a free port, waited for,
stopped; plain HTTP requests to it that return the status, headers and parsed body."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Optional


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServeProcess:
    """``python -m kvgen serve ARGS`` on 127.0.0.1:port (or --host), its output in ``log``."""

    def __init__(self, log: Path, *args: str, host: str = "127.0.0.1"):
        self.port = free_port()
        self.log = log
        with open(log, "w") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "kvgen", "serve", "--host", host, "--port",
                                          str(self.port), *args], stdout=out, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):  # bound, still loading
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.proc.kill()
                    raise RuntimeError(f"kvgen serve did not start:\n{log.read_text()}") from None
                time.sleep(0.3)

    def health(self) -> dict:
        with urllib.request.urlopen(f"{self.url}/health", timeout=10) as r:
            return json.load(r)

    def wait_idle(self, timeout: float = 60) -> dict:
        """/health once no slot is active and nothing is queued (or after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            h = self.health()
            if (not h["active_slots"] and not h.get("queued_requests")) or time.monotonic() > deadline:
                return h
            time.sleep(0.1)

    def request(self, path: str, body: Any = None, *, raw: Optional[bytes] = None, method: str = "POST",
                headers: Optional[dict] = None, timeout: float = 120) -> tuple[int, dict, Any]:
        """(status, headers, body parsed as strict JSON, or the text of an event stream)."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        sent = {"Content-Type": "application/json"} if data is not None else {}
        sent.update(headers or {})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=data, headers=sent)
            response = conn.getresponse()
            text = response.read().decode()
            if response.getheader("content-type", "").startswith("text/event-stream"):
                return response.status, {k.lower(): v for k, v in response.getheaders()}, text
            return response.status, {k.lower(): v for k, v in response.getheaders()}, strict_json(text)
        finally:
            conn.close()

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def _no_constant(name: str) -> Any:
    raise ValueError(f"not JSON: {name}")


def strict_json(text: str) -> Any:
    """json.loads that refuses NaN and Infinity, which are not JSON."""
    return json.loads(text, parse_constant=_no_constant)


def events(stream: str) -> list[Any]:
    """The JSON payloads of a server-sent event stream up to [DONE] (which must end it)."""
    payloads = [line[len("data: "):] for line in stream.split("\n") if line.startswith("data: ")]
    assert payloads and payloads[-1] == "[DONE]", stream[-500:]
    return [strict_json(p) for p in payloads[:-1]]
