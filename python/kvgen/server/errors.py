"""The error every layer of ``kvgen serve`` raises for a request it refuses: answered with
OpenAI's JSON shape, ``{"error": {"message", "type", "param", "code"}}``, and its status."""

from __future__ import annotations

from typing import Optional


class ApiError(Exception):
    """An error the server answers with OpenAI's JSON shape: {"error": {message, type, param, code}}."""

    def __init__(self, message: str, *, param: Optional[str] = None, code: Optional[str] = None, status: int = 400,
                 kind: str = "invalid_request_error"):
        super().__init__(message)
        self.message, self.param, self.code, self.status, self.kind = message, param, code, status, kind

    def body(self) -> dict:
        """OpenAI's error JSON for this error."""
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


def invalid(name: str, message: str) -> ApiError:
    """The 400 for the request field ``name`` (a dotted path such as "messages[0].content")."""
    return ApiError(f"'{name}': {message}", param=name, code="invalid_value")
