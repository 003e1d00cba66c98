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
import functools
import json
import threading
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Optional

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = ["render_chat", "ChatTemplateLimitError", "RENDER_SECONDS", "RENDER_CHARS"]

#: A template renders within this many seconds, or ChatTemplateLimitError.
RENDER_SECONDS = 2.0
#: A rendering (and any string it builds) holds at most this many characters beyond its input's.
RENDER_CHARS = 4 << 20


class ChatTemplateLimitError(ValueError):
    """A chat template that exceeded the rendering limits (time, output size, recursion)."""


class _Budget:
    """The limits of one rendering: a deadline and a size budget, checked by the sandbox's hooks
    (attribute and item access, calls, ``range``, the ``+ * **`` operators) and the output."""

    def __init__(self, input_chars: int):
        self.deadline = time.monotonic() + RENDER_SECONDS
        self.chars = RENDER_CHARS + 4 * input_chars

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise ChatTemplateLimitError(f"chat template: rendering took longer than {RENDER_SECONDS:g} s")

    def length(self, items: int) -> None:
        if items > self.chars:
            raise ChatTemplateLimitError(f"chat template: a value of {items} items or characters, beyond the "
                                         f"limit of {self.chars}")

    def size(self, value: Any) -> Any:
        if isinstance(value, (str, list, tuple, dict)):
            self.length(len(value))
        return value


_BUDGET = threading.local()


def _budget() -> Optional[_Budget]:
    return getattr(_BUDGET, "current", None)

# Names a message's reasoning is passed under; the first is the one chat templates read.
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


class _GenerationTag(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: renders its body (transformers uses the tag to
    mark assistant tokens; the text is the same)."""

    tags = {"generation"}

    def parse(self, parser: Any) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller: Any) -> str:
        return caller()


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


class _TemplateDict:
    """``dict(...)`` in a template, without exposing the ``dict`` type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
        return dict.fromkeys(*args, **kwargs)


class _TemplateNamespace(jinja2.utils.Namespace):
    """``namespace(...)`` that refuses underscore-prefixed attributes."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 - Jinja's own signature trick
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _TemplateNamespace._check_name(name)
        budget = _budget()
        if budget is not None:  # a namespace is where a template can grow a value across loop iterations
            budget.tick()
            budget.size(value)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check_name(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"chat templates cannot store underscore-prefixed attributes on a namespace, got {name!r}")


class _LimitedEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox with the rendering budget checked at every attribute or item access, call
    and arithmetic operator (a loop that does nothing else runs over ``range``, which checks it
    per item)."""

    intercepted_binops = frozenset(["+", "*", "**"])

    def getattr(self, obj: Any, attribute: str) -> Any:
        budget = _budget()
        if budget is not None:
            budget.tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        budget = _budget()
        if budget is not None:
            budget.tick()
        return super().getitem(obj, argument)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - Jinja's names
        budget = _budget()
        if budget is not None:
            budget.tick()
        result = super().call(__context, __obj, *args, **kwargs)
        return budget.size(result) if budget is not None else result

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        budget = _budget()
        if budget is not None:
            budget.tick()
            if operator == "*" and isinstance(left, (str, list, tuple)) and isinstance(right, int):
                budget.length(len(left) * max(right, 0))
            if operator == "*" and isinstance(right, (str, list, tuple)) and isinstance(left, int):
                budget.length(len(right) * max(left, 0))
            if operator == "**" and isinstance(right, (int, float)) and abs(right) > 4096:
                raise ChatTemplateLimitError("chat template: an exponent beyond 4096")
        result = super().call_binop(context, operator, left, right)
        return budget.size(result) if budget is not None else result


def _range(*args: int) -> Any:
    """The sandbox's ``range`` (at most 100,000 items), checking the rendering's deadline per item."""
    from jinja2.sandbox import safe_range

    items = safe_range(*args)
    budget = _budget()
    if budget is None:
        return items

    def ticking():
        for i in items:
            budget.tick()
            yield i
    return ticking()


@functools.lru_cache(maxsize=32)
def _compile(template: str) -> jinja2.Template:
    env = _LimitedEnvironment(trim_blocks=True, lstrip_blocks=True,
                              extensions=[_GenerationTag, jinja2.ext.loopcontrols])
    env.globals["range"] = _range
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _TemplateDict()
    env.globals["namespace"] = _TemplateNamespace
    return env.from_string(template)


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
    keys pass through; keys whose value is ``None`` are dropped, as transformers does).
    ``bos_token``/``eos_token`` are visible to the template when not ``None`` (transformers passes
    the tokenizer's special tokens); ``extra`` keyword arguments become template variables too
    (``tools``, ``documents``, ``unk_token``, ``enable_thinking``, ...).

    Raises ``TypeError``/``ValueError`` naming the bad message, and ``ValueError("chat template:
    ...")`` for a template that does not compile or fails while rendering (``raise_exception``,
    an undefined attribute, a sandbox violation, ...).
    """
    if not isinstance(template, str):
        raise TypeError(f"template must be a string, got {type(template).__name__}")
    _check_messages(messages)
    chat = [_plain({k: v for k, v in message.items() if v is not None}) for message in messages]
    for index, message in enumerate(chat):  # older names for a message's reasoning, as transformers aliases them
        reasoning = next((message[k] for k in _REASONING_FIELDS if message.get(k) is not None), None)
        if reasoning is not None:
            chat[index] = {"thinking": reasoning, **message, "reasoning_content": reasoning}

    variables = {name: token for name, token in (("bos_token", bos_token), ("eos_token", eos_token))
                 if token is not None}
    variables.update(extra)
    tools = _plain(variables.pop("tools", None))
    documents = _plain(variables.pop("documents", None))
    variables = _plain(variables)

    try:
        compiled = _compile(template)
    except jinja2.TemplateError as error:
        raise ValueError(f"chat template: {error}") from error
    budget = _Budget(sum(len(m.get("content") or "") for m in chat if isinstance(m.get("content"), str)))
    outer, _BUDGET.current = _budget(), budget
    try:
        out, size = [], 0
        for piece in compiled.generate(messages=chat, tools=tools, documents=documents,
                                       add_generation_prompt=add_generation_prompt, **variables):
            size += len(piece)
            if size > budget.chars:
                raise ChatTemplateLimitError(f"chat template: the rendered text is longer than {budget.chars} "
                                             "characters")
            budget.tick()
            out.append(piece)
        return "".join(out)
    except ChatTemplateLimitError:
        raise
    except RecursionError:
        raise ChatTemplateLimitError("chat template: recursion too deep (a macro calling itself?)") from None
    except MemoryError:
        raise ChatTemplateLimitError("chat template: rendering ran out of memory") from None
    except OverflowError as error:
        raise ChatTemplateLimitError(f"chat template: {error}") from None
    except jinja2.TemplateError as error:
        raise ValueError(f"chat template: {error}") from error
    except (TypeError, KeyError, IndexError, AttributeError, ValueError, ZeroDivisionError) as error:
        raise ValueError(f"chat template: {type(error).__name__}: {error}") from error
    finally:
        _BUDGET.current = outer
