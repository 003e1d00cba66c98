"""Reasoning output: a thinking model's reasoning told apart from its answer, as vLLM's
``--reasoning-parser`` and llama.cpp's ``--reasoning-format`` do, for ``reasoning_content``.

Parsers (``kvgen serve --reasoning-parser``; ``auto`` picks one from the chat template):

- ``qwen3``: the reply may open with ``<think>`` ... ``</think>`` (Qwen3, Qwen3.5, SmolLM3);
  text without it is all answer. When the rendered prompt itself ends inside an open
  ``<think>`` (Qwen3's thinking-only templates, DeepSeek-R1's), the reply starts in reasoning.
- ``deepseek_r1``: the reply starts in reasoning (the template opens ``<think>``; a ``<think>``
  the model writes again is skipped) up to ``</think>``.
- ``harmony`` (GPT-OSS): the reply is messages ``<|channel|>NAME<|message|>TEXT<|end|>``;
  the ``analysis`` channel is reasoning, ``final`` (and any other) the answer. Its markers are
  special tokens, so such a reply is read with its special tokens. When the request offers
  tools, a message addressed to one (``to=functions.NAME`` in its header, as GPT-OSS writes
  ``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}``) is a tool
  call: it is passed on in the call block that kvgen.server.tools reads
  (``<tool_call>{"name": NAME, "arguments": ...}</tool_call>``), so that calls are parsed,
  checked and streamed as every other model's are.

A reply cut before its reasoning ends is all reasoning. ``ReasoningSplitter`` splits the text
as it grows (a marker split across tokens is held until it is told), so that a stream's
``reasoning_content`` and ``content`` deltas join to the whole reply's split.
``reasoning_prefix`` is the Lark grammar of the reasoning that a constraint (tool calls, a
JSON schema) lets come first: the constrained output starts after the reasoning ends.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Optional

PARSERS = ("auto", "none", "qwen3", "deepseek_r1", "harmony")
THINK_START, THINK_END = "<think>", "</think>"
_HARMONY_ENDS = ("<|end|>", "<|return|>", "<|call|>")
_HARMONY_CHANNEL = re.compile(r"<\|channel\|>\s*(\w+)")
_HARMONY_RECIPIENT = re.compile(r"\bto=functions\.([A-Za-z0-9_-]{1,64})")


def parser_for(option: str, template: Optional[str]) -> Optional[str]:
    """The parser that ``--reasoning-parser option`` asks for (None: none); ``auto`` reads the
    chat template: harmony's channels, or ``<think>`` blocks (qwen3, which also follows a
    prompt that opens ``<think>`` itself, as DeepSeek-R1's templates do)."""
    if option not in PARSERS:
        raise ValueError(f"--reasoning-parser must be one of {', '.join(PARSERS)}, got {option!r}")
    if option == "none":
        return None
    if option != "auto":
        return option
    if not template:
        return None
    if "<|channel|>" in template and "<|message|>" in template:
        return "harmony"
    if THINK_START in template or THINK_END in template:
        return "qwen3"
    return None


@dataclass(frozen=True)
class ReasoningMode:
    """How one reply's reasoning is read: ``parser`` (qwen3, deepseek_r1, harmony) and whether
    the reply starts inside the reasoning (the prompt opened it)."""

    parser: str
    opened: bool = False
    # the markers' token ids where they are added tokens (Qwen3's <think>: grammars then match
    # the token, which llguidance keeps apart from text), else None (spelled as text)
    start_token: Optional[int] = None
    end_token: Optional[int] = None
    # harmony: the request offers tools, so a message addressed to a function is a tool call
    calls: bool = False

    @property
    def keeps_special_tokens(self) -> bool:
        """Whether the reply is read with its special tokens (harmony's markers are)."""
        return self.parser == "harmony"


def mode_for(parser: Optional[str], prompt_tail: str,
             marker_tokens: tuple[Optional[int], Optional[int]] = (None, None),
             calls: bool = False) -> Optional[ReasoningMode]:
    """The ReasoningMode of a reply to a prompt ending in ``prompt_tail`` (its last tokens'
    text, special tokens included); ``marker_tokens``: the ids of ``<think>`` and ``</think>``
    where the vocabulary has them as added tokens; ``calls``: the request offers tools."""
    if parser is None:
        return None
    if parser == "harmony":
        return ReasoningMode(parser, calls=calls)
    opened = parser == "deepseek_r1" or prompt_tail.rfind(THINK_START) > prompt_tail.rfind(THINK_END)
    return ReasoningMode(parser, opened, *marker_tokens)


