"""/v1/responses through the official openai SDK (``client.responses.create``, streamed and not,
``responses.parse``) against kvgen serve on the default model, in process. The reference is
kvgen's own generation of the same conversation (Generator.chat, and /v1/chat/completions for
the tool round trip, whose translation is what is checked): the Responses API runs as a chat
completion. The 135M model's tool choices are scripted where they are too weak: the call is
forced with ``tool_choice="required"``, the answer after the tool's result with "none"."""

from __future__ import annotations

import json

import openai
import pytest
from pydantic import BaseModel

import kvgen

QUESTION = "What is the capital of France?"
WEATHER = {"type": "function", "name": "get_weather", "description": "The weather in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                          "additionalProperties": False}, "strict": True}


@pytest.fixture(scope="module")
def app(local_app):
    return local_app(max_batch=2)


@pytest.fixture(scope="module")
def client(app):
    return openai.OpenAI(base_url="http://localhost/v1", api_key="none", http_client=app, max_retries=0)


def _chat(model, messages, max_tokens):
    return kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=max_tokens)).chat(messages)


def test_text_reply_equals_kvgen_s_chat(client, smollm2_model):
    response = client.responses.create(model="m", input=QUESTION, instructions="Be brief.", max_output_tokens=24,
                                       temperature=0)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}]
    assert response.status == "completed" and response.object == "response" and response.id.startswith("resp_")
    assert response.output_text == _chat(smollm2_model, messages, 24)
    (item,) = response.output
    assert item.type == "message" and item.role == "assistant" and item.status == "completed"
    assert response.usage.input_tokens == len(smollm2_model.encode_chat(messages))
    assert response.usage.output_tokens > 0 and response.store is False
    cut = client.responses.create(model="m", input=[{"role": "user", "content": [{"type": "input_text",
                                                                                   "text": QUESTION}]}],
                                  max_output_tokens=3, temperature=0)
    assert cut.status == "incomplete" and cut.incomplete_details.reason == "max_output_tokens"
    assert cut.usage.output_tokens == 3


def test_stream_events(client):
    done = client.responses.create(model="m", input=QUESTION, max_output_tokens=24, temperature=0)
    events = list(client.responses.create(model="m", input=QUESTION, max_output_tokens=24, temperature=0,
                                          stream=True))
    kinds = [e.type for e in events]
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.completed"]
    assert set(kinds[4:-4]) == {"response.output_text.delta"} and len(deltas) > 1
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "".join(deltas) == done.output_text == events[-1].response.output_text
    assert events[-1].response.usage.output_tokens == done.usage.output_tokens


def test_function_call_then_its_output(client, app):
    forced = client.responses.create(model="m", input="What is the weather in Paris?", tools=[WEATHER],
                                     tool_choice="required", parallel_tool_calls=False, max_output_tokens=60,
                                     temperature=0)
    (call,) = forced.output
    assert call.type == "function_call" and call.name == "get_weather" and call.status == "completed"
    assert set(json.loads(call.arguments)) == {"city"}
    streamed = list(client.responses.create(model="m", input="What is the weather in Paris?", tools=[WEATHER],
                                            tool_choice="required", parallel_tool_calls=False,
                                            max_output_tokens=60, temperature=0, stream=True))
    arguments = "".join(e.delta for e in streamed if e.type == "response.function_call_arguments.delta")
    (done,) = [e for e in streamed if e.type == "response.function_call_arguments.done"]
    # streamed as the model wrote them (chat streams do too), whole in the answer: the same object
    assert arguments == done.arguments and json.loads(arguments) == json.loads(call.arguments)
    assert done.name == "get_weather"
    assert streamed[-1].type == "response.completed" and streamed[-1].response.output[0].type == "function_call"
    # the round trip: the call and its output as input items (the answer forced to text)
    answer = client.responses.create(model="m", tools=[WEATHER], tool_choice="none", max_output_tokens=30,
                                     temperature=0, input=[
                                         {"role": "user", "content": "What is the weather in Paris?"},
                                         {"type": "function_call", "call_id": call.call_id, "name": call.name,
                                          "arguments": call.arguments},
                                         {"type": "function_call_output", "call_id": call.call_id,
                                          "output": "21 C and sunny"}])
    chat = app.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "What is the weather in Paris?"},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": call.call_id, "type": "function",
                          "function": {"name": call.name, "arguments": call.arguments}}]},
                     {"role": "tool", "tool_call_id": call.call_id, "content": "21 C and sunny"}],
        "tools": [{"type": "function", "function": {k: WEATHER[k] for k in ("name", "description", "parameters")}}],
        "tool_choice": "none", "max_tokens": 30, "temperature": 0}).json()
    assert answer.output_text == chat["choices"][0]["message"]["content"] and answer.output_text


class City(BaseModel):
    name: str
    country: str


def test_text_format_json_schema(client):
    parsed = client.responses.parse(model="m", input="Name a city in France.", text_format=City,
                                    max_output_tokens=60, temperature=0)
    assert isinstance(parsed.output_parsed, City)
    assert City.model_validate_json(parsed.output_text) == parsed.output_parsed


@pytest.mark.parametrize("fields, param, fragment", [
    ({"previous_response_id": "resp_1"}, "previous_response_id", "keeps no responses"),
    ({"input": [{"type": "image_generation_call", "id": "x"}]}, "input[0].type", "items are not supported"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
     "input[0].content[0].type", "parts are not supported"),
    ({"tools": [{"type": "web_search"}]}, "tools[0].type", "function tools"),
    ({"background": True}, "background", "not supported"),
    ({"unknown_field": 1}, "unknown_field", "unknown field"),
])
def test_what_kvgen_does_not_serve_is_a_400_naming_the_field(client, fields, param, fragment):
    body = {"model": "m", "input": "Hi", "max_output_tokens": 4, **fields}
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(**{k: v for k, v in body.items() if k != "unknown_field"},
                                extra_body={k: v for k, v in body.items() if k == "unknown_field"})
    assert e.value.body["param"] == param and fragment in e.value.body["message"], e.value.body
