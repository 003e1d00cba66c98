"""The OpenAI request bodies that ``kvgen serve`` accepts, checked field by field.

A body is a JSON object, validated by the pydantic models of kvgen.server.openapi (the
schema served at /openapi.json): every field is known, typed and in range, or the request is
refused with an ``ApiError`` that names the field (status 400, OpenAI's error shape). What
depends on the model and the server (vocabulary, context, limits) and the rules across
fields are checked here. The result says what to generate: the prompts (token ids) and one
GenerationConfig.

Structured output: OpenAI's ``response_format`` (``json_object``: any JSON object;
``json_schema``: ``{"json_schema": {"name", "schema", "strict"}}``) and kvgen's own fields
``regex``, ``grammar`` (Lark or GBNF) and ``choices`` (a list of strings), also accepted
under vLLM's names ``guided_json``, ``guided_regex``, ``guided_grammar`` and
``guided_choice``, become the config's constraint (at most one). The constraint itself is
compiled when the engine takes the request (an invalid one is a 400 there).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional, TypeVar

from pydantic import BaseModel, ValidationError

from kvgen._core import GenerationConfig
from kvgen.server.errors import ApiError, invalid
from kvgen.server.openapi import (
    IGNORED_FIELDS,  # noqa: F401 - a public name of this module
    MAX_JSON_DEPTH,
    MAX_STOP_STRINGS,  # noqa: F401 - a public name of this module
    MAX_TOP_LOGPROBS,  # noqa: F401 - a public name of this module
    ChatRequest,
    CompletionRequest,
    NamedToolChoice,
)
from kvgen.server.reasoning import THINK_END, THINK_START, ReasoningMode, json_with_reasoning, mode_for, with_reasoning

__all__ = ["ApiError", "GenerationRequest", "RequestLimits", "chat_request", "completion_request"]

#: OpenAI's default for /v1/completions (chat has none: up to the context).
COMPLETIONS_DEFAULT_MAX_TOKENS = 16

_fail = invalid


@dataclass
class RequestLimits:
    """How much one request may ask for (``kvgen serve`` sizes them to the machine)."""

    max_prompts: int = 64             # prompts in one /v1/completions request
    max_rows: int = 128               # prompts x n: the sequences one request generates
    max_tokens: int = 1 << 20         # prompt tokens plus max_tokens x n, over all prompts
    max_n: Optional[int] = None       # n under sampling: the rows one prompt decodes together (the engine's slots)

    def check_prompts(self, count: int, n: int) -> None:
        """ApiError when ``count`` prompts of ``n`` choices each are more than allowed."""
        if count > self.max_prompts:
            raise _fail("prompt", f"at most {self.max_prompts} prompts per request, got {count}")
        if count * n > self.max_rows:
            raise _fail("n", f"at most {self.max_rows} sequences per request (prompts x n), got {count} x {n}")

    def check_n(self, n: int, sampling: bool) -> None:
        """ApiError when ``n`` sampled choices of one prompt are more rows than the engine decodes
        together (greedy choices repeat one row: any ``n`` within max_rows)."""
        if sampling and self.max_n is not None and n > self.max_n:
            raise _fail("n", f"at most {self.max_n} sampled choices per prompt (the rows decoded together, kvgen "
                             f"serve --max-batch), got {n}")

    def check_tokens(self, prompts: list[list[int]], n: int, max_tokens: int) -> None:
        """ApiError when the prompts and the tokens they may generate are more than allowed."""
        total = sum(len(p) for p in prompts) + len(prompts) * n * max_tokens
        if total > self.max_tokens:
            raise ApiError(f"the request may take {total} tokens (prompts plus max_tokens x n), more than the "
                           f"{self.max_tokens} this server allows per request", param="max_tokens",
                           code="request_too_large")


@dataclass
class GenerationRequest:
    """What a checked body asks for."""

    prompts: list[list[int]]      # token ids, one list per prompt
    config: GenerationConfig      # without the model's EOS ids (the server adds them)
    n: int = 1
    stream: bool = False
    include_usage: bool = False   # stream_options.include_usage
    logprobs: bool = False        # the chosen token's log-probability with every token
    top_logprobs: int = 0         # alternatives per token (config.top_logprobs)
    echo: bool = False
    stops: list[str] = field(default_factory=list)
    generate: bool = True         # False: max_tokens 0 (echo: scoring the prompt only)
    prompt_logprobs: Optional[int] = None  # vLLM's: the prompt tokens' log-probs, with this many alternatives
    tools: list[dict] = field(default_factory=list)  # chat's tools whose calls are parsed out of the reply
    parallel_tool_calls: bool = True  # False: one call at most
    legacy_functions: bool = False  # the request gave ``functions``: the reply has ``function_call``
    reasoning: Optional[ReasoningMode] = None  # how the reply's reasoning is told from its answer


# ---- validation: the pydantic models, their errors as ApiErrors naming the field ----

# pydantic's tags for the member of a union that an error comes from (not field names)
_TYPE_TAGS = {"str", "int", "float", "bool", "dict", "list", "none", "any"}
# pydantic's errors for a value of another JSON type, and that type as the message says it
_MISMATCH = {"string_type": "a string", "int_type": "an integer", "float_type": "a number",
             "bool_type": "a boolean", "list_type": "a list", "dict_type": "an object",
             "model_type": "an object", "model_attributes_type": "an object"}


def _field_path(loc: tuple) -> str:
    """The dotted name of an error's location ("response_format.json_schema.schema",
    "messages[0].content"), without pydantic's union-member tags."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part.isdigit() or not part.replace("_", "a").isalnum() or part in _TYPE_TAGS or part[:1].isupper():
            if part.isdigit() or part.lstrip("-").isdigit():  # a dict key (logit_bias' token ids)
                path += f"[{part}]"
            continue  # a union member tag ("list[constrained-str]", "function-after[...]", a model name)
        else:
            path += f".{part}" if path else part
    return path


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 100 else text[:100] + " ..."


