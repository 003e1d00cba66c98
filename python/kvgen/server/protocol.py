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
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from pydantic import BaseModel, ValidationError

from kvgen._core import GenerationConfig
from kvgen.server.openapi import (
    IGNORED_FIELDS,
    MAX_STOP_STRINGS,  # noqa: F401 - a public name of this module
    MAX_TOP_LOGPROBS,  # noqa: F401 - a public name of this module
    ChatRequest,
    CompletionRequest,
)

#: OpenAI's default for /v1/completions (chat has none: up to the context).
COMPLETIONS_DEFAULT_MAX_TOKENS = 16


class ApiError(Exception):
    """An error the server answers with OpenAI's JSON shape: {"error": {message, type, param, code}}."""

    def __init__(self, message: str, *, param: Optional[str] = None, code: Optional[str] = None, status: int = 400,
                 kind: str = "invalid_request_error"):
        super().__init__(message)
        self.message, self.param, self.code, self.status, self.kind = message, param, code, status, kind

    def body(self) -> dict:
        """OpenAI's error JSON for this error."""
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


@dataclass
class RequestLimits:
    """How much one request may ask for (``kvgen serve`` sizes them to the machine)."""

    max_prompts: int = 64             # prompts in one /v1/completions request
    max_rows: int = 128               # prompts x n: the sequences one request generates
    max_tokens: int = 1 << 20         # prompt tokens plus max_tokens x n, over all prompts

    def check_prompts(self, count: int, n: int) -> None:
        """ApiError when ``count`` prompts of ``n`` choices each are more than allowed."""
        if count > self.max_prompts:
            raise _fail("prompt", f"at most {self.max_prompts} prompts per request, got {count}")
        if count * n > self.max_rows:
            raise _fail("n", f"at most {self.max_rows} sequences per request (prompts x n), got {count} x {n}")

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


# ---- validation: the pydantic models, their errors as ApiErrors naming the field ----

def _fail(name: str, message: str) -> ApiError:
    return ApiError(f"'{name}': {message}", param=name, code="invalid_value")


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


def _check_text(body: dict) -> None:
    """ApiError naming the field when a string of the body is not valid Unicode (a lone
    surrogate such as "\\ud800", which JSON allows and no tokenizer takes)."""
    stack = [(name, value) for name, value in body.items()]
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


# request field -> the GenerationConfig constraint field it sets
_CONSTRAINT_FIELDS = {"response_format": "json_schema", "guided_json": "json_schema", "regex": "regex",
                      "guided_regex": "regex", "grammar": "grammar", "guided_grammar": "grammar",
                      "choices": "choices", "guided_choice": "choices"}

_REALS = ("temperature", "top_p", "presence_penalty", "frequency_penalty", "min_p", "repetition_penalty")


def _validated(body: Any, model: type[BaseModel], vocab: int) -> dict:
    """The fields of ``body`` that are set (not null, not ignored), validated by ``model``, as
    the request's values: numbers as floats, ``stop`` as a list, ``stream_options`` as
    include_usage, a structured-output field as its JSON schema's text, ``logit_bias`` with
    token ids (in the vocabulary) as keys."""
    if not isinstance(body, dict):
        raise ApiError("the request body must be a JSON object")
    _check_text(body)
    known = {f.alias or name for name, f in model.model_fields.items()}
    try:  # null is a field left out (a required one stays missing); unknown fields are refused
        model.model_validate({k: v for k, v in body.items() if v is not None or k not in known})
    except ValidationError as e:
        raise _api_error(e) from None
    values = {name: value for name, value in body.items() if value is not None and name not in IGNORED_FIELDS}
    for name in _REALS:
        if name in values:
            values[name] = float(values[name])
    if "stop" in values:
        values["stop"] = [values["stop"]] if isinstance(values["stop"], str) else values["stop"]
    if "stream_options" in values:
        values["stream_options"] = bool(values["stream_options"].get("include_usage", False))
    if "response_format" in values:
        values["response_format"] = _response_format(values["response_format"])
    if "guided_json" in values:
        values["guided_json"] = json.dumps(values["guided_json"])
    if "logit_bias" in values:
        values["logit_bias"] = _logit_bias(values["logit_bias"], vocab)
    return values


def _logit_bias(value: dict, vocab: int) -> dict[int, float]:
    out = {}
    for key, bias in value.items():
        try:
            token = int(key)
        except ValueError:
            raise _fail("logit_bias", f"key {key!r} is not a token id") from None
        if not 0 <= token < vocab:
            raise _fail("logit_bias", f"token id {token} is outside the vocabulary [0, {vocab})")
        out[token] = float(bias)
    return out


