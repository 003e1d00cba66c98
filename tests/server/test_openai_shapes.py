"""OpenAI's response shapes and request conventions, with the official ``openai`` client
against a real ``kvgen serve`` subprocess (the real SmolLM2): a final streamed chunk with an
empty delta and the finish_reason, one choice per chunk under n > 1, GET /v1/models/{id},
``model`` optional, OpenAI's service options accepted, nested objects checked strictly,
many stop strings, /docs, and one-line start-up errors. The reference for the text is
kvgen's own single-request generation in this process."""

from __future__ import annotations

import socket
import subprocess
import sys

import numpy as np
import openai
import pytest

import kvgen
from kvgen.server.protocol import IGNORED_FIELDS, MAX_STOP_STRINGS

PROMPT = "The three primary colors are"


def greedy_text(model, prompt_ids, max_new_tokens) -> str:
    out = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=max_new_tokens)).generate([prompt_ids])
    return model.decode(out.sequences[0][0], skip_special_tokens=True)


def test_a_stream_ends_each_choice_with_an_empty_chunk_that_carries_the_finish_reason(client, smollm2_model):
    chunks = list(client.completions.create(model="m", prompt=PROMPT, max_tokens=6, temperature=0, stream=True))
    assert all(len(c.choices) == 1 for c in chunks)
    assert chunks[-1].choices[0].text == "" and chunks[-1].choices[0].finish_reason == "length"
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])
    assert "".join(c.choices[0].text for c in chunks) == greedy_text(smollm2_model, smollm2_model.encode(PROMPT), 6)

    messages = [{"role": "user", "content": "Name a color."}]
    chunks = list(client.chat.completions.create(model="m", messages=messages, max_tokens=6, temperature=0,
                                                 stream=True))
    last = chunks[-1].choices[0]
    assert last.delta.content is None and last.delta.role is None and last.finish_reason is not None
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])
    reply = kvgen.Generator(smollm2_model, kvgen.GenerationConfig(max_new_tokens=6)).chat(messages)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == reply


def test_n_choices_stream_one_choice_per_chunk(client, smollm2_model):
    args = dict(model="m", prompt="Once upon a time", max_tokens=5, temperature=0.9, n=3, seed=5)
    whole = client.completions.create(**args)
    chunks = list(client.completions.create(**args, stream=True))
    assert all(len(c.choices) == 1 for c in chunks)
    for choice in whole.choices:
        mine = [c.choices[0] for c in chunks if c.choices[0].index == choice.index]
        assert "".join(p.text for p in mine) == choice.text
        assert mine[-1].finish_reason == choice.finish_reason and mine[-1].text == ""
        assert sum(p.finish_reason is not None for p in mine) == 1

    chat = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}], max_tokens=4,
                                               temperature=0.9, n=2, seed=5, stream=True))
    assert all(len(c.choices) == 1 for c in chat)
    assert sorted(c.choices[0].index for c in chat if c.choices[0].delta.role == "assistant") == [0, 1]
    assert sorted(c.choices[0].index for c in chat if c.choices[0].finish_reason) == [0, 1]


def test_model_is_optional_and_the_model_card_is_served(client, served, smollm2_model):
    name = client.models.list().data[0].id
    assert client.models.retrieve(name).id == name
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("no-such-model")
    status, _, body = served.request("/v1/completions", {"prompt": PROMPT, "max_tokens": 3, "temperature": 0})
    assert status == 200 and body["model"] == name
    assert body["choices"][0]["text"] == greedy_text(smollm2_model, smollm2_model.encode(PROMPT), 3)
    status, _, body = served.request("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}],
                                                              "max_tokens": 2})
    assert status == 200 and body["model"] == name


