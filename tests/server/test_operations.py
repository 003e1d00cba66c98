"""The operations routes of ``kvgen serve``: vLLM's /tokenize and /detokenize (checked against
transformers' tokenizer for the same file) and /metrics in Prometheus' text format (parsed
with prometheus_client's own parser, its counts checked against the answers served)."""

from __future__ import annotations

import urllib.request

import pytest

MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a colour."}]


def test_tokenize_a_prompt_as_transformers_does(served, smollm2_hf_tokenizer, smollm2_model):
    text = "Hello, world! Ünïcödé and  spaces\n"
    status, _, body = served.request("/tokenize", {"model": "m", "prompt": text, "return_token_strs": True})
    assert status == 200, body
    expected = smollm2_hf_tokenizer(text)["input_ids"]
    assert body["tokens"] == expected and body["count"] == len(expected)
    assert body["max_model_len"] == smollm2_model.context_length
    assert body["token_strs"] == [smollm2_hf_tokenizer.decode([t]) for t in expected]
    status, _, plain = served.request("/tokenize", {"prompt": text, "add_special_tokens": False})
    assert plain["tokens"] == smollm2_hf_tokenizer(text, add_special_tokens=False)["input_ids"]
    assert plain["token_strs"] is None


def test_tokenize_messages_gives_the_chat_prompt(served, client, smollm2_hf_tokenizer):
    status, _, body = served.request("/tokenize", {"messages": MESSAGES})
    assert status == 200, body
    expected = smollm2_hf_tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=True,
                                                        return_dict=False)
    assert body["tokens"] == list(expected)
    out = client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=1)
    assert out.usage.prompt_tokens == body["count"]
    _, _, without = served.request("/tokenize", {"messages": MESSAGES, "add_generation_prompt": False})
    assert without["tokens"] == list(smollm2_hf_tokenizer.apply_chat_template(
        MESSAGES, add_generation_prompt=False, tokenize=True, return_dict=False))


def test_detokenize_as_transformers_does(served, smollm2_hf_tokenizer):
    ids = smollm2_hf_tokenizer("Détokenize me, please.")["input_ids"]
    status, _, body = served.request("/detokenize", {"model": "m", "tokens": ids})
    assert status == 200, body
    assert body == {"prompt": smollm2_hf_tokenizer.decode(ids)}


@pytest.mark.parametrize("path, body, param", [
    ("/tokenize", {"prompt": 5}, "prompt"),
    ("/tokenize", {"prompt": "a", "bogus": 1}, "bogus"),
    ("/tokenize", {"prompt": "\ud800"}, "prompt"),
    ("/tokenize", {"messages": []}, "messages"),
    ("/tokenize", {"messages": MESSAGES, "continue_final_message": True}, "continue_final_message"),
    ("/detokenize", {"tokens": [1, -1]}, "tokens[1]"),
    ("/detokenize", {"tokens": [10 ** 9]}, "tokens[0]"),
    ("/detokenize", {"tokens": "12"}, "tokens"),
    ("/detokenize", [1, 2], None),
])
def test_bad_tokenize_bodies_are_a_400_naming_the_field(served, path, body, param):
    status, _, answer = served.request(path, body)
    assert status == 400, answer
    assert answer["error"]["param"] == param, answer


def _metrics(served) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"{served.url}/metrics", timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_metrics_count_the_requests_and_tokens_served(served, client):
    served.wait_idle()
    before = _metrics(served)
    first = client.completions.create(model="m", prompt="Once upon a time", max_tokens=5, temperature=0)
    second = client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=3, temperature=0, stream=True,
                                            stream_options={"include_usage": True})
    usage = [c.usage for c in second if c.usage][0]
    status, _, _ = served.request("/v1/completions", {"prompt": "x", "max_tokens": -1})
    assert status == 400
    served.wait_idle()
    after = _metrics(served)

    def grew(name: str, labels: tuple = ()) -> float:
        return after.get((name, labels), 0.0) - before.get((name, labels), 0.0)

    prompt = first.usage.prompt_tokens + usage.prompt_tokens
    generated = first.usage.completion_tokens + usage.completion_tokens
    assert grew("kvgen:prompt_tokens_total") == prompt
    assert grew("kvgen:generation_tokens_total") == generated
    assert grew("kvgen:request_success_total", (("finished_reason", "length"),)) == 2
    assert grew("kvgen:request_failure_total", (("status", "400"),)) == 1
    assert grew("kvgen:time_to_first_token_seconds_count") == 2
    assert grew("kvgen:e2e_request_latency_seconds_count") == 2
    assert grew("kvgen:inter_token_latency_seconds_count") == generated - 2
    assert grew("kvgen:request_generation_tokens_sum") == generated
    assert grew("kvgen:request_prompt_tokens_sum") == prompt
    assert after[("kvgen:num_requests_running", ())] == 0 and after[("kvgen:num_requests_waiting", ())] == 0
    assert after[("kvgen:num_slots", ())] == 4 and after[("kvgen:num_slots_in_use", ())] == 0
    assert grew("kvgen:time_to_first_token_seconds_sum") > 0
