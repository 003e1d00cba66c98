"""Rendering Hugging Face chat templates (Jinja2) the way ``transformers`` does.

``render_chat`` gives the same text as ``tokenizer.apply_chat_template(messages,
tokenize=False, ...)``: the same sandboxed Jinja2 environment (``trim_blocks``,
``lstrip_blocks``, the ``loopcontrols`` extension and the ``{% generation %}`` tag), the same
``tojson`` filter (no HTML escaping, ``ensure_ascii=False``), the same globals
(``raise_exception``, ``strftime_now``, ``dict``, ``namespace``) and the same variables
(``messages``, ``tools``, ``documents``, ``add_generation_prompt``, the special tokens and any
extra keyword arguments). Follows ``transformers/utils/chat_template_utils.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple, Optional

from kvgen.loaders.chat_template_sandbox import (
    RENDER_CHARS,
    RENDER_SECONDS,
    STANDARD_ROLES,
    TEMPLATE_CHARS,
    ChatTemplateLimitError,
)
from kvgen.loaders.chat_template_worker import KILL_MARGIN, WorkerError, pool

__all__ = ["render_chat", "render_chat_spans", "RenderedChat", "ChatTemplateLimitError", "RENDER_SECONDS",
           "RENDER_CHARS", "STANDARD_ROLES", "chat_template_option"]

# Names a message's reasoning is passed under; the first is the one chat templates read.
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


class RenderedChat(NamedTuple):
    """A rendered conversation: its text, and the character spans of it that came from the
    caller (the messages, tools, documents and extra variables) rather than from the template."""

    text: str
    user_spans: list[tuple[int, int]]


def _plain(value: Any) -> Any:
    """A copy of ``value`` made of plain JSON-like types (transformers' ``_plain_template_data``):
    the template never sees the caller's objects, and other objects become ``"<TypeName>"``."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if hasattr(value, "item") and type(value).__module__ == "numpy":  # numpy scalars
        return _plain(value.item())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return f"<{type(value).__name__}>"


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _check_messages(messages: Any) -> None:
    if isinstance(messages, str):
        raise TypeError(f"messages must be a list of {{'role', 'content'}} dicts, not a str: pass "
                        f"[{{'role': 'user', 'content': {_short(messages)!r}}}] (generate() takes plain text)")
    if not isinstance(messages, (list, tuple)):
        raise TypeError(f"messages must be a list of dicts, got {type(messages).__name__}")
    if not messages:
        raise ValueError("messages is empty: a chat template needs at least one message")
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TypeError(f"messages[{index}] must be a dict with 'role' and 'content', got {message!r}")
        for key in ("role", "content"):
            if key not in message:
                raise ValueError(f"messages[{index}] has no {key!r}: {message!r}")
            if not isinstance(message[key], str):
                raise TypeError(f"messages[{index}][{key!r}] must be a string, got {message[key]!r}")


def render_chat(template: str, messages: list[dict], *, add_generation_prompt: bool = True,
                bos_token: Optional[str] = None, eos_token: Optional[str] = None, **extra: Any) -> str:
    """Render the chat template ``template`` over ``messages``, as transformers'
    ``apply_chat_template(messages, tokenize=False, add_generation_prompt=...)`` does.

    ``messages`` is a non-empty list of dicts, each with a string ``role`` and ``content`` (other
    keys pass through; keys whose value is ``None`` are dropped, as transformers does). A role is
    one of ``STANDARD_ROLES`` (system, user, assistant, tool, developer) or one the template
    compares a message's role with (Gemma's ``model``, Llama 3's ``ipython``).
    ``bos_token``/``eos_token`` are visible to the template when not ``None`` (transformers passes
    the tokenizer's special tokens); ``extra`` keyword arguments become template variables too
    (``tools``, ``documents``, ``unk_token``, ``enable_thinking``, ...).

    The template is untrusted: it renders in a worker process, within ``RENDER_SECONDS``,
    ``RENDER_CHARS`` and a bounded address space (kvgen.loaders.chat_template_worker).

    Raises ``TypeError``/``ValueError`` naming the bad message or role, ``ChatTemplateLimitError``
    (a ValueError) for a template past a limit, and ``ValueError("chat template: ...")`` for a
    template that does not compile or fails while rendering (``raise_exception``, an undefined
    attribute, a sandbox violation, ...).
    """
    return render_chat_spans(template, messages, add_generation_prompt=add_generation_prompt, bos_token=bos_token,
                             eos_token=eos_token, **extra).text


def render_chat_spans(template: str, messages: list[dict], *, add_generation_prompt: bool = True,
                      bos_token: Optional[str] = None, eos_token: Optional[str] = None, **extra: Any) -> RenderedChat:
    """``render_chat``, with the spans of the text that came from the caller's data: text the
    template derives from a message (its content, name, role, reasoning, tool calls), from
    ``tools``, ``documents`` or ``extra`` is in a span; the template's own text (its literals,
    ``bos_token``, ``eos_token``) is not."""
    if not isinstance(template, str):
        raise TypeError(f"template must be a string, got {type(template).__name__}")
    _check_messages(messages)
    chat = [_plain({k: v for k, v in message.items() if v is not None}) for message in messages]
    for index, message in enumerate(chat):  # older names for a message's reasoning, as transformers aliases them
        reasoning = next((message[k] for k in _REASONING_FIELDS if message.get(k) is not None), None)
        if reasoning is not None:
            chat[index] = {"thinking": reasoning, **message, "reasoning_content": reasoning}

    variables = {name: token for name, token in (("bos_token", bos_token), ("eos_token", eos_token))
                 if token is not None and isinstance(token, str)}
    variables["add_generation_prompt"] = bool(add_generation_prompt)
    user_variables = _plain({"tools": None, "documents": None, **extra})
    request = dict(source=template, messages=chat, variables=variables, user_variables=user_variables)
    try:
        answer = pool().ask(request, RENDER_SECONDS + KILL_MARGIN)
    except WorkerError as error:
        raise ChatTemplateLimitError(f"chat template: {error}") from None
    if answer is None:
        raise ChatTemplateLimitError(f"chat template: rendering took longer than {RENDER_SECONDS:g} s or more memory "
                                     "than its limit, and was stopped")
    if "error" in answer:
        error_type = ChatTemplateLimitError if answer["error"] == "limit" else ValueError
        raise error_type(str(answer["message"]))
    text, spans = answer["text"], answer["spans"]
    if not isinstance(text, str) or not all(isinstance(a, int) and isinstance(b, int) and 0 <= a <= b <= len(text)
                                            for a, b in spans):
        raise ChatTemplateLimitError("chat template: the rendering process answered with a malformed result")
    return RenderedChat(text, [(a, b) for a, b in spans])


def chat_template_option(value: str, option: str = "--chat-template") -> str:
    """The chat template that ``--chat-template VALUE`` names: the text of the file VALUE, or
    VALUE itself when it is template text (it holds ``{{`` or ``{%``, as vLLM and llama.cpp
    tell them apart). ValueError naming ``option`` for a file that cannot be read, text that
    is neither, or a template longer than the sandbox accepts (``TEMPLATE_CHARS``); the
    template itself renders in the sandbox as any model's does."""
    if "{{" in value or "{%" in value:
        text = value
    else:
        path = Path(value)
        try:
            if path.stat().st_size > 4 * TEMPLATE_CHARS:
                raise ValueError(f"{option} {value}: the file is larger than a chat template may be "
                                 f"({TEMPLATE_CHARS} characters)")
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise ValueError(f"{option} {value}: {e.strerror or e} (give a template file, or the template's text)") \
                from None
        except UnicodeDecodeError as e:
            raise ValueError(f"{option} {value}: not UTF-8 text ({e})") from None
    if len(text) > TEMPLATE_CHARS:
        raise ValueError(f"{option}: the template holds {len(text)} characters, more than {TEMPLATE_CHARS}")
    return text
