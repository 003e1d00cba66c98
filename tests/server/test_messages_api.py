"""/v1/messages through Anthropic's official SDK (``messages.create``, ``messages.stream``,
``messages.parse``) against kvgen serve on the default model, in process. The reference is
kvgen's own generation of the same conversation (Generator.chat, and /v1/chat/completions for
the tool round trip, whose translation is what is checked). The 135M model's tool choices
are scripted where they are too weak: the call is forced with ``tool_choice={"type": "any"}``,
the answer after the tool's result with "none". The SDK has no temperature argument any more:
greedy decoding is asked for with ``extra_body``."""

from __future__ import annotations

import json

import anthropic
import pytest
from pydantic import BaseModel

import kvgen

QUESTION = "What is the capital of France?"
GREEDY = {"temperature": 0}
WEATHER = {"name": "get_weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                            "additionalProperties": False}}


@pytest.fixture(scope="module")
def app(local_app):
    return local_app(max_batch=2)


@pytest.fixture(scope="module")
def client(app):
    return anthropic.Anthropic(base_url="http://localhost", api_key="none", http_client=app, max_retries=0)


def _chat(model, messages, max_tokens, **settings):
    return kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=max_tokens, **settings)).chat(messages)


def test_text_reply_equals_kvgen_s_chat(client, smollm2_model):
    message = client.messages.create(model="m", max_tokens=24, system="Be brief.",
                                     messages=[{"role": "user", "content": QUESTION}], extra_body=GREEDY)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}]
    assert message.type == "message" and message.role == "assistant" and message.id.startswith("msg_")
    (block,) = message.content
    assert block.type == "text" and block.text == _chat(smollm2_model, messages, 24)
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert message.usage.input_tokens == len(smollm2_model.encode_chat(messages)) and message.usage.output_tokens > 0
    cut = client.messages.create(model="m", max_tokens=3, extra_body=GREEDY, messages=[
        {"role": "user", "content": [{"type": "text", "text": QUESTION}]}])
    assert cut.stop_reason == "max_tokens" and cut.usage.output_tokens == 3


def test_stop_sequences(client, smollm2_model):
    asked = [{"role": "user", "content": "Count from 1 to 10, separated by commas."}]
    message = client.messages.create(model="m", max_tokens=40, messages=asked, stop_sequences=["5,", "zebra"],
                                     extra_body=GREEDY)
    expected = _chat(smollm2_model, asked, 40, stop_strings=["5,", "zebra"])
    assert message.stop_reason == "stop_sequence" and message.stop_sequence == "5,"
    assert message.content[0].text == expected.removesuffix("5,") and "5" not in message.content[0].text


def test_stream_events(client):
    done = client.messages.create(model="m", max_tokens=24, messages=[{"role": "user", "content": QUESTION}],
                                  extra_body=GREEDY)
    with client.messages.stream(model="m", max_tokens=24, messages=[{"role": "user", "content": QUESTION}],
                                extra_body=GREEDY) as stream:
        events = list(stream)
        final = stream.get_final_message()
    kinds = [e.type for e in events if e.type not in ("text",)]  # "text": the SDK's own helper events
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(kinds[2:-3]) == {"content_block_delta"} and len(kinds) > 6
    assert final.content[0].text == done.content[0].text and final.stop_reason == done.stop_reason
    assert final.usage.output_tokens == done.usage.output_tokens


def test_tool_use_then_its_result(client, app):
    forced = client.messages.create(model="m", max_tokens=60, tools=[WEATHER],
                                    tool_choice={"type": "any", "disable_parallel_tool_use": True},
                                    messages=[{"role": "user", "content": "What is the weather in Paris?"}],
                                    extra_body=GREEDY)
    (use,) = forced.content
    assert forced.stop_reason == "tool_use" and use.type == "tool_use" and use.name == "get_weather"
    assert set(use.input) == {"city"}
    with client.messages.stream(model="m", max_tokens=60, tools=[WEATHER],
                                tool_choice={"type": "tool", "name": "get_weather",
                                             "disable_parallel_tool_use": True},
                                messages=[{"role": "user", "content": "What is the weather in Paris?"}],
                                extra_body=GREEDY) as stream:
        partial = "".join(e.delta.partial_json for e in stream
                          if e.type == "content_block_delta" and e.delta.type == "input_json_delta")
        final = stream.get_final_message()
    assert json.loads(partial) == final.content[0].input == use.input and final.stop_reason == "tool_use"
    # the round trip: the call and its result in the history (the answer forced to text)
    answer = client.messages.create(model="m", max_tokens=30, tools=[WEATHER], tool_choice={"type": "none"},
                                    extra_body=GREEDY, messages=[
                                        {"role": "user", "content": "What is the weather in Paris?"},
                                        {"role": "assistant", "content": [{"type": "tool_use", "id": use.id,
                                                                           "name": use.name, "input": use.input}]},
                                        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                                                      "content": "21 C and sunny"}]}])
    chat = app.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "What is the weather in Paris?"},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": use.id, "type": "function",
                          "function": {"name": use.name, "arguments": json.dumps(use.input)}}]},
                     {"role": "tool", "tool_call_id": use.id, "content": "21 C and sunny"}],
        "tools": [{"type": "function", "function": {"name": WEATHER["name"], "description": WEATHER["description"],
                                                    "parameters": WEATHER["input_schema"]}}],
        "tool_choice": "none", "max_tokens": 30, "temperature": 0}).json()
    assert answer.content[0].text == chat["choices"][0]["message"]["content"] and answer.stop_reason != "tool_use"


class City(BaseModel):
    name: str
    country: str


def test_output_format(client):
    parsed = client.messages.parse(model="m", max_tokens=60, output_format=City, extra_body=GREEDY,
                                   messages=[{"role": "user", "content": "Name a city in France."}])
    assert isinstance(parsed.parsed_output, City)


@pytest.mark.parametrize("body, fragment", [
    ({"messages": [{"role": "user", "content": "Hi"}]}, "'max_tokens' is required"),
    ({"max_tokens": 4, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]},
     "'image' blocks are not supported"),
    ({"max_tokens": 4, "messages": [{"role": "system", "content": "Hi"}]}, "expected 'user' or 'assistant'"),
    ({"max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "web_search_20250305",
                                                                                   "name": "web_search"}]},
     "client tool"),
])
def test_errors_are_anthropic_s_json(app, body, fragment):
    answer = app.post("/v1/messages", json=body)
    assert answer.status_code == 400
    error = answer.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert fragment in error["error"]["message"], error


def test_the_sdk_s_x_api_key_header(local_app):
    app = local_app(max_batch=1, api_key="secret")
    good = anthropic.Anthropic(base_url="http://localhost", api_key="secret", http_client=app, max_retries=0)
    assert good.messages.create(model="m", max_tokens=2, messages=[{"role": "user", "content": "Hi"}]).content
    bad = anthropic.Anthropic(base_url="http://localhost", api_key="wrong", http_client=app, max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        bad.messages.create(model="m", max_tokens=2, messages=[{"role": "user", "content": "Hi"}])
