"""Where a decode step's time goes at each thread count, from the compute pool's own profile.

Decode steps run straight on the model's KV slots (no sampler, no engine), rounds of thread
counts interleaved, and the pool records every parallel section and forward pass
(``kvgen._core._pool_profile``). Printed per thread count:

- wall-clock tokens/s (median of rounds) and the ratio to the first thread count, per round,
  with the load average (on a loaded machine these say little);
- from the profile, which holds on a loaded machine too because it takes medians of many
  short events: per forward pass the sum of the per-position medians of the sections and
  of the serial gaps between them, and per kind of section (label, input width, items) its
  count per step, median time, how often a worker joined it, the workers' share of the
  items when one did, and the median time of the sections a worker joined within 2 us
  against those it did not (the second thread's speed-up on that section).

    python benchmarks/profile_threads.py [--model FILE.gguf] [--threads 1,2] [--rounds 3] [--steps 128] [--prefill]
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict

import numpy as np

import kvgen
from kvgen import _core


def summarize(p: dict, per: str) -> None:
    secs = sorted(p["sections"], key=lambda e: e[3])
    fws = p["forwards"]
    dur, gap = defaultdict(list), defaultdict(list)
    i = 0
    for f0, f1 in fws:
        while i < len(secs) and secs[i][3] < f0:
            i += 1
        prev, j = f0, 0
        while i < len(secs) and secs[i][4] <= f1:
            gap[j].append(secs[i][3] - prev)
            dur[j].append(secs[i][4] - secs[i][3])
            prev, i, j = secs[i][4], i + 1, j + 1
        gap[j].append(f1 - prev)
    sections = sum(np.median(v) for v in dur.values())
    serial = sum(np.median(v) for v in gap.values())
    total = max(sections + serial, 1)
    print(f"  per {per}: sections {sections / 1e3:.0f} us + serial {serial / 1e3:.0f} us "
          f"(serial {100 * serial / total:.0f}%), {len(dur)} sections")
    kinds = defaultdict(list)
    for e in secs:
        kinds[e[:3]].append(e)
    n = max(len(fws), 1)
    print(f"  {'section':9} {'width':>5} {'items':>5} {'count':>6} {'median us':>9} {'joined%':>7} "
          f"{'worker items%':>13} {'alone us':>8} {'joined us':>9} {'speed-up':>8}")
    by_time = sorted(kinds.items(), key=lambda kv: -np.median([e[4] - e[3] for e in kv[1]]) * len(kv[1]))
    for (label, tag, items), ev in by_time:
        d = [e[4] - e[3] for e in ev]
        joined = [e for e in ev if e[10] > 0]
        share = sum(e[8] for e in joined) / max(sum(e[7] + e[8] for e in joined), 1)
        alone = [e[4] - e[3] for e in ev if e[10] == 0]
        prompt = [e[4] - e[3] for e in joined if 0 <= e[6] < 2000]
        a = np.median(alone) / 1e3 if alone else float("nan")
        b = np.median(prompt) / 1e3 if prompt else float("nan")
        print(f"  {label:9} {tag:5} {items:5} {len(ev) / n:6.1f} {np.median(d) / 1e3:9.2f} "
              f"{100 * len(joined) / len(ev):7.1f} {100 * share:13.1f} {a:8.2f} {b:9.2f} {a / b:8.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="a GGUF file (default: kvgen's default model)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=128)
    ap.add_argument("--prefill", action="store_true", help="profile a 512-token prefill instead of decode steps")
    args = ap.parse_args()
    counts = [int(c) for c in args.threads.split(",")]
    model = kvgen.Model.load(args.model) if args.model else kvgen.load_default()
    slots = _core._ModelSlots(model._core, 1, 1024)
    prompt = np.arange(100, 612 if args.prefill else 164, dtype=np.int64)
    speed = {c: [] for c in counts}
    profiles = {c: {"sections": [], "forwards": []} for c in counts}
    before = kvgen.get_num_threads()
    try:
        for _ in range(args.rounds):
            for c in counts:
                kvgen.set_num_threads(c)
                slots.reset(0)
                if args.prefill:
                    _core._pool_profile(True)
                    t0 = time.perf_counter()
                    slots.forward([(0, prompt)])
                    elapsed, done = time.perf_counter() - t0, len(prompt)
                else:
                    slots.forward([(0, prompt)])
                    token = 200
                    for _ in range(4):
                        slots.forward([(0, [token])])
                    _core._pool_profile(True)
                    t0 = time.perf_counter()
                    for _ in range(args.steps):
                        slots.forward([(0, [token])])
                        token = int(np.argmax(slots.logits[0]))
                    elapsed, done = time.perf_counter() - t0, args.steps
                p = _core._pool_profile(False)
                profiles[c]["sections"] += p["sections"]
                profiles[c]["forwards"] += p["forwards"]
                speed[c].append(done / elapsed)
    finally:
        kvgen.set_num_threads(before)
    print(f"load average {os.getloadavg()}; {'prefill 512' if args.prefill else 'decode'}, {args.rounds} rounds")
    for c in counts:
        ratios = [s / f for s, f in zip(speed[c], speed[counts[0]])]
        print(f"threads {c}: {np.median(speed[c]):.1f} tok/s [{min(speed[c]):.1f}-{max(speed[c]):.1f}], "
              f"x{counts[0]} per round: {' '.join(f'{r:.2f}' for r in ratios)}")
        summarize(profiles[c], "prefill" if args.prefill else "token")


if __name__ == "__main__":
    main()
