"""POST /v1/responses: OpenAI's Responses API, run as a chat completion.

A request is translated into a /v1/chat/completions body (``instructions`` and ``input`` items
into messages, function tools, ``tool_choice``, ``text.format`` into ``response_format``,
``max_output_tokens`` into ``max_tokens``) and runs through the chat completion path
(kvgen.server.serving.Serving.generate: the same checks, admission, engine and tool-call
parsing); its answer is shaped back into a Response object with ``message`` and
``function_call`` output items, or, with ``stream``, into the typed events
(``response.created``, ``response.output_item.added``, ``response.output_text.delta``, ...,
``response.completed``).

Supported input items: messages (roles user, assistant, system, developer; text content or
``input_text`` / ``output_text`` parts), ``function_call`` and ``function_call_output`` (a
tool round trip), ``reasoning`` (skipped). kvgen keeps no state: ``previous_response_id``,
``conversation`` and ``background`` are refused with a 400, ``store`` is accepted and the
response says ``"store": false``. Only function tools; no images or files.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, AsyncIterator, Literal, Optional, Union

from fastapi import Request
from fastapi.responses import StreamingResponse
from pydantic import Field

from kvgen.server.errors import ApiError, invalid
from kvgen.server.openapi import _Strict
from kvgen.server.protocol import parse_body
from kvgen.server.reply_parts import ReplyPart, ReplyStream, parts_of_message


class Reasoning(_Strict):
    """A Responses request's ``reasoning``."""

    effort: Optional[Literal["none", "minimal", "low", "medium", "high"]] = None
    summary: Optional[Literal["auto", "concise", "detailed"]] = None
    generate_summary: Optional[Literal["auto", "concise", "detailed"]] = None  # summary's former name


