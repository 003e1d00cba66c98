"""The benchmark harness: running kvgen side by side with its peers and reporting the comparison.

Every benchmark follows the protocol of ``PROTOCOL.md`` (beside this file); this module is
that protocol in code, so a benchmark script states only its workloads, its engines (the
adapters of ``engines/``) and its figures, as CTranslate2's ``tools/benchmark`` and
llama-bench do:

* ``cli`` / ``parse_args``: the common flags (--quick, --rounds, --round-s, --threads, --out),
  their defaults chosen by --quick;
* ``begin`` (``environment`` / ``print_environment``): versions of every engine, the kvgen
  core that was imported, the CPU model and flags, the allowed cores and every thread setting;
  ``optional_peer`` imports a peer that may be missing and says which engines are skipped;
* ``read_bandwidth``: the memory bandwidth of this run (the limit of batch-1 decode);
* ``peak_rss_bytes``: the peak resident memory of a command run in a fresh process;
* ``measure`` / ``interleave_calls``: warm-up, then interleaved rounds (A B A B ...);
  ``compare``: the same, summarized per engine;
* ``summarize`` / ``ratios``: median, min-max spread and ratios against a named baseline;
* ``Table`` and the cell formatters, ``run_rows`` (a table printed row by row as the
  workloads finish), ``target`` (a PASS/MISS line), ``settings`` and ``write_outputs``
  (JSON, and a PNG when matplotlib is installed).

benchmarks/ is not a package: scripts import this module from their own directory.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

import kvgen

RESULTS = Path(__file__).resolve().parent / "results"
MIN_ROUNDS = 5  # PROTOCOL.md: at least 5 interleaved rounds
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
PINNED_CORES = 2  # the protocol pins to `taskset -c 0,1`
BW_MIB, BW_REPEATS = 512, 5


# ---- command line --------------------------------------------------------------------


def cli(doc: str, out: Path, threads: int | None, threads_help: str, quick_help: str,
        rounds: int = 7, quick_rounds: int = MIN_ROUNDS,
        round_s: tuple[float, float] | None = None) -> argparse.ArgumentParser:
    """A parser with the flags every benchmark takes (--threads only where threads is not
    None: a benchmark of single-threaded work has no thread count to choose; --round-s only
    where round_s, (default, default with --quick), is given: benchmarks that time calls in
    batches per round); the script adds its own, then calls parse_args. doc is the script's
    docstring (its first line describes the parser)."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--quick", action="store_true", help=f"smoke run: {quick_help}")
    p.add_argument("--rounds", type=int, help=f"interleaved rounds (default {rounds}, {quick_rounds} with --quick; "
                                              f"at least {MIN_ROUNDS})")
    if threads is not None:
        p.add_argument("--threads", type=int, default=threads, help=f"{threads_help} (default {threads})")
    if round_s is not None:
        p.add_argument("--round-s", type=float, help=f"target seconds per round and engine (default {round_s[0]:g}, "
                                                     f"{round_s[1]:g} with --quick)")
    p.add_argument("--out", type=Path, default=out, help=f"JSON output (default {out})")
    p.set_defaults(default_rounds=(rounds, quick_rounds), default_round_s=round_s)
    return p


def parse_args(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Parses and checks the common flags: --rounds and --round-s default by --quick,
    --rounds at least MIN_ROUNDS."""
    args = parser.parse_args()
    full, quick = args.default_rounds
    round_s = args.default_round_s
    del args.default_rounds, args.default_round_s
    if args.rounds is None:
        args.rounds = quick if args.quick else full
    if args.rounds < MIN_ROUNDS:
        parser.error(f"--rounds must be at least {MIN_ROUNDS} (PROTOCOL.md)")
    if round_s is not None and args.round_s is None:
        args.round_s = round_s[1] if args.quick else round_s[0]
    if round_s is not None and args.round_s <= 0:
        parser.error("--round-s must be positive")
    return args


def settings(args: argparse.Namespace, **extra: Any) -> dict:
    """The report's settings: the common flags (quick, rounds, round_s where the benchmark
    has it) and the benchmark's own."""
    common = {"quick": args.quick, "rounds": args.rounds}
    if hasattr(args, "round_s"):
        common["round_s"] = args.round_s
    return {**common, **extra}


