"""Load time and peak memory of one GGUF file: kvgen against llama-cpp-python.

* Load time: ``kvgen.Model.load`` (tokenizer included) against ``llama_cpp.Llama(...)``,
  interleaved rounds after a warm-up load each (the file in the page cache for every timed
  load). Goal: kvgen.Model.load of the SmolLM2 file <= 0.5 s.
* Peak RSS of a greedy generation of 64 new tokens in a fresh process: ``python -m kvgen
  generate -m FILE -n 64 --ignore-eos`` against llama-cpp-python's loop on the same ids
  (``engines/llama_cpp_engine.py`` run as a script); ``ru_maxrss`` of each child
  (``harness.peak_rss_bytes``). Goal: at most 1.3x llama-cpp-python's.
"""

from __future__ import annotations

from pathlib import Path

import harness
from decode.workloads import PAUSE_S
from engines import kvgen_engine, llama_cpp_engine

LOAD_TARGET_S = 0.5  # kvgen.Model.load of the SmolLM2 file
RSS_TARGET = 1.3  # peak RSS of `kvgen generate` at most this x llama-cpp-python's
RSS_NEW_TOKENS = 64


def measure_loads(path: Path, threads: int, rounds: int, llama_cpp) -> dict:
    """Seconds of kvgen.Model.load and llama_cpp.Llama(...), interleaved rounds after a
    warm-up load each."""
    jobs = {"kvgen": kvgen_engine.load_seconds(path)}
    if llama_cpp:
        jobs["llama.cpp"] = lambda: llama_cpp_engine.load(path, threads) and None
    _, calls = harness.interleave_calls(jobs, rounds, PAUSE_S)
    return {n: harness.summarize([c.seconds for c in cs]) for n, cs in calls.items()}


def peak_rss(path: Path, text: str, ids: list[int], threads: int, llama_cpp) -> dict:
    """Peak RSS (MB) of a greedy generation of RSS_NEW_TOKENS tokens in a fresh process:
    ``python -m kvgen generate`` (the CLI, EOS ignored) and llama-cpp-python's loop on the
    same ids (the text's, by kvgen's tokenizer), each once."""
    out = {"kvgen": harness.peak_rss_bytes(kvgen_engine.generate_command(path, RSS_NEW_TOKENS, threads, text)) / 1e6}
    if llama_cpp:
        job = llama_cpp_engine.rss_job(path, ids, RSS_NEW_TOKENS, threads)
        out["llama.cpp"] = harness.peak_rss_bytes(llama_cpp_engine.rss_command(), stdin=job) / 1e6
    return out


def targets(kind: str, loads: dict, rss: dict) -> list[dict]:
    """Load time and peak RSS goals (SmolLM2 Q4_1 only)."""
    if kind != "q4_1":
        return []
    load = loads["kvgen"]["median_us"] / 1e6
    out = [harness.target(f"kvgen.Model.load of the SmolLM2 file <= {LOAD_TARGET_S} s", load, load <= LOAD_TARGET_S,
                          f"{load:.2f} s")]
    if "llama.cpp" in rss:
        x = rss["kvgen"] / rss["llama.cpp"]
        out.append(harness.target(f"peak RSS of kvgen generate <= {RSS_TARGET}x llama-cpp-python's", x,
                                  x <= RSS_TARGET, f"{x:.2f}x"))
    return out
