"""What one more position costs in a forward pass: a verify pass of n positions against a one-token decode step.

What is measured
----------------
SmolLM2-135M-Instruct (Q4_1 GGUF, kvgen.default_model_path()), ``--threads`` threads (1). Each of ``--rows``
rows caches a ``--context``-token prompt (random token ids); then one pass feeds every row n
tokens and returns the logits of all its positions (``_ModelSlots.forward(..., verify)``, the
engine's speculative step), and the rows are rolled back (``truncate``). n = 1 is a plain
decode step. CPU time (of the calling thread at one thread, ``time.thread_time``; of the
process at more, ``time.process_time``), so that other work on a shared machine weighs less
than in wall time, or wall time with ``--wall`` (on a quiet machine: what a user waits); each
round times every n in turn (interleaved), and the figure is the median over rounds of the
per-pass time.

Figures: the pass time per n, its ratio to the n = 1 pass, and the cost of each extra position
as a fraction of the n = 1 pass, (t(n) / t(1) - 1) / (n - 1): the ``beta`` that the adaptive
draft length (kvgen.generation.drafters) weighs drafts with.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import harness
import kvgen
from kvgen._core import _ModelSlots


def main() -> None:
    parser = harness.cli(__doc__, harness.RESULTS / "verify_pass.json", threads=1, threads_help="kvgen's threads",
                         quick_help="5 rounds, fewer passes, 200-token context")
    parser.add_argument("--rows", type=int, default=1, help="rows per pass (default 1)")
    parser.add_argument("--context", type=int, default=None, help="cached tokens per row (default 1000, 200 quick)")
    parser.add_argument("--positions", default="1,2,3,5,9,11", help="n values, comma-separated (1 first)")
    parser.add_argument("--wall", action="store_true", help="time in wall-clock seconds instead of CPU time")
    args = harness.parse_args(parser)
    context = args.context or (200 if args.quick else 1000)
    ns = [int(v) for v in args.positions.split(",")]
    if ns[0] != 1:
        raise SystemExit("--positions must start with 1 (the decode step every ratio is against)")
    passes = 3 if args.quick else 10

    kvgen.set_num_threads(args.threads)
    clock = time.perf_counter if args.wall else time.thread_time if args.threads == 1 else time.process_time
    model = kvgen.load_default()
    slots = _ModelSlots(model._core, args.rows, context + max(ns) + 1, max(ns))
    rng = np.random.default_rng(0)
    prompt = rng.integers(100, model.vocab_size - 100, size=context).astype(np.int64)
    for r in range(args.rows):
        slots.forward([(r, prompt)])

    env = harness.environment({}, {"kvgen": args.threads})
    load = "wall time" if args.wall else "CPU time, the machine may be shared"
    harness.print_environment(env, {"load": load})
    print(f"{args.rows} row(s), {context} cached tokens each, {passes} passes per round, {args.rounds} rounds")

    def one_pass(n: int) -> float:
        tokens = rng.integers(100, model.vocab_size - 100, size=n).astype(np.int64)
        chunks = [(r, tokens) for r in range(args.rows)]
        verify = list(range(args.rows)) if n > 1 else []
        start = clock()
        for _ in range(passes):
            slots.forward(chunks, verify)
            for r in range(args.rows):
                slots.truncate(r, context)
        return (clock() - start) / passes

    for n in ns:  # warm-up
        one_pass(n)
    seconds: dict[int, list[float]] = {n: [] for n in ns}
    for _ in range(args.rounds):
        for n in ns:
            seconds[n].append(one_pass(n))
    median = {n: statistics.median(s) for n, s in seconds.items()}
    table = harness.Table([harness.Column("positions", 9, lambda r: str(r[0]), left=True),
                           harness.Column("ms / pass", 10, lambda r: f"{1e3 * median[r[0]]:.2f}"),
                           harness.Column("x decode", 9, lambda r: f"{median[r[0]] / median[1]:.2f}"),
                           harness.Column("per extra", 10, lambda r: f"{r[1]:.3f}" if r[0] > 1 else "-")])
    table.print_header()
    rows = {}
    for n in ns:
        extra = (median[n] / median[1] - 1) / (n - 1) if n > 1 else 0.0
        rows[n] = {"seconds": median[n], "range": [min(seconds[n]), max(seconds[n])], "per_extra_position": extra}
        table.print_row((n, extra))
    report = {"environment": env, "settings": harness.settings(args, rows=args.rows, context=context,
                                                                 positions=ns, passes=passes, wall=args.wall),
              "passes": rows}
    harness.write_outputs(report, args.out)


if __name__ == "__main__":
    main()