def reasoning_prefix(mode: ReasoningMode) -> Optional[tuple[str, str]]:
    """(rule, Lark lines) of the reasoning that may come before a constrained answer: the
    reasoning as a lazy lexeme (it ends at the first end marker), then optional whitespace;
    None for harmony (its channels are special tokens that the answer's grammar does not see)."""
    if mode.parser == "harmony":
        return None
    if mode.end_token is not None:  # the end marker is a token: the text runs up to it
        opening = "" if mode.opened else (f"<[{mode.start_token}]> " if mode.start_token is not None
                                          else f'"{THINK_START}" ')
        block = f"reasoning_block: {opening}REASONING_TEXT <[{mode.end_token}]>"
    else:  # spelled: a lazy lexeme, which ends at the first end marker
        opening = "" if mode.opened else f'"{THINK_START}" '
        block = f'reasoning_block[lazy]: {opening}REASONING_TEXT "{THINK_END}"'
    lines = [block, "REASONING_TEXT: /(.|\\n)*/", "REASONING_SPACE: /[ \\n]{1,2}/"]  # Qwen writes two newlines
    # opened by the prompt: the reasoning must end first; else it may be left out
    rule = "reasoning_block REASONING_SPACE?" if mode.opened else "(reasoning_block REASONING_SPACE?)?"
    return rule, "\n".join(lines)


def _held_prefix(text: str, marker: str) -> int:
    """The length of the longest end of ``text`` that begins ``marker`` (held back: the marker may follow)."""
    for k in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-k:]):
            return k
    return 0


class ReasoningSplitter:
    """Splits a reply into reasoning and answer as its text grows: ``feed(piece)`` returns the
    (reasoning, content) text that ``piece`` releases."""

    def __init__(self, mode: ReasoningMode):
        self.mode = mode
        self.buffer = ""
        if mode.parser == "harmony":
            self.state = "header"
        else:
            # opened by the prompt: a <think> the model writes again (DeepSeek-R1's habit) is skipped
            self.state = "opened" if mode.opened else "lead"
        self.channel = "final"
        self.call: Optional[str] = None  # harmony: the arguments of the tool call being read
        self.after_end = False  # just past the end marker: whitespace before the answer is dropped

    def feed(self, piece: str, final: bool = False) -> tuple[str, str]:
        self.buffer += piece
        reasoning, content = [], []
        while True:
            before = (self.state, len(self.buffer))
            handler = self._harmony if self.mode.parser == "harmony" else self._think
            handler(reasoning, content, final)
            if (self.state, len(self.buffer)) == before:
                break
        return "".join(reasoning), "".join(content)

    # ---- <think> ... </think> ----

    def _think(self, reasoning: list, content: list, final: bool) -> None:
        text = self.buffer
        if self.state in ("lead", "opened"):  # before the reasoning: a <think> may come (after whitespace)
            body = text.lstrip()
            if body.startswith(THINK_START):
                self.buffer = body[len(THINK_START):]
                self.state = "reasoning"
            elif not final and THINK_START.startswith(body):
                return  # nothing yet, or maybe the marker: wait
            else:
                self.state = "reasoning" if self.state == "opened" else "content"
        elif self.state == "reasoning":
            end = text.find(THINK_END)
            if end >= 0:
                reasoning.append(text[:end])
                self.buffer = text[end + len(THINK_END):]
                self.state, self.after_end = "content", True
                return
            keep = 0 if final else _held_prefix(text, THINK_END)
            reasoning.append(text[:len(text) - keep])
            self.buffer = text[len(text) - keep:]
        elif self.state == "content":
            if self.after_end:
                stripped = text.lstrip()
                if not stripped and not final:
                    return
                self.after_end = False
                text = stripped
            content.append(text)
            self.buffer = ""

    # ---- harmony: <|channel|>NAME<|message|>TEXT<|end|> ----

    def _harmony(self, reasoning: list, content: list, final: bool) -> None:
        text = self.buffer
        if self.state == "header":
            at = text.find("<|message|>")
            if at >= 0:
                found = _HARMONY_CHANNEL.search(text[:at])
                self.channel = found.group(1) if found else "final"
                recipient = _HARMONY_RECIPIENT.search(text[:at]) if self.mode.calls else None
                if recipient is not None:  # a tool call: its arguments follow
                    content.append(f'<tool_call>{{"name": {json.dumps(recipient.group(1))}, "arguments": ')
                    self.call = ""
                self.buffer = text[at + len("<|message|>"):]
                self.state = "body"
            elif text and not text.lstrip().startswith("<|") and not "<|".startswith(text.lstrip()):
                self.state, self.channel = "body", "final"  # plain text: the answer
            elif final:
                self.buffer = ""
        elif self.state == "body":
            ends = [(text.find(m), m) for m in (*_HARMONY_ENDS, "<|start|>", "<|channel|>") if m in text]
            out = reasoning if self.channel == "analysis" else content
            if ends:
                at, marker = min(ends)
                self._body(out, text[:at], ended=True)
                self.buffer = text[at + (0 if marker in ("<|start|>", "<|channel|>") else len(marker)):]
                self.state = "header"
                return
            keep = 0 if final else _held_prefix(text, "<|")
            tag = text.rfind("<|")
            if not final and tag >= 0 and "|>" not in text[tag:]:
                keep = len(text) - tag  # a marker not finished yet
            self._body(out, text[:len(text) - keep], ended=final and self._call_complete(text))
            self.buffer = text[len(text) - keep:]

    def _body(self, out: list, piece: str, ended: bool) -> None:
        """A piece of a message's body; a tool call's block is closed when its message ends."""
        out.append(piece)
        if self.call is not None:
            self.call += piece
            if ended:
                out.append("}</tool_call>")
                self.call = None

    def _call_complete(self, tail: str) -> bool:
        """Whether a reply that ends here ends a tool call's arguments: the stop token (``<|call|>``,
        which the reply's text leaves out) came after whole JSON; a reply cut inside them
        (max_tokens) leaves the block open, as kvgen.server.tools reads a cut call."""
        if self.call is None:
            return False
        try:
            json.loads(self.call + tail)
        except ValueError:
            return False
        return True


