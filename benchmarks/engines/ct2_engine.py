"""CTranslate2 as a benchmark engine: a fast C++ engine with Python bindings (float32 and int8).

It runs a transformers directory converted once, offline (``convert``). CTranslate2 takes
token strings: the models the benchmarks build have a word-level vocabulary whose token i is
the string ``t{i}`` (``token_strings``). Threads: ``intra_threads`` (``inter_threads`` 1). EOS
is kept from ending a run by ``min_length`` equal to ``max_length``; token times come from
``generate_batch``'s callback.
"""

from __future__ import annotations

import time
from pathlib import Path

NAME = "ctranslate2"
INSTALL = "pip install ctranslate2"


def import_peer(engines: str):
    """The ctranslate2 module, or None after saying which engines are skipped."""
    import harness

    return harness.optional_peer("ctranslate2", engines, INSTALL)


def versions(ctranslate2) -> dict:
    return {"ctranslate2": ctranslate2.__version__}


def convert(model_dir: Path, out: Path, quantization: str) -> None:
    """``TransformersConverter`` of a local directory (offline) to out, weights in ``quantization``."""
    import ctranslate2

    ctranslate2.converters.TransformersConverter(str(model_dir)).convert(str(out), quantization=quantization,
                                                                         force=True)


def token_strings(ids: list[int]) -> list[str]:
    """The token strings of ids in the benchmarks' word-level vocabulary (token i is ``t{i}``)."""
    return [f"t{i}" for i in ids]


class CT2Engine:
    """``ctranslate2.Generator`` on a converted directory, on the CPU."""

    def __init__(self, directory: Path, compute_type: str, threads: int):
        import ctranslate2

        self.selector = ctranslate2.Generator(str(directory), device="cpu", compute_type=compute_type,
                                               intra_threads=threads, inter_threads=1)

    def generate(self, prompt: list[int], new_tokens: int, beams: int = 1) -> tuple[list[int], list[float]]:
        """New token ids and, under greedy search, when each became known (the callback does
        not work with beams: an empty list there)."""
        stamps = []
        callback = (lambda step: stamps.append(time.perf_counter())) if beams == 1 else None
        result = self.selector.generate_batch([token_strings(prompt)], max_length=new_tokens,
                                               min_length=new_tokens, sampling_topk=1, beam_size=beams,
                                               include_prompt_in_result=False, callback=callback)
        return list(result[0].sequences_ids[0]), stamps
