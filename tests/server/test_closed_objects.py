"""Under constraint an object schema allows only its declared properties unless it says
otherwise (OpenAI's strict mode, vLLM's default): LangChain's bind_tools with an ordinary
pydantic tool (a schema without ``additionalProperties``) gives arguments with only the
declared keys, and a json_schema response format the same."""

from __future__ import annotations

import json

import pytest
from test_langchain import _import

from kvgen.generation.constraints import closed_objects


def test_closing_keeps_what_a_schema_says():
    schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {"x": {}}},
                                               "free": {"type": "object"},
                                               "open": {"properties": {}, "additionalProperties": True},
                                               "typed": {"properties": {}, "additionalProperties": {"type": "string"}}},
              "$defs": {"D": {"properties": {"y": {}}}}, "anyOf": [{"properties": {"z": {}}}],
              "allOf": [{"properties": {"w": {}}}]}
    closed = closed_objects(schema)
    props = closed["properties"]
    assert props["a"]["additionalProperties"] is False and closed["$defs"]["D"]["additionalProperties"] is False
    assert closed["anyOf"][0]["additionalProperties"] is False
    assert "additionalProperties" not in props["free"] and props["open"]["additionalProperties"] is True
    assert props["typed"]["additionalProperties"] == {"type": "string"}
    # an allOf branch is not closed, nor the schema that combines them
    assert "additionalProperties" not in closed["allOf"][0] and "additionalProperties" not in closed
    assert "additionalProperties" not in schema["properties"]["a"]   # the input is left as it was


def _tool():
    from pydantic import BaseModel, Field

    class GetWeather(BaseModel):
        """The current weather in a city."""

        city: str = Field(description="the city, e.g. Paris")
        unit: str = Field(description="C or F")

    return GetWeather


@pytest.mark.parametrize("max_tokens", [80, 300])
def test_bind_tools_with_a_pydantic_tool_gives_only_declared_keys(served, max_tokens):
    langchain_openai = _import("langchain_openai")
    chat = langchain_openai.ChatOpenAI(base_url=f"{served.url}/v1", api_key="none", model="m", temperature=0,
                                       max_tokens=max_tokens, max_retries=0, timeout=120)
    tool = _tool()
    assert "additionalProperties" not in langchain_openai.chat_models.base.convert_to_openai_tool(tool)[
        "function"]["parameters"]
    message = chat.bind_tools([tool], tool_choice="any").invoke("What is the weather in Paris, in Celsius?")
    assert message.tool_calls and not message.invalid_tool_calls, message
    for call in message.tool_calls:
        assert call["name"] == "GetWeather"
        assert set(call["args"]) == {"city", "unit"} and all(isinstance(v, str) for v in call["args"].values())


def test_json_schema_response_format_gives_only_declared_keys(client):
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
              "required": ["city"]}
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Describe Paris as JSON with many fields."}],
        max_tokens=80, temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": schema}})
    choice = reply.choices[0]
    assert choice.finish_reason == "stop", choice
    assert set(json.loads(choice.message.content)) <= {"city", "country"}
