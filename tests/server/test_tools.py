"""Tool calls: parsed out of the model's text (Hermes / Qwen ``<tool_call>`` blocks, Llama
3.1's JSON) into OpenAI's ``tool_calls``, and the llguidance grammar that makes the real
SmolLM2's calls parse and validate against the tools' JSON schemas."""

from __future__ import annotations

import json

import jsonschema
import pytest

import kvgen
from kvgen.server.tools import parse_tool_calls, tool_grammar

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                            "parameters": {"type": "object", "properties": {
                                                "city": {"type": "string"},
                                                "unit": {"type": "string", "enum": ["C", "F"]}},
                                                "required": ["city", "unit"], "additionalProperties": False}}}
ADD = {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}
NAMES = {"get_weather", "add"}


def _calls(calls):
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]


def test_hermes_blocks_become_openai_tool_calls():
    text = ('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}\n'
            '</tool_call>\n<tool_call>{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}</tool_call>')
    content, calls = parse_tool_calls(text, NAMES)
    assert content == "Let me check."
    assert _calls(calls) == [("get_weather", {"city": "Paris", "unit": "C"}), ("add", {"a": 1, "b": 2})]
    assert all(c["type"] == "function" and c["id"].startswith("call_") for c in calls)
    assert len({c["id"] for c in calls}) == 2
    # the closing tag may be cut off at the end of the text
    assert _calls(parse_tool_calls('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}', NAMES)[1]) == \
        [("add", {"a": 1, "b": 2})]


def test_llama_json_calls():
    content, calls = parse_tool_calls('<|python_tag|>{"name": "add", "parameters": {"a": 3, "b": 4}}', NAMES)
    assert content is None and _calls(calls) == [("add", {"a": 3, "b": 4})]
    text = '{"name": "add", "parameters": {"a": 1, "b": 2}}; {"name": "get_weather", "parameters": {"city": "Rome", ' \
           '"unit": "F"}}'
    assert _calls(parse_tool_calls(text, NAMES)[1]) == [("add", {"a": 1, "b": 2}),
                                                        ("get_weather", {"city": "Rome", "unit": "F"})]


@pytest.mark.parametrize("text", [
    "Just text, no call.",
    '{"name": "unknown_tool", "parameters": {}}',                      # not one of the tools
    '<tool_call>{"name": "add", "arguments": {"a": 1</tool_call>',      # broken JSON
    '{"answer": 42}',                                                  # JSON that is no call
    '{"name": "add", "parameters": [1, 2]}',                           # arguments not an object
])
def test_what_is_not_a_call_stays_text(text):
    assert parse_tool_calls(text, NAMES) == (text, [])


@pytest.mark.parametrize("question, tool", [("What is the weather in Paris?", WEATHER), ("What is 2 plus 3?", ADD)])
def test_the_grammar_makes_the_models_call_parse_and_validate(smollm2_model, question, tool):
    grammar = tool_grammar([WEATHER, ADD], parallel=False)
    config = kvgen.GenerationConfig(max_new_tokens=80, grammar=grammar)
    text = kvgen.Generator(smollm2_model, config).chat([{"role": "user", "content": question}])
    content, calls = parse_tool_calls(text, NAMES)
    assert content is None and len(calls) == 1, text
    name, arguments = _calls(calls)[0]
    schema = next(t for t in (WEATHER, ADD) if t["function"]["name"] == name)["function"]["parameters"]
    jsonschema.validate(arguments, schema)


def test_a_named_tool_grammar_allows_that_tool_only(smollm2_model):
    config = kvgen.GenerationConfig(max_new_tokens=80, grammar=tool_grammar([ADD], parallel=False))
    text = kvgen.Generator(smollm2_model, config).chat([{"role": "user", "content": "Weather in Oslo?"}])
    (name, arguments), = _calls(parse_tool_calls(text, NAMES)[1])
    assert name == "add"
    jsonschema.validate(arguments, ADD["function"]["parameters"])
