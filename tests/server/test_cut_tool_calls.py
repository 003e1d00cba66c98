"""Tool calls at the edges: a call cut by ``max_tokens`` comes back as OpenAI returns it (a
tool call whose arguments are cut, finish_reason "length", never ``<tool_call>`` markup in
the content), whole and streamed; ``parallel_tool_calls=false`` keeps one call; the legacy
``functions`` / ``function_call`` fields map onto tools and the reply answers in their shape;
JSON modes cut by ``max_tokens`` say "length". Served in this process over the real SmolLM2
(the grammar makes its calls; greedy, so a shorter reply is a prefix of a longer one)."""

from __future__ import annotations

import json

import openai
import pytest
from test_tools import ADD, NAMES, QUESTION, WEATHER, _reference

from kvgen.server.tools import ToolCallStream, parse_tool_calls, tool_grammar

CUT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'


def test_a_cut_call_is_a_call_with_cut_arguments():
    content, calls = parse_tool_calls("Sure. " + CUT, NAMES, truncated=True)
    assert content == "Sure."
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in calls] == \
        [("get_weather", '{"city": "Par')]
    # not cut by max_tokens (the model stopped): markup stays text, as before
    assert parse_tool_calls("Sure. " + CUT, NAMES) == ("Sure. " + CUT, [])
    # cut inside the name: the one tool whose name begins so; inside the tag: no markup left
    (call,) = parse_tool_calls('<tool_call>\n{"name": "get_w', NAMES, truncated=True)[1]
    assert call["function"] == {"name": "get_weather", "arguments": ""}
    assert parse_tool_calls("Hello <tool_c", NAMES, truncated=True) == ("Hello ", [])
    assert parse_tool_calls("<tool_c", NAMES, truncated=True) == ("", [])


def test_parallel_false_keeps_the_first_call():
    two = ('<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n'
           '<tool_call>\n{"name": "add", "arguments": {"a": 3, "b": 4}}\n</tool_call>')
    assert len(parse_tool_calls(two, NAMES)[1]) == 2
    (call,) = parse_tool_calls(two, NAMES, parallel=False)[1]
    assert json.loads(call["function"]["arguments"]) == {"a": 1, "b": 2}
    stream = ToolCallStream(NAMES, parallel=False)
    deltas = [d for k in range(0, len(two), 3) for d in stream.feed(two[k:k + 3], final=k + 3 >= len(two))]
    assert {c["index"] for d in deltas for c in d.get("tool_calls", [])} == {0} and stream.calls == 1


@pytest.mark.parametrize("text", ["Sure. " + CUT, CUT, '<tool_call>\n{"name": "get_w', "Hello <tool_c", "<tool_c",
                                  '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n' + CUT])
@pytest.mark.parametrize("size", [1, 4, 1000])
def test_the_stream_parser_cuts_as_the_whole_parse(text, size):
    stream = ToolCallStream(NAMES)
    pieces = [text[i:i + size] for i in range(0, len(text), size)]
    deltas = [d for k, p in enumerate(pieces) for d in stream.feed(p, final=k == len(pieces) - 1, truncated=True)]
    content = "".join(d.get("content", "") for d in deltas)
    calls: dict = {}
    for d in deltas:
        for c in d.get("tool_calls", []):
            entry = calls.setdefault(c["index"], [c["function"].get("name"), ""])
            entry[1] += c["function"]["arguments"]
    expected_content, expected = parse_tool_calls(text, NAMES, truncated=True)
    assert content == (expected_content or "")
    assert list(calls.values()) == [[c["function"]["name"], c["function"]["arguments"]] for c in expected]


# ---- through the server ----

@pytest.fixture(scope="module")
def client(local_app):
    return openai.OpenAI(base_url="http://localhost/v1", api_key="none", http_client=local_app(), max_retries=0)


NAMED = {"type": "function", "function": {"name": "get_weather"}}


@pytest.fixture(scope="module")
def whole_call(client):
    out = client.chat.completions.create(model="m", messages=QUESTION, tools=[WEATHER, ADD], tool_choice=NAMED,
                                         parallel_tool_calls=False, max_tokens=60, temperature=0)
    assert out.choices[0].finish_reason == "tool_calls"
    (call,) = out.choices[0].message.tool_calls
    return call.function


