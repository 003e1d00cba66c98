"""Deadlines for slow clients (issue: connections that sent their headers or body slowly were
never closed; 200 such connections stayed open 60 s). A request's head must arrive within
``--header-timeout`` seconds and its body within ``--body-timeout`` after it, counted from the
phase's start (dribbled bytes do not extend it); past either the client gets a 408 in OpenAI's
error JSON and the connection is closed. Raw sockets dribble the bytes: against uvicorn with
kvgen's protocol and a small app, and against ``kvgen serve`` itself."""

from __future__ import annotations

import asyncio
import json
import math
import socket
import threading
import time

import pytest
from serve_process import ServeProcess, free_port

from kvgen.server.deadlines import deadline_protocol

HEADER, BODY = 0.6, 1.0
SLACK = 1.5  # scheduling on a loaded machine


async def echo_app(scope, receive, send):
    """Answers the body's length after reading it; ``/slow`` first sleeps past both deadlines,
    ``/stream`` streams for that long."""
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    if scope["path"] == "/slow":
        await asyncio.sleep(BODY + HEADER + 0.5)
    if scope["path"] == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        for _ in range(5):
            await send({"type": "http.response.body", "body": b"x", "more_body": True})
            await asyncio.sleep(0.4)
        await send({"type": "http.response.body", "body": b""})
        return
    body = json.dumps({"size": size}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def port():
    import uvicorn

    port = free_port()
    config = uvicorn.Config(echo_app, host="127.0.0.1", port=port, log_level="error",
                            http=deadline_protocol(HEADER, BODY), timeout_keep_alive=5)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield port
    server.should_exit = True
    thread.join(10)


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_until_closed(s: socket.socket, limit: float) -> tuple[bytes, float]:
    """What the server sends until it closes the connection, and when it closed (seconds)."""
    start, data = time.monotonic(), b""
    s.settimeout(limit)
    while True:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        data += chunk
    return data, time.monotonic() - start


def dribble(s: socket.socket, data: bytes, every: float, until: float) -> float:
    """Sends ``data`` a byte at a time every ``every`` seconds until the peer closes or
    ``until`` seconds pass; returns the seconds it took the peer to close (inf if it did not)."""
    start = time.monotonic()
    for byte in data:
        if time.monotonic() - start > until:
            return math.inf
        try:
            s.send(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            return time.monotonic() - start
        time.sleep(every)
    return math.inf


def read_response(s: socket.socket) -> bytes:
    """One response with a Content-Length, whole."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, data
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))
    while len(body) < length:
        chunk = s.recv(65536)
        assert chunk, data
        body += chunk
    return head + b"\r\n\r\n" + body


def status_of(data: bytes) -> int:
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0


def error_of(data: bytes) -> dict:
    return json.loads(data.split(b"\r\n\r\n", 1)[1])["error"]


HEAD = b"POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n"


def test_a_connection_that_sends_nothing_is_closed_without_an_answer(port):
    with connect(port) as s:
        data, took = read_until_closed(s, HEADER + SLACK + 5)
    assert data == b"" and took < HEADER + SLACK, (data, took)


def test_a_head_begun_and_not_finished_gets_a_408_in_openai_s_shape(port):
    with connect(port) as s:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: loc")
        data, took = read_until_closed(s, HEADER + SLACK + 5)
    assert status_of(data) == 408 and took < HEADER + SLACK, (data, took)
    error = error_of(data)
    assert error["code"] == "request_timeout" and "--header-timeout" in error["message"]


@pytest.mark.parametrize("every", [0.02, 0.1, 0.3, 0.5])
def test_headers_dribbled_are_cut_at_the_header_deadline(port, every):
    with connect(port) as s:
        start = time.monotonic()
        dribble(s, HEAD * 50, every, HEADER + SLACK + 5)
        data, _ = read_until_closed(s, 5)
        took = time.monotonic() - start
    assert took < HEADER + SLACK + every and status_of(data) in (408, 0), (data, took)


@pytest.mark.parametrize("every", [0.05, 0.15, 0.4])
def test_a_body_dribbled_is_cut_at_the_body_deadline(port, every):
    with connect(port) as s:
        s.sendall(HEAD)
        start = time.monotonic()
        dribble(s, b"x" * 40, every, BODY + SLACK + 5)
        data, _ = read_until_closed(s, 5)
        took = time.monotonic() - start
    assert status_of(data) == 408 and took < BODY + SLACK + every, (data, took)
    error = error_of(data)
    assert error["code"] == "request_timeout" and "--body-timeout" in error["message"]


@pytest.mark.parametrize("start", [b"G", b"GET / HTTP/1.1\r\n", HEAD[:-2]])
def test_a_head_left_unfinished_gets_a_408(port, start):
    with connect(port) as s:
        s.sendall(start)
        data, took = read_until_closed(s, HEADER + SLACK + 5)
    assert status_of(data) == 408 and took < HEADER + SLACK, (data, took)


def test_a_body_announced_and_never_sent_gets_a_408(port):
    with connect(port) as s:
        s.sendall(HEAD)
        data, took = read_until_closed(s, BODY + SLACK + 5)
    assert status_of(data) == 408 and took < BODY + SLACK, (data, took)


def test_a_chunked_body_dribbled_is_cut_at_the_body_deadline(port):
    with connect(port) as s:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n")
        start = time.monotonic()
        dribble(s, b"1\r\nx\r\n" * 100, 0.05, BODY + SLACK + 5)
        data, _ = read_until_closed(s, 5)
    assert status_of(data) == 408 and time.monotonic() - start < BODY + SLACK + 0.5


@pytest.mark.parametrize("pieces", [1, 4, 10])
def test_a_request_sent_in_time_is_answered(port, pieces):
    request = HEAD + b"y" * 40
    with connect(port) as s:
        step = len(request) // pieces + 1
        for i in range(0, len(request), step):
            s.sendall(request[i:i + step])
            time.sleep(min(HEADER, BODY) / (2 * pieces))
        data = read_response(s)
    assert status_of(data) == 200 and json.loads(data.split(b"\r\n\r\n", 1)[1]) == {"size": 40}


@pytest.mark.parametrize("path", ["/slow", "/stream"])
def test_no_deadline_runs_while_the_server_answers(port, path):
    with connect(port) as s:
        s.sendall(HEAD.replace(b"/echo", path.encode()) + b"z" * 40)
        data, _ = read_until_closed(s, 10)  # kept alive: closes at uvicorn's keep-alive timeout or ours
    assert status_of(data) == 200, data


def test_a_kept_alive_connection_gets_a_fresh_header_deadline(port):
    with connect(port) as s:
        for _ in range(3):  # each request within its deadlines, the connection older than both
            s.sendall(HEAD + b"k" * 40)
            assert status_of(read_response(s)) == 200
            time.sleep(HEADER * 0.7)
        start = time.monotonic()
        closed = dribble(s, HEAD, 0.1, HEADER + SLACK + 5)
        data, _ = read_until_closed(s, 5)
    assert closed < math.inf or time.monotonic() - start < HEADER + SLACK + 0.5, data


def test_pipelined_requests_are_both_answered(port):
    with connect(port) as s:
        s.sendall((HEAD + b"p" * 40) * 2)
        data = b""
        while data.count(b"HTTP/1.1 200") < 2:
            chunk = s.recv(65536)
            assert chunk, data
            data += chunk


@pytest.mark.parametrize("header, body", [(0, 1), (1, 0), (-1, 1), (float("nan"), 1)])
def test_deadlines_must_be_positive(header, body):
    with pytest.raises(ValueError, match="timeout"):
        deadline_protocol(header, body)


def test_two_hundred_dribbling_connections_to_kvgen_serve_are_closed(tmp_path):
    served = ServeProcess(tmp_path / "serve.log", "--max-batch", "2", "--threads", "2", "--header-timeout", "1",
                          "--body-timeout", "1")
    try:
        sockets = [connect(served.port) for _ in range(200)]
        head = b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        start = time.monotonic()
        open_ = list(sockets)
        i = 0
        while open_ and time.monotonic() - start < 15:
            still = []
            for s in open_:
                try:
                    s.send(head[i % len(head):i % len(head) + 1])
                    still.append(s)
                except OSError:
                    pass
            open_ = still
            i += 1
            time.sleep(0.1)
        took = time.monotonic() - start
        assert not open_ and took < 1 + 4, (len(open_), took)
        status, _, body = served.request("/v1/completions", {"prompt": "Hi", "max_tokens": 1})
        assert status == 200, body
        with connect(served.port) as s:  # a body dribbled to the real routes
            s.sendall(head + b"Content-Length: 50\r\n\r\n{")
            dribble(s, b'"prompt": "Hi"' * 5, 0.1, 5)
            data, _ = read_until_closed(s, 5)
        assert status_of(data) == 408, data
    finally:
        for s in sockets:
            s.close()
        served.stop()