def _api_error(e: ValidationError) -> ApiError:
    """The ApiError for pydantic's first problem: unknown fields (all of one object listed),
    a missing field, or a value that does not fit, with what was expected and what came."""
    errors = e.errors(include_url=False)
    extra = [err for err in errors if err["type"] == "extra_forbidden"]
    if extra:
        where = extra[0]["loc"][:-1]
        names = sorted(str(err["loc"][-1]) for err in extra if err["loc"][:-1] == where)
        prefix, path = _field_path(where), _field_path(extra[0]["loc"][:-1] + (names[0],))
        listing = f"unknown field(s): {', '.join(names)}"
        return ApiError(f"'{prefix}': {listing}" if prefix else listing, param=path, code="unknown_field")
    # the errors of the first field that has one (several for a union: one per member)
    name = _field_path(errors[0]["loc"])
    same = [err for err in errors if _field_path(err["loc"]) == name
            or _field_path(err["loc"]).startswith((name + ".", name + "["))]
    informative = [err for err in same if err["type"] not in _MISMATCH]
    if not informative:  # no member took the value's type: say which types it may have
        kinds = dict.fromkeys(_MISMATCH[err["type"]] for err in same)
        return _fail(name, f"expected {' or '.join(kinds)}, got {_shown(same[0]['input'])}")
    err = max(informative, key=lambda e: len(e["loc"]))  # the deepest: in the member that took the type
    path = _field_path(err["loc"])
    if err["type"] == "missing":
        return ApiError(f"'{path}' is required", param=path, code="missing_required_parameter")
    message = err["msg"].removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    return _fail(path, message if err["type"] == "value_error" else f"{message}, got {_shown(err['input'])}")


def _items(name: str, value: Any):
    """The (path, item) pairs directly inside a JSON container."""
    if isinstance(value, dict):
        return ((f"{name}.{key}" if name else str(key), item) for key, item in value.items())
    return ((f"{name}[{i}]", item) for i, item in enumerate(value))


