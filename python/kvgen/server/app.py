"""``kvgen serve``: an OpenAI-compatible HTTP server (FastAPI + uvicorn) over one built-in
model, with continuous batching (kvgen.generation.engine): concurrent requests decode together.

Endpoints: POST /v1/completions and /v1/chat/completions (streamed as server-sent events
with ``"stream": true``), GET /v1/models and /health. Bad requests get OpenAI's error JSON
({"error": {"message", "type", "param", "code"}}) with status 400 (401 for a wrong API
key, 404 / 405 for unknown routes); the server keeps serving. A client that disconnects
mid-stream cancels its request, whose slots go to the next one at the following step.

Log-probabilities (``logprobs``, ``top_logprobs``) come in OpenAI's shapes: chat's
``logprobs.content[] = {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}``,
completions' ``{tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset}``.
Structured output: see kvgen.server.protocol.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from typing import Any, Optional

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException

from kvgen.generation.engine import Engine
from kvgen.server.protocol import ApiError, chat_request, completion_request
from kvgen.server.responses import Completion, Responder


def _error_response(e: ApiError) -> JSONResponse:
    return JSONResponse(e.body(), status_code=e.status)


def create_app(model, *, max_batch: int = 8, api_key: Optional[str] = None,
               model_name: Optional[str] = None) -> FastAPI:
    """The FastAPI application serving ``model`` with an Engine of ``max_batch`` slots."""
    engine = Engine(model, slots=max_batch)
    name = model_name or (model.path.stem if getattr(model, "path", None) else "kvgen")
    server = Responder(model, engine, name)
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        engine.close()

    app = FastAPI(title="kvgen", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.engine = engine

    if api_key is not None:  # a middleware only when needed: it sits between the engine and every stream
        @app.middleware("http")
        async def check_api_key(request: Request, call_next):
            if request.url.path != "/health" and request.headers.get("authorization") != f"Bearer {api_key}":
                return _error_response(ApiError("Incorrect API key provided.", code="invalid_api_key", status=401))
            return await call_next(request)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, e: ApiError):
        return _error_response(e)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, e: HTTPException):
        return _error_response(ApiError(str(e.detail), status=e.status_code))

    async def body_of(request: Request) -> Any:
        try:
            return json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ApiError(f"the request body is not valid JSON: {e}", code="invalid_json") from None

    async def respond(request: Request, chat: bool):
        body = await body_of(request)
        req = chat_request(body, model) if chat else completion_request(body, model)
        gen = Completion(server, req)
        cid = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}"
        if req.stream:
            return StreamingResponse(server.stream(gen, cid, chat), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache"})
        try:
            async for _ in gen.steps():
                pass
        finally:
            gen.cancel()
        return server.chat_body(gen, cid) if chat else server.completion_body(gen, cid)

    @app.post("/v1/completions")
    async def completions(request: Request):
        """OpenAI's text completions, streamed or not."""
        return await respond(request, chat=False)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        """OpenAI's chat completions (the model's chat template), streamed or not."""
        return await respond(request, chat=True)

    @app.get("/v1/models")
    async def models():
        """The one model this server holds."""
        return {"object": "list", "data": [{"id": name, "object": "model", "created": server.created,
                                            "owned_by": "kvgen"}]}

    @app.get("/health")
    async def health():
        """Liveness: 200 while the server runs."""
        return {"status": "ok", "slots": engine.slots, "active_slots": engine.active_rows}

    return app


def serve(model, *, host: str = "127.0.0.1", port: int = 8000, max_batch: int = 8,
          api_key: Optional[str] = None) -> None:
    """Runs the server until interrupted."""
    import uvicorn

    uvicorn.run(create_app(model, max_batch=max_batch, api_key=api_key), host=host, port=port, log_level="warning")
