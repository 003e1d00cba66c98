"""The Jinja2 environment that chat templates render in: transformers' environment, inside limits
that every construct of the template language meets, and with the text that comes from the
caller's data tracked through the rendering.

Follows ``transformers/utils/chat_template_utils.py`` (the same sandbox, ``trim_blocks``,
``lstrip_blocks``, ``loopcontrols``, ``{% generation %}``, ``tojson``, globals and variables), with:

- Limits: a deadline and a size budget checked at attribute and item access, calls, every binary
  operator, ``~`` concatenation, every filter (with the size of its result estimated from its
  arguments *before* it runs: ``center(10**9)`` is refused, not built), every ``for`` item,
  namespace stores and the output. Nothing is evaluated while compiling: the optimizer is off and
  the output has a finalizer, so Jinja folds no constant at compile time. This module runs in a
  worker process (kvgen.loaders.chat_template_worker) whose address space and wall-clock time are
  bounded too, for whatever these checks do not foresee.
- User text: every string of the messages, tools, documents and extra variables is a
  ``UserText`` (a ``str`` with the character spans that came from the caller). Concatenation
  (``+``, ``~``, ``join``, the buffers of macros and blocks) keeps the spans exactly; any other
  operation that derives a string from user text marks the whole result as user text. The
  rendering returns the text and its user spans, so that the caller can encode text from the
  template as its special tokens and never the user's (kvgen.Model.encode_chat).

This module imports nothing from kvgen: the worker process loads it by its path.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import time
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, Callable, Optional

import jinja2
import jinja2.ext
import jinja2.filters
import jinja2.nodes
import jinja2.runtime
import jinja2.utils
import jinja2.visitor
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup

#: A template renders within this many seconds (ChatTemplateLimitError); the worker process is
#: killed shortly after it, whatever it is doing.
RENDER_SECONDS = 2.0
#: A rendering (and any string or list it builds) holds at most this many characters or items
#: beyond four times its input's.
RENDER_CHARS = 4 << 20
#: The longest template source accepted.
TEMPLATE_CHARS = 1 << 20
#: The largest integer a template may build, in bits.
INT_BITS = 1 << 16
#: Roles every template accepts; a template adds the ones it compares a message's role with.
STANDARD_ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})

_ROLE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")


class ChatTemplateLimitError(ValueError):
    """A chat template that exceeded the rendering limits (time, memory, output size, recursion)."""


# ------------------------------------------------------------------------------------ limits

class _Budget:
    """The limits of one rendering: a deadline and a size budget."""

    def __init__(self, input_chars: int):
        self.deadline = time.monotonic() + RENDER_SECONDS
        self.chars = RENDER_CHARS + 4 * input_chars

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise ChatTemplateLimitError(f"chat template: rendering took longer than {RENDER_SECONDS:g} s")

    def length(self, items: int, what: str = "a value") -> None:
        if items > self.chars:
            raise ChatTemplateLimitError(f"chat template: {what} of {items} items or characters, beyond the "
                                         f"limit of {self.chars}")

    def size(self, value: Any) -> Any:
        if isinstance(value, (str, list, tuple, dict)):
            self.length(len(value))
        elif isinstance(value, int) and not isinstance(value, bool):
            self.bits(value.bit_length())
        return value

    @staticmethod
    def bits(bits: int) -> None:
        if bits > INT_BITS:
            raise ChatTemplateLimitError(f"chat template: an integer of {bits} bits, beyond the limit of {INT_BITS}")


_budget: Optional[_Budget] = None  # the rendering in progress (the worker renders one at a time)


def _current() -> _Budget:
    return _budget if _budget is not None else _Budget(0)


def _text_len(value: Any) -> int:
    return len(value) if isinstance(value, str) else 0


def _int_arg(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_BRACE_NUMBERS = re.compile(r"\d+")


def _percent_growth(fmt: str, args: Any) -> int:
    """An upper bound on the characters ``fmt % args`` adds through widths and precisions."""
    total = 0
    star = False
    for width, precision in _PERCENT_SPEC.findall(fmt):
        for n in (width, precision):
            star |= n == "*"
            total += int(n) if n.isdigit() else 0
    if star:
        values = args if isinstance(args, (tuple, list)) else (args,)
        total += sum(abs(v) for v in values if isinstance(v, int) and not isinstance(v, bool))
    return total


def _brace_growth(fmt: str, args: tuple, kwargs: dict) -> int:
    """An upper bound on the characters ``fmt.format(...)`` adds through widths and precisions."""
    total = 0
    for field in re.findall(r"\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}", fmt):
        if ":" in field:
            total += sum(int(n) for n in _BRACE_NUMBERS.findall(field.split(":", 1)[1]))
        if field.count("{") > 1:  # a nested width: any integer argument may be it
            values = list(args) + list(kwargs.values())
            total += sum(abs(v) for v in values if isinstance(v, int) and not isinstance(v, bool))
    return total


def _replace_growth(s: Any, old: Any, new: Any, count: Any = -1) -> int:
    if not (isinstance(s, str) and isinstance(old, str) and isinstance(new, str)):
        return 0
    hits = s.count(old) if old else len(s) + 1
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(s) + hits * max(0, len(new) - len(old))


def _longest_run(s: str) -> int:
    """The longest run of non-space or of space characters (a chunk of textwrap's)."""
    return max((len(m) for m in re.findall(r"\S+|\s+", s)), default=0)


def _wordwrap_check(s: Any, width: Any = 79, break_long_words: Any = True, wrapstring: Any = None, *_: Any,
                    **__: Any) -> int:
    if not isinstance(s, str):
        return 0
    w = max(_int_arg(width, 79), 1)
    run = _longest_run(s)
    if break_long_words and run * (run // w) > 50_000_000:  # textwrap cuts a long chunk in O(chunk^2 / width)
        raise ChatTemplateLimitError(f"chat template: wordwrap of a {run}-character word at width {w}, beyond "
                                     "the limit of its work")
    return len(s) + (len(s) // w + s.count("\n") + 1) * max(len(wrapstring) if isinstance(wrapstring, str) else 1, 1)


def _json_shape(value: Any, depth: int = 0) -> tuple[int, int, int]:
    """(nodes, deepest nesting, characters of its strings) of a JSON-like value."""
    if isinstance(value, Mapping):
        items = [(k, v) for k, v in value.items()]
        shapes = [_json_shape(v, depth + 1) for _, v in items]
        return (1 + sum(s[0] for s in shapes), max([depth + 1] + [s[1] for s in shapes]),
                sum(len(str(k)) for k, _ in items) + sum(s[2] for s in shapes))
    if isinstance(value, (list, tuple)):
        shapes = [_json_shape(v, depth + 1) for v in value]
        return 1 + sum(s[0] for s in shapes), max([depth + 1] + [s[1] for s in shapes]), sum(s[2] for s in shapes)
    return 1, depth, len(value) if isinstance(value, str) else 24


def _tojson_size(x: Any, ensure_ascii: Any = False, indent: Any = None, separators: Any = None, *_: Any,
                 **__: Any) -> int:
    nodes, depth, chars = _json_shape(x)
    step = len(indent) if isinstance(indent, str) else max(_int_arg(indent), 0)
    seps = sum(len(s) for s in separators if isinstance(s, str)) if isinstance(separators, (list, tuple)) else 2
    return 6 * chars + nodes * (depth * step + seps + 8)


def _join_items(value: Any, d: Any = "", *_: Any, **__: Any) -> int:
    return 0  # sized while it is built (_checked_join)


# The size (characters or items) of a filter's result, bounded from its arguments before it runs:
# a filter whose result can outgrow its input by an argument is here; the others are bounded by
# the size of their input, and every result is measured after.
_FILTER_SIZE: dict[str, Callable[..., int]] = {
    "center": lambda v, width=80, *a, **k: max(_text_len(v), _int_arg(width)),
    "indent": lambda s, width=4, *a, **k: _text_len(s) + (s.count("\n") + 1 if isinstance(s, str) else 1) * (
        len(width) if isinstance(width, str) else abs(_int_arg(width))),
    "wordwrap": _wordwrap_check,
    "truncate": lambda s, length=255, killwords=False, end="...", *a, **k: _text_len(s) + _text_len(end),
    "format": lambda v, *a, **k: _text_len(v) + (_percent_growth(v, a) if isinstance(v, str) else 0) + sum(
        _text_len(x) for x in a) + sum(_text_len(x) for x in k.values()),
    "replace": _replace_growth,
    "batch": lambda v, linecount=1, *a, **k: abs(_int_arg(linecount)),
    "slice": lambda v, slices=1, *a, **k: abs(_int_arg(slices)),
    "urlize": lambda v, trim=None, nofollow=False, target=None, rel=None, *a, **k: 3 * _text_len(v) + (
        len(v.split()) if isinstance(v, str) else 0) * (_text_len(target) + _text_len(rel) + 64),
    "tojson": _tojson_size,
    "join": _join_items,
}


def _sum_check(iterable: Any, attribute: Any = None, start: Any = 0) -> None:
    """``sum`` over lists or tuples copies the total at every item: bound that work."""
    if isinstance(start, (list, tuple)) and isinstance(iterable, (list, tuple)):
        total = len(start) + sum(len(x) for x in iterable if isinstance(x, (list, tuple, str)))
        _current().length(total, "a sum")
        _current().length(total * len(iterable) // 64, "the work of a sum")


# Methods of str that can build a string larger than their input, and the size they can reach.
_STR_METHOD_SIZE: dict[str, Callable[..., int]] = {
    "center": lambda s, width=0, *a: max(len(s), _int_arg(width)),
    "ljust": lambda s, width=0, *a: max(len(s), _int_arg(width)),
    "rjust": lambda s, width=0, *a: max(len(s), _int_arg(width)),
    "zfill": lambda s, width=0, *a: max(len(s), _int_arg(width)),
    "expandtabs": lambda s, tabsize=8, *a, **k: len(s) + (s.count("\t") + 1) * abs(
        _int_arg(k.get("tabsize", tabsize), 8)),
    "replace": lambda s, old="", new="", count=-1, *a: _replace_growth(s, old, new, count),
    "format": lambda s, *a, **k: len(s) + _brace_growth(s, a, k) + sum(_text_len(x) for x in a) + sum(
        _text_len(x) for x in k.values()),
    "format_map": lambda s, m=None, *a: len(s) + _brace_growth(s, (), dict(m) if isinstance(m, Mapping) else {}) +
    (sum(_text_len(x) for x in m.values()) if isinstance(m, Mapping) else 0),
    "translate": lambda s, table=None, *a: len(s) * max(
        [len(str(v)) for v in table.values()] + [1] if isinstance(table, Mapping) else [1]),
}


# ------------------------------------------------------------------------------------ user text

class UserText(str):
    """A string with the spans of it (character ranges) that came from the caller's data.
    Without given spans the whole string is the caller's."""

    def __str__(self) -> str:  # str(x) keeps the spans (Jinja's output calls str on every value)
        return self

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        return self.__dict__.get("_spans", ((0, len(self)),))

    @classmethod
    def with_spans(cls, text: str, spans: list[tuple[int, int]]) -> str:
        """``text`` with ``spans``, or a plain str when no span holds a character."""
        spans = [(a, b) for a, b in spans if b > a]
        if not spans:
            return str.__str__(text) if isinstance(text, str) else text
        out = cls(text)
        out.__dict__["_spans"] = tuple(spans)
        return out


class UserMarkup(Markup):
    """Markup made from the caller's text (``|escape``): wholly the caller's."""

    spans = UserText.spans

    def __str__(self) -> str:
        return self


def _spans_of(value: Any) -> list[tuple[int, int]]:
    """The user spans of the text ``str(value)``."""
    if isinstance(value, (UserText, UserMarkup)):
        return list(value.spans)
    if has_user_text(value):
        return [(0, len(str(value)))]
    return []


def has_user_text(value: Any, _seen: Optional[set] = None) -> bool:
    """Whether ``value`` holds any of the caller's text (in a string, a container or a namespace)."""
    if isinstance(value, str):
        return isinstance(value, (UserText, UserMarkup))
    if isinstance(value, (int, float, type(None))):
        return False
    if isinstance(value, jinja2.utils.Namespace):
        value = value._Namespace__attrs  # type: ignore[attr-defined]
    if not isinstance(value, (list, tuple, set, frozenset, dict, type({}.items()), type({}.keys()),
                              type({}.values()))):
        return False  # a function, macro, loop, undefined, iterator... (their outputs are tracked themselves)
    _seen = set() if _seen is None else _seen
    if id(value) in _seen:
        return False
    _seen.add(id(value))
    items = list(value.items()) if isinstance(value, dict) else list(value)
    return any(has_user_text(x, _seen) for x in items)


def mark_user(value: Any) -> Any:
    """``value`` with every string in it made wholly the caller's text."""
    if isinstance(value, (UserText, UserMarkup)):
        return value
    if isinstance(value, Markup):
        return UserMarkup(value)
    if isinstance(value, str):
        return UserText(value)
    if isinstance(value, tuple) and hasattr(type(value), "_make"):  # groupby's named tuples
        return type(value)._make(mark_user(x) for x in value)
    if isinstance(value, (list, tuple)):
        return type(value)(mark_user(x) for x in value)
    if isinstance(value, dict):
        return {mark_user(k): mark_user(v) for k, v in value.items()}
    if isinstance(value, Iterator) and not isinstance(value, jinja2.runtime.LoopContext):
        return (mark_user(x) for x in value)
    return value


def join_tracked(pieces: Any, sep: Any = "") -> str:
    """``sep.join(str(p) for p in pieces)`` with the user spans of every piece and separator,
    inside the size budget (Jinja's ``~``, ``|join``, ``str.join`` and output buffers)."""
    budget = _current()
    texts, spans, at = [], [], 0
    sep_text = str(sep)
    sep_spans = _spans_of(sep)
    for i, piece in enumerate(pieces):
        if i and sep_text:
            spans += [(a + at, b + at) for a, b in sep_spans]
            texts.append(sep_text)
            at += len(sep_text)
        text = piece if isinstance(piece, str) else str(piece)
        spans += [(a + at, b + at) for a, b in _spans_of(piece)]
        texts.append(text)
        at += len(text)
        budget.length(at, "a joined string")
        if i % 256 == 255:
            budget.tick()
    return UserText.with_spans(str.join("", texts), spans)


# ------------------------------------------------------------------------------------ environment

def _tracking(function: Callable, name: str) -> Callable:
    """A filter (or test) with its result's size bounded before it runs, the deadline checked,
    and its result marked as user text when an argument holds user text."""
    estimate = _FILTER_SIZE.get(name)
    pass_arg = getattr(function, "jinja_pass_arg", None)

    @functools.wraps(function)
    def filtered(*args: Any, **kwargs: Any) -> Any:
        budget = _current()
        budget.tick()
        values = args[1:] if pass_arg is not None else args
        if name == "join" and values:  # sized and tracked while it is built
            return _filter_join(args, values, kwargs, function)
        if name == "sum" and values:
            _sum_check(*values, **kwargs)
        if estimate is not None and values:
            try:
                size = estimate(*values, **kwargs)
            except (TypeError, AttributeError):
                size = 0  # a call the filter itself will refuse
            budget.length(size, f"the result of |{name}")
        result = function(*args, **kwargs)
        budget.size(result)
        if isinstance(result, (int, float, bool, type(None))):
            return result
        if has_user_text(list(values)) or has_user_text(kwargs):
            return mark_user(result)
        return result

    return filtered


def _filter_join(args: tuple, values: tuple, kwargs: dict, function: Callable) -> Any:
    value, rest = values[0], values[1:]
    sep = rest[0] if rest else kwargs.get("d", "")
    attribute = rest[1] if len(rest) > 1 else kwargs.get("attribute")
    items = list(value) if not isinstance(value, str) else list(value)
    if isinstance(value, UserText):
        items = [UserText(c) for c in value]
    if attribute is None and isinstance(sep, str) and not (args and getattr(args[0], "autoescape", False)):
        return join_tracked(items, sep)
    result = function(*args[:len(args) - len(values)], items, *rest, **kwargs)
    _current().size(result)
    return mark_user(result) if has_user_text(items) or has_user_text(sep) else result


def _iterate(value: Any) -> Iterator:
    """A ``for`` loop's items: the deadline checked per item, a user string's characters the user's."""
    budget = _current()
    user = isinstance(value, UserText)
    for item in value:
        budget.tick()
        yield UserText(item) if user else item


def _slice(value: Any, start: Any, stop: Any, step: Any) -> Any:
    """``value[start:stop:step]``, a user string's slice the user's."""
    _current().tick()
    result = value[start:stop:step]
    return mark_user(result) if isinstance(value, UserText) else result


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
        budget = _current()  # a namespace is where a template can grow a value across loop iterations
        budget.tick()
        budget.size(value)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check_name(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"chat templates cannot store underscore-prefixed attributes on a namespace, got {name!r}")


def _range(*args: int) -> Any:
    """The sandbox's ``range`` (at most 100,000 items)."""
    from jinja2.sandbox import safe_range

    return safe_range(*args)


@jinja2.pass_environment
def _finalize(environment: Any, value: Any) -> Any:
    """What ``{{ value }}`` prints: a value holding user text prints as user text. Being a
    function of the environment, it also keeps Jinja from folding output at compile time."""
    if isinstance(value, str) or not has_user_text(value):
        return value
    return UserText(str(value))


class _LimitedEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox with the rendering budget checked at every attribute or item access, call and
    binary operator, and user text tracked through them."""

    intercepted_binops = frozenset(["+", "-", "*", "/", "//", "%", "**"])

    def concat(self, pieces: Any) -> str:  # type: ignore[override]  # the buffers of macros and blocks
        return join_tracked(pieces)

    def getattr(self, obj: Any, attribute: str) -> Any:
        _current().tick()
        result = super().getattr(obj, attribute)
        return mark_user(result) if isinstance(obj, UserText) and isinstance(result, str) else result

    def getitem(self, obj: Any, argument: Any) -> Any:
        _current().tick()
        result = super().getitem(obj, argument)
        return mark_user(result) if isinstance(obj, UserText) and isinstance(result, str) else result

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - Jinja's names
        budget = _current()
        budget.tick()
        method = getattr(__obj, "__wrapped__", __obj)  # the sandbox wraps str.format
        owner = getattr(method, "__self__", None)
        name = getattr(method, "__name__", "")
        if isinstance(owner, str) and name == "join" and len(args) == 1 and not kwargs:
            items = list(args[0])
            if all(isinstance(x, str) for x in items):
                return join_tracked(items, owner)
        if isinstance(owner, str) and name in _STR_METHOD_SIZE:
            try:
                size = _STR_METHOD_SIZE[name](owner, *args, **kwargs)
            except (TypeError, AttributeError, ValueError):
                size = 0
            budget.length(size, f"the result of str.{name}")
        result = super().call(__context, __obj, *args, **kwargs)
        budget.size(result)
        if isinstance(result, (int, float, bool, type(None))) or isinstance(
                __obj, (jinja2.runtime.Macro, jinja2.runtime.LoopContext)) or isinstance(owner, jinja2.ext.Extension):
            return result  # a macro's or loop's output is tracked by its own buffer
        if has_user_text(owner) or has_user_text(list(args)) or has_user_text(kwargs):
            return mark_user(result)
        return result

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        budget = _current()
        budget.tick()
        _check_binop(budget, operator, left, right)
        result = super().call_binop(context, operator, left, right)
        budget.size(result)
        if not isinstance(result, str) or not (has_user_text(left) or has_user_text(right)):
            return result
        if operator == "+" and isinstance(left, str) and isinstance(right, str) and \
                result == str.__add__(str.__str__(left), str.__str__(right)):
            return join_tracked([left, right])
        return mark_user(result)


def _check_binop(budget: _Budget, operator: str, left: Any, right: Any) -> None:
    """Refuses an operation whose result would be beyond the limits, before it is computed."""
    sized = (str, list, tuple)
    is_int = lambda v: isinstance(v, int) and not isinstance(v, bool)  # noqa: E731
    if operator == "*":
        if isinstance(left, sized) and is_int(right):
            budget.length(len(left) * max(right, 0))
        elif isinstance(right, sized) and is_int(left):
            budget.length(len(right) * max(left, 0))
        elif is_int(left) and is_int(right):
            budget.bits(left.bit_length() + right.bit_length())
    elif operator == "**" and isinstance(right, (int, float)):
        if abs(right) > 4096:
            raise ChatTemplateLimitError("chat template: an exponent beyond 4096")
        if is_int(left) and is_int(right) and right > 0:
            budget.bits(left.bit_length() * right)
    elif operator == "%" and isinstance(left, str):
        budget.length(len(left) + _percent_growth(left, right) + (
            sum(_text_len(x) for x in right) if isinstance(right, (tuple, list)) else len(str(right))
            if isinstance(right, (str, int, float)) else 0), "the result of %")
    elif operator == "+" and isinstance(left, sized) and isinstance(right, sized):
        budget.length(len(left) + len(right))


class _Instrument(jinja2.visitor.NodeTransformer):
    """Rewrites a parsed template so that ``~`` is a checked, tracking join, every ``for`` loop
    (and unpacking assignment) goes through a checked, tracking iterator, and slicing (which
    Jinja compiles to plain Python, past the sandbox's getitem) keeps user text the user's."""

    def visit_Concat(self, node: jinja2.nodes.Concat) -> jinja2.nodes.Node:
        self.generic_visit(node)
        return jinja2.nodes.Filter(jinja2.nodes.List(node.nodes, lineno=node.lineno), "kvgen_concat", [], [], None,
                                   None, lineno=node.lineno)

    def visit_For(self, node: jinja2.nodes.For) -> jinja2.nodes.Node:
        self.generic_visit(node)
        node.iter = jinja2.nodes.Filter(node.iter, "kvgen_iterate", [], [], None, None, lineno=node.lineno)
        return node

    def visit_Getitem(self, node: jinja2.nodes.Getitem) -> jinja2.nodes.Node:
        self.generic_visit(node)
        if not isinstance(node.arg, jinja2.nodes.Slice):
            return node  # the sandbox's getitem sees it
        bounds = [part if part is not None else jinja2.nodes.Const(None) for part in
                  (node.arg.start, node.arg.stop, node.arg.step)]
        return jinja2.nodes.Filter(node.node, "kvgen_slice", bounds, [], None, None, lineno=node.lineno)

    def visit_Assign(self, node: jinja2.nodes.Assign) -> jinja2.nodes.Node:
        self.generic_visit(node)
        if isinstance(node.target, jinja2.nodes.Tuple):
            node.node = jinja2.nodes.Filter(node.node, "kvgen_iterate", [], [], None, None, lineno=node.lineno)
        return node


def _environment() -> _LimitedEnvironment:
    env = _LimitedEnvironment(trim_blocks=True, lstrip_blocks=True, optimized=False, finalize=_finalize,
                              extensions=[_GenerationTag, jinja2.ext.loopcontrols])
    env.globals["range"] = _range
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _TemplateDict()
    env.globals["namespace"] = _TemplateNamespace
    env.filters = {name: _tracking(f, name) for name, f in env.filters.items()}
    env.filters["kvgen_concat"] = lambda values: join_tracked(values)
    env.filters["kvgen_iterate"] = _iterate
    env.filters["kvgen_slice"] = _slice
    return env


_ENV = _environment()


@dataclasses.dataclass
class _Compiled:
    template: jinja2.Template
    roles: frozenset  # the roles the template accepts


def _named_roles(ast: jinja2.nodes.Template) -> set[str]:
    """The role names a template compares a message's role with (``message.role == 'ipython'``,
    ``message['role'] in ['tool', 'function']``, ``role == 'model'``)."""
    def is_role(node: Any) -> bool:
        return ((isinstance(node, jinja2.nodes.Getattr) and node.attr == "role") or
                (isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Const) and
                 node.arg.value == "role") or (isinstance(node, jinja2.nodes.Name) and "role" in node.name))

    def names(node: Any) -> list:
        if isinstance(node, jinja2.nodes.Const):
            return [node.value]
        if isinstance(node, (jinja2.nodes.List, jinja2.nodes.Tuple)):
            return [item.value for item in node.items if isinstance(item, jinja2.nodes.Const)]
        return []

    roles = set()
    for compare in ast.find_all(jinja2.nodes.Compare):
        sides = [compare.expr] + [op.expr for op in compare.ops]
        if any(is_role(side) for side in sides):
            for side in sides:
                roles.update(n for n in names(side) if isinstance(n, str) and _ROLE_NAME.fullmatch(n))
    return roles


@functools.lru_cache(maxsize=32)
def compile_template(source: str) -> _Compiled:
    """The compiled, instrumented template and the roles it accepts (ValueError when it does not
    compile). Nothing of the template runs while compiling."""
    if len(source) > TEMPLATE_CHARS:
        raise ChatTemplateLimitError(f"chat template: {len(source)} characters, beyond the limit of {TEMPLATE_CHARS}")
    try:
        ast = _ENV.parse(source)
        roles = STANDARD_ROLES | _named_roles(ast)
        ast = _Instrument().visit(ast)
        template = _ENV.template_class.from_code(_ENV, _ENV.compile(ast), _ENV.make_globals(None), None)
    except jinja2.TemplateError as error:
        raise ValueError(f"chat template: {error}") from error
    except RecursionError:
        raise ChatTemplateLimitError("chat template: nested too deeply to compile") from None
    return _Compiled(template, frozenset(roles))


def render(source: str, messages: list, variables: dict, user_variables: dict) -> tuple[str, list]:
    """Renders ``source`` over plain (already checked) ``messages``: the text, and the spans of it
    that came from the messages or ``user_variables``. ``variables`` (the special tokens, the
    generation-prompt flag) are the template's own. Raises ChatTemplateLimitError past a limit and
    ValueError for a template that fails or a role it does not accept."""
    global _budget
    budget = _Budget(sum(len(m.get("content")) for m in messages if isinstance(m.get("content"), str)))
    outer, _budget = _budget, budget
    try:
        compiled = compile_template(source)
        for index, message in enumerate(messages):
            role = message.get("role")
            if role not in compiled.roles:
                raise ValueError(f"messages[{index}]['role']: {str(role)[:40]!r} is not a role this chat template "
                                 f"accepts ({', '.join(sorted(compiled.roles))})")
        data = {**variables, **mark_user(user_variables), "messages": mark_user(messages)}
        pieces, size = [], 0
        for piece in compiled.template.generate(**data):
            size += len(piece)
            if size > budget.chars:
                raise ChatTemplateLimitError(f"chat template: the rendered text is longer than {budget.chars} "
                                             "characters")
            budget.tick()
            pieces.append(piece)
        text = join_tracked(pieces)
        return str.__str__(text), [list(s) for s in _merged(_spans_of(text))]
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
    except ValueError as error:
        if str(error).startswith(("chat template", "messages[")):
            raise
        raise ValueError(f"chat template: {type(error).__name__}: {error}") from error
    except (TypeError, KeyError, IndexError, AttributeError, ZeroDivisionError) as error:
        raise ValueError(f"chat template: {type(error).__name__}: {error}") from error
    finally:
        _budget = outer


def _merged(spans: list) -> list:
    out: list = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
