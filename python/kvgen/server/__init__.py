"""``kvgen serve``: an OpenAI-compatible HTTP server over one built-in model.

- ``app``: the routes (each parses, calls the serving logic, returns its answer) and ``serve``;
- ``serving``: the routes' work: read a body, check it, admit it, run it, shape the answer;
- ``openapi`` and ``protocol``: the typed request bodies (the served schema) and their checks,
  which build the GenerationConfig; ``errors``: the OpenAI error every layer raises;
- ``responses``: the response bodies and event streams; ``tokenize``: /tokenize, /detokenize;
- ``security``: Host/Origin guard, API key, CORS; ``admission``: the share of the requests in
  flight; ``limits``: what the server admits; ``deadlines``: slow clients' 408;
  ``memory``: freed heap given back to the system; ``metrics``: Prometheus.

``create_app`` and ``serve`` are imported on first use, so that ``kvgen batch`` and the Ray
actors, which need only the request checks and the response bodies, do not import FastAPI."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvgen.server.app import create_app, serve

__all__ = ["create_app", "serve"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from kvgen.server import app

        return getattr(app, name)
    raise AttributeError(f"module 'kvgen.server' has no attribute {name!r}")
