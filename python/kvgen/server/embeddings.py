"""POST /v1/embeddings: OpenAI's embeddings over the served model.

Each input (a string, or token ids) becomes one engine request (kvgen.generation.engine's
``submit_embedding``): its prompt is prefilled in chunks between the other requests' decode
steps, its chunks returning their final-normed hidden states instead of logits, pooled
(kvgen._embedding) and L2-normalised. The pooling is ``kvgen serve --pooling`` when given, else
what the model's files declare (``Model.pooling``), else last-token pooling.

The request holds its prompt tokens and one engine request of the server's admission
(kvgen.server.admission) while it runs, so a flood of embeddings meets the same 429 as a flood
of generations; inside the engine its prompts take slots first come, first served and
interleave with the running rows' decode steps within the per-pass prompt budget, so they
delay the other requests' tokens by a bounded amount. A client that hangs up cancels its
inputs; ``--request-timeout`` ends them with a 504.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Annotated, Any, Literal, Optional, Union

import numpy as np
from fastapi import Request
from fastapi.responses import Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from kvgen._embedding import choose_pooling, normalized
from kvgen.generation.request import StepUpdate
from kvgen.server.errors import ApiError, invalid
from kvgen.server.openapi import _Strict
from kvgen.server.protocol import parse_body

#: Inputs per request at most (OpenAI's limit).
MAX_EMBEDDING_INPUTS = 2048

_Text = Annotated[str, Field(min_length=1)]
_TokenId = Annotated[int, Field(ge=0)]


class EmbeddingRequest(_Strict):
    """POST /v1/embeddings."""

    input: Union[_Text, Annotated[list[_Text], Field(min_length=1, max_length=MAX_EMBEDDING_INPUTS)],
                 Annotated[list[_TokenId], Field(min_length=1)],
                 Annotated[list[Annotated[list[_TokenId], Field(min_length=1)]],
                           Field(min_length=1, max_length=MAX_EMBEDDING_INPUTS)]]
    model: Optional[str] = None  # the served model when left out
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: Optional[int] = Field(None, ge=1)
    user: Optional[str] = None


def embedding_inputs(body: Any, model, max_tokens: int) -> tuple[EmbeddingRequest, list[list[int]]]:
    """The checked body and its inputs as token ids (strings encoded with the tokenizer's special
    tokens, as sentence-transformers encodes them); ApiError naming the field for an input of no
    tokens, longer than the context, an id outside the vocabulary, more than ``max_tokens``
    tokens in all, or ``dimensions`` other than the model's."""
    req = parse_body(body, EmbeddingRequest)
    hidden = model._core.hidden_size
    if req.dimensions is not None and req.dimensions != hidden:
        raise invalid("dimensions", f"this model's embeddings have {hidden} dimensions, got {req.dimensions} "
                                    "(kvgen does not shorten them)")
    single = isinstance(req.input, str) or isinstance(req.input[0], int)  # one text, or one token-id list
    given = [req.input] if single else req.input
    prompts, total = [], 0
    for i, item in enumerate(given):
        name = "input" if single else f"input[{i}]"
        ids = model.encode(item) if isinstance(item, str) else list(item)
        if not ids:
            raise invalid(name, "the text encodes to no tokens")
        if max(ids) >= model.vocab_size:
            raise invalid(name, f"token ids must be in [0, {model.vocab_size})")
        if len(ids) > model.context_length:
            raise ApiError(f"'{name}' has {len(ids)} tokens, more than this model's maximum context length of "
                           f"{model.context_length} tokens", param=name, code="context_length_exceeded")
        total += len(ids)
        if total > max_tokens:
            raise ApiError(f"the inputs hold more than the {max_tokens} tokens this server allows per request",
                           param="input", code="request_too_large")
        prompts.append(ids)
    return req, prompts