class ResponsesRequest(_Strict):
    """POST /v1/responses (the fields kvgen reads; items and tools are checked as they are translated)."""

    model: Optional[str] = None
    input: Union[str, list[dict[str, Any]]]
    instructions: Optional[str] = None
    max_output_tokens: Optional[int] = Field(None, ge=1)
    temperature: Optional[float] = Field(None, ge=0.0, le=2.0)
    top_p: Optional[float] = Field(None, gt=0.0, le=1.0)
    stream: Optional[bool] = None
    tools: Optional[list[dict[str, Any]]] = None
    tool_choice: Union[Literal["none", "auto", "required"], dict[str, Any], None] = None
    parallel_tool_calls: Optional[bool] = None
    text: Optional[dict[str, Any]] = None
    previous_response_id: Optional[str] = None
    conversation: Optional[Any] = None
    background: Optional[bool] = None
    top_logprobs: Optional[int] = Field(None, ge=0, le=20)
    user: Optional[str] = None
    metadata: Optional[dict[str, str]] = None
    #: its ``effort`` is the chat template's ``reasoning_effort`` (as the chat API's field);
    #: ``summary`` is accepted (the reasoning comes back whole, not summarised)
    reasoning: Optional[Reasoning] = None
    # accepted and ignored: options of OpenAI's service
    store: Optional[bool] = None
    include: Optional[list[str]] = None
    truncation: Optional[Literal["auto", "disabled"]] = None
    stream_options: Optional[dict[str, Any]] = None
    service_tier: Optional[str] = None
    safety_identifier: Optional[str] = None
    prompt_cache_key: Optional[str] = None
    prompt_cache_retention: Optional[str] = None
    max_tool_calls: Optional[int] = Field(None, ge=1)


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _text(content: Any, where: str) -> str:
    """A message's content: a string, or text parts (``input_text``, ``output_text``, ``text``) joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid(where, "expected a string or a list of content parts")
    out = []
    for k, part in enumerate(content):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise invalid(f"{where}[{k}]", "expected a content part object with a 'type'")
        if part["type"] in ("input_text", "output_text", "text", "refusal"):
            text = part.get("text", part.get("refusal"))
            if not isinstance(text, str):
                raise invalid(f"{where}[{k}].text", "expected a string")
            out.append(text)
        else:
            raise invalid(f"{where}[{k}].type", f"{part['type']!r:.40} parts are not supported (kvgen's models "
                                                 "read text: input_text, output_text)")
    return "".join(out)


def _function_call(item: dict, where: str) -> dict:
    for key in ("call_id", "name"):
        if not isinstance(item.get(key), str):
            raise invalid(f"{where}.{key}", "expected a string")
    arguments = item.get("arguments", "{}")
    if not isinstance(arguments, str):
        raise invalid(f"{where}.arguments", "expected the arguments' JSON text")
    return {"id": item["call_id"], "type": "function", "function": {"name": item["name"], "arguments": arguments}}


def chat_messages(req: ResponsesRequest) -> list[dict]:
    """``instructions`` and the ``input`` items as chat messages."""
    messages: list[dict] = []
    if req.instructions:
        messages.append({"role": "system", "content": req.instructions})
    items = [{"type": "message", "role": "user", "content": req.input}] if isinstance(req.input, str) else req.input
    if not items:
        raise invalid("input", "expected at least one item")
    for i, item in enumerate(items):
        where = f"input[{i}]"
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                raise invalid(f"{where}.role",
                              f"expected 'user', 'assistant', 'system' or 'developer', got {role!r:.40}")
            messages.append({"role": "system" if role == "developer" else role,
                             "content": _text(item.get("content"), f"{where}.content")})
        elif kind == "function_call":  # the model's call: on the assistant message just before, or a new one
            call = _function_call(item, where)
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            if not isinstance(item.get("call_id"), str):
                raise invalid(f"{where}.call_id", "expected a string")
            messages.append({"role": "tool", "tool_call_id": item["call_id"],
                             "content": _text(item.get("output"), f"{where}.output")})
        elif kind == "reasoning":
            continue  # a reasoning model's earlier thoughts: not part of the prompt
        else:
            raise invalid(f"{where}.type", f"{kind!r:.40} items are not supported (kvgen takes message, function_call, "
                                           "function_call_output and reasoning items)")
    return messages


def _tools(tools: list[dict]) -> list[dict]:
    out = []
    for i, tool in enumerate(tools):
        if tool.get("type") != "function":
            raise invalid(f"tools[{i}].type", f"{tool.get('type')!r:.40} tools are not supported (kvgen serves "
                                              "function tools)")
        keys = ("name", "description", "parameters", "strict")
        function = {key: tool[key] for key in keys if tool.get(key) is not None}
        unknown = set(tool) - {"type", *keys}
        if unknown:
            raise ApiError(f"'tools[{i}]': unknown field(s): {', '.join(sorted(unknown))}", param=f"tools[{i}]",
                           code="unknown_field")
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(choice: Any) -> Any:
    if choice is None or isinstance(choice, str):
        return choice
    if choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise invalid("tool_choice", "expected 'none', 'auto', 'required' or {\"type\": \"function\", \"name\": ...}")


def _response_format(text: Optional[dict]) -> Optional[dict]:
    """``text.format`` as chat's response_format."""
    if not text or text.get("format") is None:
        return None
    fmt = text["format"]
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object", "json_schema"):
        raise invalid("text.format", "expected an object whose 'type' is 'text', 'json_object' or 'json_schema'")
    if fmt["type"] != "json_schema":
        return {"type": fmt["type"]}
    if not isinstance(fmt.get("schema"), dict):
        raise invalid("text.format.schema", "expected a JSON schema object")
    spec = {key: fmt[key] for key in ("name", "description", "schema", "strict") if fmt.get(key) is not None}
    return {"type": "json_schema", "json_schema": spec}


