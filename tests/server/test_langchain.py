"""LangChain's ChatOpenAI against ``kvgen serve``: invoke and stream give kvgen's own reply,
bind_tools and every with_structured_output method give objects that validate, and a history
with a tool call and its result is answered as kvgen's generation on the same prompt."""

from __future__ import annotations

import importlib
import json
import os

import jsonschema
import pytest
from test_tools import WEATHER, _reference

import kvgen
from kvgen.server.tools import parse_tool_calls, tool_grammar


def _import(name: str):
    """A module of the ``clients`` extra (installed in CI: a missing one fails there, skips elsewhere)."""
    if os.environ.get("CI"):
        return importlib.import_module(name)
    return pytest.importorskip(name)


@pytest.fixture(scope="module")
def chat(served):
    langchain_openai = _import("langchain_openai")
    return langchain_openai.ChatOpenAI(base_url=f"{served.url}/v1", api_key="none", model="m", temperature=0,
                                       max_tokens=16, max_retries=0, timeout=120)


QUESTION = "What is the capital of France?"


def test_invoke_and_stream_give_kvgen_s_reply(chat, smollm2_model):
    reply = kvgen.Generator(smollm2_model, kvgen.GenerationConfig(max_new_tokens=16)).chat(
        [{"role": "user", "content": QUESTION}])
    message = chat.invoke(QUESTION)
    assert message.content == reply
    assert message.response_metadata["finish_reason"] in ("stop", "length")
    pieces = [chunk.content for chunk in chat.stream(QUESTION)]
    assert "".join(pieces) == reply and len([p for p in pieces if p]) > 1


def _weather_tool():
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str, unit: str) -> str:
        """The weather in a city, in unit C or F."""
        return "21"

    return get_weather


def test_bind_tools_gives_a_call_that_validates(chat):
    # LangChain's "any" is OpenAI's "required"
    llm = chat.model_copy(update={"max_tokens": 60}).bind_tools([_weather_tool()], tool_choice="any",
                                                                 parallel_tool_calls=False)
    message = llm.invoke("What is the weather in Paris, in Celsius?")
    (call,) = message.tool_calls
    assert call["name"] == "get_weather" and call["id"].startswith("call_")
    assert set(call["args"]) == {"city", "unit"} and all(isinstance(v, str) for v in call["args"].values())
    streamed = None
    for chunk in llm.stream("What is the weather in Paris, in Celsius?"):
        streamed = chunk if streamed is None else streamed + chunk
    assert [(c["name"], c["args"]) for c in streamed.tool_calls] == [(call["name"], call["args"])]


def _answer_model():
    from pydantic import BaseModel, Field

    class Answer(BaseModel):
        """An answer to a question."""

        city: str = Field(description="the city")
        population: int = Field(description="how many people live there")

    return Answer


@pytest.mark.parametrize("method", ["function_calling", "json_schema", "json_mode"])
def test_with_structured_output_gives_a_valid_object(chat, method):
    Answer = _answer_model()
    llm = chat.model_copy(update={"max_tokens": 60}).with_structured_output(Answer, method=method, include_raw=True)
    prompt = "Answer in JSON with the keys city and population: which is the capital of France?"
    out = llm.invoke(prompt)
    raw, parsed = out["raw"], out["parsed"]
    if method == "json_mode":  # any JSON object: parsed only when the model picked those keys
        assert isinstance(json.loads(raw.content), dict), raw.content
        return
    assert out["parsing_error"] is None, raw
    assert isinstance(parsed, Answer)
    jsonschema.validate(parsed.model_dump(), Answer.model_json_schema())


def test_a_history_with_a_tool_call_and_its_result(chat, smollm2_model):
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    history = [HumanMessage("What is the weather in Paris, in Celsius?"),
               AIMessage("", tool_calls=[{"id": "call_1", "name": "get_weather",
                                          "args": {"city": "Paris", "unit": "C"}}]),
               ToolMessage("21 degrees, sunny", tool_call_id="call_1")]
    llm = chat.bind_tools([WEATHER])
    message = llm.invoke(history)
    openai_history = [
        {"role": "user", "content": "What is the weather in Paris, in Celsius?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": json.dumps({"city": "Paris", "unit": "C"})}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "21 degrees, sunny"}]
    prompt_tokens, text = _reference(smollm2_model, openai_history, [WEATHER],
                                     tool_grammar([WEATHER], free_text=True), max_new_tokens=16)
    assert message.usage_metadata["input_tokens"] == prompt_tokens
    # the model calls the tool again and is cut by max_tokens: a call with cut arguments, as OpenAI
    # returns it (LangChain reads them as {} or as an invalid call), no markup in the content
    content, calls = parse_tool_calls(text, {"get_weather"}, truncated=True)
    assert message.response_metadata["finish_reason"] == "length"
    assert message.content == (content or "")
    assert [c["name"] for c in message.tool_calls + message.invalid_tool_calls] == \
        [c["function"]["name"] for c in calls] == ["get_weather"]
