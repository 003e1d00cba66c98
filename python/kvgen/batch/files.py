"""The files of ``kvgen batch``: OpenAI Batch API request lines in, result lines out.

Input, one JSON object per line (OpenAI's Batch API)::

    {"custom_id": "req-1", "method": "POST", "url": "/v1/chat/completions", "body": {...}}

``url`` is ``/v1/chat/completions`` or ``/v1/completions``; ``body`` is what ``kvgen serve``
takes at that route (the same fields and checks, kvgen.server.protocol). Output, one line
per request, in the order they finish::

    {"id": "batch_req_...", "custom_id": "req-1",
     "response": {"status_code": 200, "request_id": "...", "body": {...}}, "error": null}

A request that fails has the server's status and error JSON in ``response`` and OpenAI's
``{"code", "message"}`` in ``error``.

An input line that cannot run at all (not JSON, no custom_id, a custom_id used twice) is a
``BadLine``. By default a file with any is refused before anything runs, every bad line listed
with its number and reason (as OpenAI validates a batch's file); given a list to collect them
(``kvgen batch --error-file``), the good lines run and the bad ones are written to an error
file, one line each: ``{"id", "custom_id", "response": null, "error": {"code": "invalid_line",
"message", "line"}}``. Plain prompts (a text file, one prompt per line, or a
JSONL file with a prompt field) become such requests with ``prompt_requests``.

Resuming: ``completed_ids`` reads an output file left by an earlier run (cutting off a last
line that a crash left half written), so a run can skip the requests already answered.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from kvgen.server.protocol import ApiError

#: The routes a batch line may name, and whether each is the chat route.
ROUTES = {"/v1/chat/completions": True, "/v1/completions": False}


class BatchFileError(ValueError):
    """An input file that cannot be run at all (not JSON, a line without a custom_id, a custom_id
    given twice, ...): raised before anything runs, naming every bad line (``bad``)."""

    def __init__(self, message: str, bad: Iterable["BadLine"] = ()):
        super().__init__(message)
        self.bad = list(bad)


@dataclass
class BadLine:
    """An input line that cannot run: its number (from 1), why, and its custom_id if it has one."""

    line: int
    reason: str
    custom_id: Optional[str] = None

    def error_line(self, path: os.PathLike | str) -> dict:
        """Its line in the error file (OpenAI's shape; ``line`` as OpenAI's batch errors give it)."""
        return {"id": f"batch_req_{uuid.uuid4().hex}", "custom_id": self.custom_id, "response": None,
                "error": {"code": "invalid_line", "message": f"{path}:{self.line}: {self.reason}", "line": self.line}}


def _refused(path: os.PathLike | str, bad: list[BadLine]) -> BatchFileError:
    """The error that lists every bad line of ``path``."""
    lines = "\n".join(f"{path}:{b.line}: {b.reason}" for b in bad)
    if len(bad) == 1:
        return BatchFileError(lines, bad)
    return BatchFileError(f"{path}: {len(bad)} lines cannot run (kvgen batch --error-file runs the others):\n{lines}",
                          bad)


def _settle(path: os.PathLike | str, found: list[BadLine], bad: Optional[list[BadLine]]) -> None:
    """Hands the bad lines ``found`` to the caller's list ``bad``, or refuses the file for them."""
    if bad is not None:
        bad.extend(found)
    elif found:
        raise _refused(path, found)


def _json_line(raw: bytes) -> tuple[Any, Optional[str]]:
    """(the JSON value of a line, None), or (None, why it is not one)."""
    try:
        return json.loads(raw.decode("utf-8")), None
    except UnicodeDecodeError as e:
        return None, f"not UTF-8 text ({e.reason} at byte {e.start})"
    except RecursionError:
        return None, "not a JSON line (nested too deeply)"
    except ValueError as e:
        return None, f"not a JSON line ({e})"