def embedding_body(vectors: np.ndarray, encoding: str, model_name: str, prompt_tokens: int) -> bytes:
    """OpenAI's response: one ``{"object": "embedding", "index", "embedding"}`` per input, the
    vector as a list of numbers or (``base64``) its little-endian float32 bytes in base64."""
    def encoded(v: np.ndarray) -> Any:
        if encoding == "base64":
            return base64.b64encode(v.astype("<f4").tobytes()).decode("ascii")
        return v.tolist()

    data = [{"object": "embedding", "index": i, "embedding": encoded(v)} for i, v in enumerate(vectors)]
    body = {"object": "list", "data": data, "model": model_name,
            "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}}
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


class Embeddings:
    """The /v1/embeddings route's work for a server (kvgen.server.serving.Serving) whose engine
    pools by ``pooling`` (``kvgen serve --pooling``; None: the model's own, else "last")."""

    def __init__(self, serving, pooling: Optional[str] = None):
        self.serving = serving
        self.asked = pooling
        if pooling is not None:
            choose_pooling(pooling, None, None)  # checks the name at start-up

    def pooling(self) -> str:
        """The pooling of this server's embeddings; ApiError when the model declares one kvgen
        does not compute and --pooling chose none."""
        model = self.serving.model
        try:
            return choose_pooling(self.asked, model.pooling, self.serving.responder.name)
        except ValueError as e:
            raise ApiError(f"{e} (kvgen serve --pooling)", code="unsupported_pooling") from None

    async def create(self, request: Request) -> Response:
        """Reads, checks and admits the body, runs its inputs on the engine, answers their vectors."""
        serving = self.serving
        body = await serving.body(request)
        req, prompts = await run_in_threadpool(embedding_inputs, body, serving.model,
                                               serving.limits.request.max_tokens)
        pooling = self.pooling()
        tokens = sum(len(p) for p in prompts)
        with serving.admission.held(tokens, 1):
            job = _Job(serving.responder.engine, prompts, pooling)
            vectors = await job.run(request, serving.limits.request_timeout)
        serving.trimmer.soon(serving._idle)
        answer = await run_in_threadpool(embedding_body, normalized(vectors), req.encoding_format,
                                         serving.responder.name, tokens)
        return Response(answer, media_type="application/json")


class _Job:
    """One request's inputs on the engine: submitted, awaited, cancelled when the client goes
    or the timeout passes."""

    def __init__(self, engine, prompts: list[list[int]], pooling: str):
        self.engine, self.prompts, self.pooling = engine, prompts, pooling
        self.requests: list = []
        self.timed_out = False

    def cancel(self) -> None:
        for r in self.requests:
            if not r.done():
                r.cancel()

    async def run(self, request: Request, timeout: Optional[float]) -> np.ndarray:
        """The pooled vectors (not normalised), one row per input."""
        from kvgen.server.responses import error_of
        from kvgen.server.serving import _watch_disconnect

        loop = asyncio.get_running_loop()
        ended: asyncio.Queue = asyncio.Queue()

        def post(update: StepUpdate) -> None:
            loop.call_soon_threadsafe(ended.put_nowait, update)

        timer = None
        if timeout is not None:
            def expire() -> None:
                self.timed_out = True
                self.cancel()
            timer = loop.call_later(timeout, expire)
        watcher = asyncio.ensure_future(_watch_disconnect(request, self))
        try:
            for prompt in self.prompts:
                try:
                    self.requests.append(self.engine.submit_embedding(prompt, self.pooling, on_update=post))
                except ValueError as e:
                    raise ApiError(str(e), param="input", code="invalid_value") from None
                except RuntimeError as e:  # the engine is closed: the server is shutting down
                    raise ApiError(str(e), status=503, kind="server_error", code="shutting_down") from None
            for _ in self.requests:
                update = await ended.get()
                if update.error is not None:
                    raise error_of(update.error)
            vectors = [r.embeddings for r in self.requests]  # pooled before their last update
            if self.timed_out:
                raise ApiError("the request ran past the server's --request-timeout", status=504,
                               kind="server_error", code="timeout")
            if any(v is None for v in vectors):
                raise ApiError("the request was cancelled", status=503, kind="server_error", code="cancelled")
            return np.concatenate(vectors)
        finally:
            self.cancel()
            watcher.cancel()
            if timer is not None:
                timer.cancel()