@pytest.fixture(scope="module")
def raw_arguments(smollm2_model):
    """The arguments' JSON text as the model writes it (the whole call's are re-serialised)."""
    _, text = _reference(smollm2_model, QUESTION, [WEATHER, ADD], tool_grammar([WEATHER], parallel=False))
    return text[text.index('"arguments": ') + len('"arguments": '):text.rindex("}")]


@pytest.mark.parametrize("max_tokens", [12, 20, 24])  # cut inside the name, at the arguments' start, in them
def test_a_call_cut_by_max_tokens_is_a_tool_call_with_finish_length(client, raw_arguments, max_tokens):
    args = dict(model="m", messages=QUESTION, tools=[WEATHER, ADD], tool_choice=NAMED, max_tokens=max_tokens,
                parallel_tool_calls=False, temperature=0)
    out = client.chat.completions.create(**args)
    choice = out.choices[0]
    assert choice.finish_reason == "length" and out.usage.completion_tokens == max_tokens
    assert not choice.message.content  # no <tool_call> markup
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_weather"
    assert raw_arguments.startswith(call.function.arguments) and len(call.function.arguments) < len(raw_arguments)
    assert (call.function.arguments == "") == (max_tokens == 12)
    chunks = list(client.chat.completions.create(**args, stream=True))
    assert chunks[-1].choices[0].finish_reason == "length"
    deltas = [d for c in chunks for d in c.choices[0].delta.tool_calls or []]
    assert deltas[0].function.name == "get_weather" and deltas[0].id.startswith("call_")
    assert "".join(d.function.arguments for d in deltas) == call.function.arguments
    assert not "".join(c.choices[0].delta.content or "" for c in chunks)


def test_legacy_functions_map_onto_tools(client, whole_call):
    functions = [WEATHER["function"], ADD["function"]]
    out = client.chat.completions.create(model="m", messages=QUESTION, functions=functions,
                                         function_call={"name": "get_weather"}, max_tokens=60, temperature=0)
    choice = out.choices[0]
    assert choice.finish_reason == "function_call" and not choice.message.tool_calls
    assert (choice.message.function_call.name, choice.message.function_call.arguments) == \
        (whole_call.name, whole_call.arguments)
    chunks = list(client.chat.completions.create(model="m", messages=QUESTION, functions=functions,
                                                 function_call={"name": "get_weather"}, max_tokens=60, temperature=0,
                                                 stream=True))
    deltas = [c.choices[0].delta.function_call for c in chunks if c.choices[0].delta.function_call]
    assert deltas[0].name == "get_weather"
    assert json.loads("".join(d.arguments or "" for d in deltas)) == json.loads(whole_call.arguments)
    assert chunks[-1].choices[0].finish_reason == "function_call"
    # a history in the legacy shape: the assistant's function_call and the "function" message of its result
    history = QUESTION + [{"role": "assistant", "content": None, "function_call": {
        "name": "get_weather", "arguments": whole_call.arguments}},
        {"role": "function", "name": "get_weather", "content": "21 degrees"}]
    out = client.chat.completions.create(model="m", messages=history, functions=functions, function_call="none",
                                         max_tokens=5, temperature=0)
    assert out.choices[0].message.content and out.choices[0].message.function_call is None
    with pytest.raises(openai.BadRequestError, match="'missing' is not one of the functions"):
        client.chat.completions.create(model="m", messages=QUESTION, functions=functions,
                                       function_call={"name": "missing"}, max_tokens=2)
    with pytest.raises(openai.BadRequestError, match="not both"):
        client.chat.completions.create(model="m", messages=QUESTION, functions=functions, tools=[ADD], max_tokens=2)


@pytest.mark.parametrize("response_format", [{"type": "json_object"}, {"type": "json_schema", "json_schema": {
    "name": "city", "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])
def test_json_modes_cut_by_max_tokens_say_length(client, response_format):
    out = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Describe Paris in JSON."}],
                                         response_format=response_format, max_tokens=5, temperature=0)
    assert out.choices[0].finish_reason == "length"
    with pytest.raises(ValueError):
        json.loads(out.choices[0].message.content)
