"""Fixtures of the server tests: ``kvgen serve`` with the default model as a subprocess for the
module (tests/support/serve_process.py), and the official openai client pointed at it."""

from __future__ import annotations

import openai
import pytest
from serve_process import ServeProcess


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A server of 4 slots and 2 threads, without an API key."""
    proc = ServeProcess(tmp_path_factory.mktemp("serve") / "serve.log", "--max-batch", "4", "--threads", "2")
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def client(served):
    """Closed at the end of the module, so that no pooled connection is left to the garbage
    collector (an unclosed socket is a ResourceWarning, an error under pytest's settings)."""
    with openai.OpenAI(base_url=f"{served.url}/v1", api_key="none", max_retries=0, timeout=120) as c:
        yield c
