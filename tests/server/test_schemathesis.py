"""Schemathesis against the server's own OpenAPI schema (/openapi.json), in process over ASGI
with the real SmolLM2: bodies that follow the schema and bodies that break it. Every answer
is a 2xx or a 4xx in OpenAI's error shape, never a 5xx; the run is bounded by a number of
examples per route and small generation limits (a valid request generates a few tokens)."""

from __future__ import annotations

import json

import schemathesis
from hypothesis import HealthCheck, settings

import kvgen
from kvgen.server.app import ServerLimits, create_app
from kvgen.server.protocol import RequestLimits

EXAMPLES = 40  # per route and generation mode


def _app():
    limits = ServerLimits(request=RequestLimits(max_prompts=4, max_rows=4, max_tokens=48), max_queued_tokens=4096,
                          max_queued_requests=64, max_body_bytes=1 << 20, request_timeout=None)
    return create_app(kvgen.load_default(), max_batch=4, limits=limits, allowed_hosts=("*",))


schema = schemathesis.openapi.from_asgi("/openapi.json", _app())


def openai_error_shape(ctx, response, case) -> None:
    """A 4xx answer is OpenAI's error JSON (Anthropic's on its /v1/messages)."""
    if 400 <= response.status_code < 500:
        body = json.loads(response.text)
        if case.path == "/v1/messages" and body.get("type") == "error":
            assert set(body["error"]) == {"type", "message"} and body["error"]["message"], body
            return
        assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}, body
        assert isinstance(body["error"]["message"], str) and body["error"]["message"]


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_the_server_never_answers_a_5xx(case):
    response = case.call()
    assert response.status_code < 500, (case.body, response.status_code, response.text[:500])  # not_a_server_error
    openai_error_shape(None, response, case)
