"""The OpenAPI schema says what the server accepts (issue: bodies the schema allowed were
refused, so schemathesis and generated clients disagreed with the server). Each body here is
checked against the served /openapi.json with jsonschema and sent to the server: valid under
the schema exactly when the server answers 200. Also: ``n`` past ``--max-batch`` is a 400 that
names ``n`` with a code, and a 405 names the allowed methods."""

from __future__ import annotations

import jsonschema
import pytest

MAX_BATCH = 2


@pytest.fixture(scope="module")
def server(local_app):
    return local_app(max_batch=MAX_BATCH)


@pytest.fixture(scope="module")
def schema(server):
    return server.get("/openapi.json").json()


def valid(schema: dict, name: str, body) -> bool:
    root = {"$ref": f"#/components/schemas/{name}", "components": schema["components"]}
    return jsonschema.Draft202012Validator(root).is_valid(body)


def completion(**fields) -> dict:
    return {"prompt": "Hi", "max_tokens": 1, "temperature": 0, **fields}


def chat(*messages, **fields) -> dict:
    return {"messages": list(messages) or [{"role": "user", "content": "Hi"}], "max_tokens": 1, "temperature": 0,
            **fields}


CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}

CASES = [
    # the bodies: schema-valid but refused before
    ("/v1/completions", "CompletionRequest", completion(prompt=""), False),
    ("/detokenize", "DetokenizeRequest", {"tokens": [1, -1]}, False),
    ("/v1/chat/completions", "ChatRequest", chat({"role": "user"}), False),
    # prompts
    ("/v1/completions", "CompletionRequest", completion(prompt="a"), True),
    ("/v1/completions", "CompletionRequest", completion(prompt=["a", "b"]), True),
    ("/v1/completions", "CompletionRequest", completion(prompt=[1, 2]), True),
    ("/v1/completions", "CompletionRequest", completion(prompt=[[1], [2, 3]]), True),
    ("/v1/completions", "CompletionRequest", completion(prompt=[]), False),
    ("/v1/completions", "CompletionRequest", completion(prompt=[""]), False),
    ("/v1/completions", "CompletionRequest", completion(prompt=["a", ""]), False),
    ("/v1/completions", "CompletionRequest", completion(prompt=[[]]), False),
    ("/v1/completions", "CompletionRequest", completion(prompt=[[1], []]), False),
    ("/v1/completions", "CompletionRequest", completion(prompt=[-1]), False),
    ("/v1/completions", "CompletionRequest", completion(prompt=[[0, -5]]), False),
    ("/v1/completions", "CompletionRequest", completion(prompt=[True]), False),
    # messages: content required, except an assistant's with tool_calls
    ("/v1/chat/completions", "ChatRequest", chat({"role": "user", "content": ""}), True),
    ("/v1/chat/completions", "ChatRequest", chat({"role": "user", "content": None}), False),
    ("/v1/chat/completions", "ChatRequest", chat({"role": "system"}, {"role": "user", "content": "Hi"}), False),
    ("/v1/chat/completions", "ChatRequest", chat({"role": "user", "content": [{"type": "text", "text": "Hi"}]}),
     True),
    ("/v1/chat/completions", "ChatRequest", chat({"role": "user", "content": "Hi"}, {"role": "assistant"}), False),
    ("/v1/chat/completions", "ChatRequest",
     chat({"role": "user", "content": "Hi"}, {"role": "assistant", "tool_calls": [CALL]},
          {"role": "user", "content": "And?"}), True),
    ("/v1/chat/completions", "ChatRequest",
     chat({"role": "user", "content": "Hi"}, {"role": "assistant", "content": None, "tool_calls": [CALL]},
          {"role": "user", "content": "And?"}), True),
    ("/v1/chat/completions", "ChatRequest",
     chat({"role": "user", "content": "Hi"}, {"role": "assistant", "content": None},
          {"role": "user", "content": "And?"}), False),
    ("/v1/chat/completions", "ChatRequest",
     chat({"role": "user", "tool_calls": [CALL]}), False),
    ("/v1/chat/completions", "ChatRequest",
     chat({"role": "user", "content": "Hi"}, {"role": "assistant", "tool_calls": [{"id": "x", "function": {}}]},
          {"role": "user", "content": "And?"}), False),
    ("/v1/chat/completions", "ChatRequest",
     chat({"role": "user", "content": "Hi"}, {"role": "assistant", "tool_calls": [{"function": {"name": 5}}]},
          {"role": "user", "content": "And?"}), False),
    # token ids
    ("/detokenize", "DetokenizeRequest", {"tokens": []}, True),
    ("/detokenize", "DetokenizeRequest", {"tokens": [0, 1, 2]}, True),
    ("/detokenize", "DetokenizeRequest", {"tokens": [-5]}, False),
    ("/detokenize", "DetokenizeRequest", {"tokens": [1.5]}, False),
    # logit_bias keys: canonical ids only
    ("/v1/completions", "CompletionRequest", completion(logit_bias={"10": 1.0}), True),
    ("/v1/completions", "CompletionRequest", completion(logit_bias={"1_0": 1.0}), False),
    ("/v1/completions", "CompletionRequest", completion(logit_bias={"a": 1.0}), False),
    ("/tokenize", "TokenizeRequest", {"prompt": "Hi"}, True),
    ("/tokenize", "TokenizeRequest", {"messages": [{"role": "user"}]}, False),
]


@pytest.mark.parametrize("path, name, body, accepted", CASES)
def test_the_schema_accepts_what_the_server_accepts(server, schema, path, name, body, accepted):
    assert valid(schema, name, body) == accepted, body
    r = server.post(path, json=body)
    assert (r.status_code == 200) == accepted, (body, r.status_code, r.text[:300])
    if not accepted:
        error = r.json()["error"]
        assert r.status_code == 400 and error["param"] and error["code"], error


@pytest.mark.parametrize("route", ["/v1/completions", "/v1/chat/completions"])
@pytest.mark.parametrize("n", [MAX_BATCH + 1, 16])
def test_n_past_max_batch_names_n_and_a_code(server, route, n):
    body = completion(n=n, temperature=1.0) if route == "/v1/completions" else chat(n=n, temperature=1.0)
    r = server.post(route, json=body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == "n" and error["code"] == "invalid_value" and "--max-batch" in error["message"], error


@pytest.mark.parametrize("n", [1, MAX_BATCH])
def test_n_up_to_max_batch_samples(server, n):
    r = server.post("/v1/completions", json=completion(n=n, temperature=1.0, seed=1))
    assert r.status_code == 200 and len(r.json()["choices"]) == n


def test_greedy_n_past_max_batch_repeats_the_greedy_choice(server):
    r = server.post("/v1/completions", json=completion(n=MAX_BATCH + 1))
    assert r.status_code == 200 and len({c["text"] for c in r.json()["choices"]}) == 1


@pytest.mark.parametrize("method, path, allowed", [
    ("GET", "/v1/completions", {"POST"}), ("PUT", "/v1/chat/completions", {"POST"}),
    ("DELETE", "/tokenize", {"POST"}), ("GET", "/detokenize", {"POST"}),
    ("POST", "/health", {"GET"}), ("POST", "/v1/models", {"GET"}), ("PATCH", "/tokenizer_info", {"GET"}),
])
def test_a_405_names_the_allowed_methods(server, method, path, allowed):
    r = server.request(method, path, headers={"Content-Type": "application/json"})
    assert r.status_code == 405, r.text
    assert set(m.strip() for m in r.headers["allow"].split(",")) >= allowed
    assert r.json()["error"]["code"] == "method_not_allowed"
