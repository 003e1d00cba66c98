"""POST /v1/messages: Anthropic's Messages API, run as a chat completion.

A request is translated into a /v1/chat/completions body (``system`` and the messages' content
blocks into chat messages, ``tool_use`` blocks into an assistant's tool calls, ``tool_result``
blocks into tool messages, tools with their ``input_schema``, ``tool_choice``,
``stop_sequences``, ``max_tokens``, ``output_config.format`` (a JSON schema), and the sampling
fields older clients send, ``temperature``, ``top_p``, ``top_k``) and runs through
the chat completion path (kvgen.server.serving.Serving.generate: the same checks, admission,
engine and tool-call parsing); its answer is shaped back into a Message with ``text`` and
``tool_use`` content blocks and Anthropic's ``stop_reason`` (``end_turn``, ``max_tokens``,
``stop_sequence`` with the sequence, ``tool_use``), or, with ``stream``, into Anthropic's
events (``message_start``, ``content_block_start``, ``content_block_delta``,
``content_block_stop``, ``message_delta``, ``message_stop``). Errors are Anthropic's JSON
(``{"type": "error", "error": {"type", "message"}}``).

Not supported: image and document blocks, server tools (only client tools with an
``input_schema``), prompt caching (``cache_control`` is accepted and ignored). ``thinking`` is
the chat template's ``enable_thinking`` (its budget checked against ``max_tokens``, not
enforced apart from it); a reasoning model's thoughts come back as ``thinking`` blocks where
the chat message carries them (``reasoning_content``).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Annotated, Any, AsyncIterator, Literal, Optional, Union

from fastapi import Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import Field, model_validator

from kvgen.server.errors import ApiError, invalid
from kvgen.server.openapi import MAX_STOP_STRINGS, _Strict
from kvgen.server.protocol import parse_body
from kvgen.server.reply_parts import ReplyPart, ReplyStream, parts_of_message


class Thinking(_Strict):
    """A Messages request's ``thinking``: ``enabled`` with a ``budget_tokens`` below ``max_tokens``
    (any positive count: Anthropic's least, 1024, would not fit a small model's context),
    ``adaptive`` (the model decides) or ``disabled``."""

    type: Literal["enabled", "adaptive", "disabled"]
    budget_tokens: Optional[int] = Field(None, ge=1)

    @model_validator(mode="after")
    def _budget_with_enabled(self) -> "Thinking":
        if (self.type == "enabled") != (self.budget_tokens is not None):
            raise ValueError("budget_tokens is given with type 'enabled', and only then")
        return self


class MessagesRequest(_Strict):
    """POST /v1/messages (the fields kvgen reads; content blocks and tools are checked as they are translated)."""

    model: Optional[str] = None
    max_tokens: int = Field(ge=1)
    messages: list[dict[str, Any]] = Field(min_length=1)
    system: Union[str, list[dict[str, Any]], None] = None
    stop_sequences: Optional[Annotated[list[Annotated[str, Field(min_length=1)]],
                                       Field(max_length=MAX_STOP_STRINGS)]] = None
    stream: Optional[bool] = None
    temperature: Optional[float] = Field(None, ge=0.0, le=2.0)
    top_p: Optional[float] = Field(None, gt=0.0, le=1.0)
    top_k: Optional[int] = Field(None, ge=0, le=2**31 - 1)
    tools: Optional[list[dict[str, Any]]] = None
    tool_choice: Optional[dict[str, Any]] = None
    output_config: Optional[dict[str, Any]] = None  # its "format": a JSON schema the reply follows
    #: {"type": "enabled", "budget_tokens": N} or {"type": "disabled"}: the chat template's
    #: ``enable_thinking`` (Qwen3's switch); the budget is checked, not enforced (max_tokens counts both)
    thinking: Optional[Thinking] = None
    # accepted and ignored: options of Anthropic's service
    metadata: Optional[dict[str, Any]] = None
    service_tier: Optional[str] = None
    cache_control: Optional[dict[str, Any]] = None
    diagnostics: Optional[dict[str, Any]] = None
    inference_geo: Optional[str] = None
    speed: Optional[str] = None
    user_profile_id: Optional[str] = None
    workspace_id: Optional[str] = None


#: An ApiError's status -> Anthropic's error type.
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 408: "timeout_error", 413: "request_too_large", 429: "rate_limit_error",
                503: "overloaded_error", 504: "timeout_error"}
#: chat finish_reason -> Anthropic's stop_reason ("stop" is end_turn or stop_sequence: see _stop)
_STOP_REASONS = {"length": "max_tokens", "tool_calls": "tool_use", "stop": "end_turn"}


def anthropic_error(e: ApiError) -> dict:
    """Anthropic's error JSON for ``e``."""
    return {"type": "error", "error": {"type": _ERROR_TYPES.get(e.status, "api_error"), "message": e.message}}


