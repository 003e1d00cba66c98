"""Incremental detokenisation: the text a growing list of generated tokens adds, piece by
piece, never splitting a UTF-8 character; and streamed text without its stop string (as
OpenAI, vLLM and llama-cpp-python return it). Shared by ``ModelGenerator.stream`` and the
server's responses."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence


class IncrementalText:
    """Turns the generated tokens of one sequence, as they grow, into text pieces.

    Each update decodes only the tokens since the last piece (``read``), with those of the
    piece before as context (``prefix``), so an update costs the same at any length and
    decoders that strip a leading space treat both decodes alike. A piece is held back
    while the text ends inside a UTF-8 character (U+FFFD), except at the end, where
    invalid bytes stay U+FFFD.
    """

    def __init__(self, decode: Callable[[Sequence[int]], str]):
        self._decode = decode
        self._prefix = self._read = 0

    def update(self, generated: Any, final: bool = False) -> str:
        """The text that ``generated`` (all tokens so far: a list or an int array) adds since the
        last piece; "" if none yet."""
        before = self._decode(generated[self._prefix:self._read])
        text = self._decode(generated[self._prefix:])
        if (final or not text.endswith("\ufffd")) and len(text) > len(before):
            self._prefix, self._read = self._read, len(generated)
            return text[len(before):]
        return ""


def cut_at_stop(text: str, stop_strings: Sequence[str]) -> Optional[int]:
    """Where the first stop string starts in ``text``, or None."""
    found = [i for i in (text.find(s) for s in stop_strings) if i >= 0]
    return min(found) if found else None


class StopStringFilter:
    """Streams text without the stop string: holds back the end of the text while it could be
    the start of one, until the next piece shows whether it is, and ends at the stop string."""

    def __init__(self, stop_strings: Sequence[str]):
        self.stop_strings = list(stop_strings)
        self.pending, self.stopped = "", False

    def _held(self, text: str) -> int:
        """The length of the longest end of ``text`` that begins a stop string."""
        longest = min(len(text), max(len(s) for s in self.stop_strings) - 1)
        return next((k for k in range(longest, 0, -1) if any(s.startswith(text[-k:]) for s in self.stop_strings)), 0)

    def feed(self, piece: str) -> str:
        """The text ``piece`` releases: all of it but an end that may begin a stop string, or,
        once a stop string shows up, what comes before it (``stopped`` is then True)."""
        if self.stopped:
            return ""
        self.pending += piece
        cut = cut_at_stop(self.pending, self.stop_strings)
        if cut is not None:
            self.stopped = True
            out, self.pending = self.pending[:cut], ""
            return out
        ready = len(self.pending) - self._held(self.pending)
        out, self.pending = self.pending[:ready], self.pending[ready:]
        return out

    def flush(self) -> str:
        """The text held back, at the end of the generation (nothing after a stop string)."""
        out, self.pending = ("" if self.stopped else self.pending), ""
        return out
