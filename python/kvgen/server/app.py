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

POST /v1/embeddings (OpenAI's embeddings), /v1/responses (OpenAI's Responses API) and
/v1/messages (Anthropic's Messages API) are served by kvgen.server.embeddings, responses_api
and messages_api: the last two run as chat completions.

Every request gets an answer: an error inside the engine, the tokenizer or the constraint
ends that request alone, with a 400 for what it asked (e.g. a constraint the vocabulary
cannot satisfy) or a 500 with a short message (the traceback goes to the log); a stream gets
it as an error event (``data: {"error": ...}``) before ``data: [DONE]``.

Limits (kvgen.server.limits, ``kvgen serve`` flags): prompts per request, sequences (prompts x
n), tokens per request and the tokens one /tokenize counts are a 400 past their limit; the
requests in flight hold at most ``max_queued_tokens`` tokens and ``max_queued_requests``
engine requests (kvgen.server.admission), and a request that does not fit gets a 429 with
``Retry-After``. The body is read up to ``max_body_mb`` (413 past it) and must arrive in time
(408, kvgen.server.deadlines); tokenizing, template rendering and constraint compiling run in
worker threads, and ``request_timeout`` (if set) ends a request with a 504.

Cross-site protection, the API key and CORS: kvgen.server.security.

The module is the routes alone: each parses its request, calls the serving logic
(kvgen.server.serving) and returns its answer.

Log-probabilities (``logprobs``, ``top_logprobs``) come in OpenAI's shapes: chat's
``logprobs.content[] = {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}``,
completions' ``{tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset}``.
A log-probability of -inf (a token that top-k, top-p or min-p removed) is sent as -9999.0,
vLLM's floor, so that every body is valid JSON.
Structured output: see kvgen.server.protocol.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import socket
import sys
from typing import Optional

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException

from kvgen._core import GenerationConfig
from kvgen.server.errors import ApiError
from kvgen.server.limits import ServerLimits
from kvgen.server.memory import Trimmer
from kvgen.server.responses import Responder, error_of
from kvgen.server.security import Guard, error_response, is_loopback
from kvgen.server.serving import Serving

__all__ = ["ServerLimits", "create_app", "listening_socket", "serve"]


def _engine(model, max_batch: int, prefix_cache: bool):
    """The engine that serves ``model``: ``max_batch`` slots, cached prompt prefixes reused with
    ``prefix_cache``."""
    from kvgen.generation.engine import Engine

    return Engine.serving(model, max_batch, prefix_cache=prefix_cache)


def _metrics(serving: Serving):
    """Prometheus metrics over the serving engine; None without prometheus_client (/metrics says so)."""
    try:
        from kvgen.server.metrics import Metrics
    except ImportError:
        return None
    engine = lambda: serving.responder.engine  # noqa: E731 - a fresh engine after a restart
    return Metrics(lambda: engine().slots, lambda: engine().active_rows,
                   lambda: (engine().prefix_cache_queries, engine().prefix_cache_hits))


def _speculation(model, ngram: Optional[int], ngram_size: Optional[int], mtp: bool = False) -> dict:
    """The config fields that ``--speculative-ngram`` sets on requests that set none, or
    ``{"assistant_model": model.mtp_head}`` for ``--speculative-mtp`` (ValueError naming the
    field, or the flag when the model cannot verify drafts or has no MTP head)."""
    if mtp:
        if ngram is not None:
            raise ValueError("--speculative-mtp and --speculative-ngram: choose one drafter")
        if model.mtp_head is None:
            raise ValueError("--speculative-mtp: the model file has no multi-token-prediction head (Qwen3.5 / 3.6 "
                             "and Qwen3-Next checkpoints carry one; llama.cpp's converter drops it with --no-mtp)")
        model.capabilities.check_speculation("--speculative-mtp")
        return {"assistant_model": model.mtp_head}
    if ngram is None:
        return {}
    GenerationConfig(prompt_lookup_num_tokens=ngram, max_matching_ngram_size=ngram_size)  # checks them
    model.capabilities.check_speculation("--speculative-ngram")
    return {"prompt_lookup_num_tokens": ngram, "max_matching_ngram_size": ngram_size}


def _add_error_handlers(app: FastAPI, serving: Serving) -> None:
    """Every error is OpenAI's JSON: an ApiError with its status (429 and 503 with Retry-After),
    Starlette's 404 / 405 (with its Allow header), anything else through error_of."""
    def failed(status: int) -> None:
        if serving.responder.metrics is not None:
            serving.responder.metrics.failure.labels(status=str(status)).inc()

    @app.exception_handler(ApiError)
    async def api_error(request: Request, e: ApiError):
        failed(e.status)
        return error_response(e, {"Retry-After": "1"} if e.status in (429, 503) else None)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, e: HTTPException):
        failed(e.status_code)
        code = {404: "not_found", 405: "method_not_allowed"}.get(e.status_code)
        return error_response(ApiError(str(e.detail), status=e.status_code, code=code), e.headers)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, e: Exception):
        error = error_of(e)
        failed(error.status)
        return error_response(error)