def _response_format(value: dict) -> Optional[str]:
    """The JSON schema's text that OpenAI's (validated) response_format asks for; None for plain text."""
    if value["type"] == "text":
        return None
    if value["type"] == "json_object":  # llama.cpp's and vLLM's "schema" narrows it
        return json.dumps(value["schema"] if value.get("schema") is not None else {"type": "object"})
    return json.dumps(value["json_schema"]["schema"])


# GenerationConfig field -> the request field that sets it (for errors the config raises)
_CONFIG_TO_REQUEST = {"max_new_tokens": "max_tokens", "stop_strings": "stop", "num_return_sequences": "n",
                      "json_schema": "response_format"}


def _config(values: dict, max_tokens: int, n: int) -> GenerationConfig:
    """``_settings`` with GenerationConfig's own checks (e.g. a temperature that float32 rounds
    to 0) as an ApiError naming the request's field."""
    try:
        return _settings(values, max_tokens, n)
    except (ValueError, TypeError, OverflowError) as e:
        found = re.search(r"GenerationConfig\.(\w+)", str(e))
        name = _CONFIG_TO_REQUEST.get(found.group(1), found.group(1)) if found else None
        raise ApiError(str(e) if found else f"invalid settings: {e}", param=name, code="invalid_value") from None


def _settings(values: dict, max_tokens: int, n: int) -> GenerationConfig:
    """OpenAI's settings as a GenerationConfig: temperature 0 is greedy; no top-k unless asked."""
    temperature = values.get("temperature", 1.0)
    sampling = temperature > 0
    # the sampling fields only when sampling: greedy ignores them (and GenerationConfig says so)
    truncation = {"temperature": temperature, "top_p": values.get("top_p", 1.0), "top_k": values.get("top_k", 0),
                  **({"min_p": values["min_p"]} if "min_p" in values else {})} if sampling else {}
    config = GenerationConfig(
        max_new_tokens=max_tokens, do_sample=sampling, **truncation, seed=values.get("seed"),
        presence_penalty=values.get("presence_penalty", 0.0), frequency_penalty=values.get("frequency_penalty", 0.0),
        repetition_penalty=values.get("repetition_penalty", 1.0), logit_bias=values.get("logit_bias", {}),
        stop_strings=values.get("stop", []), num_return_sequences=n if sampling else 1,
        prompt_lookup_num_tokens=values.get("prompt_lookup_num_tokens"),
        max_matching_ngram_size=values.get("max_matching_ngram_size"))
    constraint = _constraint(values)
    if constraint is not None:
        setattr(config, *constraint)
    return config


def _constraint(values: dict) -> Optional[tuple[str, Any]]:
    """(config field, value) of the request's structured-output field; ApiError for two at once."""
    given = [name for name in _CONSTRAINT_FIELDS if values.get(name) is not None]
    if len(given) > 1:
        raise ApiError(f"at most one of {', '.join(repr(n) for n in _CONSTRAINT_FIELDS)} per request, got "
                       f"{', '.join(repr(n) for n in given)}", param=given[1], code="invalid_value")
    return (_CONSTRAINT_FIELDS[given[0]], values[given[0]]) if given else None


def _max_tokens(values: dict, prompts: list[list[int]], context: int, default: Optional[int]) -> int:
    """The new tokens asked for (default: what the context leaves); ApiError when a prompt does not fit."""
    longest = max(len(p) for p in prompts)
    if default is None:
        default = max(context - longest, 1)
    max_tokens = values.get("max_completion_tokens", values.get("max_tokens", default))
    if longest + max_tokens > context:
        raise ApiError(f"This model's maximum context length is {context} tokens. However, you requested "
                       f"{longest + max_tokens} tokens ({longest} in the prompt, {max_tokens} in the completion). "
                       "Please reduce the prompt or the completion length.",
                       param="max_tokens" if longest < context else "prompt", code="context_length_exceeded")
    return max_tokens


