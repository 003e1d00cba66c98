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
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter, create_model

#: Stop strings per request at most (lm-eval's tasks pass several ``until`` strings).
MAX_STOP_STRINGS = 32
#: The most top_logprobs alternatives per token (GenerationConfig's limit; OpenAI's completions allow 5).
MAX_TOP_LOGPROBS = 20
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


#: A JSON schema object, checked against the JSON Schema meta-schema.
JsonSchema = Annotated[dict[str, Any], AfterValidator(_valid_schema)]
_Text = Annotated[str, Field(min_length=1)]


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


class Message(BaseModel):
    model_config = ConfigDict(strict=True)  # other keys are ignored

    # a role name; which roles a model accepts is its chat template's (kvgen.loaders.chat_template)
    role: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
    content: Union[str, list[TextPart], None] = None  # null in an assistant message with tool_calls
    tool_calls: Optional[list[dict[str, Any]]] = None
    tool_call_id: Optional[str] = None
    name: Optional[str] = None


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
    logit_bias: Optional[dict[str, Annotated[float, Field(ge=-100.0, le=100.0)]]] = None  # token id -> bias
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


# with OpenAI's optional fields that kvgen accepts and ignores (kvgen.server.protocol.IGNORED_FIELDS)
_Sampling = create_model("_Sampling", __base__=_SamplingFields, **{
    name: (Optional[Any], Field(None, description="accepted and ignored (an option of OpenAI's service)"))
    for name in IGNORED_FIELDS})


class CompletionRequest(_Sampling):
    """POST /v1/completions."""

    prompt: Union[str, list[str], list[int], list[list[int]]]
    logprobs: Optional[int] = Field(None, ge=0, le=MAX_TOP_LOGPROBS)
    echo: Optional[bool] = None
    suffix: Optional[str] = None
    best_of: Optional[int] = Field(None, ge=1, le=128)


class ChatRequest(_Sampling):
    """POST /v1/chat/completions."""

    messages: list[Message] = Field(min_length=1)
    tools: Optional[list[Tool]] = None
    tool_choice: Union[Literal["none", "auto", "required"], NamedToolChoice, None] = None
    parallel_tool_calls: Optional[bool] = None
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
    continue_final_message: Literal[False] = False
    add_special_tokens: Literal[False] = False  # the template writes the special tokens
    return_token_strs: Optional[bool] = False


class DetokenizeRequest(_Strict):
    """POST /detokenize (vLLM's shape)."""

    model: Optional[str] = None
    tokens: list[int]


_ERROR = {"description": "OpenAI's error JSON: {\"error\": {\"message\", \"type\", \"param\", \"code\"}}",
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}}
_ERROR_SCHEMA = {"type": "object", "required": ["error"], "properties": {"error": {
    "type": "object", "required": ["message", "type", "param", "code"],
    "properties": {"message": {"type": "string"}, "type": {"type": "string"},
                   "param": {"type": ["string", "null"]}, "code": {"type": ["string", "null"]}}}}}


def add_request_bodies(schema: dict) -> dict:
    """``schema`` (FastAPI's OpenAPI document) with the POST routes' JSON bodies and their
    error responses."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["ErrorResponse"] = _ERROR_SCHEMA
    bodies: tuple[tuple[str, Any, str], ...] = (
        ("/v1/completions", CompletionRequest, "CompletionRequest"),
        ("/v1/chat/completions", ChatRequest, "ChatRequest"),
        ("/tokenize", Union[TokenizeCompletionRequest, TokenizeChatRequest], "TokenizeRequest"),
        ("/detokenize", DetokenizeRequest, "DetokenizeRequest"))
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
        for status in ("400", "401", "403", "413", "415", "429", "500", "503", "504"):
            responses[status] = _ERROR
    return schema