def _openapi(app: FastAPI):
    def openapi() -> dict:
        """FastAPI's schema with the request bodies (kvgen.server.openapi), built once."""
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            from kvgen.server.embeddings import EmbeddingRequest
            from kvgen.server.messages_api import MessagesRequest
            from kvgen.server.openapi import add_request_bodies
            from kvgen.server.responses_api import ResponsesRequest

            extra = (("/v1/embeddings", EmbeddingRequest, "EmbeddingRequest"),
                     ("/v1/responses", ResponsesRequest, "ResponsesRequest"),
                     ("/v1/messages", MessagesRequest, "MessagesRequest"))
            app.openapi_schema = add_request_bodies(get_openapi(title=app.title, version=app.version,
                                                                routes=app.routes), extra)
        return app.openapi_schema
    return openapi


def create_app(model, *, max_batch: int = 8, api_key: Optional[str] = None, model_name: Optional[str] = None,
               limits: Optional[ServerLimits] = None, host: str = "127.0.0.1", allowed_hosts: tuple[str, ...] = (),
               allowed_origins: tuple[str, ...] = (), prefix_cache: bool = True,
               speculative_ngram: Optional[int] = None, speculative_ngram_size: Optional[int] = None,
               speculative_mtp: bool = False, pooling: Optional[str] = None,
               reasoning_parser: str = "auto") -> FastAPI:
    """The FastAPI application serving ``model`` with an Engine of ``max_batch`` slots (reusing
    cached prompt prefixes with ``prefix_cache``), within ``limits`` (default:
    ServerLimits.sized to the machine), for clients that reach it as ``host`` (its bound
    address), localhost or one of ``allowed_hosts``, and web pages of ``allowed_origins``.
    ``speculative_ngram``: requests that set no ``prompt_lookup_num_tokens`` draft up to this
    many tokens by prompt lookup (n-grams up to ``speculative_ngram_size``), verified as they
    are generated; ``speculative_mtp``: they draft with the model's multi-token-prediction head
    instead (``Model.mtp_head``). ``pooling``: the pooling of /v1/embeddings ("last", "mean", "cls"; None:
    what the model declares, else "last"). ``reasoning_parser``: how chat replies' reasoning is
    told from their answer (kvgen.server.reasoning: "auto" reads the chat template; "none",
    "qwen3", "deepseek_r1", "harmony")."""
    trimmer = Trimmer()  # first: it sets the allocator's limits before the engine's threads start
    speculation = _speculation(model, speculative_ngram, speculative_ngram_size, speculative_mtp)
    limits = limits or ServerLimits.sized(max_batch, model.context_length)
    if limits.request.max_n is None:  # sampled choices of one prompt decode together: at most the slots
        limits = dataclasses.replace(limits, request=dataclasses.replace(limits.request, max_n=max_batch))
    name = model_name or (model.path.stem if getattr(model, "path", None) else "kvgen")
    from kvgen.server.reasoning import parser_for

    parser_for(reasoning_parser, None)  # an unknown parser: a ValueError before the engine starts
    responder = Responder(model, _engine(model, max_batch, prefix_cache), name, None, speculation, reasoning_parser)
    serving = Serving(responder, limits, trimmer)
    responder.metrics = _metrics(serving)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        if responder.engine.closed:  # served again after a shutdown (an in-process test client): a fresh engine
            responder.engine = app.state.engine = _engine(model, max_batch, prefix_cache)
        yield
        responder.engine.close()  # cancels what still runs

    app = FastAPI(title="kvgen", version="1", docs_url="/docs", redoc_url=None, lifespan=lifespan)
    app.state.engine = responder.engine
    app.state.limits = limits
    app.openapi = _openapi(app)  # type: ignore[method-assign]
    app.add_middleware(Guard, host=host, allowed_hosts=tuple(allowed_hosts), allowed_origins=tuple(allowed_origins),
                       api_key=api_key)
    _add_error_handlers(app, serving)

    from kvgen.server.embeddings import Embeddings
    from kvgen.server.messages_api import MessagesApi
    from kvgen.server.responses_api import ResponsesApi

    embeddings, responses_api, messages_api = Embeddings(serving, pooling), ResponsesApi(serving), MessagesApi(serving)

    @app.post("/v1/embeddings")
    async def create_embeddings(request: Request):
        """OpenAI's embeddings: each input's final hidden states pooled and normalised."""
        return await embeddings.create(request)

    @app.post("/v1/responses")
    async def create_response(request: Request):
        """OpenAI's Responses API (no stored state), run as a chat completion."""
        return await responses_api.create(request)

    @app.post("/v1/messages")
    async def create_message(request: Request):
        """Anthropic's Messages API, run as a chat completion."""
        return await messages_api.create(request)

    @app.post("/v1/completions")
    async def completions(request: Request):
        """OpenAI's text completions, streamed or not."""
        return await serving.complete(request, chat=False)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        """OpenAI's chat completions (the model's chat template), streamed or not."""
        return await serving.complete(request, chat=True)

    def model_card() -> dict:
        return {"id": name, "object": "model", "created": responder.created, "owned_by": "kvgen"}

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
        return await serving.tokenize(request)

    @app.post("/detokenize")
    async def detokenize(request: Request):
        """vLLM's /detokenize: the text of token ids."""
        return await serving.detokenize(request)

    @app.get("/tokenizer_info")
    async def tokenizer_info():
        """vLLM's /tokenizer_info: special tokens, chat template, the longest sequence."""
        from kvgen.server.tokenize import tokenizer_info

        return tokenizer_info(model)

    @app.get("/metrics")
    async def metrics_text():
        """Prometheus' text format (kvgen.server.metrics)."""
        if responder.metrics is None:
            raise ApiError("/metrics needs prometheus_client (pip install prometheus_client)", status=501,
                           code="not_implemented", kind="server_error")
        from kvgen.server.metrics import CONTENT_TYPE

        return Response(responder.metrics.render(), media_type=CONTENT_TYPE)

    @app.get("/health")
    async def health():
        """Liveness: 200 while the server runs."""
        return serving.health()

    return app