def chat_body(req: ResponsesRequest) -> dict:
    """The /v1/chat/completions body that computes ``req``; ApiError naming the Responses field
    for what kvgen does not serve."""
    for name in ("previous_response_id", "conversation"):
        if getattr(req, name) is not None:
            raise ApiError(f"'{name}' is not supported: kvgen serve keeps no responses or conversations; send the "
                           "whole conversation's items in 'input'", param=name, code="unsupported_value")
    if req.background:
        raise ApiError("'background' is not supported: responses are computed while the request waits",
                       param="background", code="unsupported_value")
    if req.top_logprobs:
        raise ApiError("'top_logprobs' is not supported on /v1/responses (use /v1/chat/completions)",
                       param="top_logprobs", code="unsupported_value")
    body: dict[str, Any] = {"messages": chat_messages(req)}
    fields = (("model", req.model), ("max_tokens", req.max_output_tokens), ("temperature", req.temperature),
              ("top_p", req.top_p), ("user", req.user), ("parallel_tool_calls", req.parallel_tool_calls),
              ("tool_choice", _tool_choice(req.tool_choice)), ("response_format", _response_format(req.text)),
              ("reasoning_effort", req.reasoning.effort if req.reasoning else None))
    for name, value in fields:
        if value is not None:
            body[name] = value
    if req.tools:
        body["tools"] = _tools(req.tools)
    if req.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


class ResponseShape:
    """The Response objects and events of one request."""

    def __init__(self, req: ResponsesRequest, model_name: str):
        self.req, self.model_name = req, model_name
        self.id = _new_id("resp")
        self.created = int(time.time())
        self.sequence = 0
        self.item_ids: dict[int, str] = {}

    def response(self, status: str, output: list[dict], usage: Optional[dict], reason: Optional[str] = None,
                 error: Optional[dict] = None) -> dict:
        req = self.req
        fmt = (req.text or {}).get("format") or {"type": "text"}
        return {"id": self.id, "object": "response", "created_at": self.created, "status": status,
                "error": error, "incomplete_details": {"reason": reason} if reason else None,
                "instructions": req.instructions, "max_output_tokens": req.max_output_tokens, "model": self.model_name,
                "output": output, "parallel_tool_calls": req.parallel_tool_calls is not False,
                "previous_response_id": None, "store": False,
                "reasoning": {"effort": req.reasoning.effort if req.reasoning else None, "summary": None},
                "temperature": 1.0 if req.temperature is None else req.temperature, "text": {"format": fmt},
                "tool_choice": req.tool_choice or "auto", "tools": req.tools or [],
                "top_p": 1.0 if req.top_p is None else req.top_p, "truncation": req.truncation or "disabled",
                "usage": usage, "user": req.user, "metadata": req.metadata or {}}

    @staticmethod
    def usage(chat_usage: dict) -> Optional[dict]:
        if not chat_usage:
            return None
        return {"input_tokens": chat_usage["prompt_tokens"], "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": chat_usage["completion_tokens"], "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": chat_usage["total_tokens"]}

    def item(self, index: int, part: ReplyPart, status: str) -> dict:
        """The output item of ``part`` at output ``index``."""
        if index not in self.item_ids:
            prefix = {"text": "msg", "reasoning": "rs", "tool_call": "fc"}[part.kind]
            self.item_ids[index] = _new_id(prefix)
        item_id = self.item_ids[index]
        if part.kind == "tool_call":
            return {"type": "function_call", "id": item_id, "call_id": part.id, "name": part.name,
                    "arguments": part.text, "status": status}
        if part.kind == "reasoning":
            content = [{"type": "reasoning_text", "text": part.text}] if status == "completed" else []
            return {"type": "reasoning", "id": item_id, "summary": [], "content": content, "status": status}
        content = [self.text_part(part.text)] if status == "completed" else []
        return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content}

    @staticmethod
    def text_part(text: str) -> dict:
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}

    def event(self, kind: str, **fields: Any) -> str:
        body = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return f"event: {kind}\ndata: {json.dumps(body, ensure_ascii=False)}\n\n"


