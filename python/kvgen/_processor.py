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


# transformers' warpers, each at the value that leaves it out of generate()'s chain: the kvgen
# fields that are transformers warpers, at the value the schema gives them
# (generation_config_fields.def), and top_h, a warper of transformers' that kvgen does not have.
# Passed explicitly, they also override a model's generation_config.json (top_k=50 is
# transformers' default whenever do_sample=True).
_TRANSFORMERS_WARPERS_OFF = {
    **{name: off for name, (off, sampler) in _core._SAMPLING_FIELDS.items() if sampler == "transformers"},
    "top_h": None,
}


def transformers_generate_kwargs(config: _core.GenerationConfig) -> dict:
    """Keyword arguments for ``transformers``' ``model.generate(**inputs, **kwargs)`` that
    make kvgen's chain for ``config`` the only one: ``logits_processor=[LogitsProcessor(config)]``,
    ``do_sample`` as kvgen decides it, and, when sampling, transformers' own warpers switched off
    (``top_k=0``, ``temperature=1.0``, ``top_p=1.0``, ...). Without them transformers applies its
    default ``top_k=50`` (and any warper in the model's ``generation_config.json``) after
    kvgen's processor. Add your own ``max_new_tokens``; kvgen's length and stopping fields are
    not passed (transformers keeps its own)."""
    sampling = bool(config.do_sample) and config.temperature != 0.0
    kwargs: dict = {"logits_processor": [LogitsProcessor(config)], "do_sample": sampling}
    if sampling:
        kwargs.update(_TRANSFORMERS_WARPERS_OFF)
    return kwargs
