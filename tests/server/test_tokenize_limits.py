"""/tokenize within a limit (issue: it had none, and serialised its answer on the event loop:
one 6 MB prompt made /health take 4.4 s, four concurrent ones with ``return_token_strs`` added
1.0 GB). It counts at most ``--max-tokenize-tokens`` tokens (a text longer than 8 characters
per token of it is refused before it is encoded, a longer encoding after), a 400 naming the
flag; it takes its share of admission like every request that computes, and its answer is
computed and serialised in a worker thread."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from serve_process import ServeProcess

from kvgen.server.limits import ServerLimits
from kvgen.server.protocol import RequestLimits
from kvgen.server.tokenize import TOKENIZE_CHARS_PER_TOKEN

LIMIT = 64


@pytest.fixture(scope="module")
def server(local_app):
    return local_app(limits=ServerLimits(max_tokenize_tokens=LIMIT))


def assert_limit_400(r, param: str) -> None:
    assert r.status_code == 400, r.text[:300]
    error = r.json()["error"]
    assert error["param"] == param and error["code"] == "request_too_large", error
    assert "--max-tokenize-tokens" in error["message"] and str(LIMIT) in error["message"], error


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_four_six_megabyte_prompts_are_400s_and_health_stays_quick(tmp_path):
    served = ServeProcess(tmp_path / "serve.log", "--max-batch", "2", "--threads", "2")
    try:
        before = rss(served.proc.pid)
        prompt = "hello world, this is some text. " * 190_000  # 6.1 MB
        answers, latencies = [], []

        def post():
            answers.append(served.request("/tokenize", {"prompt": prompt, "return_token_strs": True}))

        posts = [threading.Thread(target=post) for _ in range(4)]
        for t in posts:
            t.start()
        while any(t.is_alive() for t in posts):
            start = time.perf_counter()
            served.health()
            latencies.append(time.perf_counter() - start)
            time.sleep(0.05)
        for t in posts:
            t.join()
        for status, _, body in answers:
            assert status == 400 and body["error"]["param"] == "prompt", body
            assert "--max-tokenize-tokens" in body["error"]["message"]
        assert max(latencies) < 1.0, latencies
        assert rss(served.proc.pid) - before < 200 << 20
        status, _, body = served.request("/tokenize", {"prompt": "Hi there", "return_token_strs": True})
        assert status == 200 and body["count"] == len(body["token_strs"]) > 0
    finally:
        served.stop()


@pytest.mark.parametrize("count", [1, 2, LIMIT // 2, LIMIT - 1, LIMIT])
@pytest.mark.parametrize("strs", [False, True])
def test_a_prompt_within_the_limit_is_tokenized(server, smollm2_model, count, strs):
    prompt = " a" * count  # one token per " a"
    ids = smollm2_model.encode(prompt)
    assert len(ids) == count
    r = server.post("/tokenize", json={"prompt": prompt, "return_token_strs": strs})
    assert r.status_code == 200, r.text[:300]
    body = r.json()
    assert body["tokens"] == ids and body["count"] == count and body["max_model_len"] == smollm2_model.context_length
    assert body["token_strs"] == ([smollm2_model.decode([t]) for t in ids] if strs else None)


@pytest.mark.parametrize("count", [LIMIT + 1, 2 * LIMIT, TOKENIZE_CHARS_PER_TOKEN * LIMIT // 2 - 1])
def test_a_prompt_that_encodes_past_the_limit_is_a_400(server, count):
    assert_limit_400(server.post("/tokenize", json={"prompt": " a" * count}), "prompt")


@pytest.mark.parametrize("chars", [TOKENIZE_CHARS_PER_TOKEN * LIMIT + 1, 10_000, 500_000])
def test_a_prompt_too_long_to_fit_is_refused_before_encoding(server, chars):
    r = server.post("/tokenize", json={"prompt": "x" * chars})
    assert_limit_400(r, "prompt")
    assert "characters" in r.json()["error"]["message"]


@pytest.mark.parametrize("turns", [1, 3])
def test_messages_within_the_limit_are_tokenized(server, smollm2_model, turns):
    messages = [{"role": "user", "content": "Hi"}] * turns
    r = server.post("/tokenize", json={"messages": messages})
    assert r.status_code == 200 and r.json()["tokens"] == smollm2_model.encode_chat(messages)


@pytest.mark.parametrize("content", [" a" * LIMIT, "x" * (TOKENIZE_CHARS_PER_TOKEN * LIMIT + 1)])
def test_messages_past_the_limit_are_a_400(server, content):
    assert_limit_400(server.post("/tokenize", json={"messages": [{"role": "user", "content": content}]}), "messages")


def test_the_limit_counts_the_special_tokens(server, smollm2_model):
    prompt = " a" * LIMIT
    with_special = len(smollm2_model.encode(prompt, add_special_tokens=True))
    r = server.post("/tokenize", json={"prompt": prompt, "add_special_tokens": True})
    assert (r.status_code == 200) == (with_special <= LIMIT)


def test_tokenize_takes_its_share_of_admission(local_app):
    busy = local_app(limits=ServerLimits(request=RequestLimits(), max_queued_tokens=8, max_tokenize_tokens=LIMIT))
    r = busy.post("/tokenize", json={"prompt": "Hi"})
    assert r.status_code == 429 and r.headers["retry-after"] == "1" and r.json()["error"]["code"] == "server_busy"
    assert busy.get("/health").json()["queued_requests"] == 0  # nothing held after the refusal


def test_a_tokenize_answer_leaves_nothing_held(server):
    assert server.post("/tokenize", json={"prompt": "Hi"}).status_code == 200
    health = server.get("/health").json()
    assert health["queued_tokens"] == 0 and health["queued_requests"] == 0


def test_the_default_limit_is_sized_from_the_context():
    assert ServerLimits.sized(8, 32768).max_tokenize_tokens == 2 * 32768
    assert ServerLimits.sized(8, 2048).max_tokenize_tokens == 1 << 14
    assert ServerLimits.sized(8, 2048, max_tokenize_tokens=100).max_tokenize_tokens == 100