def _request(values: dict, prompts: list[list[int]], context: int, default_max: Optional[int],
             logprobs: bool, top_logprobs: int, limits: RequestLimits) -> GenerationRequest:
    n = values.get("n", 1)
    max_tokens = _max_tokens(values, prompts, context, default_max)
    limits.check_tokens(prompts, n, max_tokens)
    config = _config(values, max(max_tokens, 1), n)
    config.top_logprobs = top_logprobs
    if values.get("prompt_logprobs") is not None and values.get("stream"):
        raise ApiError("'prompt_logprobs' is not supported with 'stream'", param="prompt_logprobs",
                       code="unsupported_value")
    return GenerationRequest(prompts=prompts, config=config, n=n, stream=values.get("stream", False),
                             include_usage=values.get("stream_options", False), logprobs=logprobs,
                             top_logprobs=top_logprobs, echo=values.get("echo", False), stops=values.get("stop", []),
                             generate=max_tokens > 0, prompt_logprobs=values.get("prompt_logprobs"))


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
    values = _validated(body, CompletionRequest, model.vocab_size)
    if values.get("suffix"):
        raise ApiError("'suffix' is not supported", param="suffix", code="unsupported_value")
    if values.get("best_of", values.get("n", 1)) != values.get("n", 1):
        raise ApiError("'best_of' must equal 'n' (kvgen returns every sequence it generates)", param="best_of")
    if values.get("echo") and values.get("stream"):
        raise ApiError("'echo' is not supported with 'stream'", param="echo", code="unsupported_value")
    if values.get("max_tokens") == 0 and not values.get("echo"):
        raise _fail("max_tokens", "0 needs 'echo': true (scoring the prompt); otherwise at least 1")
    logprobs = values.get("logprobs")
    n = values.get("n", 1)
    limits.check_prompts(1, n)
    return _request(values, _prompt_ids(values["prompt"], model, limits, n), model.context_length,
                    COMPLETIONS_DEFAULT_MAX_TOKENS, logprobs is not None, logprobs or 0, limits)


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
            try:
                arguments = json.loads(arguments)
            except ValueError:
                raise _fail(f"{where}[{k}].function.arguments", "not valid JSON") from None
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
        message: dict[str, Any] = {"role": m["role"]}
        if m.get("tool_calls") is not None and m["role"] == "assistant":
            message["tool_calls"] = _tool_calls(f"messages[{i}].tool_calls", m["tool_calls"])
            if content is None:
                content = ""
        if not isinstance(content, str):
            raise _fail(f"messages[{i}].content", "expected a string")
        message["content"] = content
        for key in ("tool_call_id", "name"):
            if isinstance(m.get(key), str):
                message[key] = m[key]
        out.append(message)
    return out


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


def chat_request(body: Any, model, limits: Optional[RequestLimits] = None) -> GenerationRequest:
    """The checked body of POST /v1/chat/completions; the prompt is the model's chat template
    applied to the messages."""
    limits = limits or RequestLimits()
    values = _validated(body, ChatRequest, model.vocab_size)
    if values.get("max_tokens") == 0:
        raise _fail("max_tokens", "0 is out of range [1, inf]")
    messages = _messages(values["messages"])
    tools = _tools(values.get("tools", []))
    choice = values.get("tool_choice", "auto" if tools else "none")
    if choice != "none" and not tools:
        raise ApiError("'tool_choice' needs 'tools'", param="tool_choice")
    if isinstance(choice, dict):
        wanted = choice["function"]["name"]
        if wanted not in {t["function"]["name"] for t in tools}:
            raise _fail("tool_choice", f"{wanted!r} is not one of the tools")
    offered = tools if choice != "none" else []
    extra = {}
    if _supports_tools(model.chat_template):
        if offered:
            extra["tools"] = offered
    else:
        messages = _without_tool_syntax(messages, offered)
    try:  # special-token text in a content is plain text: a user cannot forge a system turn
        ids = model.encode_chat(messages, add_generation_prompt=True, **extra)
    except ValueError as e:
        raise _fail("messages", str(e)) from None
    if choice == "required" or isinstance(choice, dict):
        if _constraint(values) is not None:
            raise ApiError("a constraint ('response_format', 'regex', ...) cannot be combined with tool_choice "
                           f"{choice!r}", param="tool_choice")
        from kvgen.server.tools import tool_grammar

        chosen = tools if choice == "required" else [t for t in tools if t["function"]["name"] == wanted]
        values = {**values, "grammar": tool_grammar(chosen, parallel=values.get("parallel_tool_calls", True))}
    elif choice == "auto" and _constraint(values) is None:  # text, or text then calls that follow the schemas
        from kvgen.server.tools import tool_grammar

        values = {**values, "grammar": tool_grammar(tools, parallel=values.get("parallel_tool_calls", True),
                                                     free_text=True)}
    top = values.get("top_logprobs", 0)
    if top and not values.get("logprobs"):
        raise ApiError("'top_logprobs' needs 'logprobs': true", param="top_logprobs")
    limits.check_prompts(1, values.get("n", 1))
    prompts = [ids]
    req = _request(values, prompts, model.context_length, None, values.get("logprobs", False), top, limits)
    req.tools = offered
    return req
