"""Tool calls in the model's text, in OpenAI's shape, and the grammar that constrains them.

Parsed forms:

- Hermes / Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, one block per
  call, text before the first block is the message's content (a missing closing tag at the
  end of the text is accepted; a last block cut off before its JSON ends, after complete
  ones, is dropped, unless the reply was cut by ``max_tokens``: then, as OpenAI returns such
  a reply, it is a call whose ``arguments`` are the JSON text generated so far, and a start of
  the ``<tool_call>`` tag at the end of the text is left out);
- Llama 3.1: the whole reply is one JSON object ``{"name": ..., "parameters": {...}}`` (or
  several separated by ``;``), optionally after ``<|python_tag|>``.

A call whose name is not one of the request's tools, or whose JSON does not parse, is left
as text. ``tool_grammar`` builds the llguidance Lark grammar of Hermes calls whose arguments
follow each tool's JSON schema (``tool_choice`` "required" or a named function; with free
text before the calls under "auto"); ``harmony_tool_grammar`` that of a GPT-OSS (harmony)
call, whose markers are its own. ``ToolCallStream`` turns a streamed reply into OpenAI's
deltas as it grows.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any, Optional

from kvgen.generation.constraints import closed_objects

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


def parse_tool_calls(text: str, tool_names: set[str], *, truncated: bool = False,
                     parallel: bool = True) -> tuple[Optional[str], list[dict]]:
    """(content, tool_calls) of a reply: the text outside the calls (None when empty) and
    OpenAI's ``tool_calls`` entries; ``([text], [])`` when the reply holds no call.
    ``truncated``: the reply was cut by ``max_tokens``, so a last block cut off is a call with
    the arguments generated so far (see the module's docstring). ``parallel`` False: the
    first call only (``parallel_tool_calls=false``)."""
    if truncated:
        text = without_partial_tag(text)
    content, calls = _parse(text, tool_names, truncated)
    return content, calls if parallel else calls[:1]


def without_partial_tag(text: str) -> str:
    """``text`` without a start of the ``<tool_call>`` tag at its end (a reply cut inside the tag)."""
    for k in range(min(len(_OPEN) - 1, len(text)), 0, -1):
        if _OPEN.startswith(text[-k:]):
            return text[:-k]
    return text


def cut_call(block: str, tool_names: set[str]) -> Optional[dict]:
    """OpenAI's call of a Hermes block cut off by ``max_tokens`` (the text after ``<tool_call>``):
    its name (a cut name completed when one tool alone begins so) and the arguments' JSON text
    generated so far; None when not even the name can be told."""
    match = _HEADER.match(block)
    if match is not None and match.group(1) in tool_names:
        name, arguments = match.group(1), block[match.end():].rstrip()
    else:
        begun = _NAME_BEGUN.match(block)
        candidates = [n for n in tool_names if begun is not None and n.startswith(begun.group(1))]
        if len(candidates) != 1:
            return None
        name, arguments = candidates[0], ""
    return {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
            "function": {"name": name, "arguments": arguments}}


def _parse(text: str, tool_names: set[str], truncated: bool) -> tuple[Optional[str], list[dict]]:
    if "<tool_call>" in text:
        calls = []
        blocks = list(_HERMES.finditer(text))
        for k, block in enumerate(blocks):
            try:
                call = _call(json.loads(block.group(1)), tool_names)
            except ValueError:
                call = None
            last_cut = k == len(blocks) - 1 and not block.group(0).rstrip().endswith("</tool_call>")
            if call is None and last_cut and truncated:
                call = cut_call(block.group(1), tool_names)  # cut by max_tokens: as OpenAI returns it
                if call is None:
                    break
            if call is None:
                if calls and last_cut:
                    break  # a last call cut off after complete ones: dropped
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
    parameters = closed_objects(function.get("parameters") or {"type": "object", "properties": {}})
    return {"type": "object", "properties": {"name": {"const": function["name"]}, "arguments": parameters},
            "required": ["name", "arguments"], "additionalProperties": False}


def tool_grammar(tools: list[dict], *, parallel: bool = True, free_text: bool = False) -> str:
    """A Lark grammar (llguidance's, with ``%json``) of one or more (``parallel``) Hermes tool
    calls, each a ``<tool_call>`` block whose JSON names one of ``tools`` and whose arguments
    follow its parameters' JSON schema. ``free_text`` (``tool_choice`` "auto"): the reply may
    also be any text, or text followed by calls; the text ends at the first ``<tool_call>``
    (a lazy lexeme), after which the calls are constrained as above."""
    bodies = [f"body_{i}: \"\\n\" %json {json.dumps(_call_schema(t))} \"\\n</tool_call>\""
              for i, t in enumerate(tools)]
    more = ' ("\\n" call)*' if parallel else ""
    if free_text:
        start = ["%llguidance {}", f"start: TEXT | text_then_tag body{more}",
                 'text_then_tag[lazy]: TEXT "<tool_call>"', "TEXT: /(.|\\n)*/"]
    else:
        start = [f"start: call{more}"]
    return "\n".join([*start, 'call: "<tool_call>" body', "body: " + " | ".join(f"body_{i}" for i in range(len(tools))),
                      *bodies])


HARMONY_MARKERS = ("<|channel|>", "<|message|>", "<|end|>", "<|start|>", "<|constrain|>")


def harmony_tool_grammar(tools: list[dict], marker_tokens: dict[str, Optional[int]]) -> str:
    """A Lark grammar of one harmony tool call (GPT-OSS), optionally after an ``analysis``
    message: ``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>`` and
    arguments that follow the tool's parameters' JSON schema; the reply then ends (the model's
    ``<|call|>`` is its stop token). ``marker_tokens``: each of HARMONY_MARKERS's token id where
    the vocabulary has it as a token (matched as that token), else None (spelled as text)."""
    def marker(text: str) -> str:
        token = marker_tokens.get(text)
        return f"<[{token}]>" if token is not None else json.dumps(text)

    channel, message, end, start = (marker(m) for m in ("<|channel|>", "<|message|>", "<|end|>", "<|start|>"))
    lazy = "" if marker_tokens.get("<|end|>") is not None else "[lazy]"  # a spelled end ends the text
    bodies = [f'body_{i}: {json.dumps(t["function"]["name"])} " " {marker("<|constrain|>")} "json" {message} '
              f'%json {json.dumps(_call_schema(t)["properties"]["arguments"])}' for i, t in enumerate(tools)]
    return "\n".join(["%llguidance {}", "start: analysis? call",
                      f'analysis{lazy}: {channel} "analysis" {message} ANALYSIS_TEXT {end} {start} "assistant"',
                      "ANALYSIS_TEXT: /(.|\\n)*/",
                      f'call: {channel} "commentary to=functions." body',
                      "body: " + " | ".join(f"body_{i}" for i in range(len(tools))), *bodies])


_HEADER = re.compile(r'\s*\{\s*"name"\s*:\s*"([A-Za-z0-9_-]{1,64})"\s*,\s*"arguments"\s*:\s*')
_NAME_BEGUN = re.compile(r'\s*\{\s*"name"\s*:\s*"([A-Za-z0-9_-]{0,64})')
_OPEN, _CLOSE = "<tool_call>", "</tool_call>"


class ToolCallStream:
    """Turns a streamed reply into OpenAI's chat deltas as the text grows: content until the
    first ``<tool_call>`` (a possible start of the tag held back, and the whitespace around
    the content, which the whole reply's parse strips), then per Hermes call a delta with its
    ``id``, ``type`` and ``name`` and deltas with pieces of its ``arguments`` as they come.

    A reply that opens with ``{`` (Llama 3.1's JSON calls) is held and parsed whole at the
    end (parse_tool_calls), as is a block whose JSON does not start with ``"name"`` then
    ``"arguments"``; such a block that is no call of a known tool is sent as content."""

    def __init__(self, tool_names: set[str], *, parallel: bool = True):
        """``parallel`` False: the first call alone (``parallel_tool_calls=false``)."""
        self.names = tool_names
        self.parallel = parallel
        self.truncated = False  # the reply was cut by max_tokens (told with the last piece)
        self.text = ""          # the reply so far
        self.at = 0             # how much of it is handled
        self.mode = "lead"      # lead (no text yet), text, held, between, header, arguments, block
        self.pending_space = "" # whitespace held back between content and what follows
        self.calls = 0          # calls begun
        self.depth = 0          # the arguments' JSON nesting
        self.in_string = False
        self.escaped = False
        self.block_start = 0

    def feed(self, piece: str, final: bool = False, truncated: bool = False) -> list[dict]:
        """The deltas that ``piece`` (the reply's next text) releases; ``final``: the reply
        ended, ``truncated``: cut by ``max_tokens`` (a call cut off is then sent as a call with
        the arguments generated so far, and a start of the tag at the end is left out, as
        parse_tool_calls(truncated=True) reads the whole reply)."""
        self.text += piece
        self.truncated = truncated
        out: list[dict] = []
        while True:
            before = (self.mode, self.at)
            getattr(self, f"_{self.mode}")(out, final)
            if (self.mode, self.at) == before:
                break
        if final:
            self._end(out)
        return out

    # ---- states: each handles what it can of text[at:] ----

    def _lead(self, out: list[dict], final: bool) -> None:
        rest = self.text[self.at:]
        body = rest.lstrip()
        if body.startswith("{") or body.startswith("<|python_tag|>"):
            self.mode = "held"
        elif body.startswith(_OPEN) or (body and not _OPEN.startswith(body)):
            self.mode = "text"  # else: nothing yet, or maybe the tag: wait

    def _text(self, out: list[dict], final: bool) -> None:
        rest = self.text[self.at:]
        tag = rest.find(_OPEN)
        if tag >= 0:
            content = rest[:tag]
            if content.strip():
                out.append({"content": self.pending_space + content.rstrip()})
            self.pending_space = ""
            self.at += tag + len(_OPEN)
            self.mode = "header"
            self.block_start = self.at
            return
        keep = 0  # a tail that may begin the tag
        for k in range(min(len(_OPEN) - 1, len(rest)), 0, -1):
            if _OPEN.startswith(rest[-k:]):
                keep = k
                break
        ready = rest[:len(rest) - keep]
        stripped = ready.rstrip()
        if stripped:
            out.append({"content": self.pending_space + stripped})
            self.pending_space = ready[len(stripped):]
        else:
            self.pending_space += ready
        self.at += len(ready)

    def _header(self, out: list[dict], final: bool) -> None:
        rest = self.text[self.at:]
        match = _HEADER.match(rest)
        if match and match.end() == len(rest):
            return  # the arguments' first character decides
        if match and match.group(1) in self.names and rest[match.end()] == "{":
            out.append({"tool_calls": [{"index": self.calls, "id": f"call_{uuid.uuid4().hex[:24]}",
                                        "type": "function", "function": {"name": match.group(1), "arguments": ""}}]})
            self.calls += 1
            self.at += match.end()
            self.mode = "arguments"
            self.depth, self.in_string, self.escaped = 0, False, False
        elif match or not _could_be_header(rest):
            self.mode = "block"  # parsed whole once it closes

    def _arguments(self, out: list[dict], final: bool) -> None:
        """The arguments' JSON object (it starts with ``{``) up to its closing brace."""
        rest = self.text[self.at:]
        end = None
        for i, ch in enumerate(rest):
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif ch == "\\":
                    self.escaped = True
                elif ch == '"':
                    self.in_string = False
            elif ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.depth += 1
            elif ch in "}]":
                self.depth -= 1
                if self.depth == 0:  # the arguments' object closes
                    end = i + 1
                    break
        piece = rest[:end] if end is not None else rest
        if piece:
            out.append({"tool_calls": [{"index": self.calls - 1, "function": {"arguments": piece}}]})
        self.at += len(piece)
        if end is not None:
            self.mode = "between"

    def _between(self, out: list[dict], final: bool) -> None:
        if not self.parallel:  # one call only: what follows it is dropped
            self.at = len(self.text)
            return
        rest = self.text[self.at:]
        close = rest.find(_CLOSE)
        tag = rest.find(_OPEN, close + len(_CLOSE) if close >= 0 else 0)
        if tag >= 0:
            self.at += tag + len(_OPEN)
            self.mode = "header"
            self.block_start = self.at

    def _block(self, out: list[dict], final: bool) -> None:
        rest = self.text[self.at:]
        close = rest.find(_CLOSE)
        if close < 0 and not final:
            return
        block = rest[:close] if close >= 0 else rest
        try:
            call = _call(json.loads(block), self.names)
        except ValueError:
            call = None
        if call is None and close < 0 and self.truncated:
            self._cut_call(out, block)
        elif call is not None:
            out.append({"tool_calls": [{"index": self.calls, **call}]})
            self.calls += 1
        else:
            out.append({"content": _OPEN + block + (_CLOSE if close >= 0 else "")})
        self.at += len(block) + (len(_CLOSE) if close >= 0 else 0)
        self.mode = "between"

    def _held(self, out: list[dict], final: bool) -> None:
        pass

    def _cut_call(self, out: list[dict], block: str) -> None:
        """A block cut off by max_tokens: its call (the id and name, then the arguments so far),
        or nothing when not even the name can be told."""
        call = cut_call(block, self.names)
        if call is not None:
            arguments = call["function"]["arguments"]
            call["function"]["arguments"] = ""
            out.append({"tool_calls": [{"index": self.calls, **call}]})
            if arguments:
                out.append({"tool_calls": [{"index": self.calls, "function": {"arguments": arguments}}]})
            self.calls += 1

    def _end(self, out: list[dict]) -> None:
        if self.mode == "held" or (self.mode == "lead" and self.text[self.at:]):
            content, calls = parse_tool_calls(self.text[self.at:], self.names, truncated=self.truncated,
                                              parallel=self.parallel)
            if calls:
                out.extend({"tool_calls": [{"index": self.calls + k, **c}]} for k, c in enumerate(calls))
                self.calls += len(calls)
            elif content:
                out.append({"content": self.pending_space + content})
        elif self.mode == "text":
            rest = self.text[self.at:]
            rest = self.pending_space + (without_partial_tag(rest) if self.truncated else rest)
            if rest:
                out.append({"content": rest})
        elif self.mode == "header" and self.truncated:  # cut inside the call's name
            self._cut_call(out, self.text[self.at:])
        elif self.mode == "header":  # a block cut off before its name: what the whole reply's parse
            self._block(out, True)   # would make of it
        self.pending_space = ""
        self.at = len(self.text)


_HEADER_STEPS = (" ", "{", " ", '"name"', " ", ":", " ", '"', "NAME", '"', " ", ",", " ", '"arguments"', " ", ":")


def _could_be_header(text: str) -> bool:
    """Whether ``text`` may still grow into ``{"name": "...", "arguments": `` (_HEADER)."""
    at = 0
    for step in _HEADER_STEPS:
        if step == " ":
            while at < len(text) and text[at].isspace():
                at += 1
        elif step == "NAME":
            while at < len(text) and (text[at].isalnum() or text[at] in "_-"):
                at += 1
        else:
            piece = text[at:at + len(step)]
            if not step.startswith(piece):
                return False
            at += len(piece)
        if at == len(text):
            return True
    return False