def check_depth(value: Any, name: str = "", limit: int = MAX_JSON_DEPTH) -> None:
    """ApiError naming the first value nested deeper than ``limit`` arrays and objects (read
    without recursion, so any depth is refused cleanly)."""
    stack = [(name, value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        path, item, depth = stack.pop()
        if depth > limit:
            where = path or "body"
            raise ApiError(f"'{where}': JSON nested more than {limit} levels deep", param=path or None,
                           code="nested_too_deeply")
        stack.extend((p, v, depth + 1) for p, v in _items(path, item) if isinstance(v, (dict, list)))


def check_text(body: dict) -> None:
    """ApiError naming the field when a string of the body (a key or a value) is not valid
    Unicode (a lone surrogate such as "\\ud800", which JSON allows and no tokenizer takes)."""
    stack: list[tuple[str, Any]] = list(body.items())
    while stack:
        name, value = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise _fail(name, "the text holds a lone surrogate (an unpaired \\ud800-\\udfff escape); "
                                  "text must be valid Unicode") from None
        elif isinstance(value, dict):
            for key, item in value.items():
                stack.append((name, key))
                stack.append((name, item))
        elif isinstance(value, list):
            stack.extend((name, item) for item in value)


Request = TypeVar("Request", bound=BaseModel)


def parse_body(body: Any, model: type[Request]) -> Request:
    """``body`` as the request ``model`` (null fields left out, as if not given): ApiError
    naming the field for a body that is not a JSON object, nests too deeply, holds a lone
    surrogate, or that the model refuses."""
    if not isinstance(body, dict):
        raise ApiError("the request body must be a JSON object")
    check_depth(body)
    check_text(body)
    known = {f.alias or name for name, f in model.model_fields.items()}
    try:  # null is a field left out (a required one stays missing); unknown fields are refused
        return model.model_validate({k: v for k, v in body.items() if v is not None or k not in known})
    except ValidationError as e:
        raise _api_error(e) from None


def _max_tokens(req: Any, prompts: list[list[int]], context: int, default: Optional[int]) -> int:
    """The new tokens asked for (default: what the context leaves); ApiError when a prompt does not fit."""
    longest = max(len(p) for p in prompts)
    if default is None:
        default = max(context - longest, 1)
    asked = getattr(req, "max_completion_tokens", None)
    max_tokens = asked if asked is not None else req.max_tokens if req.max_tokens is not None else default
    if longest + max_tokens > context:
        raise ApiError(f"This model's maximum context length is {context} tokens. However, you requested "
                       f"{longest + max_tokens} tokens ({longest} in the prompt, {max_tokens} in the completion). "
                       "Please reduce the prompt or the completion length.",
                       param="max_tokens" if longest < context else "prompt", code="context_length_exceeded")
    return max_tokens


def _request(req: Any, prompts: list[list[int]], model, default_max: Optional[int], logprobs: bool,
             top_logprobs: int, limits: RequestLimits, grammar: Optional[str] = None) -> GenerationRequest:
    """The GenerationRequest of a checked body ``req`` for ``prompts`` (``grammar``: the tool
    calls' grammar, in place of any constraint of the body)."""
    n = req.n or 1
    max_tokens = _max_tokens(req, prompts, model.context_length, default_max)
    limits.check_tokens(prompts, n, max_tokens)
    config = req.to_generation_config(max(max_tokens, 1), model.vocab_size)
    limits.check_n(n, config.do_sample)
    if grammar is not None:
        config.grammar = grammar
    config.top_logprobs = top_logprobs
    if req.prompt_logprobs is not None and req.stream:
        raise ApiError("'prompt_logprobs' is not supported with 'stream'", param="prompt_logprobs",
                       code="unsupported_value")
    return GenerationRequest(prompts=prompts, config=config, n=n, stream=bool(req.stream),
                             include_usage=req.include_usage(), logprobs=logprobs, top_logprobs=top_logprobs,
                             echo=bool(getattr(req, "echo", False)), stops=req.stop_strings(),
                             generate=max_tokens > 0, prompt_logprobs=req.prompt_logprobs)


def _prompt_ids(prompt: Any, model, limits: RequestLimits, n: int) -> list[list[int]]:
    """/v1/completions' prompt: a string, a list of strings, a token-id list, or a list of those."""
    def ids(p: Any) -> list[int]:
        if isinstance(p, str):
            return model.encode(p)
        if isinstance(p, list) and p and all(isinstance(t, int) and not isinstance(t, bool) for t in p):
            if not all(0 <= t < model.vocab_size for t in p):
                raise _fail("prompt", f"token ids must be in [0, {model.vocab_size})")
            return list(p)
        raise _fail("prompt", "expected a string, a list of strings, or token-id lists")

    if isinstance(prompt, list) and prompt and all(isinstance(p, (str, list)) for p in prompt):
        limits.check_prompts(len(prompt), n)  # before any is encoded
        out = [ids(p) for p in prompt]
    else:
        out = [ids(prompt)]
    if any(not p for p in out):
        raise _fail("prompt", "a prompt must encode to at least one token")
    return out


def completion_request(body: Any, model, limits: Optional[RequestLimits] = None) -> GenerationRequest:
    """The checked body of POST /v1/completions (within ``limits``, default RequestLimits())."""
    limits = limits or RequestLimits()
    req = parse_body(body, CompletionRequest)
    n = req.n or 1
    if req.suffix:
        raise ApiError("'suffix' is not supported", param="suffix", code="unsupported_value")
    if req.best_of is not None and req.best_of != n:
        raise ApiError("'best_of' must equal 'n' (kvgen returns every sequence it generates)", param="best_of")
    if req.echo and req.stream:
        raise ApiError("'echo' is not supported with 'stream'", param="echo", code="unsupported_value")
    if req.max_tokens == 0 and not req.echo:
        raise _fail("max_tokens", "0 needs 'echo': true (scoring the prompt); otherwise at least 1")
    limits.check_prompts(1, n)
    return _request(req, _prompt_ids(req.prompt, model, limits, n), model, COMPLETIONS_DEFAULT_MAX_TOKENS,
                    req.logprobs is not None, req.logprobs or 0, limits)


def _tools(value: list) -> list[dict]:
    """OpenAI's (validated) ``tools``, as the chat template reads them; their names must differ."""
    out, names = [], set()
    for i, tool in enumerate(value):
        function = tool["function"]
        if function["name"] in names:
            raise _fail(f"tools[{i}].function.name", f"{function['name']!r} is given twice")
        names.add(function["name"])
        checked = {key: function[key] for key in ("name", "description", "parameters") if function.get(key) is not None}
        out.append({"type": "function", "function": checked})
    return out


def _tool_calls(where: str, value: Any) -> list[dict]:
    """An assistant message's ``tool_calls``, their arguments as objects (transformers' convention)."""
    if not isinstance(value, list):
        raise _fail(where, "expected a list of tool calls")
    out = []
    for k, call in enumerate(value):
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict) \
                or not isinstance(call["function"].get("name"), str):
            raise _fail(f"{where}[{k}]", "expected {\"id\", \"type\": \"function\", \"function\": {\"name\", "
                                         "\"arguments\"}}")
        arguments = call["function"].get("arguments", "{}")
        if isinstance(arguments, str):
            name = f"{where}[{k}].function.arguments"
            try:
                arguments = json.loads(arguments)
            except RecursionError:  # deeper than the parser's stack
                raise ApiError(f"'{name}': JSON nested more than {MAX_JSON_DEPTH} levels deep", param=name,
                               code="nested_too_deeply") from None
            except ValueError:
                raise _fail(name, "not valid JSON") from None
            check_depth(arguments, name, MAX_JSON_DEPTH - 4)  # inside messages[i].tool_calls[k].function
        entry = {"type": "function", "function": {"name": call["function"]["name"], "arguments": arguments}}
        if isinstance(call.get("id"), str):
            entry["id"] = call["id"]
        out.append(entry)
    return out


def _messages(value: list) -> list[dict]:
    """The (validated) messages as the chat template reads them: text parts joined, an
    assistant's tool calls with their arguments parsed."""
    out = []
    for i, m in enumerate(value):
        content = m.get("content")
        if isinstance(content, list):  # OpenAI's content parts: text only (the model says so)
            content = "".join(p["text"] for p in content)
        # the legacy forms: an assistant's function_call is one tool call, a "function" message its result
        message: dict[str, Any] = {"role": "tool" if m["role"] == "function" else m["role"]}
        if m.get("function_call") is not None and m.get("tool_calls") is None and m["role"] == "assistant":
            m = {**m, "tool_calls": [{"id": f"call_{i}", "type": "function", "function": m["function_call"]}]}
        if m.get("tool_calls") is not None and m["role"] == "assistant":
            message["tool_calls"] = _tool_calls(f"messages[{i}].tool_calls", m["tool_calls"])
            if content is None:
                content = ""
        if not isinstance(content, str):
            raise _fail(f"messages[{i}].content", "expected a string")
        message["content"] = content
        for key in ("tool_call_id", "name", "reasoning_content"):
            if isinstance(m.get(key), str):
                message[key] = m[key]
        out.append(message)
    return out


def _legacy_functions(req: Any) -> tuple[list[dict], Any]:
    """The ``tools`` and ``tool_choice`` of a request's legacy ``functions`` and ``function_call``."""
    if req.functions is None:
        if req.function_call is not None:
            raise ApiError("'function_call' needs 'functions'", param="function_call")
        return [t.model_dump(exclude_none=True, by_alias=True) for t in req.tools or []], req.tool_choice
    if req.tools is not None or req.tool_choice is not None:
        raise ApiError("give 'tools' and 'tool_choice', or the legacy 'functions' and 'function_call', not both",
                       param="functions")
    tools = [{"type": "function", "function": f.model_dump(exclude_none=True, by_alias=True)} for f in req.functions]
    choice = req.function_call
    if choice is not None and not isinstance(choice, str):
        choice = NamedToolChoice(type="function", function=choice)
    return tools, choice


def _template_kwargs(req: Any) -> dict:
    """``chat_template_kwargs``: template variables, none of those the server sets itself; a
    request's ``reasoning_effort`` is the template's ``reasoning_effort``."""
    kwargs = dict(req.chat_template_kwargs or {})
    taken = sorted(set(kwargs) & RESERVED_TEMPLATE_VARIABLES)
    if taken:
        raise _fail(f"chat_template_kwargs.{taken[0]}", "is set by the server (from the request's own fields)")
    effort = getattr(req, "reasoning_effort", None)
    if effort is not None:
        if kwargs.get("reasoning_effort", effort) != effort:
            raise _fail("reasoning_effort", "differs from chat_template_kwargs.reasoning_effort")
        kwargs["reasoning_effort"] = effort
    return kwargs


#: Template variables that the server sets: chat_template_kwargs may not give them.
RESERVED_TEMPLATE_VARIABLES = frozenset({"messages", "tools", "documents", "add_generation_prompt", "bos_token",
                                         "eos_token", "tool_choice", "continue_final_message"})


def _supports_tools(template: Optional[str]) -> bool:
    return bool(template) and "tools" in template


def _tools_prompt(tools: list[dict]) -> str:
    """The Hermes system text that offers ``tools`` to a model whose template does not render them."""
    listing = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    return ("You may call one or more functions to assist with the user query. The functions are listed in "
            f"<tools></tools> XML tags:\n<tools>\n{listing}\n</tools>\nFor each function call, return a JSON object "
            "with the function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
            '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>')


def _without_tool_syntax(messages: list[dict], tools: list[dict]) -> list[dict]:
    """``messages`` for a template that renders no tools: the tools offered in the system
    message, an assistant's calls as Hermes ``<tool_call>`` blocks in its content."""
    out = []
    for m in messages:
        m = dict(m)
        calls = m.pop("tool_calls", None)
        if calls:
            blocks = "\n".join("<tool_call>\n" + json.dumps({"name": c["function"]["name"],
                                                             "arguments": c["function"]["arguments"]}) +
                               "\n</tool_call>" for c in calls)
            m["content"] = f"{m['content']}\n{blocks}".strip()
        m.pop("tool_call_id", None)
        m.pop("name", None)
        out.append(m)
    if tools:
        if out[0]["role"] == "system":
            out[0] = {**out[0], "content": f"{out[0]['content']}\n\n{_tools_prompt(tools)}"}
        else:
            out.insert(0, {"role": "system", "content": _tools_prompt(tools)})
    return out


def _added_token(model, text: str) -> Optional[int]:
    """The id of the tokenizer's added token spelled ``text``, if it has one."""
    ids = model.encode(text, add_special_tokens=False)
    if len(ids) == 1 and ids[0] in model.tokenizer.get_added_tokens_decoder():
        return ids[0]
    return None


def need_chat_template(model, name: str) -> None:
    """ApiError naming the served model (never its file) when it has no chat template."""
    if model.chat_template is None:
        raise ApiError(f"the model '{name}' has no chat template: use /v1/completions, or give the server (or the "
                       "batch job) one with --chat-template FILE", param="messages", code="no_chat_template")


def template_error(e: ValueError, model, name: str) -> str:
    """The message of an error in rendering or encoding a chat, the model's file named by the
    served name (a client never sees the server's paths)."""
    text = str(e)
    path = getattr(model, "path", None)
    if path is not None:
        text = text.replace(str(path), f"the model '{name}'")
    return text


def chat_request(body: Any, model, limits: Optional[RequestLimits] = None, model_name: str = "kvgen",
                 reasoning_parser: Optional[str] = None) -> GenerationRequest:
    """The checked body of POST /v1/chat/completions; the prompt is the model's chat template
    applied to the messages (``model_name``: the served name, the one errors give).
    ``reasoning_parser`` (kvgen.server.reasoning): the reply's reasoning is told apart, and a
    constraint (tool calls, a JSON schema) applies after it."""
    limits = limits or RequestLimits()
    req = parse_body(body, ChatRequest)
    need_chat_template(model, model_name)
    if req.max_tokens == 0:
        raise _fail("max_tokens", "0 is out of range [1, inf]")
    messages = _messages([m.model_dump(exclude_none=True) for m in req.messages])
    given_tools, given_choice = _legacy_functions(req)
    tools = _tools(given_tools)
    choice = given_choice if given_choice is not None else "auto" if tools else "none"
    if choice != "none" and not tools:
        raise ApiError("'tool_choice' needs 'tools'", param="tool_choice")
    wanted = None
    if not isinstance(choice, str):
        wanted = choice.function.name
        if wanted not in {t["function"]["name"] for t in tools}:
            legacy = req.functions is not None
            raise _fail("function_call" if legacy else "tool_choice",
                        f"{wanted!r} is not one of the {'functions' if legacy else 'tools'}")
    offered = tools if choice != "none" else []
    extra = _template_kwargs(req)
    if _supports_tools(model.chat_template):
        if offered:
            extra["tools"] = offered
    else:
        messages = _without_tool_syntax(messages, offered)
    try:  # special-token text in a content is plain text: a user cannot forge a system turn
        ids = model.encode_chat(messages, add_generation_prompt=True, **extra)
    except ValueError as e:
        raise _fail("messages", template_error(e, model, model_name)) from None
    # reasoning: read apart from the answer, and not constrained (the tool calls' or the JSON's
    # grammar starts after it); the prompt's last tokens say whether the template opened it
    mode = None
    if reasoning_parser is not None and ids:
        mode = mode_for(reasoning_parser, model.decode(ids[-8:], skip_special_tokens=False),
                        (_added_token(model, THINK_START), _added_token(model, THINK_END)), calls=bool(offered))
    harmony = mode is not None and mode.parser == "harmony"  # GPT-OSS writes its calls in its own format
    grammar = None
    legacy = req.functions is not None  # one function_call per reply
    parallel = not legacy and (req.parallel_tool_calls if req.parallel_tool_calls is not None else True)
    if choice == "required" or wanted is not None:
        if req.constraint() is not None:
            raise ApiError("a constraint ('response_format', 'regex', ...) cannot be combined with tool_choice "
                           f"{choice if isinstance(choice, str) else choice.model_dump()!r}", param="tool_choice")
        from kvgen.server.tools import HARMONY_MARKERS, harmony_tool_grammar, tool_grammar

        chosen = tools if choice == "required" else [t for t in tools if t["function"]["name"] == wanted]
        grammar = (harmony_tool_grammar(chosen, {m: _added_token(model, m) for m in HARMONY_MARKERS}) if harmony
                   else tool_grammar(chosen, parallel=parallel))
    elif choice == "auto" and req.constraint() is None and not harmony:
        # text, or text then calls that follow the schemas (a harmony reply's calls are parsed, not constrained)
        from kvgen.server.tools import tool_grammar

        grammar = tool_grammar(tools, parallel=parallel, free_text=True)
    top = req.top_logprobs or 0
    if top and not req.logprobs:
        raise ApiError("'top_logprobs' needs 'logprobs': true", param="top_logprobs")
    limits.check_prompts(1, req.n or 1)
    if mode is not None and grammar is not None:
        grammar = with_reasoning(grammar, mode)
    out = _request(req, [ids], model, None, bool(req.logprobs), top, limits, grammar=grammar)
    if mode is not None and out.config.json_schema is not None:
        wrapped = json_with_reasoning(out.config.json_schema, mode)
        if wrapped is not None:
            out.config.json_schema, out.config.grammar = None, wrapped
    out.tools, out.parallel_tool_calls, out.legacy_functions = offered, parallel, legacy
    out.reasoning = mode
    return out
