"""``kvgen serve`` against the official ``openai`` client: the server runs as a subprocess on
127.0.0.1 (a free port) with the real SmolLM2 model, started once for the module. The
reference for what it returns is kvgen's own single-request generation in this process."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request

import jsonschema
import numpy as np
import openai
import pytest
from serve_process import ServeProcess

import kvgen

API_KEY = "test-key"
MAX_BATCH = 8


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = ServeProcess(tmp_path_factory.mktemp("serve") / "serve.log", "--max-batch", str(MAX_BATCH), "--threads",
                        "2", "--api-key", API_KEY)
    yield proc.url
    proc.stop()


@pytest.fixture(scope="module")
def client(server):
    with openai.OpenAI(base_url=f"{server}/v1", api_key=API_KEY, max_retries=0, timeout=120) as c:
        yield c


@pytest.fixture
def model(smollm2_model):
    return smollm2_model


def reference(model, prompt, **fields) -> kvgen.GenerationResult:
    """kvgen's single-request generation: what the server's settings mean (top_k off when
    sampling, as OpenAI)."""
    config = kvgen.GenerationConfig(**({"top_k": 0} if fields.get("do_sample") else {}), **fields)
    return kvgen.Generator(model, config).generate([prompt])


def text(model, tokens) -> str:
    return model.decode(tokens, skip_special_tokens=True)


def health(server) -> dict:
    with urllib.request.urlopen(f"{server}/health", timeout=10) as r:
        return json.load(r)


PROMPT = "The three primary colors are"


def test_completion_is_the_greedy_continuation(client, model):
    out = client.completions.create(model="kvgen", prompt=PROMPT, max_tokens=8, temperature=0)
    ref = reference(model, model.encode(PROMPT), max_new_tokens=8)
    assert out.choices[0].text == text(model, ref.sequences[0][0])
    assert out.choices[0].finish_reason == "length" and out.object == "text_completion"
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (len(model.encode(PROMPT)), 8)
    assert out.usage.total_tokens == out.usage.prompt_tokens + 8


def test_streamed_completion_pieces_add_up_to_the_completion(client):
    whole = client.completions.create(model="kvgen", prompt=PROMPT, max_tokens=10, temperature=0)
    chunks = list(client.completions.create(model="kvgen", prompt=PROMPT, max_tokens=10, temperature=0, stream=True,
                                            stream_options={"include_usage": True}))
    pieces = [c.choices[0] for c in chunks if c.choices]
    assert "".join(p.text for p in pieces) == whole.choices[0].text
    assert pieces[-1].finish_reason == "length" and all(p.finish_reason is None for p in pieces[:-1])
    assert chunks[-1].usage.completion_tokens == 10 and chunks[-1].choices == []


def test_chat_uses_the_template_and_stops_at_the_end_of_turn(client, model):
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    out = client.chat.completions.create(model="kvgen", messages=messages, max_tokens=40, temperature=0)
    reply = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=40)).chat(messages)
    assert out.choices[0].message.content == reply and out.choices[0].message.role == "assistant"
    assert "<|im_end|>" not in reply
    expected_reason = "stop" if len(model.encode(reply, add_special_tokens=False)) < 40 else "length"
    assert out.choices[0].finish_reason == expected_reason
    chunks = list(client.chat.completions.create(model="kvgen", messages=messages, max_tokens=40, temperature=0,
                                                 stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == reply
    assert chunks[-1].choices[0].finish_reason == expected_reason


def test_n_choices_with_a_seed_are_reproducible_and_match_kvgen(client, model):
    args = dict(model="kvgen", prompt="Once upon a time", max_tokens=8, temperature=0.9, top_p=0.95, n=3, seed=11)
    first, again = client.completions.create(**args), client.completions.create(**args)
    texts = [c.text for c in sorted(first.choices, key=lambda c: c.index)]
    assert texts == [c.text for c in sorted(again.choices, key=lambda c: c.index)]
    ref = reference(model, model.encode("Once upon a time"), max_new_tokens=8, do_sample=True, temperature=0.9,
                    top_p=0.95, num_return_sequences=3, seed=11)
    assert texts == [text(model, s) for s in ref.sequences[0]]
    assert len(set(texts)) > 1
    other = client.completions.create(**{**args, "seed": 12})
    assert [c.text for c in other.choices] != texts


def test_greedy_n_repeats_the_greedy_choice(client):
    out = client.chat.completions.create(model="kvgen", messages=[{"role": "user", "content": "Hi"}], max_tokens=5,
                                         temperature=0, n=2)
    assert len(out.choices) == 2 and out.choices[0].message.content == out.choices[1].message.content


def test_stop_strings_end_the_text_before_the_stop(client):
    full = client.completions.create(model="kvgen", prompt="1, 2, 3, 4,", max_tokens=12, temperature=0).choices[0]
    assert " 6," in full.text
    cut = client.completions.create(model="kvgen", prompt="1, 2, 3, 4,", max_tokens=12, temperature=0,
                                    stop=[" 6", "zzz"]).choices[0]
    assert cut.text == full.text[:full.text.index(" 6")] and cut.finish_reason == "stop"
    streamed = client.completions.create(model="kvgen", prompt="1, 2, 3, 4,", max_tokens=12, temperature=0,
                                         stop=" 6", stream=True)
    pieces = [c.choices[0] for c in streamed]
    assert "".join(p.text for p in pieces) == cut.text and pieces[-1].finish_reason == "stop"


def test_logprobs_are_the_chosen_tokens_log_probabilities(client, model):
    out = client.completions.create(model="kvgen", prompt=PROMPT, max_tokens=6, temperature=0, logprobs=0)
    ref = reference(model, model.encode(PROMPT), max_new_tokens=6)
    lp = out.choices[0].logprobs
    assert np.allclose(lp.token_logprobs, ref.token_logprobs[0][0], atol=1e-6)
    assert lp.tokens == [model.decode([t]) for t in ref.sequences[0][0]]
    # the processed distribution, checked against a NumPy log-softmax of the model's logits (greedy: raw = processed)
    first = model.forward([model.encode(PROMPT)])[0, -1].astype(np.float64)
    log_softmax = first - first.max() - np.log(np.exp(first - first.max()).sum())
    assert lp.token_logprobs[0] == pytest.approx(log_softmax[ref.sequences[0][0][0]], abs=1e-4)
    chat = client.chat.completions.create(model="kvgen", messages=[{"role": "user", "content": "Hi"}], max_tokens=4,
                                          temperature=0, logprobs=True)
    content = chat.choices[0].logprobs.content
    assert len(content) == chat.usage.completion_tokens and all(c.logprob <= 0 for c in content)


def _log_softmax_rows(model, prompt: list[int], generated: list[int]) -> np.ndarray:
    """NumPy log-softmax of the model's logits before each generated token (greedy: raw = processed)."""
    logits = model.forward([prompt + generated])[0, len(prompt) - 1:-1].astype(np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _check_top(model, expected: np.ndarray, alternatives: list[tuple[str, float]], n: int) -> None:
    """The alternatives are the n most likely tokens (by text), most likely first, with their log-probabilities."""
    best = np.argsort(-expected)[:n]
    assert len(alternatives) == n
    assert [lp for _, lp in alternatives] == pytest.approx(expected[best].tolist(), abs=2e-3)
    for text, lp in alternatives:  # each text is a token whose log-probability it reports
        assert any(model.decode([int(t)]) == text for t in np.flatnonzero(np.abs(expected - lp) < 2e-3))


def test_chat_top_logprobs_are_the_log_softmax_top_n_streamed_and_not(client, model):
    messages = [{"role": "user", "content": "Name a fruit."}]
    args = dict(model="kvgen", messages=messages, max_tokens=4, temperature=0, logprobs=True, top_logprobs=3)
    content = client.chat.completions.create(**args).choices[0].logprobs.content
    streamed = [c for chunk in client.chat.completions.create(**args, stream=True) if chunk.choices
                and chunk.choices[0].logprobs for c in chunk.choices[0].logprobs.content]
    assert [c.model_dump() for c in streamed] == [c.model_dump() for c in content]
    prompt = model.encode(model.apply_chat_template(messages, add_generation_prompt=True), add_special_tokens=False)
    generated = [int(t) for t in reference(model, prompt, max_new_tokens=4).sequences[0][0][:len(content)]]
    rows = _log_softmax_rows(model, prompt, generated)
    for token, entry, expected in zip(generated, content, rows):
        assert entry.token == model.decode([token]) and entry.bytes == list(entry.token.encode())
        assert entry.logprob == pytest.approx(expected[token], abs=2e-3)
        _check_top(model, expected, [(t.token, t.logprob) for t in entry.top_logprobs], 3)
        assert all(t.bytes == list(t.token.encode()) for t in entry.top_logprobs)


def test_completion_top_logprobs_are_the_log_softmax_top_n_streamed_and_not(client, model):
    args = dict(model="kvgen", prompt=PROMPT, max_tokens=4, temperature=0, logprobs=5)
    lp = client.completions.create(**args).choices[0].logprobs
    pieces = [c.choices[0].logprobs for c in client.completions.create(**args, stream=True)
              if c.choices and c.choices[0].logprobs]
    assert sum((p.tokens for p in pieces), []) == lp.tokens
    assert sum((p.top_logprobs for p in pieces), []) == lp.top_logprobs
    assert lp.text_offset == [sum(len(t) for t in lp.tokens[:i]) for i in range(len(lp.tokens))]
    prompt = model.encode(PROMPT)
    generated = [int(t) for t in reference(model, prompt, max_new_tokens=4).sequences[0][0]]
    rows = _log_softmax_rows(model, prompt, generated)
    for token, text, logprob, top, expected in zip(generated, lp.tokens, lp.token_logprobs, lp.top_logprobs, rows):
        assert logprob == pytest.approx(expected[token], abs=2e-3)
        assert top[text] == pytest.approx(logprob)  # OpenAI's completions list the chosen token too (greedy: first)
        _check_top(model, expected, sorted(top.items(), key=lambda kv: -kv[1]), 5)


COLOR_SCHEMA = {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]},
                                                 "count": {"type": "integer", "minimum": 1, "maximum": 9}},
                "required": ["color", "count"], "additionalProperties": False}


