"""What ``kvgen serve`` admits: per-request limits (kvgen.server.protocol.RequestLimits), the
share of the machine that the requests in flight may hold, and the deadlines of a connection.

Every limit is a ``kvgen serve`` flag; ``ServerLimits.sized`` sizes the defaults to the
machine's memory. What each costs a client that passes it is a 400 (413 for the body, 429 for
a full server, 408 for a slow upload) that names the flag.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional

from kvgen.server.protocol import RequestLimits


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


@dataclass
class ServerLimits:
    """What ``kvgen serve`` admits; ``sized(max_batch, context)`` sizes the defaults to the machine."""

    request: RequestLimits = field(default_factory=RequestLimits)
    max_queued_tokens: int = 1 << 22     # prompt + max new tokens of every request in flight
    max_queued_requests: int = 1024      # engine requests (prompts x n, or prompts under sampling) in flight
    max_body_bytes: int = 8 << 20
    request_timeout: Optional[float] = None  # seconds; None: no limit
    max_tokenize_tokens: int = 1 << 14   # tokens one /tokenize request may count
    header_timeout: float = 10.0         # seconds from a connection's first byte to its request's last header
    body_timeout: float = 60.0           # seconds from the last header to the body's last byte

    @classmethod
    def sized(cls, max_batch: int, context: int, memory: Optional[int] = None, **overrides: Any) -> "ServerLimits":
        """Defaults for a machine of ``memory`` bytes (default: its physical memory): an engine
        request waiting in the queue holds about 0.5 MB (its generator's vocabulary-sized
        buffers) and its tokens a few hundred bytes each; an eighth of the memory is the budget."""
        budget = (memory or _physical_memory()) // 8
        rows = max(128, 8 * max_batch)  # OpenAI's n goes up to 128
        request = RequestLimits(max_prompts=rows // 2, max_rows=rows,
                                max_tokens=max(rows * context, 1 << 16), max_n=max_batch)
        limits = cls(request=request,
                     max_queued_tokens=int(min(max(budget // 1024, 8 * context), 1 << 26)),
                     max_queued_requests=int(min(max(budget // (1 << 20), 4 * rows), 1 << 14)),
                     max_tokenize_tokens=max(2 * context, 1 << 14))
        limits.request.max_tokens = min(limits.request.max_tokens, limits.max_queued_tokens)
        for name, value in overrides.items():
            if value is None:
                continue
            if hasattr(limits.request, name):
                setattr(limits.request, name, value)
            else:
                setattr(limits, name, value)
        return limits
