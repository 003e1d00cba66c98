"""bench_decode.py --model gpt2: the built-in GPT-2 against transformers + torch and CTranslate2.

What is measured
----------------
Whole ``generate`` calls at batch 1 on the same GPT-2-small-shaped model with random
weights (``decode/models.py``), the same prompt token ids and the same thread count for
every engine:

* ``kvgen``: ``kvgen.Generator(kvgen.Model.load(dir), config).generate([prompt])`` (prefill
  in 32-token chunks, then one forward + one step generator step per token: one request of the
  engine, stepped in the calling thread; the KV cache is allocated per call). ``kvgen.set_num_threads(--threads)``.
* ``kvgen-q8``: the same with ``kvgen.Model.load(dir, dtype="q8_0")`` (weights quantized to
  Q8_0 at load), against ``ct2-int8`` (both int8 weights): a ``kvgen-q8 / ct2-int8`` line per
  workload and a PASS/MISS line for ">= 1.2x CTranslate2 int8 decode". Skipped with a note
  where ``Model.load`` has no ``dtype``.
* ``HF``: ``GPT2LMHeadModel.generate(input_ids, max_new_tokens, min_new_tokens,
  do_sample=False, num_beams)`` under ``torch.inference_mode()``, float32,
  ``torch.set_num_threads(--threads)``.
* ``ct2-f32`` / ``ct2-int8``: ``ctranslate2.Generator(dir, compute_type="float32" | "int8",
  intra_threads=--threads, inter_threads=1).generate_batch(..., sampling_topk=1,
  include_prompt_in_result=False)``: int8 weights read a quarter of the bytes, so it is a
  different (quantized) computation, shown as what a fast quantized engine reaches.

Every run is held to an exact length (HF ``min_new_tokens``, kvgen ``min_new_tokens``,
CTranslate2 ``min_length`` equal to the maximum), so EOS never ends one early; the token
counts are checked. Under greedy search each call also records when every new token
became known (kvgen's ``Generator.stream``, an HF streamer, CTranslate2's callback), so one
call gives both its end-to-end time and its decode-only time, without the noise of
subtracting a separately timed prefill. Workloads (PROTOCOL.md):

* ``prefill``: 512-token prompt, one new token (``max_new_tokens=1``): time to first token
  (prefill + one step) = the whole call; prefill tokens/s = 512 / TTFT.
* ``decode``: 64-token prompt, 256 new tokens, greedy. ``end-to-end`` = 256 / time of the
  whole call (prefill included); ``decode-only`` = 255 / (time of the 256th token - time
  of the first): the decode steps alone. The headline decode figure is decode-only; the
  TTFT of the 64-token prompt is printed too.
* ``beam``: 4 beams, 32-token prompt, 128 new tokens: new tokens of the best sequence per
  second, end-to-end (prefill of 32 tokens included; no token times under beam search).
* ``context`` (long context): decode-only tokens/s (64 new tokens) after a prompt of 64,
  256, 512, 1024 and 1900 tokens (so the last point decodes positions 1900-1963): the
  per-token cost grows with the attention over the cache. Plotted.

Protocol: a sanity check first (greedy, 64-token prompt, 32 new tokens: kvgen must give
HF's tokens, else this raises; CTranslate2's match is printed); then per workload every
engine runs once untimed (warm-up; those outputs are compared with HF's and printed), and
the engines are interleaved (kvgen HF ct2-f32 ct2-int8, ...) for ``--rounds`` rounds
(default 5), with a 0.2 s pause before each timed call. Reported: median over rounds,
min-max spread, and ``x``: engine time / kvgen time of the medians (> 1: kvgen is faster).
Memory bandwidth is measured in the same run (``harness.read_bandwidth``, before and after
the timings; the limit is the best multi-thread figure) and batch-1 decode is printed as a
fraction of the limit ``tokens/s * weight_bytes / bandwidth``, weight_bytes = the bytes of
weights read per token (float32: every parameter once, the tied embedding counted once, one
position row; ct2-int8: its model.bin less the position table, approximate). The KV cache
bytes kvgen allocated are reported. A PASS/MISS line (not an assertion) for the goal "kvgen
decode at batch 1 >= 2x transformers" (decode-only tokens/s).

``--quick``: a 128-token prefill, 32 new tokens for decode, 12 for beam search, context
points 64 and 256 with 16 new tokens, an 8-token sanity check. The first run builds and
converts the model (~10 s, ~1.1 GB on disk). Writes ``benchmarks/results/bench_decode.json``
(``--out``) and a PNG next to it (decode tokens/s against context length).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import harness
from decode import models
from decode.workloads import PAUSE_S, common_prefix, per_prompt_token, print_rows, stamped_workload, workload_table
from engines import ct2_engine, hf_engine, kvgen_engine
from engines.ct2_engine import CT2Engine
from engines.hf_engine import HFEngine
from engines.kvgen_engine import KvgenEngine

QUANTIZED_ENGINES = ("kvgen-q8", "ct2-int8")  # int8 weights: a different computation, tokens may differ from HF's
Q8_TARGET = 1.2  # kvgen-q8 decode tokens/s >= Q8_TARGET x ct2-int8's
FULL = {"prefill": 512, "decode": (64, 256), "beam": (32, 128, 4), "context": ((64, 256, 512, 1024, 1900), 64),
        "sanity_tokens": 32}
QUICK = {"prefill": 128, "decode": (64, 32), "beam": (32, 12, 4), "context": ((64, 256), 16),
         "sanity_tokens": 8}
TARGET = 2.0  # kvgen decode tokens/s at batch 1 >= TARGET x HF's
DEFAULT_OUT = harness.RESULTS / "bench_decode.json"


# ---- engines and their weight bytes ---------------------------------------------------


def load_engines(dirs: dict, threads: int) -> dict:
    kvgen_engine.set_threads(threads)
    hf_engine.set_threads(threads)
    engines = {"kvgen": KvgenEngine(dirs["HF"], eos=models.EOS)}
    try:
        engines["kvgen-q8"] = KvgenEngine(dirs["HF"], eos=models.EOS, dtype="q8_0")
    except TypeError:
        print("skipped: kvgen-q8 (this kvgen's Model.load has no dtype=)")
    engines["HF"] = HFEngine.gpt2(dirs["HF"], eos=models.EOS)
    for name, compute_type in models.CT2_TYPES.items():
        if name in dirs:
            engines[name] = CT2Engine(dirs[name], compute_type, threads)
    return engines


def weight_bytes(hf: HFEngine, dirs: dict) -> dict:
    """Bytes of weights read per decoded token: every parameter once (parameters() counts
    the tied embedding once), of the position table one row. ct2-int8 (when it runs):
    model.bin less the float32 position table (approximate: it includes the scales and
    float biases)."""
    wpe = hf.model.transformer.wpe.weight
    params = hf.parameters()
    out = {"parameters": params, "float32": 4 * (params - wpe.numel() + wpe.shape[1])}
    if "ct2-int8" in dirs:
        out["int8_approx"] = (dirs["ct2-int8"] / "model.bin").stat().st_size - 4 * (wpe.numel() - wpe.shape[1])
    return out


def engine_weight_bytes(engines: dict, weights: dict) -> dict:
    """Per engine, the weight bytes it reads per token (kvgen-q8: its own count, the whole
    position table included, approximate like ct2-int8's)."""
    special = {"ct2-int8": lambda: weights["int8_approx"], "kvgen-q8": lambda: engines["kvgen-q8"].weight_bytes()}
    return {name: special[name]() if name in special else weights["float32"] for name in engines}


# ---- sanity and notes ----------------------------------------------------------------


def sanity_check(engines: dict, prompt: list[int], new_tokens: int) -> dict:
    """Greedy tokens of every engine against HF's; raises if kvgen's differ."""
    ref, _ = engines["HF"].generate(prompt, new_tokens)
    report = {"prompt": len(prompt), "new_tokens": new_tokens, "same_as_HF": {}, "first_HF_tokens": ref[:8]}
    for name, engine in engines.items():
        if name == "HF":
            continue
        same = common_prefix(engine.generate(prompt, new_tokens)[0], ref)
        report["same_as_HF"][name] = same
        if name == "kvgen" and same < new_tokens:
            raise RuntimeError(f"sanity: kvgen's greedy tokens differ from transformers' at position {same} "
                               f"(prompt {len(prompt)} tokens)")
    parts = [f"{name} {'all' if n == new_tokens else n} of {new_tokens}" for name, n in report["same_as_HF"].items()]
    print(f"sanity (greedy, {len(prompt)}-token prompt): leading tokens equal to HF's: " + ", ".join(parts) +
          ("  (int8 weights: a different computation, a divergence is expected)"
           if report["same_as_HF"].get("ct2-int8", new_tokens) < new_tokens else ""))
    return report


def shown_rows(r: dict) -> list[tuple]:
    """The table rows of a result: (label, unit, stats per engine, formatter, ratio kind)."""
    head = f"{r['workload']} {r['prompt']}+{r['new_tokens']}"
    if r["workload"] == "prefill":
        per = {n: per_prompt_token(s, r["prompt"]) for n, s in r["call"].items()}
        return [(f"prefill {r['prompt']}: TTFT", "ms", r["call"], harness.ms, "call"),
                (f"prefill {r['prompt']}", "tok/s", per, harness.rate, "call")]
    if r["workload"] == "beam":
        return [(f"beam {r['beams']}, {r['prompt']}+{r['new_tokens']} e2e", "tok/s", r["end_to_end"], harness.rate,
                 "end_to_end")]
    if r["workload"] == "decode":
        return [(f"{head} end-to-end", "tok/s", r["end_to_end"], harness.rate, "end_to_end"),
                (f"{head} decode-only", "tok/s", r["decode_only"], harness.rate, "decode_only"),
                (f"{head} TTFT", "ms", r["ttft"], harness.ms, "ttft")]
    return [(f"{head} decode-only", "tok/s", r["decode_only"], harness.rate, "decode_only")]


def mismatch_notes(results: list[dict]) -> list[str]:
    notes = []
    for r in results:
        for name, same in r["same_as_HF"].items():
            if same < r["new_tokens"] and name not in QUANTIZED_ENGINES:
                notes.append(f"note: {r['workload']} {r['prompt']}+{r['new_tokens']}: {name}'s tokens differ from "
                             f"HF's from position {same}")
    return notes


def slower_notes(results: list[dict]) -> list[str]:
    """Table rows where kvgen's median is slower than an engine's."""
    notes = []
    for r in results:
        kinds = {}  # ratio kind -> label of its first row: one note per kind
        for label, _, _, _, kind in shown_rows(r):
            kinds.setdefault(kind, label)
        for kind, label in kinds.items():
            slower = [f"{key.split('/')[0]} (x {x:.2f})" for key, x in r["ratios"][kind].items() if x < 1.0]
            if slower:
                notes.append(f"note: {label}: kvgen slower than " + ", ".join(slower))
    return notes


# ---- report --------------------------------------------------------------------------


def print_bandwidth(bw: dict, weights: dict, fractions: dict, threads: int) -> None:
    print(harness.bandwidth_line(bw, threads))
    int8 = f"; ct2-int8 ~{weights['int8_approx'] / 1e6:.1f} MB" if "int8_approx" in weights else ""
    print(f"weights read per token: float32 {weights['float32'] / 1e6:.1f} MB ({weights['parameters'] / 1e6:.1f}M "
          f"parameters, tied embedding once, one position row){int8}")
    print("batch-1 decode-only, fraction of the bandwidth limit (tokens/s x weight bytes / bandwidth): " +
          ", ".join(f"{n} {f['tokens_per_s']:.1f} tok/s = {f['GBps']:.1f} GB/s = {100 * f['fraction']:.0f}%"
                    for n, f in fractions.items()))


def check_target(decode: dict) -> dict:
    """The decode goal against transformers, as PASS/MISS (not an assertion)."""
    got = decode["ratios"]["decode_only"]["HF/kvgen"]
    e2e = decode["ratios"]["end_to_end"]["HF/kvgen"]
    name = f"kvgen decode at batch 1 >= {TARGET:g}x transformers (decode-only tokens/s)"
    return {**harness.target(name, got, got >= TARGET, f"{got:.2f}x; end-to-end {e2e:.2f}x"), "end_to_end": e2e}


def q8_against_ct2(results: list[dict]) -> dict | None:
    """kvgen with dtype="q8_0" against CTranslate2 int8 (both int8 weights): ct2-int8 time /
    kvgen-q8 time per workload (> 1: kvgen-q8 faster), and the decode goal."""
    if not all(n in results[0]["call"] for n in QUANTIZED_ENGINES):
        return None
    kinds = {"prefill": "call", "decode": "decode_only", "beam": "end_to_end", "context": "decode_only"}
    x = {f"{r['workload']} {r['prompt']}+{r['new_tokens']}": r[kinds[r["workload"]]]["ct2-int8"]["median_us"] /
         r[kinds[r["workload"]]]["kvgen-q8"]["median_us"] for r in results}
    print("kvgen-q8 / ct2-int8 speed (ct2-int8 time / kvgen-q8 time; prefill: whole call, decode and context: "
          "decode-only, beam: end-to-end): " + ", ".join(f"{k} {v:.2f}" for k, v in x.items()))
    decode = next(v for k, v in x.items() if k.startswith("decode"))
    goal = harness.target(f"GPT-2-small kvgen dtype=q8_0 decode >= {Q8_TARGET:g}x CTranslate2 int8", decode,
                          decode >= Q8_TARGET, f"{decode:.2f}x")
    return {"ratios": x, "target": goal}


def plot(context: list[dict], threads: int, plt):
    colors = {"kvgen": "tab:blue", "kvgen-q8": "tab:cyan", "HF": "tab:orange", "ct2-f32": "tab:green",
              "ct2-int8": "tab:red"}
    x = [r["prompt"] for r in context]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for name in context[0]["decode_only"]:
        color = colors[name]
        stats = [r["decode_only"][name] for r in context]
        med = np.array([1e6 / s["median_us"] for s in stats])
        lo = med - np.array([1e6 / s["max_us"] for s in stats])
        hi = np.array([1e6 / s["min_us"] for s in stats]) - med
        ax.errorbar(x, med, yerr=[lo, hi], marker="o", capsize=3, color=color, label=name)
    ax.set(xlabel="context length (prompt tokens before the decoded ones)", ylabel="decode tokens/s (batch 1)",
           ylim=(0, None))
    ax.set_xticks(x)
    ax.grid(True, alpha=0.3)
    ax.legend()
    ax.set_title(f"GPT-2 small shape, random weights, n_positions 2048; {threads} threads; "
                 f"{context[0]['new_tokens']} decoded tokens\nmedian of interleaved rounds, bars min-max; "
                 "higher is better", fontsize=9)
    return fig


# ---- the part ------------------------------------------------------------------------


def setup(args: argparse.Namespace) -> tuple[dict, dict, dict]:
    """Builds / converts the model, loads the engines, prints the environment; returns
    (directories, engines, environment)."""
    ctranslate2 = ct2_engine.import_peer(", ".join(models.CT2_TYPES))
    dirs = models.prepare_models(args.model_dir.expanduser(), with_ct2=ctranslate2 is not None)
    engines = load_engines(dirs, args.threads)
    versions = hf_engine.versions()
    threads = {"kvgen": kvgen_engine.threads(), "torch": hf_engine.threads()}
    if ctranslate2:
        versions.update(ct2_engine.versions(ctranslate2))
        threads["ctranslate2_intra"] = args.threads
    env = harness.begin(versions, threads, {"kvgen": "OpenBLAS threads of its matrix products",
                                            "ctranslate2_intra": "inter_threads 1"})
    print(f"model: {engines['kvgen'].model!r} (random weights, n_positions {models.N_POSITIONS})")
    return dirs, engines, env


def run_workloads(engines: dict, work: dict, rounds: int) -> list[dict]:
    """Prefill, decode, beam and the context points, each printed as it finishes."""
    contexts, ctx_new = work["context"]
    ids = models.make_prompts(max(contexts))
    (d_prompt, d_new), (b_prompt, b_new, beams) = work["decode"], work["beam"]
    plan = [("prefill", ids[:work["prefill"]], 1, 1), ("decode", ids[:d_prompt], d_new, 1),
            ("beam", ids[:b_prompt], b_new, beams)] + [("context", ids[:n], ctx_new, 1) for n in contexts]
    print(f"\n{rounds} interleaved rounds, one call per engine each; figures: median [min-max] over rounds; "
          f"x: engine time / kvgen time (> 1: kvgen faster)\n")
    table = workload_table(list(engines), {n: f"x {n.split('-')[-1]}" for n in list(engines)[1:]})
    table.print_header()
    results = []
    for label, prompt, new_tokens, num_beams in plan:
        results.append(stamped_workload(label, engines, prompt, new_tokens, rounds, num_beams))
        print_rows(table, results[-1], shown_rows)
    return results


def print_summary(results: list[dict]) -> dict:
    """KV cache bytes, the long-context ratios and the notes; returns them."""
    kv_bytes = {f"{r['workload']} {r['prompt']}+{r['new_tokens']}": r["kv_cache_bytes"] for r in results}
    print("kvgen KV cache bytes: " + ", ".join(f"{k}: {v / 2**20:.1f} MiB" for k, v in kv_bytes.items()))
    context = [r for r in results if r["workload"] == "context"]
    first, last = context[0]["decode_only"], context[-1]["decode_only"]
    long_ratio = {n: first[n]["median_us"] / last[n]["median_us"] for n in first}
    print(f"long context: decode tokens/s after {context[-1]['prompt']} tokens / after {context[0]['prompt']}: " +
          ", ".join(f"{n} {x:.2f}" for n, x in long_ratio.items()))
    notes = mismatch_notes(results) + slower_notes(results)
    for line in notes:
        print(line)
    return {"kv_cache_bytes": kv_bytes, "long_context_ratio": long_ratio, "notes": notes}


def run_gpt2(args: argparse.Namespace) -> None:
    began = time.perf_counter()
    work = dict(QUICK if args.quick else FULL)
    if args.new_tokens:
        work["decode"] = (work["decode"][0], args.new_tokens)
    dirs, engines, env = setup(args)
    weights = weight_bytes(engines["HF"], dirs)
    sanity = sanity_check(engines, models.make_prompts(64), work["sanity_tokens"])

    bw_before = harness.read_bandwidth(args.threads)
    results = run_workloads(engines, work, args.rounds)
    bw = harness.bandwidth_report(bw_before, harness.read_bandwidth(args.threads))
    decode = next(r for r in results if r["workload"] == "decode")
    fractions = harness.bandwidth_fractions(decode["decode_only"], engine_weight_bytes(engines, weights),
                                            bw["limit_GBps"])
    print()
    print_bandwidth(bw, weights, fractions, args.threads)
    summary = print_summary(results)
    target = check_target(decode)
    q8 = q8_against_ct2(results)
    print(f"took {time.perf_counter() - began:.0f} s")

    settings = {"quick": args.quick, "rounds": args.rounds, "threads": args.threads, "pause_s": PAUSE_S,
                "seed": models.SEED, "workloads": work, "model_dir": str(dirs["HF"]),
                "ct2_dirs": {k: str(dirs[k]) for k in models.CT2_TYPES if k in dirs}, "model_recipe": models.RECIPE}
    report = {"environment": env, "settings": settings, "weights": weights, "sanity": sanity, "bandwidth": bw,
              "bandwidth_fractions": fractions, **summary, "results": results, "target": target,
              "q8_against_ct2_int8": q8}
    context = [r for r in results if r["workload"] == "context"]
    harness.write_outputs(report, args.out, lambda plt: plot(context, args.threads, plt))
