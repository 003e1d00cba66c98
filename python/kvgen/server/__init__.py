"""``kvgen serve``: an OpenAI-compatible HTTP server over one built-in model. The app and its
routes (``app``), the request bodies it accepts (``protocol``) and the response shapes
(``responses``).

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