def read_requests(path: os.PathLike | str, *, bad: Optional[list[BadLine]] = None) -> list[dict]:
    """The request lines of a Batch API input file (blank lines skipped). A line that is not a
    JSON object with a string ``custom_id``, or whose ``custom_id`` an earlier line used, is a
    BadLine: appended to ``bad`` and left out when ``bad`` is a list, else every one is listed in
    a BatchFileError. A line whose method, url or body is wrong is kept (its result is an error)."""
    requests, seen, found = [], {}, []
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            item, why = _json_line(line)
            if why is not None:
                found.append(BadLine(number, f"{why}; for plain prompts use --text or --prompt-field"))
                continue
            if not isinstance(item, dict) or not isinstance(item.get("custom_id"), str) or not item["custom_id"]:
                found.append(BadLine(number, "expected an object with a non-empty string 'custom_id' (OpenAI's Batch "
                                             "API line: custom_id, method, url, body)"))
                continue
            cid = item["custom_id"]
            if cid in seen:
                found.append(BadLine(number, f"custom_id {cid!r} is already used on line {seen[cid]}; every request "
                                             "needs its own", cid))
                continue
            seen[cid] = number
            requests.append(item)
    _settle(path, found, bad)
    return requests


def write_errors(path: os.PathLike | str, source: os.PathLike | str, bad: list[BadLine]) -> None:
    """Writes the error file ``path``: one line per bad line of the input file ``source``."""
    with open(path, "w", encoding="utf-8") as f:
        for b in bad:
            f.write(json.dumps(b.error_line(source), ensure_ascii=False) + "\n")


def check_unique(requests: Iterable[dict]) -> None:
    """BatchFileError for a request without a string custom_id, or a custom_id given twice."""
    seen: set[str] = set()
    for i, item in enumerate(requests):
        cid = item.get("custom_id") if isinstance(item, dict) else None
        if not isinstance(cid, str) or not cid:
            raise BatchFileError(f"request {i}: expected an object with a non-empty string 'custom_id'")
        if cid in seen:
            raise BatchFileError(f"request {i}: custom_id {cid!r} is given twice; every request needs its own")
        seen.add(cid)


def route_of(item: dict) -> tuple[bool, dict]:
    """(chat?, body) of a request line; ApiError naming what is wrong with its method, url or body."""
    method = item.get("method", "POST")
    if method != "POST":
        raise ApiError(f"'method': expected \"POST\", got {method!r}", param="method", code="invalid_value")
    url = item.get("url")
    if url not in ROUTES:
        raise ApiError(f"'url': expected one of {', '.join(ROUTES)}, got {url!r}", param="url",
                       code="invalid_url", status=404)
    body = item.get("body")
    if not isinstance(body, dict):
        raise ApiError("'body': expected the request body, a JSON object", param="body", code="invalid_value")
    if body.get("stream"):
        raise ApiError("'stream' is not supported in a batch (each result is written whole)", param="stream",
                       code="unsupported_value")
    unknown = sorted(set(item) - {"custom_id", "method", "url", "body"})
    if unknown:
        raise ApiError(f"unknown field(s) of the batch line: {', '.join(unknown)}", param=unknown[0],
                       code="unknown_field")
    return ROUTES[url], body


def result_line(custom_id: str, body: dict, status: int = 200) -> dict:
    """The Batch API output line of a request answered with ``body``."""
    return {"id": f"batch_req_{uuid.uuid4().hex}", "custom_id": custom_id,
            "response": {"status_code": status, "request_id": uuid.uuid4().hex, "body": body}, "error": None}


def error_line(custom_id: str, error: ApiError) -> dict:
    """The Batch API output line of a request that failed with ``error``: the server's answer
    (status and error JSON) in ``response``, OpenAI's ``{"code", "message"}`` in ``error``."""
    line = result_line(custom_id, error.body(), error.status)
    line["error"] = {"code": error.code or error.kind, "message": error.message}
    return line


