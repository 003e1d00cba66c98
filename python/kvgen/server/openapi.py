"""The request bodies of ``kvgen serve`` as pydantic models: kvgen.server.protocol validates
every body with them (fields, JSON types, ranges, the JSON schemas a body carries), and they
are the OpenAPI schema the server serves at /openapi.json (clients and fuzzers such as
Schemathesis read it). One source: what the schema says is what the server checks.

Validation is strict (JSON types as they are: no "5" for 5, no true for 1, no NaN). What
depends on the model or the server's settings (the vocabulary for ``logit_bias``, the context
for ``max_tokens``, the request limits) and rules across fields are checked by the protocol.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    WithJsonSchema,
    create_model,
    model_validator,
)

from kvgen._core import GenerationConfig
from kvgen.server.errors import ApiError

#: Stop strings per request at most (lm-eval's tasks pass several ``until`` strings).
MAX_STOP_STRINGS = 32
#: The most top_logprobs alternatives per token (GenerationConfig's limit; OpenAI's completions allow 5).
MAX_TOP_LOGPROBS = 20
#: The deepest nesting of JSON arrays and objects a body may hold (tool-call arguments, JSON
#: schemas and ignored fields included): deeper values would exhaust the stacks of the JSON
#: encoder, the schema checks and the chat template.
MAX_JSON_DEPTH = 64
#: A token id as a JSON object key (``logit_bias``): canonical ASCII decimal, no sign, no padding.
TOKEN_ID_KEY = r"^(0|[1-9][0-9]{0,9})$"
#: OpenAI's optional request fields that kvgen accepts and ignores (they steer OpenAI's own
#: service: storage, billing, routing, reasoning models), so that clients that send them work.
IGNORED_FIELDS = ("metadata", "store", "service_tier", "reasoning_effort",
                  "prompt_cache_key", "safety_identifier", "verbosity", "modalities", "prediction",
                  "audio", "web_search_options", "prompt_cache_retention")


def _valid_schema(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` when it is a valid JSON schema (under its own meta-schema, default draft
    2020-12) and serializable; ValueError saying why not."""
    try:
        import jsonschema
    except ImportError:  # llguidance still refuses what it cannot compile
        pass
    else:
        try:
            jsonschema.validators.validator_for(value, default=jsonschema.Draft202012Validator).check_schema(value)
        except jsonschema.SchemaError as e:
            raise ValueError(f"not a valid JSON schema: {e.message}") from None
        except (RecursionError, ValueError, TypeError) as e:
            raise ValueError(f"not a valid JSON schema: {type(e).__name__}") from None
    try:
        json.dumps(value)
    except (RecursionError, ValueError, TypeError) as e:
        raise ValueError(f"not a valid JSON schema: {type(e).__name__}") from None
    return value


def _token_ids(value: dict[str, float]) -> dict[str, float]:
    """``logit_bias`` when its keys are token ids in canonical ASCII decimal; ValueError naming
    the first other key (int() would read "1_0", " 10 " and "١٠" as 10)."""
    for key in value:
        if not re.fullmatch(TOKEN_ID_KEY, key):
            raise ValueError(f"key {key[:40]!r} is not a token id: write ids in ASCII decimal digits, without sign, "
                             "spaces, separators or leading zeros")
    return value


