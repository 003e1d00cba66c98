"""Sampler time per call: kvgen against Hugging Face (torch CPU) and plain NumPy.

What is measured
----------------
One call = process a batch of logits ``[rows, vocab]`` with a sampling chain and draw one
token per row. Two workloads (the "sampler time per call" figure of PROTOCOL.md):

* ``chain``: repetition penalty 1.1 over a 64-token history, temperature 0.8, top-k 40,
  top-p 0.95, draw.
* ``top-p alone``: temperature 1.0, top-k off, top-p 0.95, no penalty, draw.

for rows 1, 8, 32 and vocab 32,000, 50,257, 151,936. Engines:

* ``kvgen``: ``kvgen.LogitsProcessor(cfg).sample(logits, input_ids, step=0)`` (copies the
  logits internally, runs the chain, draws). Single-threaded today.
* ``HF``: the processor list ``generate()`` builds for the workload's settings
  (``tests/support/hf_reference.py``, generate()'s own factory: ``[RepetitionPenalty, Temperature,
  TopK, TopP]``, the ones a workload disables left out) on a clone of the logits
  (``torch.from_numpy``), then ``torch.multinomial(torch.softmax(...), 1)``, under
  ``torch.inference_mode()``, ``torch.set_num_threads(--threads)`` (default 1).
* ``NumPy``: a plain vectorized implementation on a copy of the logits (take/put for the
  penalty, division, ``np.argpartition`` for top-k, a sort of the k survivors for top-p,
  softmax, a cumulative search for the draw); with top-k off, top-p needs a full
  ``np.argsort`` of the vocabulary, which is what a plain implementation does.

A fourth timer, ``pass``, is ``np.sum`` over the same logits: one SIMD read of every logit
in the same cache state, the least any sampler must do. ``pass%`` = pass / kvgen.

Inputs (fixed seed 0): logits ``standard_normal((rows, vocab)) * 2.5`` (float32) with 8
boosted tokens per row set to ``uniform(12, 15)``: the top token holds ~20-40% of the
probability, the boosted ones ~90% at vocab 32k/50k and ~70% at 152k (the bulk's mass
grows with the vocabulary). So the top-p 0.95 nucleus without top-k ranges from tens to
~1,000 tokens at 32k/50k and ~10,000 at 152k; the ``kept`` column prints the mean number
of tokens that survive the chain. A flat random distribution (no boosted tokens) would be
the worst case for top-p alone (the nucleus holds most of the vocabulary). The history
``input_ids [rows, 64]`` is uniform over the vocabulary with 4 of the boosted tokens in
it, so the penalty touches the head of the distribution; every engine gets the same
arrays.

Protocol (PROTOCOL.md): an untimed sanity check first (kvgen's in-place processor and
the NumPy filter keep exactly the tokens HF keeps, at 8 x 50,257; for top-p alone a token
within 1e-5 of the nucleus boundary in float64 mass may differ, which is float rounding of
the softmax sum: printed, not fatal); then per configuration every engine is
warmed up and calibrated to ~0.15 s per round, and the engines are interleaved
(kvgen HF NumPy pass, kvgen HF NumPy pass, ...) for ``--rounds`` rounds (default 7); each
round records the mean time per call. Reported: the median over rounds, the min-max
spread, and the ratios HF/kvgen and NumPy/kvgen of the medians.

Run (pinned, as the protocol asks; not required):

    taskset -c 0,1 python benchmarks/bench_sampling.py            # full, a few minutes
    taskset -c 0,1 python benchmarks/bench_sampling.py --quick    # smoke run, < 30 s

Writes a table to stdout, ``benchmarks/results/bench_sampling.json`` (``--out``) with
every figure and the environment, and a PNG next to it when matplotlib is installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import transformers

import kvgen

BENCHMARKS = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCHMARKS), str(BENCHMARKS.parent / "tests" / "support")]
import hf_reference  # noqa: E402

import harness  # noqa: E402  (benchmarks/ and tests/ are not packages)

SEED = 0
HISTORY = 64
LOGIT_SCALE = 2.5
BOOSTED = 8
BOOST_RANGE = (12.0, 15.0)
BOOSTED_IN_HISTORY = 4
ROWS = (1, 8, 32)
VOCABS = (32000, 50257, 151936)
QUICK_VOCABS = (50257,)
WORKLOADS = {
    "chain": {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "repetition_penalty": 1.1},
    "top-p alone": {"temperature": 1.0, "top_k": 0, "top_p": 0.95, "repetition_penalty": 1.0},
}
KVGEN_THREADS = 1  # kvgen's sampler runs on the calling thread
ROUND_S, QUICK_ROUND_S = 0.15, 0.03
SANITY_SHAPE = (8, 50257)
BOUNDARY_TOLERANCE = 1e-5  # float64 probability mass
TARGET_SPEEDUP = ("chain", 8, 50257, 20.0)  # HF / kvgen at least this
TARGET_LATENCY = ("chain", 1, 50257, 50.0)  # kvgen microseconds per call at most this
DEFAULT_OUT = harness.RESULTS / "bench_sampling.json"


# ---- inputs --------------------------------------------------------------------------


def make_inputs(rows: int, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits [rows, vocab] float32 and history [rows, HISTORY] int64, seeded."""
    rng = np.random.default_rng(SEED)
    logits = (rng.standard_normal((rows, vocab)) * LOGIT_SCALE).astype(np.float32)
    boosted = np.stack([rng.choice(vocab, BOOSTED, replace=False) for _ in range(rows)])
    np.put_along_axis(logits, boosted, rng.uniform(*BOOST_RANGE, (rows, BOOSTED)).astype(np.float32), axis=1)
    history = rng.integers(0, vocab, (rows, HISTORY), dtype=np.int64)
    history[:, :BOOSTED_IN_HISTORY] = boosted[:, :BOOSTED_IN_HISTORY]
    return np.ascontiguousarray(logits), history


