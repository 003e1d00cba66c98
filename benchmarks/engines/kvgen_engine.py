"""kvgen as a benchmark engine: ``kvgen.Model`` and ``kvgen.Generator`` in process, and the
``kvgen`` command lines (a generation in a fresh process, the server).

Threads: ``kvgen.set_num_threads`` (the compute threads of the model's forward pass). EOS is
kept from ending a run by ``min_new_tokens`` equal to ``max_new_tokens``. kvgen's version
and the core that was imported are reported by ``harness.environment``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import kvgen


def set_threads(threads: int) -> None:
    kvgen.set_num_threads(threads)


def threads() -> int:
    return kvgen.get_num_threads()


class KvgenEngine:
    """``kvgen.Model.load(path, **load)`` (e.g. ``dtype="q8_0"``, ``activations="int8"``);
    eos: the EOS (and pad) id to pass to every GenerationConfig, None for the model's own."""

    def __init__(self, path: Path | str, eos: int | None = None, **load):
        self.model = kvgen.Model.load(path, **load)
        self.eos = eos
        self.kv_cache_bytes = 0  # of the last call
        self.kv_cache_bytes_of = {}  # (prompt length, new tokens, beams) -> bytes of the last such call

    def config(self, new_tokens: int, **extra) -> kvgen.GenerationConfig:
        ids = {} if self.eos is None else {"eos_token_id": self.eos, "pad_token_id": self.eos}
        return kvgen.GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, **ids, **extra)

    def _kept(self, gen: kvgen.Generator, prompt: list[int], new_tokens: int, beams: int) -> None:
        self.kv_cache_bytes = self.kv_cache_bytes_of[len(prompt), new_tokens, beams] = gen.kv_cache_bytes

    def generate(self, prompt: list[int], new_tokens: int, beams: int = 1) -> tuple[list[int], list[float]]:
        """New token ids and, under greedy search, when each became known (``Generator.stream``)."""
        gen = kvgen.Generator(self.model, self.config(new_tokens, num_beams=beams))
        if beams > 1:
            result, stamps = gen.generate([prompt]), []
        else:
            stamps = [time.perf_counter() for _ in gen.stream([prompt])]
            result = gen.last_result
        self._kept(gen, prompt, new_tokens, beams)
        return result.sequences[0][0].tolist(), stamps

    def run(self, prompt: list[int], new_tokens: int, sampling: dict | None = None) -> dict:
        """One ``generate`` call; prefill and decode times from its ``last_stats``
        (``prefill_seconds``: prompt pass and first token; ``decode_seconds`` over ``decode_steps``)."""
        extra = {"do_sample": True, **sampling} if sampling else {"do_sample": False}
        gen = kvgen.Generator(self.model, self.config(new_tokens, **extra))
        result = gen.generate([prompt])
        st = gen.last_stats
        self._kept(gen, prompt, new_tokens, 1)
        return {"tokens": result.sequences[0][0].tolist(), "ttft": st.prefill_seconds, "decode": st.decode_seconds,
                "steps": st.decode_steps}

    def batch(self, prompts: list[list[int]], new_tokens: int, beams: int = 1):
        """A zero-argument callable: one whole greedy (or beam search) ``generate`` call over every
        prompt, prefill included; returns the new tokens of every row (the best sequence of each)."""
        config = kvgen.GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, num_beams=beams,
                                        do_sample=False)

        def call() -> list[list[int]]:
            result = kvgen.Generator(self.model, config).generate(prompts)
            return [row[0].tolist() for row in result.sequences]

        return call

    def logits(self, ids: np.ndarray) -> np.ndarray:
        """[len(ids), vocab]: one forward pass over every position."""
        return self.model.forward(ids[None])[0]

    def weight_bytes(self) -> int:
        """Bytes of weights the core reads per decoded token (its own count)."""
        return int(self.model._core.weight_bytes)


def load_seconds(path: Path | str):
    """A zero-argument callable: one ``kvgen.Model.load`` (tokenizer included), the model dropped."""
    return lambda: kvgen.Model.load(path) and None


def generate_command(path: Path | str, new_tokens: int, threads: int, text: str) -> list[str]:
    """``python -m kvgen generate``: a greedy generation of new_tokens tokens, EOS ignored."""
    return [sys.executable, "-m", "kvgen", "generate", "-m", str(path), "-n", str(new_tokens), "--ignore-eos",
            "--threads", str(threads), "--no-summary", text]


def serve_command(path: str, threads: int, max_batch: int, activations: str, port: int) -> list[str]:
    """``kvgen serve`` (continuous batching: concurrent requests decode together)."""
    return [sys.executable, "-m", "kvgen", "serve", "--model", path, "--threads", str(threads), "--max-batch",
            str(max_batch), "--activations", activations, "--port", str(port)]
