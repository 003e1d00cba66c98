"""``kvgen serve``: an OpenAI-compatible HTTP server (FastAPI + uvicorn) over one built-in
model, with continuous batching (kvgen.generation.engine): concurrent requests decode together.

Endpoints: POST /v1/completions and /v1/chat/completions (streamed as server-sent events
with ``"stream": true``), GET /v1/models, /v1/models/{id}, /health, /openapi.json and
/docs; vLLM's POST /tokenize, /detokenize and GET /tokenizer_info (kvgen.server.tokenize), GET /metrics
(Prometheus, kvgen.server.metrics). Bad requests get OpenAI's error JSON
({"error": {"message", "type", "param", "code"}}) with status 400 (401 for a wrong API
key, 404 / 405 for unknown routes); the server keeps serving. A client that disconnects
mid-stream cancels its request, whose slots go to the next one at the following step; so does
one that hangs up while waiting for a non-streamed answer.

Every request gets an answer: an error inside the engine, the tokenizer or the constraint
ends that request alone, with a 400 for what it asked (e.g. a constraint the vocabulary
cannot satisfy) or a 500 with a short message (the traceback goes to the log); a stream gets
it as an error event (``data: {"error": ...}``) before ``data: [DONE]``.

Limits (ServerLimits, ``kvgen serve`` flags): prompts per request, sequences (prompts x n) and
tokens per request are a 400 past their limit; the requests in flight hold at most
``max_queued_tokens`` tokens and ``max_queued_requests`` engine requests, and a request that
does not fit gets a 429 with ``Retry-After``. The body is read up to ``max_body_mb`` (413
past it), tokenizing, template rendering and constraint compiling run in worker threads, and
``request_timeout`` (if set) ends a request with a 504.

Cross-site protection: POST routes need ``Content-Type: application/json``; the ``Host``
header must name the server (the bound address, localhost or ``allowed_hosts``) and an
``Origin`` header a loopback page or one of ``allowed_origins``, else a 403: a web page the
user visits can neither post to the local server nor reach it by DNS rebinding.

Log-probabilities (``logprobs``, ``top_logprobs``) come in OpenAI's shapes: chat's
``logprobs.content[] = {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}``,
completions' ``{tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset}``.
A log-probability of -inf (a token that top-k, top-p or min-p removed) is sent as -9999.0,
vLLM's floor, so that every body is valid JSON.
Structured output: see kvgen.server.protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import hmac
import ipaddress
import json
import os
import socket
import sys
import time
import uuid
import weakref
from dataclasses import dataclass, field
from typing import Any, Optional
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from kvgen._core import GenerationConfig
from kvgen.generation.engine import Engine
from kvgen.server.protocol import ApiError, RequestLimits, chat_request, completion_request
from kvgen.server.responses import Completion, Responder, error_of

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


@dataclass
class ServerLimits:
    """What ``kvgen serve`` admits; ``sized(max_batch, context)`` sizes the defaults to the machine."""

    request: RequestLimits = field(default_factory=RequestLimits)
    max_queued_tokens: int = 1 << 22     # prompt + max new tokens of every request in flight
    max_queued_requests: int = 1024      # engine requests (prompts x n, or prompts under sampling) in flight
    max_body_bytes: int = 8 << 20
    request_timeout: Optional[float] = None  # seconds; None: no limit

    @classmethod
    def sized(cls, max_batch: int, context: int, memory: Optional[int] = None, **overrides: Any) -> "ServerLimits":
        """Defaults for a machine of ``memory`` bytes (default: its physical memory): an engine
        request waiting in the queue holds about 0.5 MB (its generator's vocabulary-sized
        buffers) and its tokens a few hundred bytes each; an eighth of the memory is the budget."""
        budget = (memory or _physical_memory()) // 8
        rows = max(128, 8 * max_batch)  # OpenAI's n goes up to 128
        request = RequestLimits(max_prompts=rows // 2, max_rows=rows,
                                max_tokens=max(rows * context, 1 << 16))
        limits = cls(request=request,
                     max_queued_tokens=int(min(max(budget // 1024, 8 * context), 1 << 26)),
                     max_queued_requests=int(min(max(budget // (1 << 20), 4 * rows), 1 << 14)))
        limits.request.max_tokens = min(limits.request.max_tokens, limits.max_queued_tokens)
        for name, value in overrides.items():
            if value is None:
                continue
            if hasattr(limits.request, name):
                setattr(limits.request, name, value)
            else:
                setattr(limits, name, value)
        return limits


def _error_response(e: ApiError, headers: Optional[dict] = None) -> JSONResponse:
    return JSONResponse(e.body(), status_code=e.status, headers=headers)


def _host_name(host: str) -> str:
    """The name in a Host header or URL authority, without port or IPv6 brackets, lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def _is_loopback(host: str) -> bool:
    name = _host_name(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class _Guard:
    """ASGI middleware in front of every route: cross-site checks (Host, Origin, Content-Type)
    and the API key, each answered with OpenAI's error JSON."""

    def __init__(self, app, *, host: str, allowed_hosts: tuple[str, ...], allowed_origins: tuple[str, ...],
                 api_key: Optional[str]):
        self.app = app
        hosts = {_host_name(h) for h in (*LOOPBACK_NAMES, host, *allowed_hosts)}
        self.any_host = "*" in allowed_hosts
        self.any_ip_host = _host_name(host) in ("0.0.0.0", "::", "")  # a wildcard bind: any address of the machine
        self.hosts = hosts
        self.any_origin = "*" in allowed_origins
        self.origins = {o.rstrip("/").lower() for o in allowed_origins}
        self.key = f"Bearer {api_key}".encode() if api_key is not None else None

    def _refusal(self, scope, headers: dict) -> Optional[ApiError]:
        host = headers.get("host", "")
        name = _host_name(host)
        if not (self.any_host or name in self.hosts or (self.any_ip_host and _is_ip(name))):
            return ApiError(f"the Host header {host!r} does not name this server (see kvgen serve --allowed-hosts)",
                            status=403, code="host_not_allowed", kind="permission_error")
        origin = headers.get("origin")
        if origin is not None and not self.any_origin and origin.rstrip("/").lower() not in self.origins:
            origin_host = urlsplit(origin).hostname or ""
            if not (origin_host in self.hosts and _is_loopback(origin_host)):
                return ApiError(f"requests from the web page {origin!r} are not allowed (see kvgen serve "
                                "--allowed-origins)", status=403, code="origin_not_allowed", kind="permission_error")
        if self.key is not None and scope["path"] != "/health":
            given = headers.get("authorization", "").encode("latin-1")
            if not hmac.compare_digest(given, self.key):
                return ApiError("Incorrect API key provided.", code="invalid_api_key", status=401)
        if scope["method"] == "POST":
            kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if kind != "application/json":
                return ApiError(f"the request body must be sent as Content-Type: application/json, got "
                                f"{kind or 'none'!r}", status=415, code="unsupported_media_type")
        return None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            return await _error_response(refusal)(scope, receive, send)
        return await self.app(scope, receive, send)


class _Admission:
    """The tokens and engine requests that the requests in flight hold; a request that does not
    fit gets a 429 (with Retry-After) rather than memory the server does not have."""

    def __init__(self, limits: ServerLimits):
        self.limits = limits
        self.tokens = 0
        self.requests = 0

    def take(self, tokens: int, requests: int) -> None:
        if (self.tokens + tokens > self.limits.max_queued_tokens
                or self.requests + requests > self.limits.max_queued_requests):
            raise ApiError(f"the server is busy: the requests in flight hold {self.tokens} tokens and {self.requests} "
                           "generations, and this one does not fit; retry later", status=429,
                           kind="rate_limit_error", code="server_busy")
        self.tokens += tokens
        self.requests += requests

    def give(self, tokens: int, requests: int) -> None:
        self.tokens -= tokens
        self.requests -= requests


class _Trimmer:
    """Gives freed heap memory back to the system once the engine is idle (glibc keeps what the
    engine's per-request buffers and the responses freed; RSS otherwise only grows)."""

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

    async def maybe(self, engine: Engine, admission: "_Admission") -> None:
        """Trims once nothing is in flight, at most once a second; a call while a trim is
        pending makes that one check again."""
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
                if not admission.requests and not engine.active_rows:
                    await run_in_threadpool(self._trim, 0)
                    self._last = time.monotonic()
                if not self._again:
                    return
        finally:
            self._pending = False


def create_app(model, *, max_batch: int = 8, api_key: Optional[str] = None, model_name: Optional[str] = None,
               limits: Optional[ServerLimits] = None, host: str = "127.0.0.1", allowed_hosts: tuple[str, ...] = (),
               allowed_origins: tuple[str, ...] = (), prefix_cache: bool = True,
               speculative_ngram: Optional[int] = None, speculative_ngram_size: Optional[int] = None) -> FastAPI:
    """The FastAPI application serving ``model`` with an Engine of ``max_batch`` slots (reusing
    cached prompt prefixes with ``prefix_cache``), within ``limits`` (default:
    ServerLimits.sized to the machine), for clients that reach it as ``host`` (its bound
    address), localhost or one of ``allowed_hosts``. ``speculative_ngram``: requests that set
    no ``prompt_lookup_num_tokens`` draft up to this many tokens by prompt lookup (n-grams up
    to ``speculative_ngram_size``), verified as they are generated."""
    trimmer = _Trimmer()  # first: it sets the allocator's limits before the engine's threads start
    engine = Engine.serving(model, max_batch, prefix_cache=prefix_cache)
    limits = limits or ServerLimits.sized(max_batch, model.context_length)
    name = model_name or (model.path.stem if getattr(model, "path", None) else "kvgen")
    metrics = None
    try:
        from kvgen.server.metrics import Metrics

        metrics = Metrics(lambda: server.engine.slots, lambda: server.engine.active_rows,
                          lambda: (server.engine.prefix_cache_queries, server.engine.prefix_cache_hits))
    except ImportError:  # prometheus_client is not installed: /metrics says so
        pass
    speculation = {}
    if speculative_ngram is not None:
        # checked as the config fields they set (ValueError naming the field)
        GenerationConfig(prompt_lookup_num_tokens=speculative_ngram, max_matching_ngram_size=speculative_ngram_size)
        speculation = {"prompt_lookup_num_tokens": speculative_ngram, "max_matching_ngram_size": speculative_ngram_size}
        model.capabilities.check_speculation("--speculative-ngram")
    server = Responder(model, engine, name, metrics, speculation)
    admission = _Admission(limits)
    background: set = set()  # the trimmer's tasks (held until done)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        if server.engine.closed:  # served again after a shutdown (an in-process test client): a fresh engine
            server.engine = app.state.engine = Engine.serving(model, max_batch, prefix_cache=prefix_cache)
        yield
        server.engine.close()  # cancels what still runs

    app = FastAPI(title="kvgen", version="1", docs_url="/docs", redoc_url=None, lifespan=lifespan)
    app.state.engine = engine
    app.state.limits = limits

    def openapi() -> dict:
        """FastAPI's schema with the request bodies (kvgen.server.openapi), built once."""
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            from kvgen.server.openapi import add_request_bodies

            app.openapi_schema = add_request_bodies(get_openapi(title=app.title, version=app.version,
                                                                routes=app.routes))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(_Guard, host=host, allowed_hosts=tuple(allowed_hosts), allowed_origins=tuple(allowed_origins),
                       api_key=api_key)

    def failed(status: int) -> None:
        if metrics is not None:
            metrics.failure.labels(status=str(status)).inc()

    @app.exception_handler(ApiError)
    async def api_error(request: Request, e: ApiError):
        retry = {"Retry-After": "1"} if e.status in (429, 503) else None
        failed(e.status)
        return _error_response(e, retry)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, e: HTTPException):
        failed(e.status_code)
        return _error_response(ApiError(str(e.detail), status=e.status_code))

    @app.exception_handler(Exception)
    async def internal_error(request: Request, e: Exception):
        error = error_of(e)
        failed(error.status)
        return _error_response(error)

    async def body_of(request: Request) -> Any:
        length = request.headers.get("content-length")
        too_large = ApiError(f"the request body is larger than the server's limit of "
                             f"{limits.max_body_bytes / (1 << 20):g} MB (kvgen serve --max-body-mb)", status=413,
                             code="request_too_large")
        if length is not None and length.isdigit() and int(length) > limits.max_body_bytes:
            raise too_large
        chunks, size = [], 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limits.max_body_bytes:
                    raise too_large
                chunks.append(chunk)
        except ClientDisconnect:  # an aborted upload: nobody to answer
            raise ApiError("the client disconnected during the upload", status=400, code="client_disconnected") \
                from None
        raw = b"".join(chunks)
        try:
            return await run_in_threadpool(json.loads, raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:  # JSONDecodeError is a ValueError (so are
            # integers of more than 4,300 digits); RecursionError: nesting deeper than the parser's stack
            message = "nested too deeply" if isinstance(e, RecursionError) else str(e)
            raise ApiError(f"the request body is not valid JSON: {message}", code="invalid_json") from None

    async def watch_disconnect(request: Request, gen: Completion) -> None:
        """Cancels ``gen`` when the client hangs up (its body is read: the next message is the disconnect)."""
        while (await request.receive())["type"] != "http.disconnect":
            pass
        gen.cancel()

    async def respond(request: Request, chat: bool):
        arrival = time.perf_counter()
        body = await body_of(request)
        parse = chat_request if chat else completion_request
        req = await run_in_threadpool(parse, body, model, limits.request)  # tokenizing, template rendering
        engine_requests = len(req.prompts) * (1 if req.config.do_sample else req.n)
        tokens = sum(len(p) for p in req.prompts) + len(req.prompts) * req.n * req.config.max_new_tokens
        admission.take(tokens, engine_requests)
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                admission.give(tokens, engine_requests)
                try:
                    task = asyncio.get_running_loop().create_task(trimmer.maybe(server.engine, admission))
                except RuntimeError:  # called by the finalizer below, outside the loop
                    return
                background.add(task)
                task.add_done_callback(background.discard)

        try:
            loop = asyncio.get_running_loop()
            gen = await run_in_threadpool(Completion, server, req, loop, arrival)  # compiles the constraint
        except BaseException:
            release()
            raise
        timer = None
        if limits.request_timeout is not None:
            def expire() -> None:
                gen.timed_out = True
                gen.cancel()
            timer = loop.call_later(limits.request_timeout, expire)
        cid = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}"
        if req.stream:
            async def events():
                try:
                    async for event in server.stream(gen, cid, chat):
                        yield event
                finally:
                    if timer is not None:
                        timer.cancel()
                    gen.finish_metrics()
                    release()
            stream = events()
            # a client gone before the first event: the stream is never started, so its finally
            # never runs; when it is dropped, its generation is cancelled and its share given back
            weakref.finalize(stream, lambda: (gen.cancel(), gen.finish_metrics(), release()))
            return StreamingResponse(stream, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
        watcher = asyncio.ensure_future(watch_disconnect(request, gen))
        try:
            if req.prompt_logprobs is not None or (req.echo and req.logprobs):
                top = max(req.prompt_logprobs or 0, req.top_logprobs if req.echo else 0)
                await run_in_threadpool(gen.score_prompts, top)  # the prompts' forward pass, beside the engine
            async for _ in gen.steps():
                pass
        except BaseException as e:
            gen.error_status = e.status if isinstance(e, ApiError) else 500
            raise
        finally:
            gen.cancel()
            gen.finish_metrics()
            watcher.cancel()
            if timer is not None:
                timer.cancel()
            release()
        return server.chat_body(gen, cid) if chat else server.completion_body(gen, cid)

    @app.post("/v1/completions")
    async def completions(request: Request):
        """OpenAI's text completions, streamed or not."""
        return await respond(request, chat=False)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        """OpenAI's chat completions (the model's chat template), streamed or not."""
        return await respond(request, chat=True)

    def model_card() -> dict:
        return {"id": name, "object": "model", "created": server.created, "owned_by": "kvgen"}

    @app.get("/v1/models")
    async def models():
        """The one model this server holds."""
        return {"object": "list", "data": [model_card()]}

    @app.get("/v1/models/{model_id:path}")
    async def model_info(model_id: str):
        """The served model's card; a 404 for any other id."""
        if model_id != name:
            raise ApiError(f"The model '{model_id}' does not exist (this server holds '{name}')", param="model",
                           code="model_not_found", status=404)
        return model_card()

    @app.post("/tokenize")
    async def tokenize(request: Request):
        """vLLM's /tokenize: a prompt's token ids, or the chat prompt's of messages (and tools)."""
        from kvgen.server.tokenize import tokenize

        return await run_in_threadpool(tokenize, await body_of(request), model)

    @app.post("/detokenize")
    async def detokenize(request: Request):
        """vLLM's /detokenize: the text of token ids."""
        from kvgen.server.tokenize import detokenize

        return await run_in_threadpool(detokenize, await body_of(request), model)

    @app.get("/tokenizer_info")
    async def tokenizer_info():
        """vLLM's /tokenizer_info: special tokens, chat template, the longest sequence."""
        from kvgen.server.tokenize import tokenizer_info

        return tokenizer_info(model)

    @app.get("/metrics")
    async def metrics_text():
        """Prometheus' text format (kvgen.server.metrics)."""
        if metrics is None:
            raise ApiError("/metrics needs prometheus_client (pip install prometheus_client)", status=501,
                           code="not_implemented", kind="server_error")
        from kvgen.server.metrics import CONTENT_TYPE

        return Response(metrics.render(), media_type=CONTENT_TYPE)

    @app.get("/health")
    async def health():
        """Liveness: 200 while the server runs."""
        return {"status": "ok", "slots": server.engine.slots, "active_slots": server.engine.active_rows,
                "queued_tokens": admission.tokens, "queued_requests": admission.requests}

    return app


def serve(model, *, host: str = "127.0.0.1", port: int = 8000, max_batch: int = 8, api_key: Optional[str] = None,
          limits: Optional[ServerLimits] = None, allowed_hosts: tuple[str, ...] = (),
          allowed_origins: tuple[str, ...] = (), shutdown_timeout: float = 3.0,
          sock: Optional[socket.socket] = None, prefix_cache: bool = True, speculative_ngram: Optional[int] = None,
          speculative_ngram_size: Optional[int] = None) -> None:
    """Runs the server until interrupted; on SIGTERM or Ctrl-C, requests still running after
    ``shutdown_timeout`` seconds are cancelled and the server exits. ``sock``: a socket
    listening on ``host``:``port`` (default: bound here, see listening_socket)."""
    import uvicorn

    sock = sock if sock is not None else listening_socket(host, port)
    if api_key is None and not _is_loopback(host):
        print(f"kvgen serve: warning: listening on {host} without --api-key: anyone who can reach this address can "
              "use the model", file=sys.stderr, flush=True)
    app = create_app(model, max_batch=max_batch, api_key=api_key, limits=limits, host=host,
                     allowed_hosts=allowed_hosts, allowed_origins=allowed_origins, prefix_cache=prefix_cache,
                     speculative_ngram=speculative_ngram, speculative_ngram_size=speculative_ngram_size)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=shutdown_timeout)
    with sock:
        uvicorn.Server(config).run(sockets=[sock])


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (as uvicorn binds it); OSError with one line saying
    why not (a port out of range, in use, an address this machine does not have)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise OSError(f"--port must be in [0, 65535], got {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise OSError(f"cannot listen on {host}:{port}: the address does not resolve ({e.strerror})") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(2048)
        sock.set_inheritable(True)
    except OSError as e:
        sock.close()
        why = "the port is in use" if e.errno == errno.EADDRINUSE else (e.strerror or str(e))
        raise OSError(f"cannot listen on {host}:{port}: {why}") from None
    return sock
