"""The request bodies of ``kvgen serve`` as pydantic models, for the OpenAPI schema the server
serves at /openapi.json (clients and fuzzers such as Schemathesis read it).

The models describe what kvgen.server.protocol accepts: the same fields, types and ranges. The
protocol's own checks stay the ones that run (their errors name the field in OpenAI's shape
and carry the limits that depend on the model and the server's settings, which a static
schema cannot know: the vocabulary for ``logit_bias``, the context for ``max_tokens``).
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from kvgen.server.protocol import IGNORED_FIELDS, MAX_STOP_STRINGS, MAX_TOP_LOGPROBS


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StreamOptions(_Strict):
    include_usage: bool = False
    include_obfuscation: Optional[bool] = None


class JsonSchemaFormat(_Strict):
    name: str = ""
    description: Optional[str] = None
    schema_: dict[str, Any] = Field(alias="schema")
    strict: Optional[bool] = None


class ResponseFormat(_Strict):
    """``text``; ``json_object`` (with llama.cpp's optional ``schema``); ``json_schema``."""

    type: Literal["text", "json_object", "json_schema"]
    json_schema: Optional[JsonSchemaFormat] = None
    schema_: Optional[dict[str, Any]] = Field(None, alias="schema")


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class Message(BaseModel):
    role: str
    content: Union[str, list[TextPart], None] = None  # null in an assistant message with tool_calls
    tool_calls: Optional[list[dict[str, Any]]] = None
    tool_call_id: Optional[str] = None
    name: Optional[str] = None


class FunctionSpec(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: Optional[str] = None
    parameters: Optional[dict[str, Any]] = None
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
    stop: Union[str, list[str], None] = Field(None, max_length=MAX_STOP_STRINGS)
    seed: Optional[int] = Field(None, ge=0, le=2**64 - 1)
    presence_penalty: Optional[float] = Field(None, ge=-2.0, le=2.0)
    frequency_penalty: Optional[float] = Field(None, ge=-2.0, le=2.0)
    logit_bias: Optional[dict[str, float]] = None
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
    choices: Optional[list[str]] = Field(None, min_length=1)
    guided_choice: Optional[list[str]] = Field(None, min_length=1)
    guided_json: Optional[dict[str, Any]] = None


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


_ERROR = {"description": "OpenAI's error JSON: {\"error\": {\"message\", \"type\", \"param\", \"code\"}}",
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}}
_ERROR_SCHEMA = {"type": "object", "required": ["error"], "properties": {"error": {
    "type": "object", "required": ["message", "type", "param", "code"],
    "properties": {"message": {"type": "string"}, "type": {"type": "string"},
                   "param": {"type": ["string", "null"]}, "code": {"type": ["string", "null"]}}}}}


def add_request_bodies(schema: dict) -> dict:
    """``schema`` (FastAPI's OpenAPI document) with the two POST routes' JSON bodies and their
    error responses."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["ErrorResponse"] = _ERROR_SCHEMA
    for path, model in (("/v1/completions", CompletionRequest), ("/v1/chat/completions", ChatRequest)):
        body = model.model_json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
        components.update(body.pop("$defs", {}))
        components[model.__name__] = body
        operation = schema["paths"][path]["post"]
        operation["requestBody"] = {"required": True, "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}}
        responses = operation.setdefault("responses", {})
        for status in ("400", "401", "403", "413", "415", "429", "500", "503", "504"):
            responses[status] = _ERROR
    return schema
