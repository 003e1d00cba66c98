"""JSON nested too deeply is a 400 naming where (issue: an assistant message whose
``tool_calls[].function.arguments`` nested 100,000 deep was a ``500 RecursionError``, through
/v1/chat/completions, /tokenize and ``kvgen batch``). Every value of a body is read without
recursion and refused past MAX_JSON_DEPTH levels, and the arguments' JSON text is parsed and
bounded the same way; the server keeps serving."""

from __future__ import annotations

import json

import pytest

from kvgen.batch import run
from kvgen.server.openapi import MAX_JSON_DEPTH
from kvgen.server.protocol import ApiError, chat_request, check_depth

DEEP = 100_000


def nested_text(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


def nested(depth: int, kind: str = "list"):
    value: object = 1
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


def history(arguments) -> list[dict]:
    return [{"role": "user", "content": "Add 1 and 2."},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "3"},
            {"role": "user", "content": "Thanks."}]


@pytest.fixture(scope="module")
def server(local_app):
    return local_app()


def assert_deep_400(r, param_start: str) -> None:
    assert r.status_code == 400, r.text[:300]
    error = r.json()["error"]
    assert error["code"] in ("nested_too_deeply", "invalid_json"), error
    assert "nested" in error["message"], error
    if error["code"] == "nested_too_deeply":
        assert error["param"].startswith(param_start), error


@pytest.mark.parametrize("route", ["/v1/chat/completions", "/tokenize"])
def test_arguments_nested_100k_deep_are_a_400(server, route):
    body = {"messages": history(nested_text(DEEP)), "max_tokens": 1}
    if route == "/tokenize":
        del body["max_tokens"]
    r = server.post(route, json=body)
    assert_deep_400(r, "messages[1].tool_calls[0].function.arguments")
    assert server.get("/health").status_code == 200


def test_arguments_nested_100k_deep_in_kvgen_batch_are_that_line_s_400(smollm2_model):
    lines = [{"custom_id": "deep", "method": "POST", "url": "/v1/chat/completions",
              "body": {"messages": history(nested_text(DEEP)), "max_tokens": 1}},
             {"custom_id": "fine", "method": "POST", "url": "/v1/completions",
              "body": {"prompt": "Hi", "max_tokens": 1, "temperature": 0}}]
    results = {r["custom_id"]: r for r in run(lines, smollm2_model, max_batch=2)}
    assert results["deep"]["response"]["status_code"] == 400
    assert results["deep"]["error"]["code"] == "nested_too_deeply"
    assert results["fine"]["error"] is None


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 200, 999, 5000])
def test_arguments_text_past_the_limit_is_a_400(server, depth):
    r = server.post("/v1/chat/completions", json={"messages": history(nested_text(depth)), "max_tokens": 1})
    assert_deep_400(r, "messages[1].tool_calls[0].function.arguments")


@pytest.mark.parametrize("depth", [1, 10, 40])
def test_arguments_text_within_the_limit_render(server, depth):
    arguments = json.dumps({"a": nested(depth)})
    r = server.post("/v1/chat/completions", json={"messages": history(arguments), "max_tokens": 1,
                                                  "temperature": 0})
    assert r.status_code == 200, r.text[:300]


@pytest.mark.parametrize("kind", ["list", "dict"])
@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH, 500])
def test_arguments_given_as_an_object_past_the_limit_are_a_400(server, kind, depth):
    r = server.post("/v1/chat/completions", json={"messages": history({"a": nested(depth, kind)}), "max_tokens": 1})
    assert_deep_400(r, "messages[1].tool_calls[0].function.arguments")


@pytest.mark.parametrize("field, value", [
    ("metadata", {"x": nested(200)}),
    ("response_format", {"type": "json_schema", "json_schema": {"name": "x", "schema": nested(100, "dict")}}),
    ("guided_json", nested(100, "dict")),
    ("tools", [{"type": "function", "function": {"name": "f", "parameters": nested(100, "dict")}}]),
    ("stop", nested(100)),
    ("logit_bias", nested(100, "dict")),
])
def test_any_field_nested_past_the_limit_is_a_400_naming_it(server, field, value):
    body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1, field: value}
    r = server.post("/v1/chat/completions", json=body)
    assert_deep_400(r, field)


def test_content_parts_nested_past_the_limit_are_a_400(server):
    r = server.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": nested(300)}]})
    assert_deep_400(r, "messages[0].content")


@pytest.mark.parametrize("route", ["/v1/completions", "/tokenize", "/detokenize"])
def test_a_body_nested_100k_deep_is_a_400(server, route):
    raw = '{"prompt": ' + nested_text(DEEP) + "}"
    r = server.post(route, content=raw, headers={"Content-Type": "application/json"})
    assert_deep_400(r, "prompt")


@pytest.mark.parametrize("route", ["/v1/completions", "/tokenize", "/detokenize"])
def test_a_body_nested_past_the_limit_is_a_400(server, route):
    r = server.post(route, json={"prompt": nested(300), "tokens": [1]})
    assert_deep_400(r, "prompt")


def test_check_depth_takes_any_depth_without_recursion():
    value = nested(DEEP)
    with pytest.raises(ApiError) as e:
        check_depth(value, "x")
    assert e.value.param.startswith("x") and e.value.code == "nested_too_deeply"
    check_depth(nested(MAX_JSON_DEPTH - 1), "x")


def test_chat_request_refuses_deep_arguments_with_an_api_error(smollm2_model):
    with pytest.raises(ApiError) as e:
        chat_request({"messages": history(nested_text(DEEP))}, smollm2_model)
    assert e.value.status == 400 and e.value.param == "messages[1].tool_calls[0].function.arguments"
