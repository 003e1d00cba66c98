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


@pytest.fixture(scope="module")
def local_app(smollm2_model):
    """``make(**create_app options)``: the server in this process (Starlette's TestClient, Host
    localhost), over the session's SmolLM2; each client closed (its engine too) at the end."""
    import contextlib

    from fastapi.testclient import TestClient

    from kvgen.server.app import create_app

    with contextlib.ExitStack() as stack:
        def make(**options) -> TestClient:
            options.setdefault("max_batch", 2)
            app = create_app(smollm2_model, **options)
            return stack.enter_context(TestClient(app, base_url="http://localhost", raise_server_exceptions=False))
        yield make
