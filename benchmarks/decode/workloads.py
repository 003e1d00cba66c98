"""One workload timed across engines (warm-up, checked outputs, interleaved rounds), and its table.

Two kinds, after the adapters' two calls (see ``engines``):

* ``stamped_workload``: ``generate`` calls; TTFT and the decode span from the token times of
  the same call the harness timed whole (GPT-2 part);
* ``split_workload``: ``run`` calls; TTFT and the decode span as each engine splits its own
  call (GGUF files part).

Both hold every engine to exactly ``new_tokens`` new tokens (raised otherwise), pause
PAUSE_S before each timed call so that the previous engine's worker threads (OpenMP and
OpenBLAS threads spin a while after their work) are asleep, and summarize per engine with
``harness.summarize`` (microseconds): ``call`` (whole call), ``end_to_end`` (call / new
tokens), ``ttft`` and ``decode_only`` ((last token - first token) / decode steps), with their
ratios against kvgen.
"""

from __future__ import annotations

import harness

PAUSE_S = 0.2
KINDS = ("call", "ttft", "end_to_end", "decode_only")


def common_prefix(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def reference_engine(engines: dict) -> str | None:
    """The engine whose tokens the others are compared with: HF (the float reference), else llama.cpp."""
    return next((n for n in ("HF", "llama.cpp") if n in engines), None)


# ---- generate calls: token times ------------------------------------------------------


def check_outputs(label: str, outputs: dict, new_tokens: int, beams: int) -> dict:
    """Every engine generated exactly new_tokens, with a time for each under greedy search
    (raises otherwise); per engine, how many leading tokens equal HF's."""
    for name, (tokens, stamps) in outputs.items():
        if len(tokens) != new_tokens or (beams == 1 and len(stamps) != new_tokens):
            raise RuntimeError(f"{label}: {name} generated {len(tokens)} tokens ({len(stamps)} timed), "
                               f"not {new_tokens}")
    ref = outputs["HF"][0]
    return {name: common_prefix(tokens, ref) for name, (tokens, _) in outputs.items() if name != "HF"}


def token_times(call: harness.Call) -> dict:
    """Seconds of the whole call, to the first token, and from the first to the last token
    (None without token times)."""
    _, stamps = call.result
    if not stamps:
        return {"total": call.seconds, "ttft": None, "decode": None}
    return {"total": call.seconds, "ttft": stamps[0] - call.start, "decode": stamps[-1] - stamps[0]}


def stamped_workload(label: str, engines: dict, prompt: list[int], new_tokens: int, rounds: int,
                     beams: int = 1) -> dict:
    """Interleaved generate calls; per engine, time stats of ``call``, ``end_to_end`` and, under
    greedy search with more than one new token, ``ttft`` and ``decode_only`` (the decode
    steps, prefill left out)."""
    jobs = {name: (lambda e=e: e.generate(prompt, new_tokens, beams)) for name, e in engines.items()}
    outputs, calls = harness.interleave_calls(jobs, rounds, PAUSE_S)
    samples = {n: [token_times(c) for c in calls[n]] for n in engines}
    summarize = harness.summarize
    r = {"workload": label, "prompt": len(prompt), "new_tokens": new_tokens, "beams": beams,
         "same_as_HF": check_outputs(label, outputs, new_tokens, beams),
         "kv_cache_bytes": engines["kvgen"].kv_cache_bytes_of[len(prompt), new_tokens, beams],
         "call": {n: summarize([s["total"] for s in samples[n]]) for n in engines},
         "end_to_end": {n: summarize([s["total"] / new_tokens for s in samples[n]]) for n in engines}}
    if beams == 1 and new_tokens > 1:
        r["ttft"] = {n: summarize([s["ttft"] for s in samples[n]]) for n in engines}
        r["decode_only"] = {n: summarize([s["decode"] / (new_tokens - 1) for s in samples[n]]) for n in engines}
    r["ratios"] = {kind: harness.ratios(r[kind], "kvgen") for kind in ("call", "end_to_end", "ttft", "decode_only")
                   if kind in r}
    return r


# ---- run calls: each engine's own prefill / decode split -------------------------------


def split_workload(label: str, engines: dict, prompt: list[int], new_tokens: int, sampling: dict | None,
                   rounds: int) -> dict:
    """Warm-up (outputs kept and checked), then interleaved rounds; per engine, time stats of
    the whole call, the TTFT and, with more than one new token, the decode step."""
    jobs = {name: (lambda e=e: e.run(prompt, new_tokens, sampling)) for name, e in engines.items()}
    outputs = {name: fn() for name, fn in jobs.items()}
    for name, out in outputs.items():
        if len(out["tokens"]) != new_tokens or (new_tokens > 1 and out["steps"] != new_tokens - 1):
            raise RuntimeError(f"{label}: {name} generated {len(out['tokens'])} tokens ({out['steps']} decode steps), "
                               f"not {new_tokens}")
    _, calls = harness.interleave_calls(jobs, rounds, PAUSE_S)
    samples = {n: [{"total": c.seconds, **c.result} for c in calls[n]] for n in engines}
    summarize = harness.summarize
    ref = reference_engine(engines)
    r = {"workload": label, "prompt": len(prompt), "new_tokens": new_tokens, "chain": sampling is not None,
         "reference": ref,
         "same_as_reference": {n: common_prefix(o["tokens"], outputs[ref]["tokens"]) for n, o in outputs.items()
                               if ref and n != ref},
         "first_tokens": {n: o["tokens"][:8] for n, o in outputs.items()},
         "call": {n: summarize([s["total"] for s in samples[n]]) for n in engines},
         "ttft": {n: summarize([s["ttft"] for s in samples[n]]) for n in engines}}
    if new_tokens > 1:
        r["end_to_end"] = {n: summarize([s["total"] / new_tokens for s in samples[n]]) for n in engines}
        r["decode_only"] = {n: summarize([s["decode"] / s["steps"] for s in samples[n]]) for n in engines}
    r["ratios"] = {kind: harness.ratios(r[kind], "kvgen") for kind in KINDS if kind in r}
    return r


# ---- table ---------------------------------------------------------------------------


def workload_table(names: list[str], ratio_titles: dict) -> harness.Table:
    """Rows (label, unit, stats per engine, formatter, ratios): a cell per engine, then
    engine time / kvgen time per peer, titled by ratio_titles."""
    return harness.Table(
        [harness.Column("workload", 30, lambda row: row[0], left=True),
         harness.Column("unit", 6, lambda row: row[1], left=True)],
        *[[harness.Column(f"{n} [min-max]", 24, lambda row, n=n: row[3](row[2][n]))] for n in names],
        [harness.Column(title, max(6, len(title)), lambda row, n=n: f"{row[4][f'{n}/kvgen']:.2f}")
         for n, title in ratio_titles.items()],
    )


def per_prompt_token(stats: dict, tokens: int) -> dict:
    return {k: v / tokens for k, v in stats.items() if k != "rounds_us"}


def print_rows(table: harness.Table, r: dict, rows) -> None:
    """The rows(r) of a result, (label, unit, stats per engine, formatter, ratio kind), printed."""
    for label, unit, stats, fmt, kind in rows(r):
        table.print_row((label, unit, stats, fmt, r["ratios"][kind]))