def completed_ids(path: os.PathLike | str) -> set[str]:
    """The custom_ids an output file already holds (empty when it does not exist). A last
    line that an interrupted write left incomplete (no newline, or not JSON) is cut off the
    file; any other line that is not a result line is a BatchFileError (not an output file)."""
    path = Path(path)
    if not path.exists():
        return set()
    done: set[str] = set()
    with open(path, "rb+") as f:
        data = f.read()
        end = data.rfind(b"\n") + 1  # everything after the last newline is a torn write
        lines = data[:end].split(b"\n")[:-1]
        for number, raw in enumerate(lines, 1):
            try:
                item = json.loads(raw)
                cid = item["custom_id"]
                if not isinstance(cid, str):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                if number == len(lines):  # a last line cut inside a multi-byte write
                    end -= len(raw) + 1
                    break
                raise BatchFileError(f"{path}:{number}: not a batch result line; give another output file") from None
            done.add(cid)
        if end < len(data):
            f.truncate(end)
    return done


class ResultWriter:
    """Appends result lines to the output file, each flushed as it is written (an interrupted
    run keeps every line written before it)."""

    def __init__(self, path: os.PathLike | str):
        self.file = open(path, "a", encoding="utf-8")

    def write(self, line: dict) -> None:
        self.file.write(json.dumps(line, ensure_ascii=False) + "\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> "ResultWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def body_settings(*, max_tokens: Optional[int] = None, temperature: Optional[float] = None,
                  top_p: Optional[float] = None, top_k: Optional[int] = None, min_p: Optional[float] = None,
                  seed: Optional[int] = None, stop: Optional[list[str]] = None,
                  json_schema: Optional[dict] = None) -> dict:
    """The request-body fields of these settings (None: left out, the server's default)."""
    body: dict[str, Any] = {name: value for name, value in (
        ("max_tokens", max_tokens), ("temperature", temperature), ("top_p", top_p), ("top_k", top_k),
        ("min_p", min_p), ("seed", seed)) if value is not None}
    if stop:
        body["stop"] = list(stop)
    if json_schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "output", "schema": json_schema}}
    return body


def prompt_request(custom_id: str, prompt: Any, settings: dict, *, chat: bool = True,
                   system: Optional[str] = None) -> dict:
    """A Batch API request line for ``prompt``: a string (a user message, or the completion's
    prompt) or a list of chat messages, with the body fields ``settings`` (see body_settings)."""
    if chat:
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
        if system is not None and not (messages and isinstance(messages[0], dict)
                                       and messages[0].get("role") == "system"):
            messages = [{"role": "system", "content": system}, *messages]
        return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
                "body": {"messages": messages, **settings}}
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/completions", "body": {"prompt": prompt, **settings}}


def prompt_requests(path: os.PathLike | str, settings: dict, *, prompt_field: Optional[str] = None,
                    id_field: Optional[str] = None, chat: bool = True, system: Optional[str] = None,
                    bad: Optional[list[BadLine]] = None) -> list[dict]:
    """Batch API request lines for a file of plain prompts: one prompt per line of text (without
    ``prompt_field``), or JSONL rows whose ``prompt_field`` holds the prompt (a string, or a list
    of chat messages). custom_id: the row's ``id_field``, else ``line-N`` (N counts lines from 1).
    A row that cannot run is a BadLine, as in read_requests (``bad``)."""
    out, seen, found = [], {}, []
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            cid = f"line-{number}"
            if prompt_field is None:
                try:
                    prompt: Any = raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as e:
                    found.append(BadLine(number, f"not UTF-8 text ({e.reason} at byte {e.start})"))
                    continue
            else:
                row, why = _json_line(raw)
                if why is not None:
                    found.append(BadLine(number, why))
                    continue
                if not isinstance(row, dict) or prompt_field not in row:
                    found.append(BadLine(number, f"the row has no field {prompt_field!r} (--prompt-field)"))
                    continue
                prompt = row[prompt_field]
                if id_field is not None:
                    if id_field not in row or row[id_field] is None:
                        found.append(BadLine(number, f"the row has no field {id_field!r} (--id-field)"))
                        continue
                    cid = str(row[id_field])
            if cid in seen:
                found.append(BadLine(number, f"custom_id {cid!r} is already used on line {seen[cid]}; every request "
                                             "needs its own", cid))
                continue
            seen[cid] = number
            out.append(prompt_request(cid, prompt, settings, chat=chat, system=system))
    _settle(path, found, bad)
    return out


def iter_results(path: os.PathLike | str) -> Iterator[dict]:
    """The result lines of an output file."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)