def test_openai_service_options_are_accepted_and_unknown_fields_are_refused(client, served):
    options = {"metadata": {"k": "v"}, "store": False, "service_tier": "auto",
               "reasoning_effort": "low", "prompt_cache_key": "a", "safety_identifier": "u1"}
    assert set(options) <= set(IGNORED_FIELDS)
    out = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}], max_tokens=2,
                                         temperature=0, parallel_tool_calls=True, **options)
    assert out.choices[0].message.content
    status, _, body = served.request("/v1/completions", {"prompt": "Hi", "max_tokens": 2, "bogus_field": 1})
    assert status == 400 and "bogus_field" in body["error"]["message"] and body["error"]["param"] == "bogus_field"


NESTED = {
    "response_format extra key": {"response_format": {"type": "json_object", "bogus": 1}},
    "json_schema extra key": {"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object"}, "bogus": 1}}},
    "text extra key": {"response_format": {"type": "text", "json_schema": {"schema": {}}}},
    "json_schema strict not a bool": {"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object"}, "strict": "yes"}}},
    "stream_options extra key": {"stream": True, "stream_options": {"include_usage": True, "bogus": 1}},
    "json_object invalid schema": {"response_format": {"type": "json_object", "schema": {"type": 5}}},
    "json_schema invalid schema": {"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "properties": {"a": {"minimum": "zero"}}}}}},
}


@pytest.mark.parametrize("case", sorted(NESTED))
def test_nested_objects_are_checked_as_strictly_as_the_body(served, case):
    body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, **NESTED[case]}
    status, _, answer = served.request("/v1/chat/completions", body)
    assert status == 400, answer
    assert set(answer["error"]) == {"message", "type", "param", "code"}


def test_json_object_with_a_schema_follows_it(client):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
              "additionalProperties": False}
    out = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Give a number as JSON."}],
                                         max_tokens=30, temperature=0,
                                         response_format={"type": "json_object", "schema": schema})
    import json

    import jsonschema
    jsonschema.validate(json.loads(out.choices[0].message.content), schema)


def test_up_to_the_documented_number_of_stop_strings(client, smollm2_model):
    assert MAX_STOP_STRINGS >= 32
    full = greedy_text(smollm2_model, smollm2_model.encode("1, 2, 3, 4,"), 12)
    assert " 6," in full
    stops = [f"zz{i}" for i in range(MAX_STOP_STRINGS - 1)] + [" 6"]
    cut = client.completions.create(model="m", prompt="1, 2, 3, 4,", max_tokens=12, temperature=0,
                                    stop=stops).choices[0]
    assert cut.text == full[:full.index(" 6")] and cut.finish_reason == "stop"
    with pytest.raises(openai.BadRequestError):
        client.completions.create(model="m", prompt="Hi", max_tokens=2, stop=stops + ["one more"])


def test_docs_and_the_schema_are_served(served):
    status, _, schema = served.request("/openapi.json", method="GET")
    assert status == 200 and "/v1/models/{model_id}" in schema["paths"]
    assert "store" in schema["components"]["schemas"]["ChatRequest"]["properties"]
    assert "model" not in schema["components"]["schemas"]["ChatRequest"].get("required", [])
    import urllib.request
    with urllib.request.urlopen(f"{served.url}/docs", timeout=10) as r:
        assert r.status == 200 and "swagger" in r.read().decode().lower()


def _start_error(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvgen", "serve", *args], capture_output=True, text=True,
                          timeout=120)


def test_start_up_errors_are_one_line_and_exit_2(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cases = {"in use": _start_error("--port", str(port)),
                 "out of range": _start_error("--port", "80000")}
    (tmp_path / "bad.gguf").write_bytes(b"GGUF" + b"\0" * 60)
    cases["bad model"] = _start_error("--model", str(tmp_path / "bad.gguf"), "--port", "0")
    cases["no model"] = _start_error("--model", str(tmp_path / "missing.gguf"), "--port", "0")
    for case, run in cases.items():
        assert run.returncode == 2, (case, run.stderr)
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("kvgen: error: "), (case, run.stderr)
    assert "in use" in cases["in use"].stderr and "80000" in cases["out of range"].stderr


# ---- prompt log-probs (evaluation: lm-eval's loglikelihood reads an echo's token_logprobs) ----

def reference_logprobs(model, ids: list[int]) -> np.ndarray:
    """log-softmax of Model.forward's logits ([length - 1, vocab]: row i scores token i + 1)."""
    logits = model.forward(np.asarray(ids, dtype=np.int64)[None])[0, :-1].astype(np.float64)
    return logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)


