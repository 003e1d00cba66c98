"""``kvgen batch`` and ``kvgen.batch.run``: OpenAI Batch API files through the engine, compared
with ``kvgen serve`` (its app in process) and generate_batch on the same bodies; bad lines;
resume after SIGKILL and Ctrl-C of a real subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kvgen
from kvgen.batch import BatchFileError, read_requests, run
from kvgen.batch.files import completed_ids

WORDS = ["apples", "rivers", "stars", "clocks", "boats", "songs", "maps", "bees"]


def chat_line(i: int, max_tokens: int = 10, **extra) -> dict:
    return {"custom_id": f"chat-{i}", "method": "POST", "url": "/v1/chat/completions",
            "body": {"messages": [{"role": "user", "content": f"Say something about {WORDS[i % len(WORDS)]} ({i})."}],
                     "max_tokens": max_tokens, "temperature": 0, **extra}}


def completion_line(i: int, max_tokens: int = 8) -> dict:
    return {"custom_id": f"cmpl-{i}", "method": "POST", "url": "/v1/completions",
            "body": {"prompt": f"A short note about {WORDS[i % len(WORDS)]}:", "max_tokens": max_tokens,
                     "temperature": 0}}


def write_jsonl(path: Path, lines: list) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def results_of(path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        item = json.loads(line)
        assert item["custom_id"] not in out, f"{item['custom_id']} written twice"
        out[item["custom_id"]] = item
    return out


def comparable(body: dict) -> dict:
    """A response body without what differs per call (id, created)."""
    return {k: v for k, v in body.items() if k not in ("id", "created")}


def kvgen_batch(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvgen", "batch", *args], capture_output=True, text=True,
                          timeout=300, **kwargs)


def test_greedy_and_seeded_results_equal_the_server_s_bodies_and_generate_batch(smollm2_model):
    from fastapi.testclient import TestClient

    from kvgen.server import create_app

    requests = [chat_line(i) for i in range(6)] + [completion_line(i) for i in range(4)]
    requests[2]["body"]["logprobs"] = True
    requests[2]["body"]["top_logprobs"] = 2
    requests[3]["body"].update(temperature=0.9, top_p=0.95, seed=11, n=2)  # seeded sampling: reproducible
    results = list(run(requests, smollm2_model, max_batch=4, ordered=True))
    assert [r["custom_id"] for r in results] == [r["custom_id"] for r in requests]
    app = create_app(smollm2_model, max_batch=4, allowed_hosts=("testserver",))
    with TestClient(app) as client:
        for request, result in zip(requests, results):
            served = client.post(request["url"], json=request["body"])
            assert served.status_code == 200 and result["response"]["status_code"] == 200 and result["error"] is None
            assert comparable(result["response"]["body"]) == comparable(served.json())
    # completions: generate_batch's texts for the same prompts and max_tokens
    generator = kvgen.Generator(smollm2_model, kvgen.GenerationConfig(max_new_tokens=8))
    texts = generator.generate_batch([r["body"]["prompt"] for r in requests[6:]])
    assert len(set(texts)) == len(texts)
    assert [r["response"]["body"]["choices"][0]["text"] for r in results[6:]] == texts


def test_a_bad_request_is_its_line_s_error_and_the_job_goes_on(smollm2_model):
    requests = [chat_line(0, 4),
                {**chat_line(1), "body": {"messages": [], "max_tokens": 4}},
                {**chat_line(2), "url": "/v1/embeddings"},
                {**chat_line(3), "method": "GET"},
                {**chat_line(4), "body": {**chat_line(4)["body"], "temperature": 9}},
                {**chat_line(5), "body": {**chat_line(5)["body"], "stream": True}},
                {**chat_line(6), "body": {**chat_line(6)["body"], "max_tokens": 10**9}},
                {**chat_line(7), "body": {**chat_line(7)["body"], "regex": "[a-z]{2}", "choices": ["x"]}},
                completion_line(8, 4)]
    results = {r["custom_id"]: r for r in run(requests, smollm2_model, max_batch=2)}
    assert set(results) == {r["custom_id"] for r in requests}
    for cid in ("chat-0", "cmpl-8"):
        assert results[cid]["error"] is None and results[cid]["response"]["status_code"] == 200
    expected = {"chat-1": "messages", "chat-2": "url", "chat-3": "method", "chat-4": "temperature",
                "chat-5": "stream", "chat-6": "max_tokens", "chat-7": "choices"}
    for cid, param in expected.items():
        line = results[cid]
        assert line["error"]["message"] and line["response"]["status_code"] in (400, 404), line
        assert line["response"]["body"]["error"]["param"] == param, line


def test_a_file_that_cannot_run_is_refused_up_front(tmp_path, smollm2_model):
    duplicate = write_jsonl(tmp_path / "dup.jsonl", [chat_line(0), chat_line(1), chat_line(0)])
    with pytest.raises(BatchFileError, match=r"dup.jsonl:3: custom_id 'chat-0' is already used on line 1"):
        read_requests(duplicate)
    out = kvgen_batch(str(duplicate), "-o", str(tmp_path / "out.jsonl"))
    assert out.returncode == 2 and "already used on line 1" in out.stderr and not (tmp_path / "out.jsonl").exists()
    broken = write_jsonl(tmp_path / "broken.jsonl", [chat_line(0), "{not json"])
    with pytest.raises(BatchFileError, match=r"broken.jsonl:2: not a JSON line"):
        read_requests(broken)
    anonymous = write_jsonl(tmp_path / "anon.jsonl", [{"method": "POST", "url": "/v1/completions", "body": {}}])
    with pytest.raises(BatchFileError, match="custom_id"):
        read_requests(anonymous)
    with pytest.raises(BatchFileError, match="given twice"):
        list(run([completion_line(0), completion_line(0)], smollm2_model))


def test_a_torn_last_line_is_cut_off_and_other_garbage_refused(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text('{"custom_id": "a", "response": null}\n{"custom_id": "b", "resp')
    assert completed_ids(path) == {"a"}
    assert path.read_text() == '{"custom_id": "a", "response": null}\n'
    path.write_text('{"custom_id": "a"}\n{"custom_id": "b", "res\n')  # cut, then a newline written after it
    assert completed_ids(path) == {"a"} and path.read_text() == '{"custom_id": "a"}\n'
    path.write_text('hello\n{"custom_id": "a"}\n')
    with pytest.raises(BatchFileError, match="out.jsonl:1: not a batch result line"):
        completed_ids(path)


def _wait_for_lines(path: Path, count: int, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= count:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} lines in {path} after {timeout} s")


@pytest.mark.parametrize("stop", ["SIGKILL", "SIGINT"])
def test_the_same_command_resumes_after_a_kill_or_ctrl_c(tmp_path, stop, smollm2_model):
    requests = [chat_line(i, 8) for i in range(12)]
    source = write_jsonl(tmp_path / "in.jsonl", requests)
    output = tmp_path / "out.jsonl"
    args = (str(source), "-o", str(output), "--max-batch", "2", "--threads", "1", "--no-progress")
    proc = subprocess.Popen([sys.executable, "-m", "kvgen", "batch", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    _wait_for_lines(output, 2, proc)
    os.kill(proc.pid, getattr(signal, stop))
    _, err = proc.communicate(timeout=60)
    written = results_of(output)
    assert 2 <= len(written) < len(requests)
    if stop == "SIGINT":  # Ctrl-C: the lines written are whole, the summary says how to go on
        assert proc.returncode == 130, err
        assert "interrupted" in err and "run the same command to resume" in err
    else:
        assert proc.returncode == -signal.SIGKILL
        with open(output, "a") as f:  # a write the kill cut in half
            f.write('{"id": "batch_req_x", "custom_id": "chat-11", "respo')
    again = kvgen_batch(*args)
    assert again.returncode == 0, again.stderr
    assert f"{len(requests) - len(written)} requests answered (0 errors), {len(written)} already in" in again.stderr
    final = results_of(output)  # no custom_id twice
    assert set(final) == {r["custom_id"] for r in requests}
    assert all(final[cid] == line for cid, line in written.items())  # the first run's lines are kept as written
    expected = {r["custom_id"]: r for r in run(requests, smollm2_model, max_batch=4)}
    for cid, line in final.items():  # greedy: the same bodies whichever run wrote them
        assert comparable(line["response"]["body"]) == comparable(expected[cid]["response"]["body"])


def test_plain_prompts_with_a_prompt_field_schema_and_sampling_flags(tmp_path, smollm2_model):
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}}, "required": ["name"],
              "additionalProperties": False}
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(schema))
    rows = [{"key": f"k{i}", "text": f"Name a {w}."} for i, w in enumerate(WORDS[:4])]
    source = write_jsonl(tmp_path / "rows.jsonl", rows)
    output = tmp_path / "out.jsonl"
    out = kvgen_batch(str(source), "-o", str(output), "--prompt-field", "text", "--id-field", "key",
                      "--json-schema", str(schema_file), "--max-tokens", "40", "--temperature", "0.8", "--seed", "3",
                      "--threads", "1", "--no-progress")
    assert out.returncode == 0, out.stderr
    results = results_of(output)
    assert set(results) == {r["key"] for r in rows}
    import jsonschema

    for row in rows:
        body = results[row["key"]]["response"]["body"]
        jsonschema.validate(json.loads(body["choices"][0]["message"]["content"]), schema)
    # the same bodies through run(): the flags made these requests
    requests = [{"custom_id": r["key"], "method": "POST", "url": "/v1/chat/completions",
                 "body": {"messages": [{"role": "user", "content": r["text"]}], "max_tokens": 40, "temperature": 0.8,
                          "seed": 3, "response_format": {"type": "json_schema",
                                                         "json_schema": {"name": "output", "schema": schema}}}}
                for r in rows]
    for line in run(requests, smollm2_model, max_batch=2):
        assert comparable(line["response"]["body"]) == comparable(results[line["custom_id"]]["response"]["body"])
    text = tmp_path / "prompts.txt"
    text.write_text("The sky is\n\nOne plus one is\n")
    out = kvgen_batch(str(text), "-o", str(tmp_path / "text.jsonl"), "--text", "--completions", "--max-tokens", "6",
                      "--no-progress")
    assert out.returncode == 0, out.stderr
    texts = kvgen.Generator(smollm2_model, kvgen.GenerationConfig(max_new_tokens=6)).generate_batch(
        ["The sky is", "One plus one is"])
    got = results_of(tmp_path / "text.jsonl")
    assert [got[k]["response"]["body"]["choices"][0]["text"] for k in ("line-1", "line-3")] == texts
    bad = kvgen_batch(str(source), "-o", str(tmp_path / "x.jsonl"), "--max-tokens", "5")
    assert bad.returncode == 2 and "--max-tokens sets the body of plain prompts" in bad.stderr


def test_the_prefix_cache_reuses_a_shared_system_prompt_and_changes_no_output(smollm2_model, monkeypatch):
    from kvgen.batch import runner

    engines = []

    class Recorded(runner.Engine):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            engines.append(self)

    monkeypatch.setattr(runner, "Engine", Recorded)
    system = {"role": "system", "content": "You answer in one short sentence about the thing named, with no preamble, "
                                           "no lists and no questions back to the user, in plain English."}
    requests = [chat_line(i, max_tokens=6) for i in range(8)]
    for request in requests:
        request["body"]["messages"].insert(0, system)
    cached = [r["response"]["body"] for r in run(requests, smollm2_model, max_batch=2, ordered=True)]
    plain = [r["response"]["body"] for r in run(requests, smollm2_model, max_batch=2, ordered=True,
                                                 prefix_cache=False)]
    assert [comparable(b) for b in cached] == [comparable(b) for b in plain]
    assert engines[0].prefix_cache_hits >= 32 * (len(requests) - 2)  # whole 32-token chunks of the system prompt
    assert engines[1].prefix_cache_hits == 0
