"""``logit_bias`` keys are token ids in canonical ASCII decimal (issue: Python's int() read
"1_0", " 10 " and "١٠" (Arabic-Indic digits) all as token 10). Any other spelling is a 400
naming ``logit_bias``; canonical ids bias the token they name."""

from __future__ import annotations

import pytest

from kvgen.server.protocol import ApiError, chat_request, completion_request

NOT_CANONICAL = [
    "1_0", " 10 ", "١٠",  # the issue's: underscore, spaces, Arabic-Indic digits
    "10 ", " 10", "\t10", "10\n", "+10", "-10", "-0", "010", "00", "0x0a", "0o12", "0b1010", "1e1", "10.0",
    "10.", ".5", "", " ", "１０", "१०", "߁߀", "𝟏𝟎", "10a", "a10", "ten", "1,0", "1 0", "10\x00", "inf", "nan",
    "99999999999",  # more digits than any vocabulary has ids
]


@pytest.mark.parametrize("key", NOT_CANONICAL)
def test_a_key_that_is_not_a_canonical_id_is_a_400_naming_logit_bias(smollm2_model, key):
    body = {"prompt": "Hi", "max_tokens": 1, "logit_bias": {key: 5}}
    with pytest.raises(ApiError) as e:
        completion_request(body, smollm2_model)
    assert e.value.status == 400 and e.value.param == "logit_bias", (key, e.value.param)
    assert "not a token id" in e.value.message or "vocabulary" in e.value.message, e.value.message
    with pytest.raises(ApiError) as e:
        chat_request({"messages": [{"role": "user", "content": "Hi"}], "logit_bias": {key: 5}}, smollm2_model)
    assert e.value.param == "logit_bias"


@pytest.mark.parametrize("key, token", [("0", 0), ("10", 10), ("123", 123), ("49151", 49151)])
def test_a_canonical_id_biases_that_token(smollm2_model, key, token):
    req = completion_request({"prompt": "Hi", "max_tokens": 1, "logit_bias": {key: -7.5}}, smollm2_model)
    assert dict(req.config.logit_bias) == {token: -7.5}


def test_an_id_past_the_vocabulary_is_a_400(smollm2_model):
    with pytest.raises(ApiError, match="outside the vocabulary"):
        completion_request({"prompt": "Hi", "logit_bias": {str(smollm2_model.vocab_size): 1}}, smollm2_model)


def test_a_bias_of_100_on_a_canonical_id_makes_it_the_greedy_token(local_app, smollm2_model):
    client = local_app()
    r = client.post("/v1/completions", json={"prompt": "Hi", "max_tokens": 1, "temperature": 0,
                                             "logit_bias": {"42": 100}})
    assert r.status_code == 200
    assert r.json()["choices"][0]["text"] == smollm2_model.decode([42], skip_special_tokens=True)
    r = client.post("/v1/completions", json={"prompt": "Hi", "max_tokens": 1, "logit_bias": {"4_2": 100}})
    assert r.status_code == 400 and r.json()["error"]["param"].startswith("logit_bias")