def _block_text(content: Any, where: str) -> str:
    """A string, or text blocks joined (the content of a system prompt or a tool result)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid(where, "expected a string or a list of text blocks")
    out = []
    for k, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise invalid(f"{where}[{k}]", "expected a text block {\"type\": \"text\", \"text\": ...}")
        out.append(block["text"])
    return "".join(out)


def chat_messages(req: MessagesRequest) -> list[dict]:
    """``system`` and the messages as chat messages: an assistant's ``tool_use`` blocks become its
    tool calls, a user's ``tool_result`` blocks tool messages before the user's text."""
    messages: list[dict] = []
    if req.system:
        messages.append({"role": "system", "content": _block_text(req.system, "system")})
    for i, m in enumerate(req.messages):
        where = f"messages[{i}]"
        role = m.get("role")
        if role not in ("user", "assistant"):
            raise invalid(f"{where}.role", f"expected 'user' or 'assistant', got {role!r:.40}")
        content = m.get("content")
        if isinstance(content, str):
            messages.append({"role": role, "content": content})
            continue
        if not isinstance(content, list):
            raise invalid(f"{where}.content", "expected a string or a list of content blocks")
        text, calls, results = [], [], []
        for k, block in enumerate(content):
            at = f"{where}.content[{k}]"
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                text.append(block["text"])
            elif kind == "tool_use" and role == "assistant":
                if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str) \
                        or not isinstance(block.get("input"), dict):
                    raise invalid(at, "expected {\"type\": \"tool_use\", \"id\", \"name\", \"input\": {...}}")
                calls.append({"id": block["id"], "type": "function",
                              "function": {"name": block["name"], "arguments": json.dumps(block["input"])}})
            elif kind == "tool_result" and role == "user":
                if not isinstance(block.get("tool_use_id"), str):
                    raise invalid(f"{at}.tool_use_id", "expected a string")
                result = _block_text(block.get("content", ""), f"{at}.content")
                if block.get("is_error"):
                    result = f"Error: {result}"
                results.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": result})
            elif kind in ("thinking", "redacted_thinking") and role == "assistant":
                continue  # earlier thoughts: not part of the prompt
            else:
                raise invalid(f"{at}.type", f"{kind!r:.40} blocks are not supported in {role} messages (kvgen takes "
                                            "text, tool_use from the assistant and tool_result from the user)")
        if role == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": "".join(text) if text or not calls else None}
            if calls:
                message["tool_calls"] = calls
            messages.append(message)
        else:
            messages.extend(results)
            if text or not results:
                messages.append({"role": "user", "content": "".join(text)})
    return messages


def _tools(tools: list[dict]) -> list[dict]:
    out = []
    for i, tool in enumerate(tools):
        if tool.get("type", "custom") != "custom" or not isinstance(tool.get("name"), str):
            raise invalid(f"tools[{i}]", "expected a client tool {\"name\", \"description\", \"input_schema\"} "
                                         "(kvgen runs no server tools)")
        function = {"name": tool["name"]}
        if tool.get("description") is not None:
            function["description"] = tool["description"]
        if tool.get("input_schema") is not None:
            function["parameters"] = tool["input_schema"]
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(choice: Optional[dict], body: dict) -> None:
    """Anthropic's tool_choice as chat's tool_choice and parallel_tool_calls in ``body``."""
    if choice is None:
        return
    kind = choice.get("type")
    if kind == "tool":
        if not isinstance(choice.get("name"), str):
            raise invalid("tool_choice.name", "expected a tool's name")
        body["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    elif kind in ("auto", "any", "none"):
        body["tool_choice"] = {"auto": "auto", "any": "required", "none": "none"}[kind]
    else:
        raise invalid("tool_choice.type", "expected 'auto', 'any', 'tool' or 'none'")
    if choice.get("disable_parallel_tool_use"):
        body["parallel_tool_calls"] = False


def chat_body(req: MessagesRequest) -> dict:
    """The /v1/chat/completions body that computes ``req``."""
    body: dict[str, Any] = {"messages": chat_messages(req), "max_tokens": req.max_tokens}
    for name, value in (("model", req.model), ("temperature", req.temperature), ("top_p", req.top_p),
                        ("top_k", req.top_k), ("stop", req.stop_sequences)):
        if value is not None:
            body[name] = value
    if req.tools:
        body["tools"] = _tools(req.tools)
    _tool_choice(req.tool_choice, body)
    if req.thinking is not None:
        if req.thinking.budget_tokens is not None and req.thinking.budget_tokens >= req.max_tokens:
            raise invalid("thinking.budget_tokens", "must be less than max_tokens")
        body["chat_template_kwargs"] = {"enable_thinking": req.thinking.type != "disabled"}
    fmt = (req.output_config or {}).get("format")
    if fmt is not None:  # structured output: {"type": "json_schema", "schema": ...}
        if not isinstance(fmt, dict) or fmt.get("type") != "json_schema" or not isinstance(fmt.get("schema"), dict):
            raise invalid("output_config.format", "expected {\"type\": \"json_schema\", \"schema\": {...}}")
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "output", "schema": fmt["schema"]}}
    if req.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _stop(gen, finish_reason: Optional[str]) -> tuple[str, Optional[str]]:
    """(stop_reason, stop_sequence) of the generation ``gen`` (its Completion) that finished
    with the chat ``finish_reason``: a stop sequence is told from the end of turn by the text
    that the server's stop filter cut."""
    reason = _STOP_REASONS.get(finish_reason or "stop", "end_turn")
    choice = gen.choices[0]
    if reason != "end_turn" or choice.stops is None or not choice.stops.stopped:
        return reason, None
    rest = gen.server.decode(choice.tokens)[len(choice.emitted):]
    matched = [s for s in choice.stops.stop_strings if rest.startswith(s)]
    return "stop_sequence", max(matched, key=len) if matched else None


