"""kvgen batch splits a chat reply's reasoning as kvgen serve does: ``reasoning_content`` apart
from ``content`` (the parser from the chat template by default, ``--reasoning-parser`` /
``reasoning_parser`` to choose, "none": all is content), over a tiny random thinking Qwen3
(tests/support/thinking_model.py) that a regex constraint makes write a ``<think>`` block."""

from __future__ import annotations

import json

from thinking_model import thinking_model

from kvgen.batch import run

REGEX = r"<think>\n[a-z ]{8,40}\n</think>\n\n[a-z ]{4,30}"


def _line(i: int) -> dict:
    return {"custom_id": f"think-{i}", "method": "POST", "url": "/v1/chat/completions",
            "body": {"messages": [{"role": "user", "content": f"What is {i} plus two?"}], "max_tokens": 80,
                     "temperature": 1.0, "seed": 3 + i, "regex": REGEX}}


def test_batch_splits_reasoning_as_the_server_does(tmp_path, smollm2_file):
    import subprocess
    import sys

    from fastapi.testclient import TestClient

    from kvgen.server import create_app

    model = thinking_model(tmp_path / "qwen3", smollm2_file, markers_are_tokens=False)
    requests = [_line(i) for i in range(3)]
    parsed = [r["response"]["body"]["choices"][0]["message"] for r in run(requests, model, max_batch=2, ordered=True)]
    raw = [r["response"]["body"]["choices"][0]["message"]
           for r in run(requests, model, max_batch=2, ordered=True, reasoning_parser="none")]
    with TestClient(create_app(model, max_batch=2, allowed_hosts=("testserver",))) as client:
        served = [client.post(r["url"], json=r["body"]).json()["choices"][0]["message"] for r in requests]
    assert parsed == served
    for message, plain in zip(parsed, raw):
        assert "reasoning_content" not in plain
        thought, answer = plain["content"][len("<think>"):].split("</think>")
        assert thought.strip() and message["reasoning_content"] == thought
        assert message["content"] == answer.lstrip()
    # the command line: --reasoning-parser none gives the raw reply, the default the split one
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in requests))
    for flag, expected in (([], parsed), (["--reasoning-parser", "none"], raw)):
        out = tmp_path / f"out{len(flag)}.jsonl"
        done = subprocess.run([sys.executable, "-m", "kvgen", "batch", str(source), "-o", str(out), "-m",
                               str(tmp_path / "qwen3"), "--no-progress", "--max-batch", "2", *flag],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        got = {json.loads(x)["custom_id"]: json.loads(x)["response"]["body"]["choices"][0]["message"]
               for x in out.read_text().splitlines()}
        assert [got[r["custom_id"]] for r in requests] == expected