def kvgen_config(params: dict) -> kvgen.GenerationConfig:
    return kvgen.GenerationConfig(do_sample=True, seed=SEED, **params)


# ---- engines: each returns a zero-argument callable doing one timed call -------------


def kvgen_engine(params: dict, logits: np.ndarray, history: np.ndarray):
    proc = kvgen.LogitsProcessor(kvgen_config(params))
    return lambda: proc.sample(logits, history, step=0)


def hf_processors(params: dict) -> transformers.LogitsProcessorList:
    """The processors generate() builds for params, in its order (its own factory)."""
    return hf_reference.hf_processors(HISTORY, do_sample=True, **params)


def hf_engine(params: dict, logits: np.ndarray, history: np.ndarray):
    procs = hf_processors(params)
    scores, ids = torch.from_numpy(logits), torch.from_numpy(history)

    def call():
        # clone: a processor may write in place; kvgen copies the logits internally too
        processed = procs(ids, scores.clone())
        return torch.multinomial(torch.softmax(processed, dim=-1), 1)

    return call


def numpy_filter(params: dict, logits: np.ndarray, history: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The chain in plain NumPy: (token ids, probabilities) per row, ascending by logit;
    removed tokens have probability 0."""
    x = logits.copy()  # part of the timed cost, like kvgen's internal copy and HF's clone
    penalty = params["repetition_penalty"]
    if penalty != 1.0:
        seen = np.take_along_axis(x, history, axis=1)
        np.put_along_axis(x, history, np.where(seen < 0, seen * penalty, seen / penalty), axis=1)
    if params["temperature"] != 1.0:
        x /= np.float32(params["temperature"])
    k = params["top_k"]
    if k:
        ids = np.argpartition(x, -k, axis=1)[:, -k:]  # exactly k: HF also keeps ties with the k-th
        vals = np.take_along_axis(x, ids, axis=1)
        order = np.argsort(vals, axis=1)  # sort within the k survivors
        ids, vals = np.take_along_axis(ids, order, axis=1), np.take_along_axis(vals, order, axis=1)
    else:
        ids = np.argsort(x, axis=1)  # full sort of the vocabulary
        vals = np.take_along_axis(x, ids, axis=1)
    probs = np.exp(vals - vals[:, -1:])
    probs /= probs.sum(axis=1, keepdims=True)
    if params["top_p"] < 1.0:
        # HF's rule: drop the tokens whose ascending cumulative mass is <= 1 - top_p
        probs[np.cumsum(probs, axis=1) <= 1.0 - params["top_p"]] = 0.0
    return ids, probs


def numpy_draw(ids: np.ndarray, probs: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """One token per row: the first position whose cumulative weight exceeds u * total."""
    cum = np.cumsum(probs, axis=1)
    pos = np.minimum((cum <= uniform[:, None] * cum[:, -1:]).sum(axis=1), cum.shape[1] - 1)
    return ids[np.arange(len(ids)), pos]


def numpy_engine(params: dict, logits: np.ndarray, history: np.ndarray):
    rng = np.random.default_rng(SEED)
    return lambda: numpy_draw(*numpy_filter(params, logits, history), rng.random(len(logits)))


def pass_engine(logits: np.ndarray):
    return lambda: np.sum(logits)


def make_engines(params: dict, logits: np.ndarray, history: np.ndarray) -> dict:
    return {
        "kvgen": kvgen_engine(params, logits, history),
        "HF": hf_engine(params, logits, history),
        "NumPy": numpy_engine(params, logits, history),
        "pass": pass_engine(logits),
    }


# ---- sanity --------------------------------------------------------------------------


def kept_sets(params: dict, logits: np.ndarray, history: np.ndarray) -> dict:
    """Per engine, the boolean mask [rows, vocab] of tokens the chain keeps."""
    processed = kvgen.LogitsProcessor(kvgen_config(params))(history, logits.copy())
    hf = hf_processors(params)(torch.from_numpy(history), torch.from_numpy(logits.copy()))
    ids, probs = numpy_filter(params, logits, history)
    np_mask = np.zeros(logits.shape, dtype=bool)
    np.put_along_axis(np_mask, ids, probs > 0, axis=1)
    return {"kvgen": np.isfinite(processed), "HF": torch.isfinite(hf).numpy(), "NumPy": np_mask}


def only_top_p(params: dict) -> bool:
    return params["repetition_penalty"] == 1.0 and params["temperature"] == 1.0 and not params["top_k"]


def boundary_distance(logits: np.ndarray, top_p: float, differ: np.ndarray) -> float:
    """Top-p on the raw logits: the largest |top_p - float64 mass of the more likely tokens|
    over the tokens in `differ`; tiny means a float-rounding tie at the nucleus boundary."""
    x = logits.astype(np.float64)
    p = np.exp(x - x.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return max(abs(top_p - p[r][x[r] > x[r, t]].sum()) for r, t in zip(*np.nonzero(differ)))


def sanity_check() -> dict:
    """kvgen and NumPy must keep exactly HF's tokens at SANITY_SHAPE; for top-p alone a
    token within BOUNDARY_TOLERANCE of the nucleus boundary may differ (printed). Raises
    otherwise."""
    logits, history = make_inputs(*SANITY_SHAPE)
    rows, vocab = SANITY_SHAPE
    report = {"shape": [rows, vocab], "kept_per_row": {}, "boundary_differences": []}
    for name, params in WORKLOADS.items():
        masks = kept_sets(params, logits, history)
        report["kept_per_row"][name] = masks["HF"].sum(axis=1).tolist()
        for engine in ("kvgen", "NumPy"):
            differ = masks[engine] != masks["HF"]
            if not differ.any():
                continue
            gap = boundary_distance(logits, params["top_p"], differ) if only_top_p(params) else np.inf
            if gap > BOUNDARY_TOLERANCE:
                raise RuntimeError(f"sanity: {engine} keeps other tokens than HF for {name} at rows x vocab "
                                   f"= {rows} x {vocab} ({int(differ.sum())} differ)")
            report["boundary_differences"].append({
                "engine": engine, "workload": name, "rows": int(differ.any(axis=1).sum()),
                "tokens_kept_by_hf_only": int((masks["HF"] & differ).sum()),
                "tokens_kept_by_engine_only": int((masks[engine] & differ).sum()), "max_gap": gap})
    print(f"sanity: same kept tokens (kvgen and NumPy against HF, rows x vocab = {rows} x {vocab}; HF kept per "
          "row: " + "; ".join(f"{k} {v}" for k, v in report["kept_per_row"].items()) + ")")
    for d in report["boundary_differences"]:
        print(f"  except at the top-p boundary, {d['workload']}: {d['engine']} differs from HF in {d['rows']} of "
              f"{rows} rows ({d['tokens_kept_by_hf_only']} tokens only HF keeps, "
              f"{d['tokens_kept_by_engine_only']} only {d['engine']} keeps), each within {d['max_gap']:.1e} "
              "of the 0.95 mass boundary in float64: float rounding of the softmax sum")
    return report


def mean_kept(params: dict, logits: np.ndarray, history: np.ndarray) -> float:
    processed = kvgen.LogitsProcessor(kvgen_config(params))(history, logits.copy())
    return float(np.isfinite(processed).sum(axis=1).mean())


# ---- timing ----------------------------------------------------------------------


def bench_config(workload: str, rows: int, vocab: int, rounds: int, round_s: float) -> dict:
    params = WORKLOADS[workload]
    logits, history = make_inputs(rows, vocab)
    stats, calls = harness.compare(make_engines(params, logits, history), rounds, round_s)
    return {
        "workload": workload, "rows": rows, "vocab": vocab, "params": params,
        "mean_kept_tokens": mean_kept(params, logits, history),
        "calls_per_round": calls, "engines": stats, "ratios": harness.ratios(stats, "kvgen"),
    }


# ---- report --------------------------------------------------------------------------


def spread(engine: str, width: int) -> harness.Column:
    return harness.Column(f"{engine} us [min-max]", width, lambda r: harness.us(r["engines"][engine]))


TABLE = harness.Table(
    [harness.Column("workload", 12, lambda r: r["workload"], left=True),
     harness.Column("rows", 4, lambda r: str(r["rows"])), harness.Column("vocab", 6, lambda r: str(r["vocab"])),
     harness.Column("kept", 7, lambda r: f"{r['mean_kept_tokens']:.0f}")],
    [spread("kvgen", 26)], [spread("HF", 28)], [spread("NumPy", 28)],
    [harness.Column("HF/kv", 6, lambda r: f"{r['ratios']['HF/kvgen']:.1f}"),
     harness.Column("NP/kv", 6, lambda r: f"{r['ratios']['NumPy/kvgen']:.1f}"),
     harness.Column("pass%", 6, lambda r: f"{100 * r['ratios']['pass/kvgen']:.0f}%")],
)


def find(results: list[dict], workload: str, rows: int, vocab: int) -> dict | None:
    return next((r for r in results if (r["workload"], r["rows"], r["vocab"]) == (workload, rows, vocab)), None)


def check_targets(results: list[dict]) -> list[dict]:
    """The two goals, as PASS/MISS (not assertions)."""
    checks = []
    workload, rows, vocab, min_ratio = TARGET_SPEEDUP
    r = find(results, workload, rows, vocab)
    if r:
        got, shown = r["ratios"]["HF/kvgen"], f"{r['ratios']['HF/kvgen']:.1f}x"
        name = f"{workload} {rows} x {vocab}: HF/kvgen >= {min_ratio:g}"
        checks.append({**harness.target(name, got, got >= min_ratio, shown), "text": shown})
    workload, rows, vocab, max_us = TARGET_LATENCY
    r = find(results, workload, rows, vocab)
    if r:
        got = r["engines"]["kvgen"]["median_us"]
        shown = f"{got:.1f} us"
        name = f"{workload} {rows} x {vocab}: kvgen <= {max_us:g} us/call"
        checks.append({**harness.target(name, got, got <= max_us, shown), "text": shown})
    return checks


def plot(results: list[dict], plt):
    rows_values = sorted({r["rows"] for r in results})
    fig, axes = plt.subplots(1, len(rows_values), figsize=(5 * len(rows_values), 4.2), squeeze=False)
    colors = {"kvgen": "tab:blue", "HF": "tab:orange", "NumPy": "tab:green"}
    styles = {"chain": "-", "top-p alone": "--"}
    for ax, rows in zip(axes[0], rows_values):
        for workload, style in styles.items():
            series = sorted((r for r in results if r["rows"] == rows and r["workload"] == workload),
                            key=lambda r: r["vocab"])
            vocabs = [r["vocab"] for r in series]
            for engine, color in colors.items():
                ax.plot(vocabs, [r["engines"][engine]["median_us"] for r in series], style, color=color,
                        marker="o", label=f"{engine}, {workload}")
        ax.set(xscale="log", yscale="log", title=f"rows = {rows}", xlabel="vocab", ylabel="us per call")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("sampler time per call (median of interleaved rounds; lower is better)")
    return fig


# ---- main ----------------------------------------------------------------------------


def main() -> None:
    args = harness.parse_args(harness.cli(__doc__, DEFAULT_OUT, KVGEN_THREADS,
                                          f"torch threads ({KVGEN_THREADS} is kvgen's sampler thread count)",
                                          "vocab 50257 only, 5 short rounds", round_s=(ROUND_S, QUICK_ROUND_S)))
    torch.set_num_threads(args.threads)
    # hf_reference's tiny model keeps GPT-2's special-token ids (outside its 64-token vocab:
    # only its processor factory runs); transformers warns about that on every set-up.
    transformers.logging.set_verbosity_error()
    env = harness.begin({"torch": torch.__version__, "transformers": transformers.__version__},
                        {"kvgen": KVGEN_THREADS, "torch": args.threads, "numpy": 1},
                        {"kvgen": "single-threaded sampler", "numpy": "no BLAS in these ops"})
    sanity = sanity_check()

    vocabs = QUICK_VOCABS if args.quick else VOCABS
    print(f"\n{args.rounds} interleaved rounds of ~{args.round_s:g} s per engine; times: median [min-max] "
          f"of the per-call mean of each round; kept: mean tokens left by the chain; "
          f"pass%: np.sum over the logits / kvgen\n")
    plan = [(workload, rows, vocab, args.rounds, args.round_s) for workload in WORKLOADS for rows in ROWS
            for vocab in vocabs]
    with torch.inference_mode():
        results = harness.run_rows(TABLE, plan, bench_config)
    print()
    targets = check_targets(results)

    settings = harness.settings(args, seed=SEED, history=HISTORY,
                                logits={"scale": LOGIT_SCALE, "boosted_per_row": BOOSTED, "boost_range": BOOST_RANGE,
                                        "boosted_in_history": BOOSTED_IN_HISTORY})
    report = {"environment": env, "settings": settings, "sanity": sanity, "results": results, "targets": targets}
    harness.write_outputs(report, args.out, lambda plt: plot(results, plt))


if __name__ == "__main__":
    main()
