"""CORS for ``kvgen serve --allowed-origins`` (issue: responses carried no ``Access-Control-*``
headers, and a browser's preflight ``OPTIONS`` got a 405, or a 401 with ``--api-key``). A page
of an allowed origin gets its preflight answered without the key, and every answer, errors
included, names the origin; any other origin gets none of it."""

from __future__ import annotations

import pytest

KEY = "sk-test"
ORIGIN = "https://app.example"
OTHER = "https://evil.example"


@pytest.fixture(scope="module")
def keyed(local_app):
    return local_app(api_key=KEY, allowed_origins=(ORIGIN, "http://localhost:5173"))


@pytest.fixture(scope="module")
def open_server(local_app):
    return local_app(allowed_origins=("*",))


@pytest.fixture(scope="module")
def plain(local_app):
    return local_app()


def preflight(client, path="/v1/chat/completions", origin=ORIGIN, method="POST",
              headers="authorization, content-type"):
    sent = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers is not None:
        sent["Access-Control-Request-Headers"] = headers
    return client.options(path, headers=sent)


def chat_body():
    return {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "temperature": 0}


def test_a_preflight_is_answered_without_the_api_key(keyed):
    r = preflight(keyed)
    assert r.status_code == 204, r.text
    assert r.headers["access-control-allow-origin"] == ORIGIN
    assert set(r.headers["access-control-allow-methods"].split(", ")) == {"GET", "POST"}
    assert r.headers["access-control-allow-headers"] == "authorization, content-type"
    assert int(r.headers["access-control-max-age"]) > 0
    assert "Origin" in r.headers["vary"]


def test_the_answer_after_the_preflight_carries_the_origin(keyed):
    r = keyed.post("/v1/chat/completions", json=chat_body(),
                   headers={"Origin": ORIGIN, "Authorization": f"Bearer {KEY}"})
    assert r.status_code == 200, r.text
    assert r.headers["access-control-allow-origin"] == ORIGIN
    assert r.json()["choices"][0]["message"]["content"] is not None


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize",
                                  "/v1/models", "/health", "/metrics", "/tokenizer_info", "/no/such/route"])
def test_every_path_answers_a_preflight(keyed, path):
    r = preflight(keyed, path)
    assert r.status_code == 204 and r.headers["access-control-allow-origin"] == ORIGIN, r.text


@pytest.mark.parametrize("method", ["GET", "POST", "get", "post"])
def test_a_preflight_for_the_routes_methods(keyed, method):
    r = preflight(keyed, method=method)
    assert r.status_code == 204 and r.headers["access-control-allow-origin"] == ORIGIN


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "TRACE"])
def test_a_preflight_for_another_method_is_a_405_with_allow(keyed, method):
    r = preflight(keyed, method=method)
    assert r.status_code == 405 and r.headers["allow"] == "GET, POST"
    assert r.json()["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize("headers", ["x-stainless-os, x-stainless-lang, authorization", "content-type", None])
def test_the_headers_a_preflight_asks_for_are_allowed(keyed, headers):
    r = preflight(keyed, headers=headers)
    assert r.status_code == 204
    assert r.headers.get("access-control-allow-headers") == headers


@pytest.mark.parametrize("headers", ["a b", "content-type\r\nx: y", "x;y", ", ,"])
def test_a_preflight_asking_for_malformed_headers_is_a_400(keyed, headers):
    r = preflight(keyed, headers=headers)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_value"


def test_a_preflight_from_another_origin_is_refused(keyed):
    r = preflight(keyed, origin=OTHER)
    assert r.status_code == 403 and r.json()["error"]["code"] == "origin_not_allowed"
    assert "access-control-allow-origin" not in r.headers


@pytest.mark.parametrize("origin", [ORIGIN + "/", ORIGIN.upper(), "http://localhost:5173"])
def test_origins_are_matched_without_case_or_trailing_slash(keyed, origin):
    r = preflight(keyed, origin=origin)
    assert r.status_code == 204 and r.headers["access-control-allow-origin"] == origin


def test_an_error_answer_names_the_origin_so_the_page_can_read_it(keyed):
    r = keyed.post("/v1/chat/completions", json=chat_body(), headers={"Origin": ORIGIN})  # no key
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    assert r.headers["access-control-allow-origin"] == ORIGIN
    r = keyed.post("/v1/chat/completions", json={"messages": []},
                   headers={"Origin": ORIGIN, "Authorization": f"Bearer {KEY}"})
    assert r.status_code == 400 and r.headers["access-control-allow-origin"] == ORIGIN
    assert "Retry-After" in r.headers["access-control-expose-headers"]


def test_an_options_request_that_is_not_a_preflight_needs_the_key(keyed):
    r = keyed.options("/v1/models", headers={"Origin": ORIGIN})
    assert r.status_code == 401


def test_a_request_without_origin_gets_no_cors_headers(keyed):
    r = keyed.get("/health")
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


@pytest.mark.parametrize("origin", ["https://any.example", "http://10.0.0.1:3000", "https://x.y.z"])
def test_a_wildcard_allows_any_origin(open_server, origin):
    r = preflight(open_server, origin=origin)
    assert r.status_code == 204 and r.headers["access-control-allow-origin"] == origin
    r = open_server.get("/v1/models", headers={"Origin": origin})
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == origin


def test_a_null_origin_gets_no_cors_even_with_a_wildcard(open_server):
    r = open_server.get("/v1/models", headers={"Origin": "null"})
    assert "access-control-allow-origin" not in r.headers


def test_without_allowed_origins_a_loopback_page_passes_but_gets_no_cors(plain):
    r = plain.get("/v1/models", headers={"Origin": "http://localhost:3000"})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    r = preflight(plain, origin="http://localhost:3000")
    assert r.status_code == 405 and r.headers["allow"]


def test_the_host_check_still_applies_to_a_preflight(keyed):
    r = keyed.options("/v1/models", headers={"Origin": ORIGIN, "Access-Control-Request-Method": "GET",
                                             "Host": "rebound.example"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "host_not_allowed"
