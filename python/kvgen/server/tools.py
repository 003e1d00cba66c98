"""Tool calls in the model's text, in OpenAI's shape, and the grammar that constrains them.

Parsed forms:

- Hermes / Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, one block per
  call, text before the first block is the message's content (a missing closing tag at the
  end of the text is accepted);
- Llama 3.1: the whole reply is one JSON object ``{"name": ..., "parameters": {...}}`` (or
  several separated by ``;``), optionally after ``<|python_tag|>``.

A call whose name is not one of the request's tools, or whose JSON does not parse, is left
as text. ``tool_grammar`` builds the llguidance Lark grammar of Hermes calls whose arguments
follow each tool's JSON schema (``tool_choice`` "required" or a named function).
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any, Optional

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


def _call(obj: Any, names: set[str]) -> Optional[dict]:
    """OpenAI's tool call of one parsed JSON object, or None when it is not a call of a known tool."""
    if not isinstance(obj, dict):
        return None
    if obj.get("type") == "function" and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name")
    arguments = obj.get("arguments", obj.get("parameters", {}))
    if not isinstance(name, str) or name not in names:
        return None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}


def parse_tool_calls(text: str, tool_names: set[str]) -> tuple[Optional[str], list[dict]]:
    """(content, tool_calls) of a reply: the text outside the calls (None when empty) and
    OpenAI's ``tool_calls`` entries; ``([text], [])`` when the reply holds no call."""
    if "<tool_call>" in text:
        calls = []
        for block in _HERMES.findall(text):
            try:
                call = _call(json.loads(block), tool_names)
            except ValueError:
                call = None
            if call is None:
                return text, []
            calls.append(call)
        content = text[:text.index("<tool_call>")].strip()
        return content or None, calls
    body = text.strip()
    if body.startswith("<|python_tag|>"):
        body = body[len("<|python_tag|>"):].strip()
    if body.startswith("{"):
        calls = []
        decoder = json.JSONDecoder()
        at = 0
        while at < len(body):
            try:
                obj, end = decoder.raw_decode(body, at)
            except ValueError:
                return text, []
            call = _call(obj, tool_names)
            if call is None:
                return text, []
            calls.append(call)
            at = end
            while at < len(body) and body[at] in " \t\n;":
                at += 1
        return None, calls
    return text, []


def _call_schema(tool: dict) -> dict:
    function = tool["function"]
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    return {"type": "object", "properties": {"name": {"const": function["name"]}, "arguments": parameters},
            "required": ["name", "arguments"], "additionalProperties": False}


def tool_grammar(tools: list[dict], *, parallel: bool = True) -> str:
    """A Lark grammar (llguidance's, with ``%json``) of one or more (``parallel``) Hermes tool
    calls, each a ``<tool_call>`` block whose JSON names one of ``tools`` and whose arguments
    follow its parameters' JSON schema."""
    rules = [f"call_{i}: \"<tool_call>\\n\" %json {json.dumps(_call_schema(t))} \"\\n</tool_call>\""
             for i, t in enumerate(tools)]
    choice = " | ".join(f"call_{i}" for i in range(len(tools)))
    more = ' ("\\n" call)*' if parallel else ""
    return "\n".join([f"start: call{more}", f"call: {choice}", *rules])