#: A JSON schema object, checked against the JSON Schema meta-schema.
JsonSchema = Annotated[dict[str, Any], AfterValidator(_valid_schema)]
_Text = Annotated[str, Field(min_length=1)]
_TokenId = Annotated[int, Field(ge=0)]
#: ``logit_bias``: token id (canonical decimal) -> bias; the schema allows no other key.
TokenBias = Annotated[dict[Annotated[str, WithJsonSchema({"type": "string", "pattern": TOKEN_ID_KEY})],
                           Annotated[float, Field(ge=-100.0, le=100.0)]],
                      Field(json_schema_extra={"additionalProperties": False}), AfterValidator(_token_ids)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class StreamOptions(_Strict):
    include_usage: bool = False
    include_obfuscation: Optional[bool] = None


class JsonSchemaFormat(_Strict):
    name: str = ""
    description: Optional[str] = None
    schema_: JsonSchema = Field(alias="schema")
    strict: Optional[bool] = None


class TextFormat(_Strict):
    type: Literal["text"]


class JsonObjectFormat(_Strict):
    """Any JSON object, or (llama.cpp's and vLLM's ``schema``) one that the schema narrows."""

    type: Literal["json_object"]
    schema_: Optional[JsonSchema] = Field(None, alias="schema")


class JsonSchemaResponseFormat(_Strict):
    type: Literal["json_schema"]
    json_schema: JsonSchemaFormat


def _format_kind(value: Any) -> Optional[str]:
    """The member of ResponseFormat that a value's ``type`` picks (tags are class-like names, so
    that an error's location names the fields alone)."""
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    tags = {"text": "Text", "json_object": "JsonObject", "json_schema": "JsonSchema"}
    return tags.get(kind) if isinstance(kind, str) else None


#: OpenAI's response_format: ``text``, ``json_object`` or ``json_schema``, each with its own keys.
ResponseFormat = Annotated[
    Union[Annotated[TextFormat, Tag("Text")], Annotated[JsonObjectFormat, Tag("JsonObject")],
          Annotated[JsonSchemaResponseFormat, Tag("JsonSchema")]],
    Discriminator(_format_kind, custom_error_type="invalid_value",
                  custom_error_message="expected an object whose 'type' is 'text', 'json_object' or 'json_schema'")]


class TextPart(BaseModel):
    model_config = ConfigDict(strict=True)

    type: Literal["text"]
    text: str


class ToolCallFunction(BaseModel):
    model_config = ConfigDict(strict=True)  # other keys are ignored

    name: str
    arguments: Any = "{}"  # the arguments' JSON text (OpenAI's), or the object itself


class ToolCall(BaseModel):
    """A call in an assistant message's history."""

    model_config = ConfigDict(strict=True)  # other keys are ignored

    id: Optional[str] = None
    type: Optional[str] = None
    function: ToolCallFunction


class Message(BaseModel):
    """A chat message: its ``content`` is required, except in an assistant message that has
    ``tool_calls`` (there it may be left out or null)."""

    model_config = ConfigDict(strict=True, json_schema_extra={"anyOf": [
        {"required": ["content"], "properties": {"content": {"not": {"type": "null"}}}},
        {"required": ["role", "tool_calls"],
         "properties": {"role": {"const": "assistant"}, "tool_calls": {"type": "array"}}}]})  # other keys ignored

    # a role name; which roles a model accepts is its chat template's (kvgen.loaders.chat_template)
    role: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
    content: Union[str, list[TextPart], None] = None  # null in an assistant message with tool_calls
    tool_calls: Optional[list[ToolCall]] = None
    function_call: Optional[ToolCallFunction] = None  # the legacy form of one tool call
    tool_call_id: Optional[str] = None
    name: Optional[str] = None
    reasoning_content: Optional[str] = None  # an assistant's reasoning, for templates that render it

    @model_validator(mode="after")
    def _content_given(self) -> "Message":
        calls = self.tool_calls is not None or self.function_call is not None
        if self.content is None and not (self.role == "assistant" and calls):
            raise ValueError("'content' is required (it may be null only in an assistant message with 'tool_calls')")
        return self


class FunctionSpec(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: Optional[str] = None
    parameters: Optional[JsonSchema] = None
    strict: Optional[bool] = None


class Tool(_Strict):
    type: Literal["function"]
    function: FunctionSpec


class FunctionName(_Strict):
    name: str


class NamedToolChoice(_Strict):
    type: Literal["function"]
    function: FunctionName


class _SamplingFields(_Strict):
    model: Optional[str] = None  # the served model when left out
    max_tokens: Optional[int] = Field(None, ge=0)  # 0: completions with echo only
    prompt_logprobs: Optional[int] = Field(None, ge=0, le=20)
    temperature: Optional[float] = Field(None, ge=0.0, le=2.0)
    top_p: Optional[float] = Field(None, gt=0.0, le=1.0)
    n: Optional[int] = Field(None, ge=1, le=128)
    stream: Optional[bool] = None
    stream_options: Optional[StreamOptions] = None
    stop: Union[_Text, Annotated[list[_Text], Field(max_length=MAX_STOP_STRINGS)], None] = None
    seed: Optional[int] = Field(None, ge=0, le=2**64 - 1)
    presence_penalty: Optional[float] = Field(None, ge=-2.0, le=2.0)
    frequency_penalty: Optional[float] = Field(None, ge=-2.0, le=2.0)
    logit_bias: Optional[TokenBias] = None
    user: Optional[str] = None
    top_k: Optional[int] = Field(None, ge=0, le=2**31 - 1)
    min_p: Optional[float] = Field(None, ge=0.0, le=1.0)
    repetition_penalty: Optional[float] = Field(None, gt=0.0, le=10.0)
    prompt_lookup_num_tokens: Optional[int] = Field(None, ge=1, le=64)
    max_matching_ngram_size: Optional[int] = Field(None, ge=1, le=64)
    response_format: Optional[ResponseFormat] = None
    regex: Optional[str] = None
    guided_regex: Optional[str] = None
    grammar: Optional[str] = None
    guided_grammar: Optional[str] = None
    choices: Optional[list[_Text]] = Field(None, min_length=1)
    guided_choice: Optional[list[_Text]] = Field(None, min_length=1)
    guided_json: Optional[JsonSchema] = None

    def stop_strings(self) -> list[str]:
        """``stop`` as a list (empty when left out)."""
        return [self.stop] if isinstance(self.stop, str) else list(self.stop or [])

    def include_usage(self) -> bool:
        """``stream_options.include_usage``."""
        return bool(self.stream_options is not None and self.stream_options.include_usage)

    def constraint(self) -> Optional[tuple[str, str]]:
        """(GenerationConfig field, value) of the structured-output field that is set (a JSON
        schema as its text); ApiError when two are."""
        values = {name: self._constraint_value(name) for name in CONSTRAINT_FIELDS}
        given = [name for name, value in values.items() if value is not None]
        if len(given) > 1:
            raise ApiError(f"at most one of {', '.join(repr(n) for n in CONSTRAINT_FIELDS)} per request, got "
                           f"{', '.join(repr(n) for n in given)}", param=given[1], code="invalid_value")
        return (CONSTRAINT_FIELDS[given[0]], values[given[0]]) if given else None

    def _constraint_value(self, name: str) -> Any:
        value = getattr(self, name)
        if value is None:
            return None
        if name == "guided_json":
            return json.dumps(value)
        if name == "response_format":
            if value.type == "text":
                return None
            if value.type == "json_object":  # llama.cpp's and vLLM's "schema" narrows it
                return json.dumps(value.schema_ if value.schema_ is not None else {"type": "object"})
            return json.dumps(value.json_schema.schema_)
        return value

    def token_bias(self, vocab: int) -> dict[int, float]:
        """``logit_bias`` with token ids as keys; ApiError for an id outside [0, vocab)."""
        out = {}
        for key, bias in (self.logit_bias or {}).items():
            token = int(key)  # canonical decimal (TOKEN_ID_KEY)
            if token >= vocab:
                raise ApiError(f"'logit_bias': token id {token} is outside the vocabulary [0, {vocab})",
                               param="logit_bias", code="invalid_value")
            out[token] = bias
        return out

    def to_generation_config(self, max_tokens: int, vocab: int) -> GenerationConfig:
        """The GenerationConfig these settings ask for (without the model's EOS ids): temperature
        0 is greedy (the sampling fields then unused), no top-k unless asked, ``n`` rows of one
        prompt when sampling. GenerationConfig's own checks (e.g. a temperature that float32
        rounds to 0) are an ApiError naming the request's field."""
        try:
            config = self._config(max_tokens, vocab)
        except (ValueError, TypeError, OverflowError) as e:
            found = re.search(r"GenerationConfig\.(\w+)", str(e))
            name = _CONFIG_TO_REQUEST.get(found.group(1), found.group(1)) if found else None
            raise ApiError(str(e) if found else f"invalid settings: {e}", param=name, code="invalid_value") from None
        constraint = self.constraint()
        if constraint is not None:
            setattr(config, *constraint)
        return config

    def _config(self, max_tokens: int, vocab: int) -> GenerationConfig:
        temperature = 1.0 if self.temperature is None else self.temperature
        sampling = temperature > 0
        truncation = {"temperature": temperature, "top_p": 1.0 if self.top_p is None else self.top_p,
                      "top_k": self.top_k or 0,
                      **({"min_p": self.min_p} if self.min_p is not None else {})} if sampling else {}
        return GenerationConfig(
            max_new_tokens=max_tokens, do_sample=sampling, **truncation, seed=self.seed,
            presence_penalty=self.presence_penalty or 0.0, frequency_penalty=self.frequency_penalty or 0.0,
            repetition_penalty=1.0 if self.repetition_penalty is None else self.repetition_penalty,
            logit_bias=self.token_bias(vocab), stop_strings=self.stop_strings(),
            num_return_sequences=(self.n or 1) if sampling else 1,
            prompt_lookup_num_tokens=self.prompt_lookup_num_tokens,
            max_matching_ngram_size=self.max_matching_ngram_size)


# request field -> the GenerationConfig constraint field it sets
CONSTRAINT_FIELDS = {"response_format": "json_schema", "guided_json": "json_schema", "regex": "regex",
                     "guided_regex": "regex", "grammar": "grammar", "guided_grammar": "grammar",
                     "choices": "choices", "guided_choice": "choices"}
# GenerationConfig field -> the request field that sets it (for errors the config raises)
_CONFIG_TO_REQUEST = {"max_new_tokens": "max_tokens", "stop_strings": "stop", "num_return_sequences": "n",
                      "json_schema": "response_format"}


# with OpenAI's optional fields that kvgen accepts and ignores (kvgen.server.protocol.IGNORED_FIELDS)
_Sampling = create_model("_Sampling", __base__=_SamplingFields, **{
    name: (Optional[Any], Field(None, description="accepted and ignored (an option of OpenAI's service)"))
    for name in IGNORED_FIELDS})


class CompletionRequest(_Sampling):
    """POST /v1/completions."""

    prompt: Union[_Text, Annotated[list[_Text], Field(min_length=1)], Annotated[list[_TokenId], Field(min_length=1)],
                  Annotated[list[Annotated[list[_TokenId], Field(min_length=1)]], Field(min_length=1)]]
    logprobs: Optional[int] = Field(None, ge=0, le=MAX_TOP_LOGPROBS)
    echo: Optional[bool] = None
    suffix: Optional[str] = None
    best_of: Optional[int] = Field(None, ge=1, le=128)


#: chat_template_kwargs: template variables by name (Qwen3's ``enable_thinking``); the names the
#: server sets itself are refused.
TemplateKwargs = Annotated[dict[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")], Any],
                           Field(max_length=32)]


class ChatRequest(_Sampling):
    """POST /v1/chat/completions."""

    messages: list[Message] = Field(min_length=1)
    tools: Optional[list[Tool]] = None
    tool_choice: Union[Literal["none", "auto", "required"], NamedToolChoice, None] = None
    parallel_tool_calls: Optional[bool] = None
    functions: Optional[list[FunctionSpec]] = Field(None, min_length=1)  # legacy: tools
    function_call: Union[Literal["none", "auto"], FunctionName, None] = None  # legacy: tool_choice
    chat_template_kwargs: Optional[TemplateKwargs] = None
    #: OpenAI's reasoning effort, given to the chat template as its ``reasoning_effort``
    #: variable (GPT-OSS's template writes it into the system message; others ignore it)
    reasoning_effort: Optional[Literal["none", "minimal", "low", "medium", "high"]] = None
    logprobs: Optional[bool] = None
    top_logprobs: Optional[int] = Field(None, ge=0, le=MAX_TOP_LOGPROBS)
    max_completion_tokens: Optional[int] = Field(None, ge=1)


class TokenizeCompletionRequest(_Strict):
    """POST /tokenize with a prompt (vLLM's shape)."""

    model: Optional[str] = None
    prompt: str
    add_special_tokens: bool = True
    return_token_strs: Optional[bool] = False


class TokenizeChatRequest(_Strict):
    """POST /tokenize with messages, rendered as /v1/chat/completions renders them (vLLM's shape)."""

    model: Optional[str] = None
    messages: list[Message] = Field(min_length=1)
    tools: Optional[list[Tool]] = None
    add_generation_prompt: bool = True
    chat_template_kwargs: Optional[TemplateKwargs] = None
    continue_final_message: Literal[False] = False
    add_special_tokens: Literal[False] = False  # the template writes the special tokens
    return_token_strs: Optional[bool] = False


class DetokenizeRequest(_Strict):
    """POST /detokenize (vLLM's shape)."""

    model: Optional[str] = None
    tokens: list[_TokenId]


_ERROR = {"description": "OpenAI's error JSON: {\"error\": {\"message\", \"type\", \"param\", \"code\"}}",
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}}
_ERROR_SCHEMA = {"type": "object", "required": ["error"], "properties": {"error": {
    "type": "object", "required": ["message", "type", "param", "code"],
    "properties": {"message": {"type": "string"}, "type": {"type": "string"},
                   "param": {"type": ["string", "null"]}, "code": {"type": ["string", "null"]}}}}}


def add_request_bodies(schema: dict, extra: tuple[tuple[str, Any, str], ...] = ()) -> dict:
    """``schema`` (FastAPI's OpenAPI document) with the POST routes' JSON bodies and their
    error responses; ``extra``: more (path, pydantic model, schema name) of routes defined in
    their own modules."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["ErrorResponse"] = _ERROR_SCHEMA
    bodies: tuple[tuple[str, Any, str], ...] = (
        ("/v1/completions", CompletionRequest, "CompletionRequest"),
        ("/v1/chat/completions", ChatRequest, "ChatRequest"),
        ("/tokenize", Union[TokenizeCompletionRequest, TokenizeChatRequest], "TokenizeRequest"),
        ("/detokenize", DetokenizeRequest, "DetokenizeRequest")) + tuple(extra)
    for path, model, name in bodies:
        if path not in schema["paths"]:
            continue
        body = TypeAdapter(model).json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
        components.update(body.pop("$defs", {}))
        components[name] = body
        operation = schema["paths"][path]["post"]
        operation["requestBody"] = {"required": True, "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{name}"}}}}
        responses = operation.setdefault("responses", {})
        for status in ("400", "401", "403", "408", "413", "415", "429", "500", "503", "504"):
            responses[status] = _ERROR
    return schema