# ---- environment ---------------------------------------------------------------------


def cpu_info() -> dict:
    """CPU model name and the flags the protocol asks for, from /proc/cpuinfo."""
    model, flags = "unknown", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown":
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return {"model": model, "flags": {flag: flag in flags for flag in CPU_FLAGS}}


def kvgen_binary() -> dict:
    """Which compiled core was imported (rebuilds change timings): path and sha256 prefix."""
    path = Path(kvgen._core.__file__)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    mtime = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(path.stat().st_mtime))
    return {"path": str(path), "sha256": digest, "mtime_utc": mtime}


def environment(peer_versions: dict, threads: dict) -> dict:
    """Versions (kvgen, the peers', NumPy, Python), kvgen core, CPU, allowed cores, the
    thread count of every engine and the thread variables that are set."""
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "versions": {"kvgen": kvgen.__version__, **peer_versions, "numpy": np.__version__,
                     "python": platform.python_version()},
        "kvgen_core": kvgen_binary(),
        "cpu": cpu_info(),
        "cpu_count": os.cpu_count(),
        "affinity": affinity,
        "threads": threads,
        "thread_variables": {v: os.environ[v] for v in THREAD_VARIABLES if v in os.environ},
    }


def print_environment(env: dict, notes: dict | None = None) -> None:
    """Prints the environment; notes: engine -> what its thread count means."""
    notes = notes or {}
    print("versions: " + ", ".join(f"{k} {v}" for k, v in env["versions"].items()))
    core = env["kvgen_core"]
    print(f"kvgen core: {core['path']} (sha256 {core['sha256']}, built {core['mtime_utc']} UTC)")
    flags = " ".join(f"{k}={'yes' if v else 'no'}" for k, v in env["cpu"]["flags"].items())
    print(f"cpu: {env['cpu']['model']} ({env['cpu_count']} logical cores); flags: {flags}")
    print(f"affinity: cores {env['affinity']}")
    print("threads: " + ", ".join(f"{name} {thread_text(n)}" + (f" ({notes[name]})" if name in notes else "")
                                  for name, n in env["threads"].items()))
    if env["thread_variables"]:
        print("thread variables: " + ", ".join(f"{k}={v}" for k, v in env["thread_variables"].items()))
    allowed = env["affinity"] or []
    if len(allowed) > PINNED_CORES:
        print(f"note: {len(allowed)} cores allowed; the protocol recommends pinning (`taskset -c 0,1`)")


def begin(versions: dict, threads: dict, notes: dict | None = None) -> dict:
    """The environment (see ``environment``), printed; every benchmark starts with it."""
    env = environment(versions, threads)
    print_environment(env, notes)
    return env


def thread_text(n: int | dict) -> str:
    return " / ".join(f"{k} {v}" for k, v in n.items()) if isinstance(n, dict) else str(n)


def optional_peer(module: str, engines: str, install: str):
    """Imports a peer's module, or returns None after saying which engines are skipped."""
    try:
        return importlib.import_module(module)
    except ImportError:
        print(f"skipped: {engines} ({module} is not installed: {install})")
        return None


# ---- memory bandwidth ----------------------------------------------------------------


