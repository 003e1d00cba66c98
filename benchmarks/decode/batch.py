"""bench_decode.py --model batch: kvgen's batched decode against its batch-1 greedy.

kvgen alone on the SmolLM2 file at ``--threads``: whole generate calls (prefill included) of
batch-1 greedy, 4- and 8-beam search and batch-8 greedy (8 prompts: consecutive 32-token windows of
the paragraph of ``decode/models.py``), 32-token prompts, 128 new tokens (16 with
``--quick``), interleaved rounds. Tokens/s: new tokens of the best sequence for beam search,
of all rows for batch 8; each against batch-1 greedy, with PASS/MISS lines for the goals
(beam >= 0.7x, batch 8 >= 4x). Writes ``benchmarks/results/bench_decode_batch.json``
(``--out-batch``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import harness
import kvgen
from decode import models
from decode.workloads import PAUSE_S
from engines import kvgen_engine
from engines.kvgen_engine import KvgenEngine

FULL = {"prompt": 32, "new_tokens": 128, "beams": 4, "wide_beams": 8, "rows": 8}
QUICK = {"prompt": 32, "new_tokens": 16, "beams": 4, "wide_beams": 8, "rows": 8}
BEAM_TARGET, ROWS_TARGET = 0.7, 4.0  # x batch-1 greedy tokens/s
DEFAULT_OUT = harness.RESULTS / "bench_decode_batch.json"


def run_batch(args: argparse.Namespace) -> None:
    """kvgen on the SmolLM2 file at --threads: batch-1 greedy, 4- and 8-beam search (tokens/s of
    the best sequence) and batch-8 greedy (tokens/s of all rows: 8 prompts, different windows of
    the same text), whole generate calls, interleaved rounds."""
    began = time.perf_counter()
    work = QUICK if args.quick else FULL
    path = Path(args.gguf).expanduser() if args.gguf else kvgen.default_model_path()
    kvgen_engine.set_threads(args.threads)
    print(f"\n==== batched decode, kvgen on {path.name}, {args.threads} threads ====\n", flush=True)
    env = harness.begin({}, {"kvgen": kvgen_engine.threads()})
    engine = KvgenEngine(path)
    n, new = work["prompt"], work["new_tokens"]
    ids = models.text_prompt(engine.model, n * work["rows"])
    rows = [ids[i * n:(i + 1) * n] for i in range(work["rows"])]
    beam, batch = f"beam {work['beams']}", f"greedy b{work['rows']}"
    wide = f"beam {work['wide_beams']}"
    jobs = {"greedy b1": engine.batch(rows[:1], new), beam: engine.batch(rows[:1], new, work["beams"]),
            wide: engine.batch(rows[:1], new, work["wide_beams"]), batch: engine.batch(rows, new)}
    outputs, calls = harness.interleave_calls(jobs, args.rounds, PAUSE_S)
    for name, out in outputs.items():
        if any(len(t) != new for t in out):
            raise RuntimeError(f"{name}: a row has not {new} new tokens")
    # tokens counted: the best sequence of a beam search, every row of a batch
    counted = {name: len(out) if name.startswith("greedy") else 1 for name, out in outputs.items()}
    per_token = {name: harness.summarize([c.seconds / (counted[name] * new) for c in cs]) for name, cs in calls.items()}
    base = per_token["greedy b1"]["median_us"]
    print(f"{args.rounds} interleaved rounds of whole generate calls ({n}-token prompts, {new} new tokens, prefill "
          "included); tokens/s median [min-max]; x b1 = tokens/s / batch-1 greedy tokens/s\n")
    table = harness.Table([harness.Column("workload", 14, lambda r: r[0], left=True),
                           harness.Column("tok/s [min-max]", 24, lambda r: harness.rate(r[1])),
                           harness.Column("x b1", 6, lambda r: f"{base / r[1]['median_us']:.2f}")])
    table.print_header()
    for name, stats in per_token.items():
        table.print_row((name, stats))
    speedup = {name: base / s["median_us"] for name, s in per_token.items()}
    if outputs[batch][0] != outputs["greedy b1"][0]:
        print("note: row 0 of the batch-8 greedy run differs from the batch-1 run on the same prompt")
    targets = [harness.target(f"{beam}: >= {BEAM_TARGET}x batch-1 greedy tokens/s", speedup[beam],
                              speedup[beam] >= BEAM_TARGET, f"{speedup[beam]:.2f}x"),
               harness.target(f"{batch}: >= {ROWS_TARGET:g}x batch-1 greedy tokens/s (all rows)", speedup[batch],
                              speedup[batch] >= ROWS_TARGET, f"{speedup[batch]:.2f}x")]
    print(f"took {time.perf_counter() - began:.0f} s")
    report = {"environment": env, "settings": {"quick": args.quick, "rounds": args.rounds, "threads": args.threads,
                                               "gguf": str(path), "workloads": work, "pause_s": PAUSE_S},
              "per_token": per_token, "x_batch1": speedup, "targets": targets}
    harness.write_outputs(report, args.out_batch)