SCORED = "The capital of France is Paris, and the capital of Italy is Rome."


def test_echo_with_logprobs_scores_the_prompt(client, smollm2_model):
    ids = smollm2_model.encode(SCORED)
    ref = reference_logprobs(smollm2_model, ids)
    expected = [float(ref[i, ids[i + 1]]) for i in range(len(ids) - 1)]
    out = client.completions.create(model="m", prompt=SCORED, max_tokens=0, echo=True, logprobs=2)
    choice = out.choices[0]
    assert choice.text == smollm2_model.decode(ids) and out.usage.completion_tokens == 0
    lp = choice.logprobs
    assert len(lp.tokens) == len(ids) and lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    np.testing.assert_allclose(lp.token_logprobs[1:], expected, atol=2e-3)
    for i in range(1, len(ids)):  # the two most likely tokens at each position, and the token itself
        best = np.argsort(-ref[i - 1])[:2]
        assert {smollm2_model.decode([int(t)]) for t in best} | {lp.tokens[i]} == set(lp.top_logprobs[i])

    # with generated tokens: the prompt's scores, then the generation's own (as without echo)
    plain = client.completions.create(model="m", prompt=SCORED, max_tokens=3, temperature=0, logprobs=0)
    both = client.completions.create(model="m", prompt=SCORED, max_tokens=3, temperature=0, logprobs=0, echo=True)
    lp = both.choices[0].logprobs
    assert lp.tokens == [smollm2_model.decode([t]) for t in ids] + plain.choices[0].logprobs.tokens
    np.testing.assert_allclose(lp.token_logprobs[1:len(ids)], expected, atol=2e-3)
    assert lp.token_logprobs[len(ids):] == plain.choices[0].logprobs.token_logprobs
    assert both.choices[0].text == smollm2_model.decode(ids) + plain.choices[0].text

    with pytest.raises(openai.BadRequestError):
        client.completions.create(model="m", prompt=SCORED, max_tokens=0)
    one = client.completions.create(model="m", prompt=ids[:1], max_tokens=0, echo=True, logprobs=1)
    assert one.choices[0].logprobs.token_logprobs == [None]


def test_vllm_prompt_logprobs_on_both_endpoints(served, smollm2_model):
    ids = smollm2_model.encode(SCORED)
    status, _, body = served.request("/v1/completions", {"prompt": SCORED, "max_tokens": 1, "temperature": 0,
                                                         "prompt_logprobs": 1})
    assert status == 200, body
    messages = [{"role": "user", "content": SCORED}]
    chat_ids = smollm2_model.encode_chat(messages, add_generation_prompt=True)
    status, _, chat = served.request("/v1/chat/completions", {"messages": messages, "max_tokens": 1,
                                                              "prompt_logprobs": 0})
    assert status == 200, chat
    for got, prompt in ((body["choices"][0]["prompt_logprobs"], ids), (chat["prompt_logprobs"], chat_ids)):
        ref = reference_logprobs(smollm2_model, prompt)
        assert len(got) == len(prompt) and got[0] is None
        for i in range(1, len(prompt)):
            entry = got[i][str(prompt[i])]
            assert entry["logprob"] == pytest.approx(ref[i - 1, prompt[i]], abs=2e-3)
            rank = 1 + int((ref[i - 1] > ref[i - 1, prompt[i]]).sum())
            assert abs(entry["rank"] - rank) <= 1  # a near-tie may order otherwise within float noise
            assert entry["decoded_token"] == smollm2_model.decode([prompt[i]])
    assert all(len(e) <= 2 for e in body["choices"][0]["prompt_logprobs"][1:])
    assert all(len(e) == 1 for e in chat["prompt_logprobs"][1:])