def read_bandwidth(threads: int) -> dict:
    """GB/s (1e9 bytes) of np.sum over a BW_MIB MiB float32 array, best of BW_REPEATS: one
    thread, and `threads` threads each summing its own slice (np.sum releases the GIL); and
    ``dot``: `threads` threads each taking np.dot of the two halves of its slice (BLAS sdot,
    every byte read once, less work per byte than np.sum's pairwise sum, which on some CPUs
    is bound by the adds rather than by memory). The limit is the best of these."""
    a = np.ones(BW_MIB * 2**20 // 4, dtype=np.float32)
    chunks = np.array_split(a, threads)
    halves = [(c[:len(c) // 2], c[len(c) // 2:2 * (len(c) // 2)]) for c in chunks]
    with ThreadPoolExecutor(threads) as pool:
        def best(fn) -> float:
            fn()
            times = []
            for _ in range(BW_REPEATS):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            return a.nbytes / min(times) / 1e9

        return {"1_thread_GBps": best(a.sum), f"{threads}_threads_GBps": best(lambda: list(pool.map(np.sum, chunks))),
                f"{threads}_threads_dot_GBps": best(lambda: list(pool.map(lambda h: np.dot(*h), halves)))}


def bandwidth_report(before: dict, after: dict) -> dict:
    """Bandwidth measured before and after the timings; the limit is the best multi-thread rate."""
    limit = max(v for bw in (before, after) for k, v in bw.items() if not k.startswith("1_"))
    return {"before": before, "after": after, "limit_GBps": limit}


def bandwidth_report_at(before: dict, after: dict, threads: int) -> dict:
    """bandwidth_report for a given thread count, 1 included: the limit is the best rate of
    `threads` threads (with 1 thread every figure counts)."""
    limit = max(v for bw in (before, after) for k, v in bw.items() if threads == 1 or not k.startswith("1_"))
    return {"before": before, "after": after, "limit_GBps": limit}


def bandwidth_line(bw: dict, threads: int) -> str:
    key, dot = f"{threads}_threads_GBps", f"{threads}_threads_dot_GBps"
    return (f"memory bandwidth (best of {BW_REPEATS} over {BW_MIB} MiB float32; np.sum with 1 thread / np.sum with "
            f"{threads} / np.dot with {threads}): before {bw['before']['1_thread_GBps']:.1f} / {bw['before'][key]:.1f} "
            f"/ {bw['before'][dot]:.1f} GB/s; after {bw['after']['1_thread_GBps']:.1f} / {bw['after'][key]:.1f} / "
            f"{bw['after'][dot]:.1f}; limit used (best of {threads} threads): {bw['limit_GBps']:.1f} GB/s")


def decode_bandwidth(before: dict, threads: int, per_token: dict, weight_bytes: dict) -> tuple[dict, dict]:
    """The bandwidth read again after the timings (``bandwidth_report_at`` with ``before``) and
    each engine's greedy decode as a fraction of it (``bandwidth_fractions``); both printed."""
    bw = bandwidth_report_at(before, read_bandwidth(threads), threads)
    fractions = bandwidth_fractions(per_token, weight_bytes, bw["limit_GBps"])
    print(bandwidth_line(bw, threads))
    print("greedy decode-only, fraction of the bandwidth limit (tokens/s x weight bytes / bandwidth): " +
          ", ".join(f"{n} {f['tokens_per_s']:.1f} tok/s x {f['weight_bytes'] / 1e6:.0f} MB = {f['GBps']:.1f} GB/s "
                    f"= {100 * f['fraction']:.0f}%" for n, f in fractions.items()))
    return bw, fractions


def bandwidth_fractions(per_token: dict, weight_bytes: dict, limit_gbps: float) -> dict:
    """Batch-1 decode reads every weight once per token: per engine, tokens/s (from its
    per-token time stats) x weight bytes / bandwidth, the fraction of the physical limit."""
    out = {}
    for name, s in per_token.items():
        tps = 1e6 / s["median_us"]
        gbps = tps * weight_bytes[name] / 1e9
        out[name] = {"tokens_per_s": tps, "weight_bytes": weight_bytes[name], "GBps": gbps,
                     "fraction": gbps / limit_gbps}
    return out


# ---- peak memory ---------------------------------------------------------------------


# Runs argv[1:] as a child and prints its peak RSS. The benchmark process cannot wait4 its own
# child: Linux carries the RSS high-water mark of the process that forks into the child's
# ru_maxrss at exec, so a child of a process holding models reads at least that much. A child
# of this small launcher carries only the launcher's few MB.
RSS_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the child's output is discarded; ours is the figure
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def peak_rss_bytes(cmd: list[str], stdin: str | None = None) -> int:
    """Peak resident set size of cmd, run to completion in a fresh process (its output
    discarded; stdin fed if given), from the kernel's accounting of that one process
    (wait4's ru_maxrss, KiB on Linux, read by RSS_LAUNCHER). Raises if the command fails."""
    done = subprocess.run([sys.executable, "-c", RSS_LAUNCHER, *cmd], input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[:4]}... exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    return int(done.stdout.split()[-1]) * 1024


# ---- timing: warm-up, then interleaved rounds ----------------------------------------


def calls_per_round(fn, round_s: float) -> int:
    """Warms fn up and returns how many calls take about round_s."""
    for _ in range(3):
        fn()
    calls, elapsed = 1, 0.0
    while elapsed < round_s / 10:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed < round_s / 10:
            calls *= 2
    return max(1, round(round_s * calls / elapsed))


def time_calls(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def measure(engines: dict, rounds: int, round_s: float, calibrate=calls_per_round, run=time_calls) -> tuple[dict, dict]:
    """Interleaved rounds; returns (per-call seconds per round, calls per round) per engine.

    calibrate(engine, round_s) -> units per round and run(engine, units) -> seconds per call
    default to zero-argument callables timed call by call; other benchmarks pass their own
    (e.g. whole generation episodes with the setup outside the timed region)."""
    calls = {name: calibrate(fn, round_s) for name, fn in engines.items()}
    samples = {name: [] for name in engines}
    for _ in range(rounds):
        for name, fn in engines.items():
            samples[name].append(run(fn, calls[name]))
    return samples, calls


def compare(engines: dict, rounds: int, round_s: float, calibrate=calls_per_round,
            run=time_calls) -> tuple[dict, dict]:
    """``measure``, summarized: (time stats per engine, see ``summarize``; units per round)."""
    samples, calls = measure(engines, rounds, round_s, calibrate, run)
    return {name: summarize(s) for name, s in samples.items()}, calls


@dataclass(frozen=True)
class Call:
    """One timed call: when it started (perf_counter), how long it took, what it returned."""
    start: float
    seconds: float
    result: Any


def interleave_calls(jobs: dict, rounds: int, pause_s: float) -> tuple[dict, dict]:
    """For calls long enough to time one by one (whole generations): a warm-up call per job
    (its result kept, for the caller to check), then `rounds` rounds of one Call per job,
    each after pause_s, so that the worker threads of the previous engine (OpenMP and
    OpenBLAS threads spin a while after their work) are asleep. Returns (warm-up results,
    Calls per job)."""
    def timed(fn, _calls: int) -> Call:
        time.sleep(pause_s)
        start = time.perf_counter()
        result = fn()
        return Call(start, time.perf_counter() - start, result)

    outputs = {name: fn() for name, fn in jobs.items()}
    samples, _ = measure(jobs, rounds, 0.0, calibrate=lambda fn, _: 1, run=timed)
    return outputs, samples


# ---- summaries -----------------------------------------------------------------------


def summarize(seconds: list[float]) -> dict:
    """Median and min-max spread over rounds, in microseconds."""
    us = [s * 1e6 for s in seconds]
    return {"median_us": statistics.median(us), "min_us": min(us), "max_us": max(us), "rounds_us": us}


def ratios(stats: dict, baseline: str, names: Iterable[str] | None = None) -> dict:
    """{"name/baseline": median time of name / median time of baseline}, for names (default:
    every other engine in stats). Above 1: the baseline is faster."""
    base = stats[baseline]["median_us"]
    names = [n for n in stats if n != baseline] if names is None else names
    return {f"{name}/{baseline}": stats[name]["median_us"] / base for name in names}


def us(s: dict) -> str:
    """A time stat in microseconds: median [min-max]."""
    return f"{s['median_us']:9.1f} [{s['min_us']:.1f}-{s['max_us']:.1f}]"


def ms(s: dict) -> str:
    """A time stat in milliseconds: median [min-max]."""
    return f"{s['median_us'] / 1e3:7.1f} [{s['min_us'] / 1e3:.1f}-{s['max_us'] / 1e3:.1f}]"


def rate(s: dict) -> str:
    """Per-unit time stat as units per second (tokens/s): median [min-max]."""
    return f"{1e6 / s['median_us']:7.1f} [{1e6 / s['max_us']:.1f}-{1e6 / s['min_us']:.1f}]"


def target(name: str, value: float, passed: bool, shown: str) -> dict:
    """A goal as a PASS/MISS line (never an assertion: timings are noisy)."""
    print(f"{'PASS' if passed else 'MISS'}: {name} (measured {shown})")
    return {"target": name, "value": value, "pass": passed}


# ---- table ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A table column: its title, width, and the cell text of a row (left-aligned if left)."""
    title: str
    width: int
    cell: Callable[[Any], str]
    left: bool = False

    def fit(self, text: str) -> str:
        return f"{text:<{self.width}}" if self.left else f"{text:>{self.width}}"


class Table:
    """A fixed-width table printed row by row as results arrive: groups of columns, the
    groups separated by ' | ', the columns of a group by a space."""

    def __init__(self, *groups: list[Column]):
        self.groups = groups

    def line(self, text_of) -> str:
        return " | ".join(" ".join(c.fit(text_of(c)) for c in group) for group in self.groups)

    def print_header(self) -> None:
        print(self.line(lambda c: c.title))

    def print_row(self, row) -> None:
        print(self.line(lambda c: c.cell(row)), flush=True)


def run_rows(table: Table, plan: Iterable[tuple], bench: Callable[..., dict | list[dict]]) -> list[dict]:
    """Prints the table's header, then runs ``bench(*item)`` for every item of ``plan`` and
    prints its row (or rows, when bench returns a list) as soon as it is done; returns them."""
    table.print_header()
    results: list[dict] = []
    for item in plan:
        rows = bench(*item)
        for row in rows if isinstance(rows, list) else [rows]:
            results.append(row)
            table.print_row(row)
    return results


# ---- servers ---------------------------------------------------------------------


def start_server(cmd: list[str], port: int, pin: str | None = None) -> subprocess.Popen:
    """Starts a server process (pinned with taskset to the cores ``pin`` lists, if given) and
    waits until its /v1/models answers; RuntimeError if it exits or takes over 180 s."""
    import urllib.request

    if pin:
        cmd = ["taskset", "-c", pin, *cmd]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return proc
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"server did not start: {' '.join(cmd)}")


# ---- output: JSON and the PNG plot ---------------------------------------------------


def pyplot():
    """matplotlib.pyplot on the Agg backend, or None (with a note) when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot: matplotlib is not installed, no PNG written")
        return None
    return plt


def write_outputs(report: dict, out: Path, plot: Callable[[Any], Any] | None = None) -> None:
    """Writes the JSON report to out and, when matplotlib is installed, the figure that
    plot(pyplot) returns to the PNG next to it (same name, .png)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"\njson: {out}")
    if plot is None:
        return
    plt = pyplot()
    if plt is None:
        return
    fig = plot(plt)
    fig.tight_layout()
    png = out.with_suffix(".png")
    fig.savefig(png, dpi=120)
    plt.close(fig)
    print(f"plot: {png}")