def serve(model, *, host: str = "127.0.0.1", port: int = 8000, max_batch: int = 8, api_key: Optional[str] = None,
          limits: Optional[ServerLimits] = None, allowed_hosts: tuple[str, ...] = (),
          allowed_origins: tuple[str, ...] = (), shutdown_timeout: float = 3.0,
          sock: Optional[socket.socket] = None, prefix_cache: bool = True, speculative_ngram: Optional[int] = None,
          speculative_ngram_size: Optional[int] = None, speculative_mtp: bool = False, pooling: Optional[str] = None,
          reasoning_parser: str = "auto") -> None:
    """Runs the server until interrupted; on SIGTERM or Ctrl-C, requests still running after
    ``shutdown_timeout`` seconds are cancelled and the server exits. ``sock``: a socket
    listening on ``host``:``port`` (default: bound here, see listening_socket). A connection
    whose request head or body arrives slower than ``limits``' header and body timeouts is
    answered 408 and closed (kvgen.server.deadlines)."""
    import uvicorn

    from kvgen.server.deadlines import deadline_protocol

    limits = limits or ServerLimits.sized(max_batch, model.context_length)
    protocol = deadline_protocol(limits.header_timeout, limits.body_timeout)
    sock = sock if sock is not None else listening_socket(host, port)
    if api_key is None and not is_loopback(host):
        print(f"kvgen serve: warning: listening on {host} without --api-key: anyone who can reach this address can "
              "use the model", file=sys.stderr, flush=True)
    app = create_app(model, max_batch=max_batch, api_key=api_key, limits=limits, host=host,
                     allowed_hosts=allowed_hosts, allowed_origins=allowed_origins, prefix_cache=prefix_cache,
                     speculative_ngram=speculative_ngram, speculative_ngram_size=speculative_ngram_size,
                     speculative_mtp=speculative_mtp, pooling=pooling, reasoning_parser=reasoning_parser)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=shutdown_timeout,
                            http=protocol)
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
