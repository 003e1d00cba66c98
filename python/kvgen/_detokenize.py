"""Incremental detokenisation: the text a growing list of generated tokens adds, piece by
piece, never splitting a UTF-8 character. Shared by ``ModelGenerator.stream`` and the
server's streamed responses."""

from __future__ import annotations

from typing import Callable, Sequence


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

    def update(self, generated: Sequence[int], final: bool = False) -> str:
        """The text that ``generated`` (all tokens so far) adds since the last piece; "" if none yet."""
        before = self._decode(generated[self._prefix:self._read])
        text = self._decode(generated[self._prefix:])
        if (final or not text.endswith("\ufffd")) and len(text) > len(before):
            self._prefix, self._read = self._read, len(generated)
            return text[len(before):]
        return ""
