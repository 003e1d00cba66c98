"""The OpenAI request bodies that ``kvgen serve`` accepts, checked field by field.

A body is a JSON object; every field is known, typed and in range, or the request is
refused with an ``ApiError`` that names the field (status 400, OpenAI's error shape). The
result says what to generate: the prompts (token ids) and one GenerationConfig.

Structured output: OpenAI's ``response_format`` (``json_object``: any JSON object;
``json_schema``: ``{"json_schema": {"name", "schema", "strict"}}``) and kvgen's own fields
``regex``, ``grammar`` (Lark or GBNF) and ``choices`` (a list of strings), also accepted
under vLLM's names ``guided_json``, ``guided_regex``, ``guided_grammar`` and
``guided_choice``, become the config's constraint (at most one). The constraint itself is
compiled when the engine takes the request (an invalid one is a 400 there).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from kvgen._core import GenerationConfig

#: OpenAI's default for /v1/completions (chat has none: up to the context).
COMPLETIONS_DEFAULT_MAX_TOKENS = 16
#: Stop strings per request at most (lm-eval's tasks pass several ``until`` strings).
MAX_STOP_STRINGS = 32

#: OpenAI's optional request fields that kvgen accepts and ignores (they steer OpenAI's own
#: service: storage, billing, routing, reasoning models), so that clients that send them work.
IGNORED_FIELDS = ("metadata", "store", "service_tier", "reasoning_effort",
                  "prompt_cache_key", "safety_identifier", "verbosity", "modalities", "prediction",
                  "audio", "web_search_options", "prompt_cache_retention")


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


# ---- field checkers: value -> checked value, or ApiError naming the field ----

def _fail(name: str, message: str) -> ApiError:
    return ApiError(f"'{name}': {message}", param=name, code="invalid_value")


def _boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _fail(name, f"expected a boolean, got {value!r}")
    return value


def _integer(lo: Optional[int] = None, hi: Optional[int] = None) -> Callable[[str, Any], int]:
    def check(name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail(name, f"expected an integer, got {value!r}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise _fail(name, f"{value} is out of range [{lo if lo is not None else '-inf'}, "
                              f"{hi if hi is not None else 'inf'}]")
        return value
    return check


def _real(lo: float, hi: float, *, open_low: bool = False) -> Callable[[str, Any], float]:
    def check(name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _fail(name, f"expected a number, got {value!r}")
        if value < lo or value > hi or (open_low and value == lo):
            raise _fail(name, f"{value} is out of range {'(' if open_low else '['}{lo}, {hi}]")
        return float(value)
    return check


def _string(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _fail(name, f"expected a string, got {value!r}")
    return value


def _stop(name: str, value: Any) -> list[str]:
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise _fail(name, "expected a non-empty string or a list of them")
    if len(stops) > MAX_STOP_STRINGS:
        raise _fail(name, f"at most {MAX_STOP_STRINGS} stop strings, got {len(stops)}")
    return stops


def _logit_bias(vocab: int) -> Callable[[str, Any], dict[int, float]]:
    def check(name: str, value: Any) -> dict[int, float]:
        if not isinstance(value, dict):
            raise _fail(name, "expected an object mapping token ids to biases")
        out = {}
        for key, bias in value.items():
            try:
                token = int(key)
            except ValueError:
                raise _fail(name, f"key {key!r} is not a token id") from None
            if not 0 <= token < vocab:
                raise _fail(name, f"token id {token} is outside the vocabulary [0, {vocab})")
            out[token] = _real(-100.0, 100.0)(f"{name}[{key}]", bias)
        return out
    return check


def _known_keys(name: str, value: dict, known: tuple[str, ...]) -> None:
    """ApiError naming the first key of ``value`` that is not one of ``known``."""
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ApiError(f"'{name}': unknown field(s): {', '.join(unknown)}", param=f"{name}.{unknown[0]}",
                       code="unknown_field")


def _stream_options(name: str, value: Any) -> bool:
    if not isinstance(value, dict):
        raise _fail(name, "expected {\"include_usage\": bool}")
    _known_keys(name, value, ("include_usage", "include_obfuscation"))
    if value.get("include_obfuscation") is not None:
        _boolean(f"{name}.include_obfuscation", value["include_obfuscation"])
    return _boolean(f"{name}.include_usage", value.get("include_usage", False))


def _schema(name: str, value: Any) -> str:
    """A JSON schema (an object, valid under the JSON Schema meta-schema) as the config's JSON text."""
    if not isinstance(value, dict):
        raise _fail(name, f"expected a JSON schema object, got {value!r}")
    try:
        import jsonschema
    except ImportError:  # llguidance still refuses what it cannot compile
        pass
    else:
        try:
            jsonschema.validators.validator_for(value, default=jsonschema.Draft202012Validator).check_schema(value)
        except jsonschema.SchemaError as e:
            raise _fail(name, f"not a valid JSON schema: {e.message}") from None
        except (RecursionError, ValueError, TypeError) as e:
            raise _fail(name, f"not a valid JSON schema: {type(e).__name__}") from None
    return json.dumps(value)


