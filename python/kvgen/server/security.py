"""What ``kvgen serve`` checks before any route runs: cross-site protection (Host, Origin,
Content-Type), the API key, and CORS for the web pages of ``--allowed-origins``.

- The ``Host`` header must name the server (its bound address, localhost or
  ``--allowed-hosts``): a page cannot reach it by DNS rebinding.
- An ``Origin`` header must be a loopback page or one of ``--allowed-origins``; POST routes
  need ``Content-Type: application/json`` (a form cannot post a JSON body): a page the user
  visits cannot post to the local server.
- ``--api-key``: every request but ``/health`` and a CORS preflight (browsers send that
  without credentials) needs ``Authorization: Bearer KEY`` (or Anthropic's ``x-api-key: KEY``).
- CORS (the Fetch standard): for an origin of ``--allowed-origins`` (``*``: any), a preflight
  ``OPTIONS`` (with ``Access-Control-Request-Method``) is answered 204 with the methods and the
  headers it asks for, and every answer, errors included, carries
  ``Access-Control-Allow-Origin``. Loopback pages pass the Origin check but get no CORS
  headers unless listed.

Refusals are OpenAI's error JSON (403, 401, 415).
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from typing import Optional
from urllib.parse import urlsplit

from fastapi.responses import JSONResponse, Response

from kvgen.server.errors import ApiError

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
#: The methods a preflight may ask for (the routes' own).
CORS_METHODS = ("GET", "POST")
#: Seconds a browser may keep a preflight's answer.
CORS_MAX_AGE = 600
_HEADER_LIST = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$")


def host_name(host: str) -> str:
    """The name in a Host header or URL authority, without port or IPv6 brackets, lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name, an address, with or without a port) is this machine's loopback."""
    name = host_name(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def error_response(e: ApiError, headers: Optional[dict] = None) -> JSONResponse:
    """OpenAI's error JSON for ``e``, with its status."""
    return JSONResponse(e.body(), status_code=e.status, headers=headers)


class Guard:
    """ASGI middleware in front of every route: cross-site checks (Host, Origin, Content-Type),
    CORS and the API key, each refusal answered with OpenAI's error JSON."""

    def __init__(self, app, *, host: str, allowed_hosts: tuple[str, ...], allowed_origins: tuple[str, ...],
                 api_key: Optional[str]):
        self.app = app
        self.hosts = {host_name(h) for h in (*LOOPBACK_NAMES, host, *allowed_hosts)}
        self.any_host = "*" in allowed_hosts
        self.any_ip_host = host_name(host) in ("0.0.0.0", "::", "")  # a wildcard bind: any address of the machine
        self.any_origin = "*" in allowed_origins
        self.origins = {o.rstrip("/").lower() for o in allowed_origins if o != "*"}
        self.key = f"Bearer {api_key}".encode() if api_key is not None else None

    def cors_origin(self, origin: Optional[str]) -> Optional[str]:
        """``origin`` when its pages may read the answers (``--allowed-origins``), else None."""
        if origin is None or origin == "null":
            return None
        return origin if self.any_origin or origin.rstrip("/").lower() in self.origins else None

    def _site_refusal(self, headers: dict) -> Optional[ApiError]:
        host = headers.get("host", "")
        name = host_name(host)
        if not (self.any_host or name in self.hosts or (self.any_ip_host and _is_ip(name))):
            return ApiError(f"the Host header {host!r} does not name this server (see kvgen serve --allowed-hosts)",
                            status=403, code="host_not_allowed", kind="permission_error")
        origin = headers.get("origin")
        if origin is not None and self.cors_origin(origin) is None:
            origin_host = urlsplit(origin).hostname or ""
            if not (origin_host in self.hosts and is_loopback(origin_host)):
                return ApiError(f"requests from the web page {origin!r} are not allowed (see kvgen serve "
                                "--allowed-origins)", status=403, code="origin_not_allowed", kind="permission_error")
        return None

    def _request_refusal(self, scope, headers: dict) -> Optional[ApiError]:
        if self.key is not None and scope["path"] != "/health":
            given = headers.get("authorization", "").encode("latin-1")
            if "x-api-key" in headers:  # Anthropic's SDK sends the key so
                given = b"Bearer " + headers["x-api-key"].encode("latin-1")
            if not hmac.compare_digest(given, self.key):
                return ApiError("Incorrect API key provided.", code="invalid_api_key", status=401)
        if scope["method"] == "POST":
            kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if kind != "application/json":
                return ApiError(f"the request body must be sent as Content-Type: application/json, got "
                                f"{kind or 'none'!r}", status=415, code="unsupported_media_type")
        return None

    @staticmethod
    def _preflight(origin: str, headers: dict) -> Response:
        """The answer to a CORS preflight from an allowed ``origin``."""
        method = headers["access-control-request-method"].strip().upper()
        if method not in CORS_METHODS:
            return error_response(ApiError(f"a preflight asked for the method {method!r}; the routes take "
                                           f"{', '.join(CORS_METHODS)}", status=405, code="method_not_allowed"),
                                  {"Allow": ", ".join(CORS_METHODS)})
        allow = {"Access-Control-Allow-Methods": ", ".join(CORS_METHODS),
                 "Access-Control-Max-Age": str(CORS_MAX_AGE)}
        asked = headers.get("access-control-request-headers", "").strip()
        if asked:  # headers carry no authority of their own: the ones asked for (well-formed names)
            if not _HEADER_LIST.match(asked):
                return error_response(ApiError("the preflight's Access-Control-Request-Headers is not a list of "
                                               "header names", code="invalid_value"))
            allow["Access-Control-Allow-Headers"] = asked
        return Response(status_code=204, headers=allow)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._site_refusal(headers)
        if refusal is not None:
            return await error_response(refusal)(scope, receive, send)
        origin = self.cors_origin(headers.get("origin"))
        if origin is not None:
            send = _with_cors(send, origin)
            if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
                return await self._preflight(origin, headers)(scope, receive, send)
        refusal = self._request_refusal(scope, headers)
        if refusal is not None:
            return await error_response(refusal)(scope, receive, send)
        return await self.app(scope, receive, send)


def _with_cors(send, origin: str):
    """``send`` that adds the CORS headers for ``origin`` to the response's start."""
    added = [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin"),
             (b"access-control-expose-headers", b"Retry-After")]

    async def sending(message):
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *added]}
        await send(message)

    return sending