class MessageShape:
    """The Message objects and events of one request."""

    def __init__(self, req: MessagesRequest, model_name: str):
        self.req, self.model_name = req, model_name
        self.id = f"msg_{uuid.uuid4().hex}"

    def message(self, content: list[dict], stop_reason: Optional[str], stop_sequence: Optional[str],
                input_tokens: int, output_tokens: int) -> dict:
        return {"id": self.id, "type": "message", "role": "assistant", "model": self.model_name, "content": content,
                "stop_reason": stop_reason, "stop_sequence": stop_sequence,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}

    @staticmethod
    def block(part: ReplyPart, complete: bool = True) -> dict:
        """The content block of ``part`` (at its start when not ``complete``: empty)."""
        if part.kind == "reasoning":
            return {"type": "thinking", "thinking": part.text if complete else "", "signature": ""}
        if part.kind == "text":
            return {"type": "text", "text": part.text if complete else ""}
        arguments: Any = {}
        if complete:
            try:
                arguments = json.loads(part.text)
            except ValueError:  # arguments cut by max_tokens: the block holds no input
                arguments = {}
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": arguments}

    @staticmethod
    def event(kind: str, **fields: Any) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields}, ensure_ascii=False)}\n\n"


_DELTAS = {"text": ("text_delta", "text"), "reasoning": ("thinking_delta", "thinking"),
           "tool_call": ("input_json_delta", "partial_json")}


async def message_events(shape: MessageShape, gen, chat_events: AsyncIterator[str]) -> AsyncIterator[str]:
    """Anthropic's events of a streamed chat completion."""
    yield shape.event("message_start", message=shape.message([], None, None, gen.prompt_tokens, 0))
    yield shape.event("ping")
    stream = ReplyStream()
    index: dict[int, int] = {}  # id(part) -> its content block index
    try:
        async for event, part, piece in stream.events(chat_events):
            if event == "start":
                index[id(part)] = len(index)
                yield shape.event("content_block_start", index=index[id(part)], content_block=shape.block(part, False))
            elif event == "delta":
                kind, key = _DELTAS[part.kind]
                yield shape.event("content_block_delta", index=index[id(part)], delta={"type": kind, key: piece})
            else:
                yield shape.event("content_block_stop", index=index[id(part)])
    except ApiError as e:  # the headers are sent: the failure is an event
        yield shape.event("error", error=anthropic_error(e)["error"])
        return
    reason, sequence = _stop(gen, stream.finish_reason)
    output = stream.usage.get("completion_tokens", 0)
    yield shape.event("message_delta", delta={"stop_reason": reason, "stop_sequence": sequence},
                      usage={"output_tokens": output})
    yield shape.event("message_stop")


class MessagesApi:
    """The /v1/messages route's work for a server (kvgen.server.serving.Serving)."""

    def __init__(self, serving):
        self.serving = serving

    async def create(self, request: Request):
        try:
            return await self._create(request)
        except ApiError as e:
            return JSONResponse(anthropic_error(e), status_code=e.status)

    async def _create(self, request: Request):
        from kvgen.server.responses import error_of

        arrival = time.perf_counter()
        body = await self.serving.body(request)
        req = parse_body(body, MessagesRequest)
        shape = MessageShape(req, self.serving.responder.name)
        try:
            gen, answer = await self.serving.generate(request, chat_body(req), True, arrival)
        except ApiError:
            raise
        except Exception as e:  # noqa: BLE001 - answered in Anthropic's shape, as the app answers others
            raise error_of(e) from None
        if not isinstance(answer, dict):
            return StreamingResponse(message_events(shape, gen, answer), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache"})
        choice = answer["choices"][0]
        reason, sequence = _stop(gen, choice["finish_reason"])
        content = [shape.block(part) for part in parts_of_message(choice["message"])]
        usage = answer["usage"]
        return shape.message(content, reason, sequence, usage["prompt_tokens"], usage["completion_tokens"])