def _response_format(name: str, value: Any) -> Optional[str]:
    """The JSON schema that OpenAI's response_format asks for; None for plain text."""
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise _fail(name, "expected an object with a 'type'")
    kind = value["type"]
    if kind == "text":
        _known_keys(name, value, ("type",))
        return None
    if kind == "json_object":  # llama.cpp's and vLLM's "schema" narrows it
        _known_keys(name, value, ("type", "schema"))
        if value.get("schema") is not None:
            return _schema(f"{name}.schema", value["schema"])
        return json.dumps({"type": "object"})
    if kind != "json_schema":
        raise _fail(name, f"type {kind!r} is not one of 'text', 'json_object', 'json_schema'")
    _known_keys(name, value, ("type", "json_schema"))
    spec = value.get("json_schema")
    if not isinstance(spec, dict) or "schema" not in spec:
        raise _fail(f"{name}.json_schema", "expected {\"name\": ..., \"schema\": {...}, \"strict\": ...}")
    _known_keys(f"{name}.json_schema", spec, ("name", "schema", "strict", "description"))
    _string(f"{name}.json_schema.name", spec.get("name", ""))
    if spec.get("description") is not None:
        _string(f"{name}.json_schema.description", spec["description"])
    if spec.get("strict") is not None:
        _boolean(f"{name}.json_schema.strict", spec["strict"])
    return _schema(f"{name}.json_schema.schema", spec["schema"])


def _choices(name: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(s, str) and s for s in value):
        raise _fail(name, "expected a non-empty list of non-empty strings")
    return value


def _anything(name: str, value: Any) -> Any:
    return value


# Fields both endpoints share: name -> checker (the vocabulary-dependent ones are added per request).
_SAMPLING_FIELDS: dict[str, Callable[[str, Any], Any]] = {
    "model": _string,
    "max_tokens": _integer(0),  # 0: completions with echo only (scoring a prompt)
    "prompt_logprobs": _integer(0, 20),
    "temperature": _real(0.0, 2.0),
    "top_p": _real(0.0, 1.0, open_low=True),
    "n": _integer(1, 128),
    "stream": _boolean,
    "stream_options": _stream_options,
    "stop": _stop,
    "seed": _integer(0, 2**64 - 1),
    "presence_penalty": _real(-2.0, 2.0),
    "frequency_penalty": _real(-2.0, 2.0),
    "user": _string,
    # kvgen's own sampling settings, beyond OpenAI's
    "top_k": _integer(0, 2**31 - 1),
    "min_p": _real(0.0, 1.0),
    "repetition_penalty": _real(0.0, 10.0, open_low=True),
    # speculative decoding by prompt lookup (transformers' names; kvgen serve --speculative-ngram sets a default)
    "prompt_lookup_num_tokens": _integer(1, 64),
    "max_matching_ngram_size": _integer(1, 64),
    # structured output: OpenAI's response_format, kvgen's fields and vLLM's names for them
    "response_format": _response_format,
    "regex": _string, "guided_regex": _string,
    "grammar": _string, "guided_grammar": _string,
    "choices": _choices, "guided_choice": _choices,
    "guided_json": _schema,
    **{name: _anything for name in IGNORED_FIELDS},
}

# request field -> the GenerationConfig constraint field it sets
_CONSTRAINT_FIELDS = {"response_format": "json_schema", "guided_json": "json_schema", "regex": "regex",
                      "guided_regex": "regex", "grammar": "grammar", "guided_grammar": "grammar",
                      "choices": "choices", "guided_choice": "choices"}

#: The most top_logprobs alternatives per token (GenerationConfig's limit; OpenAI's completions allow 5).
MAX_TOP_LOGPROBS = 20

_COMPLETION_FIELDS = {**_SAMPLING_FIELDS, "prompt": _anything, "logprobs": _integer(0, MAX_TOP_LOGPROBS),
                      "echo": _boolean, "suffix": _anything, "best_of": _integer(1, 128)}
