"""``kvgen serve``: an OpenAI-compatible HTTP server over one built-in model. The app and its
routes (``app``), the request bodies it accepts (``protocol``) and the response shapes
(``responses``)."""

from kvgen.server.app import create_app, serve

__all__ = ["create_app", "serve"]