def test_response_format_json_schema_and_json_object(client):
    messages = [{"role": "user", "content": "Describe a ball as JSON."}]
    schema_format = {"type": "json_schema", "json_schema": {"name": "ball", "schema": COLOR_SCHEMA, "strict": True}}
    for temperature, seed in [(0, None), (1.0, 7)]:
        out = client.chat.completions.create(model="kvgen", messages=messages, max_tokens=40, temperature=temperature,
                                             seed=seed, n=2, response_format=schema_format)
        for choice in out.choices:
            jsonschema.validate(json.loads(choice.message.content), COLOR_SCHEMA)
            assert choice.finish_reason == "stop"
    chunks = client.chat.completions.create(model="kvgen", messages=messages, max_tokens=40, temperature=0,
                                            response_format=schema_format, stream=True)
    jsonschema.validate(json.loads("".join(c.choices[0].delta.content or "" for c in chunks)), COLOR_SCHEMA)
    out = client.chat.completions.create(model="kvgen", messages=messages, max_tokens=60, temperature=0,
                                         response_format={"type": "json_object"})
    assert out.choices[0].finish_reason == "stop" and isinstance(json.loads(out.choices[0].message.content), dict)


def test_regex_and_choices_extras_under_kvgen_and_vllm_names(client):
    for name in ("regex", "guided_regex"):
        out = client.completions.create(model="kvgen", prompt="Call me at", max_tokens=12, temperature=0.8, seed=3,
                                        extra_body={name: r" [0-9]{3}-[0-9]{4}"})
        assert re.fullmatch(r" [0-9]{3}-[0-9]{4}", out.choices[0].text)
    for name in ("choices", "guided_choice"):
        out = client.chat.completions.create(model="kvgen", messages=[{"role": "user", "content": "Is water wet?"}],
                                             max_tokens=5, temperature=1.0, seed=1, n=3,
                                             extra_body={name: ["yes", "no", "maybe"]})
        assert all(c.message.content in ("yes", "no", "maybe") for c in out.choices)


