"""A chat completion's reply as the parts the Responses and Messages APIs return: reasoning
(where the chat message carries ``reasoning_content``), text, and tool calls, in order. Both
APIs run their requests as chat completions (kvgen.server.serving.Serving.generate) and read the
answer here: a finished message as a list of parts, a stream of chat chunks as part events
(a part starts, grows by deltas, stops), so that each API only shapes its own JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, AsyncIterator, Optional

from kvgen.server.errors import ApiError


@dataclass
class ReplyPart:
    """One part of a reply: ``kind`` "reasoning", "text" or "tool_call"; ``text`` is the
    reasoning, the text, or a call's arguments (JSON text); a call has its ``id`` and ``name``."""

    kind: str
    text: str = ""
    id: Optional[str] = None
    name: Optional[str] = None


def parts_of_message(message: dict) -> list[ReplyPart]:
    """The parts of a finished chat message (chat_body's ``choices[0].message``)."""
    parts = []
    if message.get("reasoning_content"):
        parts.append(ReplyPart("reasoning", message["reasoning_content"]))
    if message.get("content"):
        parts.append(ReplyPart("text", message["content"]))
    for call in message.get("tool_calls") or []:
        parts.append(ReplyPart("tool_call", call["function"]["arguments"], call["id"], call["function"]["name"]))
    return parts


async def chat_chunks(events: AsyncIterator[str]) -> AsyncIterator[dict]:
    """The chunks of a chat completion's server-sent events, as dicts, up to ``[DONE]``; an
    error event (the headers were sent) raises its ApiError."""
    async for event in events:
        data = event.removeprefix("data: ").strip()
        if data == "[DONE]":
            return
        chunk = json.loads(data)
        if "error" in chunk:
            error = chunk["error"]
            raise ApiError(error.get("message") or "the generation failed", param=error.get("param"),
                           code=error.get("code"), kind=error.get("type") or "server_error",
                           status=400 if error.get("type") == "invalid_request_error" else 500)
        yield chunk


class ReplyStream:
    """Reads a streamed chat completion (one choice) as part events; after them,
    ``finish_reason`` and ``usage`` hold the last chunk's."""

    def __init__(self) -> None:
        self.finish_reason: Optional[str] = None
        self.usage: dict[str, Any] = {}
        self.parts: list[ReplyPart] = []  # every part, complete once the events are read

    async def events(self, events: AsyncIterator[str]) -> AsyncIterator[tuple[str, ReplyPart, str]]:
        """(event, part, text): ("start", part, ""), ("delta", part, piece), ("stop", part, "")."""
        open_part: Optional[ReplyPart] = None
        async for chunk in chat_chunks(events):
            if chunk.get("usage"):
                self.usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                for kind, piece in (("reasoning", delta.get("reasoning_content")), ("text", delta.get("content"))):
                    if not piece:
                        continue
                    if open_part is None or open_part.kind != kind:
                        if open_part is not None:
                            yield "stop", open_part, ""
                        open_part = ReplyPart(kind)
                        self.parts.append(open_part)
                        yield "start", open_part, ""
                    open_part.text += piece
                    yield "delta", open_part, piece
                for call in delta.get("tool_calls") or []:
                    function = call.get("function") or {}
                    if call.get("id"):  # a new call: its id and name come first
                        if open_part is not None:
                            yield "stop", open_part, ""
                        open_part = ReplyPart("tool_call", "", call["id"], function.get("name"))
                        self.parts.append(open_part)
                        yield "start", open_part, ""
                    piece = function.get("arguments") or ""
                    if piece and open_part is not None and open_part.kind == "tool_call":
                        open_part.text += piece
                        yield "delta", open_part, piece
                if choice.get("finish_reason"):
                    self.finish_reason = choice["finish_reason"]
                    if open_part is not None:
                        yield "stop", open_part, ""
                        open_part = None
        if open_part is not None:
            yield "stop", open_part, ""
