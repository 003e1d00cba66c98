"""The request bodies are validated by the pydantic models that /openapi.json publishes: what the
schema refuses, the protocol refuses, with OpenAI's error naming the field (its path inside
nested objects and lists), and what it accepts reaches the GenerationConfig."""

from __future__ import annotations

import pydantic
import pytest

from kvgen.server.openapi import ChatRequest, CompletionRequest
from kvgen.server.protocol import ApiError, chat_request, completion_request

HI = [{"role": "user", "content": "Hi"}]

# body fields -> (param, code) of the 400
REFUSED = {
    "unknown field": (dict(prompt="a", bogus_field=1), "bogus_field", "unknown_field"),
    "missing prompt": (dict(prompt=None), "prompt", "missing_required_parameter"),
    "string for a number": (dict(prompt="a", temperature="1"), "temperature", "invalid_value"),
    "boolean for an integer": (dict(prompt="a", n=True), "n", "invalid_value"),
    "NaN": (dict(prompt="a", top_p=float("nan")), "top_p", "invalid_value"),
    "out of range": (dict(prompt="a", top_k=2**63), "top_k", "invalid_value"),
    "empty stop string": (dict(prompt="a", stop=["x", ""]), "stop[1]", "invalid_value"),
    "33 stop strings": (dict(prompt="a", stop=["x"] * 33), "stop", "invalid_value"),
    "stop of another type": (dict(prompt="a", stop=5), "stop", "invalid_value"),
    "bias out of range": (dict(prompt="a", logit_bias={"5": 101}), "logit_bias[5]", "invalid_value"),
    "bias outside the vocabulary": (dict(prompt="a", logit_bias={"99999999": 1}), "logit_bias", "invalid_value"),
    "nested unknown key": (dict(prompt="a", stream_options={"bogus": 1}), "stream_options.bogus", "unknown_field"),
    "text format with a schema": (dict(prompt="a", response_format={"type": "text", "json_schema": {}}),
                                  "response_format.json_schema", "unknown_field"),
    "unknown format": (dict(prompt="a", response_format={"type": "xml"}), "response_format", "invalid_value"),
    "json_schema without it": (dict(prompt="a", response_format={"type": "json_schema"}),
                               "response_format.json_schema", "missing_required_parameter"),
    "invalid JSON schema": (dict(prompt="a", guided_json={"type": 5}), "guided_json", "invalid_value"),
}

CHAT_REFUSED = {
    "no messages": (dict(messages=[]), "messages", "invalid_value"),
    "role not a string": (dict(messages=[{"role": 5, "content": "x"}]), "messages[0].role", "invalid_value"),
    "image part": (dict(messages=[{"role": "user", "content": [{"type": "image_url"}]}]),
                   "messages[0].content[0].type", "invalid_value"),
    "tool name": (dict(messages=HI, tools=[{"type": "function", "function": {"name": "a b"}}]),
                  "tools[0].function.name", "invalid_value"),
    "tool parameters": (dict(messages=HI, tools=[{"type": "function", "function": {"name": "f",
                                                                                   "parameters": {"type": 5}}}]),
                        "tools[0].function.parameters", "invalid_value"),
    "tool choice without a name": (dict(messages=HI, tool_choice={"type": "function"}), "tool_choice.function",
                                   "missing_required_parameter"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_completion_body_the_model_refuses_is_a_400_naming_the_field(smollm2_model, case):
    body, param, code = REFUSED[case]
    with pytest.raises(ApiError) as e:
        completion_request(body, smollm2_model)
    assert (e.value.status, e.value.param, e.value.code) == (400, param, code), e.value.message
    top = param.split(".")[0].split("[")[0]  # the message names the field (or the object holding it)
    assert e.value.message.startswith((f"'{top}", f"unknown field(s): {top}")), e.value.message
    if case not in ("bias outside the vocabulary", "missing prompt"):  # the vocabulary is the model's
        with pytest.raises(pydantic.ValidationError):
            CompletionRequest.model_validate(body)


@pytest.mark.parametrize("case", sorted(CHAT_REFUSED))
def test_a_chat_body_the_model_refuses_is_a_400_naming_the_field(smollm2_model, case):
    body, param, code = CHAT_REFUSED[case]
    with pytest.raises(ApiError) as e:
        chat_request(body, smollm2_model)
    assert (e.value.status, e.value.param, e.value.code) == (400, param, code), e.value.message
    with pytest.raises(pydantic.ValidationError):
        ChatRequest.model_validate(body)


def test_what_the_model_accepts_reaches_the_config(smollm2_model):
    req = completion_request(dict(prompt="a", temperature=1, top_p=0.5, stop="x", seed=3, logit_bias={"5": -100},
                                  max_tokens=3, response_format={"type": "json_object"}), smollm2_model)
    config = req.config
    assert (config.temperature, config.top_p, config.seed, config.max_new_tokens) == (1.0, 0.5, 3, 3)
    assert req.stops == ["x"] and config.logit_bias == {5: -100.0} and config.json_schema == '{"type": "object"}'


@pytest.mark.parametrize("kind", [{}, [], 5, None, "xml"])
def test_a_response_format_type_of_any_json_value_is_a_400(smollm2_model, kind):
    with pytest.raises(ApiError) as e:
        completion_request(dict(prompt="a", response_format={"type": kind}), smollm2_model)
    assert (e.value.status, e.value.param) == (400, "response_format")