INVALID_CONSTRAINTS = {
    "invalid schema": {"response_format": {"type": "json_schema",
                                           "json_schema": {"name": "x", "schema": {"type": "nonsense"}}}},
    "schema not an object": {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": 3}}},
    "unknown response_format": {"response_format": {"type": "yaml"}},
    "invalid regex": {"regex": "([0-9"},
    "invalid grammar": {"grammar": "start: undefined_rule"},
    "two constraints": {"regex": "a+", "choices": ["a"]},
}


@pytest.mark.parametrize("case", sorted(INVALID_CONSTRAINTS))
def test_an_invalid_constraint_gets_a_400_and_the_server_keeps_serving(server, client, case):
    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], **INVALID_CONSTRAINTS[case]}
    status, answer = _post(server, "/v1/chat/completions", json.dumps(body).encode())
    assert status == 400 and answer["error"]["type"] == "invalid_request_error", answer
    assert any(word in answer["error"]["message"] for word in ("json_schema", "regex", "grammar", "response_format",
                                                                "at most one")), answer
    assert client.completions.create(model="kvgen", prompt="Hi", max_tokens=2, temperature=0).choices[0].text


def _post(server, path, body: bytes, key: str = API_KEY):
    request = urllib.request.Request(f"{server}{path}", data=body, method="POST",
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


BAD_REQUESTS = {
    "unknown field": {"model": "m", "prompt": "Hi", "bogus": 1},
    "temperature out of range": {"model": "m", "prompt": "Hi", "temperature": 2.5},
    "top_p out of range": {"model": "m", "prompt": "Hi", "top_p": 0},
    "n out of range": {"model": "m", "prompt": "Hi", "n": 0},
    "more rows than slots": {"model": "m", "prompt": "Hi", "n": MAX_BATCH + 1, "temperature": 1},
    "max_tokens not an integer": {"model": "m", "prompt": "Hi", "max_tokens": "ten"},
    "penalty out of range": {"model": "m", "prompt": "Hi", "presence_penalty": 3},
    "logit_bias outside the vocabulary": {"model": "m", "prompt": "Hi", "logit_bias": {"99999999": 1}},
    "too many stop strings": {"model": "m", "prompt": "Hi", "stop": [str(i) for i in range(33)]},
    "prompt over the context": {"model": "m", "prompt": [1] * 9000},
    "completion over the context": {"model": "m", "prompt": "Hi", "max_tokens": 8192},
    "missing prompt": {"model": "m"},
}


@pytest.mark.parametrize("case", sorted(BAD_REQUESTS))
def test_a_bad_request_gets_a_400_and_the_server_keeps_serving(server, client, case):
    status, body = _post(server, "/v1/completions", json.dumps(BAD_REQUESTS[case]).encode())
    assert status == 400 and set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["type"] == "invalid_request_error" and body["error"]["message"]
    assert client.completions.create(model="kvgen", prompt="Hi", max_tokens=2, temperature=0).choices[0].text


def test_malformed_json_bad_chat_and_a_wrong_key(server, client):
    status, body = _post(server, "/v1/chat/completions", b'{"model": "m", "messages": [')
    assert status == 400 and body["error"]["code"] == "invalid_json"
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model="kvgen", messages=[{"role": "user"}])
    with pytest.raises(openai.BadRequestError, match="top_logprobs"):
        client.chat.completions.create(model="kvgen", messages=[{"role": "user", "content": "Hi"}], top_logprobs=2)
    with pytest.raises(openai.BadRequestError, match="top_logprobs"):
        client.chat.completions.create(model="kvgen", messages=[{"role": "user", "content": "Hi"}], logprobs=True,
                                       top_logprobs=21)
    status, body = _post(server, "/v1/completions", b'{"model": "m", "prompt": "Hi"}', key="wrong")
    assert status == 401 and body["error"]["code"] == "invalid_api_key"
    assert client.models.list().data[0].owned_by == "kvgen"
    assert health(server)["status"] == "ok"


