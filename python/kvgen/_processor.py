"""kvgen.LogitsProcessor: the C++ chain with a Python-level ``__call__`` signature.

transformers' LogitsProcessorList inspects ``inspect.signature(processor.__call__)``,
which compiled pybind11 methods do not expose; this subclass only supplies that
signature and forwards to the C++ call (which processes the scores in place).
"""

from __future__ import annotations

from typing import TypeVar

from kvgen import _core

Scores = TypeVar("Scores")


class LogitsProcessor(_core.LogitsProcessor):
    __doc__ = _core.LogitsProcessor.__doc__

    def __call__(self, input_ids, scores: Scores) -> Scores:
        """Processes ``scores`` [rows, vocab] in place from the history ``input_ids``; returns ``scores``."""
        return _core.LogitsProcessor.__call__(self, input_ids, scores)
