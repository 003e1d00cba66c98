"""kvgen serve with speculative decoding (prompt lookup), in process: a server default
(--speculative-ngram) and the per-request field give the plain server's greedy text, and the
usage reports the drafted and accepted tokens."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

import kvgen
from kvgen.server.app import create_app


@pytest.fixture(scope="module")
def model():
    return kvgen.load_default()


def _prompt() -> str:
    from pathlib import Path

    text = (Path(__file__).parent.parent / "data" / "pride_and_prejudice_ch1-2.txt").read_text()
    passage = " ".join(text.split()[200:280])
    return f"{passage}\n\nThe same passage again:\n\n{' '.join(passage.split()[:12])}"


def _complete(app, **fields) -> dict:
    with TestClient(app) as client:
        response = client.post("/v1/completions", json={"prompt": _prompt(), "max_tokens": 24, "temperature": 0,
                                                         **fields})
        assert response.status_code == 200, response.text
        return response.json()


def test_served_prompt_lookup_gives_the_plain_text_and_reports_acceptance(model):
    plain = _complete(create_app(model, max_batch=2, allowed_hosts=("*",)))
    assert "speculative" not in plain["usage"]
    by_flag = _complete(create_app(model, max_batch=2, allowed_hosts=("*",), speculative_ngram=8))
    by_field = _complete(create_app(model, max_batch=2, allowed_hosts=("*",)), prompt_lookup_num_tokens=8,
                         max_matching_ngram_size=3)
    for body in (by_flag, by_field):
        assert body["choices"][0]["text"] == plain["choices"][0]["text"]
        spec = body["usage"]["speculative"]
        assert spec["drafted_tokens"] > 0 and 0 < spec["accepted_tokens"] <= spec["drafted_tokens"]
        assert spec["acceptance_rate"] == spec["accepted_tokens"] / spec["drafted_tokens"]


def test_served_prompt_lookup_field_is_checked(model):
    with TestClient(create_app(model, max_batch=2, allowed_hosts=("*",))) as client:
        response = client.post("/v1/completions", json={"prompt": "Hi", "max_tokens": 2,
                                                         "prompt_lookup_num_tokens": 0})
        assert response.status_code == 400 and "prompt_lookup_num_tokens" in response.text
    with pytest.raises(ValueError, match="prompt_lookup_num_tokens"):
        create_app(model, speculative_ngram=0)


def _events(client, path: str, body: dict) -> list[dict]:
    import json

    with client.stream("POST", path, json=body) as response:
        assert response.status_code == 200
        lines = [line[len("data: "):] for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


def test_streamed_logprobs_under_prompt_lookup_are_the_whole_responses(model):
    # a verified step emits several tokens: the stream's chunks carry each token's log-prob and
    # top log-probs, together those of the non-streamed response and of the plain run
    fields = {"max_tokens": 24, "temperature": 0}
    with TestClient(create_app(model, max_batch=2, allowed_hosts=("*",))) as client:
        args = {"prompt": _prompt(), "logprobs": 3, **fields}
        plain = client.post("/v1/completions", json=args).json()["choices"][0]["logprobs"]
        spec = {**args, "prompt_lookup_num_tokens": 8}
        body = client.post("/v1/completions", json=spec).json()
        assert body["usage"]["speculative"]["accepted_tokens"] > 0  # steps of several tokens
        whole = body["choices"][0]["logprobs"]
        chunks = [c["choices"][0]["logprobs"] for c in _events(client, "/v1/completions", {**spec, "stream": True})
                  if c["choices"] and c["choices"][0]["logprobs"]]
        for key in ("tokens", "token_logprobs", "top_logprobs", "text_offset"):
            assert [x for c in chunks for x in c[key]] == whole[key], key
        assert whole["tokens"] == plain["tokens"]
        assert [sorted(t) for t in whole["top_logprobs"]] == [sorted(t) for t in plain["top_logprobs"]]
        chat = {"messages": [{"role": "user", "content": _prompt()}], "logprobs": True, "top_logprobs": 2,
                "prompt_lookup_num_tokens": 8, **fields}
        whole = client.post("/v1/chat/completions", json=chat).json()["choices"][0]["logprobs"]["content"]
        chunks = [c["choices"][0]["logprobs"]["content"] for c in _events(client, "/v1/chat/completions",
                                                                          {**chat, "stream": True})
                  if c["choices"] and c["choices"][0]["logprobs"]]
        assert [x for c in chunks for x in c] == whole
        assert all(len(x["top_logprobs"]) == 2 for x in whole)
