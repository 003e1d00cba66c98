"""The serving logic of ``kvgen serve``'s routes: read a body within the limits, check it
(kvgen.server.protocol), take its share of the server (kvgen.server.admission), run it on the
engine, and shape the answer (kvgen.server.responses). The routes in kvgen.server.app only
call these methods."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
import weakref
from typing import Any, AsyncIterator

from fastapi import Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from kvgen.server.admission import Admission
from kvgen.server.limits import ServerLimits
from kvgen.server.memory import Trimmer
from kvgen.server.protocol import ApiError, chat_request, completion_request
from kvgen.server.responses import Completion, Responder


class Serving:
    """The routes' work for one model: ``responder`` (its engine and response shapes), the
    server's ``limits``, the ``admission`` of the requests in flight, the ``trimmer`` that
    returns freed memory once they are done."""

    def __init__(self, responder: Responder, limits: ServerLimits, trimmer: Trimmer):
        self.responder, self.limits, self.trimmer = responder, limits, trimmer
        self.admission = Admission(limits)

    @property
    def model(self):
        return self.responder.model

    def _idle(self) -> bool:
        return not self.admission.requests and not self.responder.engine.active_rows

    def _released(self, tokens: int, requests: int):
        """A function that gives back this share once, then trims memory if the server is idle."""
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self.admission.give(tokens, requests)
                self.trimmer.soon(self._idle)

        return release

    async def body(self, request: Request) -> Any:
        """The request's JSON body, read up to the body limit (413 past it), parsed in a worker
        thread (400 for what is not JSON)."""
        limit = self.limits.max_body_bytes
        too_large = ApiError(f"the request body is larger than the server's limit of {limit / (1 << 20):g} MB "
                             "(kvgen serve --max-body-mb)", status=413, code="request_too_large")
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise too_large
        chunks, size = [], 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
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

    async def complete(self, request: Request, chat: bool):
        """POST /v1/completions or /v1/chat/completions: the answer, or its event stream."""
        arrival = time.perf_counter()
        body = await self.body(request)
        _, answer = await self.generate(request, body, chat, arrival)
        if isinstance(answer, dict):
            return answer
        return StreamingResponse(answer, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    async def generate(self, request: Request, body: Any, chat: bool, arrival: float) -> tuple[Completion, Any]:
        """The generation of a read ``body`` (a /v1/chat/completions body when ``chat``, else a
        /v1/completions one), checked, admitted and run: its Completion and the response body,
        or, streamed, an async iterator of its server-sent events (the Responses and Messages
        APIs translate theirs into these, kvgen.server.responses_api and messages_api)."""
        if chat:  # tokenizing, template rendering
            req = await run_in_threadpool(chat_request, body, self.model, self.limits.request, self.responder.name,
                                          self.responder.reasoning_parser)
        else:
            req = await run_in_threadpool(completion_request, body, self.model, self.limits.request)
        engine_requests = len(req.prompts) * (1 if req.config.do_sample else req.n)
        tokens = sum(len(p) for p in req.prompts) + len(req.prompts) * req.n * req.config.max_new_tokens
        self.admission.take(tokens, engine_requests)
        release = self._released(tokens, engine_requests)
        loop = asyncio.get_running_loop()
        try:
            gen = await run_in_threadpool(Completion, self.responder, req, loop, arrival)  # compiles the constraint
        except BaseException:
            release()
            raise
        timer = None
        if self.limits.request_timeout is not None:
            def expire() -> None:
                gen.timed_out = True
                gen.cancel()
            timer = loop.call_later(self.limits.request_timeout, expire)
        cid = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}"
        if req.stream:
            return gen, self._events(gen, cid, chat, timer, release)
        watcher = asyncio.ensure_future(_watch_disconnect(request, gen))
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
        return gen, self.responder.chat_body(gen, cid) if chat else self.responder.completion_body(gen, cid)

    def _events(self, gen: Completion, cid: str, chat: bool, timer, release) -> AsyncIterator[str]:
        async def events():
            try:
                async for event in self.responder.stream(gen, cid, chat):
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
        return stream

    async def tokenize(self, request: Request) -> Response:
        """POST /tokenize: checked, admitted as the tokens it may count, computed and serialised
        in a worker thread (a long answer never holds the event loop)."""
        from kvgen.server.tokenize import text_size, tokenize, tokenize_request

        body = await self.body(request)
        limit = self.limits.max_tokenize_tokens
        req = await run_in_threadpool(tokenize_request, body, limit)
        # its share: the tokens it may count (a token per character at most, and the chat template's)
        with self.admission.held(min(limit, text_size(req) + 1024), 1):
            answer = await run_in_threadpool(lambda: _json_bytes(tokenize(req, self.model, limit,
                                                                          self.responder.name)))
        self.trimmer.soon(self._idle)
        return Response(answer, media_type="application/json")

    async def detokenize(self, request: Request) -> Response:
        """POST /detokenize, computed and serialised in a worker thread."""
        from kvgen.server.tokenize import detokenize

        body = await self.body(request)
        with self.admission.held(0, 1):
            answer = await run_in_threadpool(lambda: _json_bytes(detokenize(body, self.model)))
        return Response(answer, media_type="application/json")

    def health(self) -> dict:
        engine = self.responder.engine
        return {"status": "ok", "slots": engine.slots, "active_slots": engine.active_rows,
                "queued_tokens": self.admission.tokens, "queued_requests": self.admission.requests}


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


async def _watch_disconnect(request: Request, gen: Completion) -> None:
    """Cancels ``gen`` when the client hangs up (its body is read: the next message is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    gen.cancel()
