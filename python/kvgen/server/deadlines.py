"""Deadlines for slow clients: a connection whose request head or body arrives too slowly is
answered 408 and closed.

uvicorn closes an idle keep-alive connection (``timeout_keep_alive``) but waits forever for a
request's headers and body, so a client that sends a byte now and then (slowloris) holds a
connection, and the request's share of memory, for as long as it likes. ``deadline_protocol``
returns uvicorn's h11 protocol with two deadlines, each counted from the start of its phase
(not between bytes, which a dribbling client would reset):

- ``header_timeout``: from a connection's opening (or, on a kept-alive connection, the next
  request's first byte) to the end of the request's headers (a connection that sent nothing
  is closed without an answer);
- ``body_timeout``: from the end of the headers to the body's last byte.

While the server computes and writes the answer no deadline runs (``--request-timeout``
bounds that).
"""

from __future__ import annotations

import json
from typing import Optional

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from kvgen.server.errors import ApiError


def _timeout_body(what: str, seconds: float, flag: str) -> bytes:
    error = ApiError(f"the request's {what} did not arrive within {seconds:g} s (kvgen serve {flag})", status=408,
                     code="request_timeout")
    return json.dumps(error.body()).encode()


class DeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on the request's head and one on its body."""

    header_timeout: float = 10.0
    body_timeout: float = 60.0

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self._deadline: Optional[object] = None  # asyncio.TimerHandle of the phase below
        self._phase: Optional[str] = None         # "head", "body" or None (nothing awaited from the client)
        self._received = False                    # a byte came since the last answer
        super().connection_made(transport)
        self._watch()

    def data_received(self, data: bytes) -> None:
        self._received = True
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        self._received = False
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self._arm(None)
        super().connection_lost(exc)

    def _watch(self) -> None:
        """Arms the deadline of what the connection now waits for from the client."""
        if self.transport is None or self.transport.is_closing():
            self._arm(None)
            return
        state = self.conn.their_state
        if state is h11.IDLE:  # an idle kept-alive connection is uvicorn's (timeout_keep_alive)
            self._arm("head" if self.timeout_keep_alive_task is None else None)
        elif state is h11.SEND_BODY:
            self._arm("body")
        else:
            self._arm(None)

    def _arm(self, phase: Optional[str]) -> None:
        if phase == self._phase:
            return
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._phase = phase
        if phase is not None:
            seconds = self.header_timeout if phase == "head" else self.body_timeout
            self._deadline = self.loop.call_later(seconds, self._expired, phase)

    def _expired(self, phase: str) -> None:
        self._deadline = None
        if self.transport.is_closing() or phase != self._phase:
            return
        if phase == "head":
            body = _timeout_body("headers", self.header_timeout, "--header-timeout")
            # a 408 only to a request begun: on a connection that sent nothing, a client about to
            # reuse it would read the 408 as its answer (it sees the close and retries instead)
            if self._received and self.conn.our_state is h11.IDLE:
                self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                                     b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
        else:
            cycle = self.cycle
            if cycle is not None and not cycle.response_started and self.conn.our_state is h11.SEND_RESPONSE:
                body = _timeout_body("body", self.body_timeout, "--body-timeout")
                self.transport.write(self.conn.send(h11.Response(status_code=408, reason=b"Request Timeout", headers=[
                    (b"content-type", b"application/json"), (b"connection", b"close"),
                    (b"content-length", str(len(body)).encode())])))
                self.transport.write(self.conn.send(h11.Data(data=body)))
                self.transport.write(self.conn.send(h11.EndOfMessage()))
            if cycle is not None:  # the route reading the body sees the client gone; its answer goes nowhere
                cycle.disconnected = True
                cycle.message_event.set()
        self._phase = None
        self.transport.close()


def deadline_protocol(header_timeout: float, body_timeout: float) -> type[DeadlineProtocol]:
    """DeadlineProtocol with these deadlines (seconds), for ``uvicorn.Config(http=...)``."""
    for name, value in (("header_timeout", header_timeout), ("body_timeout", body_timeout)):
        if not value > 0:
            raise ValueError(f"--{name.replace('_', '-')} must be a positive number of seconds, got {value}")
    return type("DeadlineProtocol", (DeadlineProtocol,),
                {"header_timeout": float(header_timeout), "body_timeout": float(body_timeout)})