_CHAT_FIELDS = {**_SAMPLING_FIELDS, "messages": _anything, "logprobs": _boolean,
                "top_logprobs": _integer(0, MAX_TOP_LOGPROBS), "max_completion_tokens": _integer(1)}


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


def _checked_fields(body: Any, fields: dict, vocab: int, required: tuple[str, ...]) -> dict:
    if not isinstance(body, dict):
        raise ApiError("the request body must be a JSON object")
    _check_text(body)
    fields = {**fields, "logit_bias": _logit_bias(vocab)}
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise ApiError(f"unknown field(s): {', '.join(unknown)}", param=unknown[0], code="unknown_field")
    for name in required:
        if body.get(name) is None:
            raise ApiError(f"'{name}' is required", param=name, code="missing_required_parameter")
    return {name: fields[name](name, value) for name, value in body.items()
            if value is not None and name not in IGNORED_FIELDS}


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
    values = _checked_fields(body, _COMPLETION_FIELDS, model.vocab_size, ("prompt",))
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


_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _tools(name: str, value: Any) -> list[dict]:
    """OpenAI's ``tools``: function tools with unique names and JSON-schema parameters."""
    if not isinstance(value, list):
        raise _fail(name, "expected a list of {\"type\": \"function\", \"function\": {...}} objects")
    out, names = [], set()
    for i, tool in enumerate(value):
        where = f"{name}[{i}]"
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
            raise _fail(where, "expected {\"type\": \"function\", \"function\": {\"name\", \"parameters\", ...}}")
        _known_keys(where, tool, ("type", "function"))
        function = tool["function"]
        _known_keys(f"{where}.function", function, ("name", "description", "parameters", "strict"))
        fname = function.get("name")
        if not isinstance(fname, str) or not _TOOL_NAME.fullmatch(fname):
            raise _fail(f"{where}.function.name", "expected 1 to 64 letters, digits, '_' or '-'")
        if fname in names:
            raise _fail(f"{where}.function.name", f"{fname!r} is given twice")
        names.add(fname)
        if function.get("description") is not None:
            _string(f"{where}.function.description", function["description"])
        if function.get("strict") is not None:
            _boolean(f"{where}.function.strict", function["strict"])
        checked = {"name": fname}
        if function.get("description") is not None:
            checked["description"] = function["description"]
        if function.get("parameters") is not None:
            _schema(f"{where}.function.parameters", function["parameters"])
            checked["parameters"] = function["parameters"]
        out.append({"type": "function", "function": checked})
    return out


def _tool_choice(name: str, value: Any) -> Any:
    if value in ("none", "auto", "required"):
        return value
    if isinstance(value, dict) and value.get("type") == "function" and isinstance(value.get("function"), dict):
        _known_keys(name, value, ("type", "function"))
        _known_keys(f"{name}.function", value["function"], ("name",))
        return {"type": "function", "function": {"name": _string(f"{name}.function.name",
                                                                   value["function"].get("name"))}}
    raise _fail(name, "expected \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                      "\"function\": {\"name\": ...}}")


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


_CHAT_FIELDS.update(tools=_tools, tool_choice=_tool_choice, parallel_tool_calls=_boolean)


def _messages(value: Any) -> list[dict]:
    if not isinstance(value, list) or not value:
        raise _fail("messages", "expected a non-empty list of {\"role\", \"content\"} objects")
    out = []
    for i, m in enumerate(value):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise _fail(f"messages[{i}]", "expected an object with a 'role'")
        content = m.get("content")
        if isinstance(content, list):  # OpenAI's content parts: text only
            if not all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                       for p in content):
                raise _fail(f"messages[{i}].content", "only text content parts are supported")
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
    values = _checked_fields(body, _CHAT_FIELDS, model.vocab_size, ("messages",))
    if values.get("max_tokens") == 0:
        raise _fail("max_tokens", "0 is out of range [1, inf]")
    messages = _messages(values["messages"])
    tools, choice = values.get("tools", []), values.get("tool_choice", "auto" if values.get("tools") else "none")
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
    top = values.get("top_logprobs", 0)
    if top and not values.get("logprobs"):
        raise ApiError("'top_logprobs' needs 'logprobs': true", param="top_logprobs")
    limits.check_prompts(1, values.get("n", 1))
    prompts = [ids]
    req = _request(values, prompts, model.context_length, None, values.get("logprobs", False), top, limits)
    req.tools = offered
    return req