# Each client's own settings: greedy, or seeded sampling with its temperature and penalties.
CLIENTS = [
    dict(prompt="The sun is", max_tokens=12, temperature=0),
    dict(prompt="My favourite food is", max_tokens=9, temperature=0.7, seed=1),
    dict(prompt="In 1969,", max_tokens=14, temperature=1.2, top_p=0.9, seed=2, presence_penalty=0.5),
    dict(prompt="def add(a, b):", max_tokens=10, temperature=0),
    dict(prompt="Dear friend,", max_tokens=11, temperature=0.5, seed=3, frequency_penalty=1.0),
    dict(prompt="Rain falls", max_tokens=7, temperature=0, stop=["."]),
    dict(prompt="Water boils at", max_tokens=13, temperature=0.9, seed=4, logit_bias={"13": -100}),
    dict(prompt="A haiku:", max_tokens=8, temperature=0.3, seed=5, n=2),
]


def _texts(client, settings) -> list[str]:
    out = client.completions.create(model="kvgen", **settings)
    return [c.text for c in sorted(out.choices, key=lambda c: c.index)]


def test_eight_concurrent_clients_get_what_each_gets_alone(client):
    results: dict[int, list[str]] = {}
    barrier = threading.Barrier(len(CLIENTS))

    def run(i):
        barrier.wait()
        results[i] = _texts(client, CLIENTS[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(CLIENTS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert sorted(results) == list(range(len(CLIENTS)))  # every request completed
    alone = {i: _texts(client, settings) for i, settings in enumerate(CLIENTS)}
    assert results == alone


def test_a_disconnected_stream_frees_its_slot_for_a_later_request(server, client, model):
    endless = dict(model="kvgen", prompt="Count: 1, 2, 3,", max_tokens=4000, temperature=0,
                   logit_bias={str(model.eos_token_id): -100}, stream=True)
    streams = [client.completions.create(**endless) for _ in range(MAX_BATCH)]  # every slot taken
    for s in streams:
        next(iter(s))
    assert health(server)["active_slots"] == MAX_BATCH
    later: list[str] = []
    waiting = threading.Thread(target=lambda: later.extend(_texts(client, dict(prompt="Hi", max_tokens=3,
                                                                                 temperature=0))))
    waiting.start()
    time.sleep(1.0)
    assert not later  # no slot yet
    streams[0].close()  # the client goes away mid-stream
    waiting.join(timeout=120)
    assert later and later[0]
    for s in streams[1:]:
        s.close()
    deadline = time.monotonic() + 60
    while health(server)["active_slots"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert health(server)["active_slots"] == 0


def test_the_server_gives_generate_s_tokens_and_log_probs_bit_for_bit(client, model):
    """One driver: a served completion is the engine request that generate, stream and
    generate_batch run (tests/generation/test_engine.py), log-probs equal to the last bit."""
    long = " ".join(f"item{i}" for i in range(30))  # longer than a prefill chunk
    for prompt, settings in ((PROMPT, dict(temperature=0)), (long, dict(temperature=0.8, top_p=0.9, seed=4))):
        out = client.completions.create(model="kvgen", prompt=prompt, max_tokens=8, logprobs=0, **settings)
        fields = dict(do_sample=True, temperature=0.8, top_p=0.9, seed=4) if settings["temperature"] else {}
        ref = reference(model, model.encode(prompt), max_new_tokens=8, **fields)
        lp = out.choices[0].logprobs
        assert lp.tokens == [model.decode([t]) for t in ref.sequences[0][0]]
        assert lp.token_logprobs == ref.token_logprobs[0][0].tolist()  # float32 -> JSON -> float: exact
