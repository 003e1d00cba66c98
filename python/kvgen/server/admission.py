"""Admission: the tokens and engine requests that the requests in flight hold. A request that
computes (generation, /tokenize) takes its share before it runs and gives it back when it
ends; one that does not fit gets a 429 with ``Retry-After`` rather than memory the server
does not have."""

from __future__ import annotations

import contextlib
from typing import Iterator

from kvgen.server.errors import ApiError
from kvgen.server.limits import ServerLimits


class Admission:
    """The shares of the requests in flight, within ``limits`` (max_queued_tokens,
    max_queued_requests). Used from the event loop only: no lock."""

    def __init__(self, limits: ServerLimits):
        self.limits = limits
        self.tokens = 0
        self.requests = 0

    def take(self, tokens: int, requests: int) -> None:
        """Holds ``tokens`` and ``requests``; ApiError 429 when they do not fit."""
        if (self.tokens + tokens > self.limits.max_queued_tokens
                or self.requests + requests > self.limits.max_queued_requests):
            raise ApiError(f"the server is busy: the requests in flight hold {self.tokens} tokens and {self.requests} "
                           "generations, and this one does not fit; retry later", status=429,
                           kind="rate_limit_error", code="server_busy")
        self.tokens += tokens
        self.requests += requests

    def give(self, tokens: int, requests: int) -> None:
        """Gives back what ``take`` held."""
        self.tokens -= tokens
        self.requests -= requests

    @contextlib.contextmanager
    def held(self, tokens: int, requests: int) -> Iterator[None]:
        """``take`` for the block's duration."""
        self.take(tokens, requests)
        try:
            yield
        finally:
            self.give(tokens, requests)