def split_reasoning(text: str, mode: ReasoningMode) -> tuple[Optional[str], str]:
    """(reasoning, content) of a whole reply (reasoning None when there is none)."""
    reasoning, content = ReasoningSplitter(mode).feed(text, final=True)
    return (reasoning if reasoning or _has_reasoning(text, mode) else None), content


def _has_reasoning(text: str, mode: ReasoningMode) -> bool:
    if mode.parser == "harmony":
        return "<|channel|>analysis" in text
    return mode.opened or text.lstrip().startswith(THINK_START)


def with_reasoning(grammar: str, mode: ReasoningMode) -> str:
    """The Lark grammar ``grammar`` (its ``start`` rule the answer) with ``mode``'s reasoning
    allowed (or, opened by the prompt, required) before it; ``grammar`` as it is for harmony."""
    prefix = reasoning_prefix(mode)
    if prefix is None:
        return grammar
    rule, lines = prefix
    directives = [line for line in grammar.splitlines() if line.startswith("%llguidance")]
    rules = [re.sub(r"^start(\s*):", r"answer\1:", line) for line in grammar.splitlines()
             if not line.startswith("%llguidance")]
    return "\n".join([*directives, f"start: {rule} answer", lines, *rules])


def json_with_reasoning(schema_text: str, mode: ReasoningMode) -> Optional[str]:
    """The Lark grammar of a JSON-schema constraint (its objects closed, compact as the JSON
    constraint is) after ``mode``'s reasoning; None for harmony (the schema stays as it is)."""
    import json

    from kvgen.generation.constraints import closed_objects

    if reasoning_prefix(mode) is None:
        return None
    schema = closed_objects(json.loads(schema_text))
    if isinstance(schema, dict) and "x-guidance" not in schema:
        schema = {**schema, "x-guidance": {"whitespace_flexible": False}}
    return with_reasoning(f"start: %json {json.dumps(schema)}", mode)