def _status(finish_reason: Optional[str]) -> tuple[str, Optional[str]]:
    """The Response status and incomplete reason of a chat finish_reason."""
    return ("incomplete", "max_output_tokens") if finish_reason == "length" else ("completed", None)


def response_body(shape: ResponseShape, chat: dict) -> dict:
    """The Response object of a finished chat completion body."""
    choice = chat["choices"][0]
    parts = parts_of_message(choice["message"])
    output = [shape.item(i, part, "completed") for i, part in enumerate(parts)]
    status, reason = _status(choice["finish_reason"])
    return shape.response(status, output, shape.usage(chat["usage"]), reason)


async def response_events(shape: ResponseShape, chat_events: AsyncIterator[str]) -> AsyncIterator[str]:
    """The Responses API's typed events of a streamed chat completion."""
    yield shape.event("response.created", response=shape.response("in_progress", [], None))
    yield shape.event("response.in_progress", response=shape.response("in_progress", [], None))
    stream = ReplyStream()
    index: dict[int, int] = {}  # id(part) -> its output index
    try:
        async for event, part, piece in stream.events(chat_events):
            if event == "start":
                at = index[id(part)] = len(index)
                yield shape.event("response.output_item.added", output_index=at,
                                  item=shape.item(at, part, "in_progress"))
                if part.kind == "text":
                    yield shape.event("response.content_part.added", item_id=shape.item_ids[at], output_index=at,
                                      content_index=0, part=shape.text_part(""))
                continue
            at = index[id(part)]
            item_id = shape.item_ids[at]
            if event == "delta":
                if part.kind == "text":
                    yield shape.event("response.output_text.delta", item_id=item_id, output_index=at,
                                      content_index=0, delta=piece, logprobs=[])
                elif part.kind == "reasoning":
                    yield shape.event("response.reasoning_text.delta", item_id=item_id, output_index=at,
                                      content_index=0, delta=piece)
                else:
                    yield shape.event("response.function_call_arguments.delta", item_id=item_id, output_index=at,
                                      delta=piece)
                continue
            if part.kind == "text":  # stop
                yield shape.event("response.output_text.done", item_id=item_id, output_index=at, content_index=0,
                                  text=part.text, logprobs=[])
                yield shape.event("response.content_part.done", item_id=item_id, output_index=at, content_index=0,
                                  part=shape.text_part(part.text))
            elif part.kind == "reasoning":
                yield shape.event("response.reasoning_text.done", item_id=item_id, output_index=at, content_index=0,
                                  text=part.text)
            else:
                yield shape.event("response.function_call_arguments.done", item_id=item_id, output_index=at,
                                  name=part.name, arguments=part.text)
            yield shape.event("response.output_item.done", output_index=at, item=shape.item(at, part, "completed"))
    except ApiError as e:  # the headers are sent: the failure is an event, then the failed response
        yield shape.event("error", code=e.code, message=e.message, param=e.param)
        output = [shape.item(i, part, "completed") for i, part in enumerate(stream.parts)]
        yield shape.event("response.failed", response=shape.response(
            "failed", output, None, error={"code": e.code or "server_error", "message": e.message}))
        return
    status, reason = _status(stream.finish_reason)
    output = [shape.item(i, part, "completed") for i, part in enumerate(stream.parts)]
    yield shape.event(f"response.{status}", response=shape.response(status, output, shape.usage(stream.usage), reason))


class ResponsesApi:
    """The /v1/responses route's work for a server (kvgen.server.serving.Serving)."""

    def __init__(self, serving):
        self.serving = serving

    async def create(self, request: Request):
        arrival = time.perf_counter()
        body = await self.serving.body(request)
        req = parse_body(body, ResponsesRequest)
        shape = ResponseShape(req, self.serving.responder.name)
        _, answer = await self.serving.generate(request, chat_body(req), True, arrival)
        if isinstance(answer, dict):
            return response_body(shape, answer)
        return StreamingResponse(response_events(shape, answer), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})
