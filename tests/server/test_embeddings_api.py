"""/v1/embeddings against transformers' embeddings of the same tiny random Qwen3, through the
official openai SDK (``client.embeddings.create``: its default base64 encoding and floats) and
LangChain's OpenAIEmbeddings: a Qwen3-Embedding-style directory served in process (its
sentence-transformers files declare last-token pooling), and ``kvgen serve --pooling mean``
over a causal-LM directory that declares none, as a subprocess. Also: embeddings computed while
a chat decodes on the same engine, and the 400s of bad inputs."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import importlib
import os

import numpy as np
import openai
import pytest
import transformers
from embedding_models import TEXTS, random_qwen3, reference_embeddings, save_embedding_directory
from serve_process import ServeProcess

import kvgen

ATOL = 2e-6


def _import(name: str):
    """A module of the ``clients`` extra (installed in CI: a missing one fails there, skips elsewhere)."""
    if os.environ.get("CI"):
        return importlib.import_module(name)
    return pytest.importorskip(name)


@pytest.fixture(scope="module")
def qwen3():
    return random_qwen3()


@pytest.fixture(scope="module")
def directory(qwen3, tmp_path_factory, smollm2_file):
    """Qwen3-Embedding's layout: a base checkpoint whose sentence-transformers files declare last-token pooling."""
    return save_embedding_directory(qwen3, tmp_path_factory.mktemp("qwen3-embedding"), smollm2_file, "last")


@pytest.fixture(scope="module")
def tokenizer(directory):
    return transformers.AutoTokenizer.from_pretrained(directory)


@pytest.fixture(scope="module")
def app(directory):
    """The directory served in this process (Starlette's TestClient), with its engine."""
    from fastapi.testclient import TestClient

    from kvgen.server.app import ServerLimits, create_app
    from kvgen.server.protocol import RequestLimits

    limits = ServerLimits(request=RequestLimits(max_tokens=4096))
    with TestClient(create_app(kvgen.Model.load(directory), max_batch=3, limits=limits),
                    base_url="http://localhost") as client:
        yield client


@pytest.fixture(scope="module")
def client(app):
    return openai.OpenAI(base_url="http://localhost/v1", api_key="none", http_client=app, max_retries=0)


def test_openai_sdk_gets_transformers_last_token_embeddings(client, qwen3, tokenizer):
    expected = reference_embeddings(qwen3.model, tokenizer, TEXTS, "last")
    for encoding in (None, "float", "base64"):  # the SDK asks for base64 and decodes it unless told
        options = {} if encoding is None else {"encoding_format": encoding}
        answer = client.embeddings.create(model="m", input=TEXTS, **options)
        if encoding == "base64":  # asked for by the caller: the SDK hands the text over as it came
            got = np.array([np.frombuffer(base64.b64decode(d.embedding), dtype="<f4") for d in answer.data])
        else:
            got = np.array([d.embedding for d in answer.data], dtype=np.float32)
        np.testing.assert_allclose(got, expected, atol=ATOL, err_msg=str(encoding))
        assert [d.index for d in answer.data] == list(range(len(TEXTS)))
        assert answer.usage.prompt_tokens == answer.usage.total_tokens == sum(len(t) for t in tokenizer(TEXTS)[
            "input_ids"])
    one = client.embeddings.create(model="m", input=TEXTS[2], dimensions=qwen3.config.hidden_size)
    np.testing.assert_allclose(one.data[0].embedding, expected[2], atol=ATOL)


def test_langchain_openai_embeddings(app, qwen3, tokenizer):
    langchain_openai = _import("langchain_openai")
    embeddings = langchain_openai.OpenAIEmbeddings(model="m", base_url="http://localhost/v1", api_key="none",
                                                   http_client=app, check_embedding_ctx_length=False, max_retries=0)
    expected = reference_embeddings(qwen3.model, tokenizer, TEXTS, "last")
    np.testing.assert_allclose(np.array(embeddings.embed_documents(TEXTS)), expected, atol=ATOL)
    np.testing.assert_allclose(np.array(embeddings.embed_query(TEXTS[3])), expected[3], atol=ATOL)


def test_embeddings_run_on_the_engine_beside_a_decoding_chat(app, qwen3, tokenizer):
    """Embeddings requested while chats decode are batched into the same engine passes and still
    equal transformers'; every request gets its answer."""
    import httpx

    expected = reference_embeddings(qwen3.model, tokenizer, TEXTS, "last")
    transport = httpx.ASGITransport(app=app.app)

    async def both():
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=60) as c:
            chats = [c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "Hi"}],
                                                          "max_tokens": 40, "temperature": 0})
                     for _ in range(2)]
            embeds = [c.post("/v1/embeddings", json={"input": TEXTS}) for _ in range(3)]
            return await asyncio.gather(*chats, *embeds)

    answers = asyncio.run(both())
    assert [a.status_code for a in answers] == [200] * 5
    assert all(a.json()["usage"]["completion_tokens"] > 0 for a in answers[:2])
    for a in answers[2:]:
        np.testing.assert_allclose([d["embedding"] for d in a.json()["data"]], expected, atol=ATOL)


@pytest.mark.parametrize("body, status, param, code", [
    ({"input": "hi", "dimensions": 3}, 400, "dimensions", "invalid_value"),
    ({"input": ""}, 400, "input", "invalid_value"),
    ({"input": []}, 400, "input", None),
    ({"input": [[1, 2], [3, 49152]]}, 400, "input[1]", "invalid_value"),
    ({"input": [5] * 257}, 400, "input", "context_length_exceeded"),
    ({"input": [[5] * 250] * 17}, 400, "input", "request_too_large"),
    ({"input": "hi", "encoding_format": "int8"}, 400, "encoding_format", None),
    ({"input": "hi", "extra": 1}, 400, "extra", "unknown_field"),
])
def test_bad_requests_are_400s_naming_the_field(app, body, status, param, code):
    answer = app.post("/v1/embeddings", json=body)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["param"] == param and (code is None or error["code"] == code), error


@pytest.fixture(scope="module")
def served_mean(qwen3, directory, tmp_path_factory):
    """``kvgen serve --pooling mean`` over a Qwen3ForCausalLM directory that declares no pooling."""
    plain = tmp_path_factory.mktemp("causal")
    qwen3.save_pretrained(plain)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (plain / name).write_bytes((directory / name).read_bytes())
    proc = ServeProcess(plain / "serve.log", "-m", str(plain), "--pooling", "mean", "--max-batch", "2", "--threads",
                        "2")
    yield proc
    proc.stop()


def test_serve_pooling_flag_over_a_model_that_declares_none(served_mean, qwen3, tokenizer):
    with contextlib.closing(openai.OpenAI(base_url=f"{served_mean.url}/v1", api_key="none", max_retries=0)) as c:
        got = c.embeddings.create(model="m", input=TEXTS)
        np.testing.assert_allclose([d.embedding for d in got.data],
                                   reference_embeddings(qwen3.model, tokenizer, TEXTS, "mean"), atol=ATOL)
        ids = tokenizer(TEXTS)["input_ids"]
        by_ids = c.embeddings.create(model="m", input=ids, encoding_format="float")
        np.testing.assert_allclose([d.embedding for d in by_ids.data], [d.embedding for d in got.data], atol=1e-6)
        single = c.embeddings.create(model="m", input=ids[0], encoding_format="float")
        np.testing.assert_allclose(single.data[0].embedding, got.data[0].embedding, atol=1e-6)
        assert single.usage.prompt_tokens == len(ids[0])
