"""A checkpoint's multi-token-prediction head as ``Model.mtp_head`` hands it out: the handle a
user passes as ``assistant_model`` (kvgen.generation.mtp drafts with it)."""

from __future__ import annotations

from typing import Any

from kvgen import _core


class MtpHead:
    """A model's multi-token-prediction head (``Model.mtp_head``): pass it as
    ``assistant_model`` to draft with it. It shares the model's embedding and LM head."""

    def __init__(self, core: "_core._Model", model: Any):
        self._core = core
        self._model_core = model._core  # the model it drafts for (its engine checks it)
        self.layers: int = core.num_layers

    @property
    def vocab_size(self) -> int:
        return self._core.vocab_size

    def __repr__(self) -> str:
        return f"MtpHead(layers={self.layers}, hidden_size={self._core.hidden_size}, vocab_size={self.vocab_size})"
