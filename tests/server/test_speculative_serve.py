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
