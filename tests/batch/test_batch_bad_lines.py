"""Bad lines of a ``kvgen batch`` input file (issue: the whole file was refused for its first
bad line only). One read lists every bad line with its number and reason; with
``--error-file`` the good lines are answered and the bad ones written to the error file, as
OpenAI's Batch API reports a file's line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvgen.batch import BatchFileError, prompt_requests, read_requests
from kvgen.batch.files import BadLine, write_errors


def line(i: int) -> str:
    return json.dumps({"custom_id": f"req-{i}", "method": "POST", "url": "/v1/completions",
                       "body": {"prompt": f"Note {i}:", "max_tokens": 2, "temperature": 0}})


def write(path: Path, lines: list) -> Path:
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return path


def kvgen_batch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvgen", "batch", "--no-progress", *args], capture_output=True,
                          text=True, timeout=300)


BAD = [  # (line, a word of the reason)
    ("{not json", "not a JSON line"),
    ('{"custom_id": "x", "body": {', "not a JSON line"),
    ('{"custom_id": "x"} trailing', "not a JSON line"),
    ("[1, 2]", "custom_id"),
    ("42", "custom_id"),
    ('"a string"', "custom_id"),
    ("null", "custom_id"),
    ("true", "custom_id"),
    ('{"method": "POST", "url": "/v1/completions", "body": {}}', "custom_id"),
    ('{"custom_id": ""}', "custom_id"),
    ('{"custom_id": 5}', "custom_id"),
    ('{"custom_id": null}', "custom_id"),
    ('{"custom_id": ["req-9"]}', "custom_id"),
    (b'{"custom_id": "\xff\xfe"}', "not UTF-8"),
    (b"\xc3(", "not UTF-8"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    (line(0), "already used on line 1"),  # a custom_id given twice
    ('{"custom_id": "req-0", "body": {}}', "already used on line 1"),
    ("NaNa", "not a JSON line"),
    ("{'custom_id': 'single quotes'}", "not a JSON line"),
]


@pytest.mark.parametrize("bad, reason", BAD)
def test_each_bad_line_is_named_with_its_number_and_reason(tmp_path, bad, reason):
    path = write(tmp_path / "in.jsonl", [line(0), "", line(1), bad, line(2)])
    with pytest.raises(BatchFileError) as e:
        read_requests(path)
    assert "in.jsonl:4: " in str(e.value) and reason in str(e.value), str(e.value)
    assert [b.line for b in e.value.bad] == [4]
    collected: list[BadLine] = []
    good = read_requests(path, bad=collected)
    assert [r["custom_id"] for r in good] == ["req-0", "req-1", "req-2"]
    assert len(collected) == 1 and collected[0].line == 4 and reason in collected[0].reason


def test_one_read_lists_every_bad_line(tmp_path):
    lines = [line(0), "{not json", line(1), "[]", line(0), line(2), '{"custom_id": 7}']
    path = write(tmp_path / "many.jsonl", lines)
    with pytest.raises(BatchFileError) as e:
        read_requests(path)
    message = str(e.value)
    assert "4 lines cannot run" in message and "--error-file" in message
    for number in (2, 4, 5, 7):
        assert f"many.jsonl:{number}: " in message, message
    assert [b.line for b in e.value.bad] == [2, 4, 5, 7]
    assert e.value.bad[2].custom_id == "req-0"


def test_plain_prompt_rows_list_every_bad_row(tmp_path):
    rows = ['{"q": "a", "id": 1}', "oops", '{"id": 3}', '{"q": "b", "id": 1}', '{"q": "c"}', '{"q": "d", "id": 6}']
    path = write(tmp_path / "rows.jsonl", rows)
    with pytest.raises(BatchFileError) as e:
        prompt_requests(path, {}, prompt_field="q", id_field="id")
    assert [b.line for b in e.value.bad] == [2, 3, 4, 5], str(e.value)
    collected: list[BadLine] = []
    good = prompt_requests(path, {}, prompt_field="q", id_field="id", bad=collected)
    assert [r["custom_id"] for r in good] == ["1", "6"] and len(collected) == 4


def test_text_prompts_with_bad_utf8_are_bad_lines(tmp_path):
    path = write(tmp_path / "p.txt", [b"fine", b"\xff broken", b"also fine"])
    collected: list[BadLine] = []
    good = prompt_requests(path, {}, bad=collected)
    assert [r["custom_id"] for r in good] == ["line-1", "line-3"]
    assert [(b.line, "UTF-8" in b.reason) for b in collected] == [(2, True)]


def test_the_error_file_holds_one_openai_error_line_per_bad_line(tmp_path):
    bad = [BadLine(2, "not a JSON line (x)"), BadLine(5, "custom_id 'a' is already used on line 1", "a")]
    write_errors(tmp_path / "errors.jsonl", "in.jsonl", bad)
    lines = [json.loads(x) for x in (tmp_path / "errors.jsonl").read_text().splitlines()]
    assert [x["error"]["line"] for x in lines] == [2, 5]
    assert [x["custom_id"] for x in lines] == [None, "a"]
    assert all(x["response"] is None and x["error"]["code"] == "invalid_line" for x in lines)
    assert lines[1]["error"]["message"] == "in.jsonl:5: custom_id 'a' is already used on line 1"


def test_kvgen_batch_lists_every_bad_line_and_runs_nothing(tmp_path):
    path = write(tmp_path / "in.jsonl", [line(0), "{not json", line(1), "[]"])
    out = kvgen_batch(str(path), "-o", str(tmp_path / "out.jsonl"))
    assert out.returncode == 2, out.stderr
    assert "in.jsonl:2: not a JSON line" in out.stderr and "in.jsonl:4: expected an object" in out.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_kvgen_batch_with_an_error_file_answers_the_good_lines(tmp_path):
    path = write(tmp_path / "in.jsonl", [line(0), "{not json", line(1), line(0), line(2)])
    out = kvgen_batch(str(path), "-o", str(tmp_path / "out.jsonl"), "--error-file", str(tmp_path / "err.jsonl"))
    assert out.returncode == 0, out.stderr
    assert "2 lines of" in out.stderr
    answered = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert sorted(x["custom_id"] for x in answered) == ["req-0", "req-1", "req-2"]
    assert all(x["error"] is None and x["response"]["status_code"] == 200 for x in answered)
    errors = [json.loads(x) for x in (tmp_path / "err.jsonl").read_text().splitlines()]
    assert [x["error"]["line"] for x in errors] == [2, 4]


@pytest.mark.parametrize("which", ["input", "output"])
def test_the_error_file_is_neither_input_nor_output(tmp_path, which):
    path = write(tmp_path / "in.jsonl", [line(0)])
    target = str(path) if which == "input" else str(tmp_path / "out.jsonl")
    out = kvgen_batch(str(path), "-o", str(tmp_path / "out.jsonl"), "--error-file", target)
    assert out.returncode == 2 and "--error-file" in out.stderr
