"""bench_decode.py --model smollm2: GGUF files, kvgen against llama-cpp-python and transformers.

Files (``--files``, default ``q4_1,q8_0,q4_k_m,qwen2_q4_k_m,qwen3moe_q4_k_m``; ``q4_1`` with ``--quick``): see
``decode/models.py``. Engines, each at the same thread count (every count of
``--thread-counts``, default ``1,2``; ``--threads`` with ``--quick``), interleaved:

* ``kvgen``: ``kvgen.Model.load(path)`` (the default mode),
  ``kvgen.Generator(model, GenerationConfig(max_new_tokens=N, min_new_tokens=N, ...)).generate([ids])``;
  prefill and decode times from its ``last_stats``. Threads: ``kvgen.set_num_threads``.
* ``llama.cpp``: llama-cpp-python's ``Llama(model_path, n_ctx=1024, n_threads, n_threads_batch,
  n_batch=512, logits_all=False)`` (threads changed with ``llama_set_n_threads``), the
  low-level loop with a llama.cpp sampler chain in C (EOS banned by a logit bias; see
  ``engines/llama_cpp_engine.py``). It computes with the file's quantized weights and
  int8-quantized activations.
* ``HF``: ``AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., dtype=torch.float32)`` (the
  file dequantized to float32), ``generate(..., min_new_tokens=N)`` with a streamer for the
  token times; the prefill workload is one forward over the prompt (with its cache) and an
  argmax. It is slow, so ``--hf first`` (default) runs it on the first file at the most
  threads only; ``--hf all`` everywhere, ``--hf none`` nowhere.

Position sweep (the ``q4_1`` file; ``--positions``, default 64,512,1024,2048,3000, 64,512 with
``--quick``; ``--positions none`` skips it): greedy decode-only tokens/s of 32 new tokens (16
with ``--quick``) after a prompt of each length, kvgen and llama.cpp (a context of its own with
room for the longest prompt: llama.cpp's default f16 KV cache) interleaved at every thread count,
with each engine's ratio to the first position and a PASS/MISS line for kvgen keeping 0.8x its
speed at the last position. kvgen's default mode keeps its KV cache in half precision.

Per file: load time and peak RSS (``decode/load_memory.py``) and the weight bytes read per
token (kvgen's ``model._core.weight_bytes``, HF's float32 parameters, llama.cpp's GGUF tensor
bytes). Per file and thread count: ``prefill`` (512-token prompt, time to first token;
prefill tokens/s = 512 / TTFT), ``greedy`` and ``chain`` decode (64-token prompt, 256 new
tokens, ``--new-tokens``; chain = repetition penalty 1.1, temperature 0.8, top-k 40, top-p
0.95, seed 0): decode-only tokens/s = steps / (time of the last token - time of the first),
end-to-end = new tokens / whole call, and the TTFT of the 64-token prompt; memory bandwidth
at that thread count and the fraction of it that greedy decode reaches per engine; PASS/MISS
lines for the goals (decode >= 1.5x llama.cpp on Q4_1, >= 1.3x on Q8_0 and Q4_K_M, >= 1.2x on the Qwen3-MoE, prefill
>= 1.5x on Q4_1, load <= 0.5 s, peak RSS <= 1.3x llama-cpp-python's). A greedy sanity check
(64-token prompt, 32 new tokens) compares every engine's tokens with HF's (llama.cpp's where
HF does not run); kvgen's default mode quantizes activations, so it only raises when kvgen's
first token differs on a trained file (the fidelity bounds are
tests/model/test_quantized_fidelity.py and bench_perplexity.py). ``--quick``: a 128-token prefill, 32 new
tokens, an 8-token sanity check. Writes ``benchmarks/results/bench_decode_smollm2.json``
(``--out-smollm2``) and a PNG next to it (bars per file and thread count).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import time
from pathlib import Path

import harness
import kvgen
from decode import load_memory, models
from decode.workloads import (
    PAUSE_S,
    common_prefix,
    per_prompt_token,
    print_rows,
    reference_engine,
    split_workload,
    workload_table,
)
from engines import hf_engine, kvgen_engine, llama_cpp_engine
from engines.hf_engine import HFEngine
from engines.kvgen_engine import KvgenEngine
from engines.llama_cpp_engine import LlamaCppEngine

RATIO_TITLES = {"llama.cpp": "kv/llama", "HF": "kv/HF"}
FULL = {"prefill": 512, "decode": (64, 256), "sanity_tokens": 32, "positions": ((64, 512, 1024, 2048, 3000), 32)}
QUICK = {"prefill": 128, "decode": (64, 32), "sanity_tokens": 8, "positions": ((64, 512), 16)}
POSITIONS_FILE = "q4_1"  # the position sweep runs on this file (SmolLM2-135M Q4_1)
POSITION_TARGET = 0.8  # kvgen decode tokens/s at the last position / at the first
KV_INT8, LLAMA_Q8_0 = "kvgen int8 KV", "llama.cpp q8_0 KV"  # the sweep's int8 KV cache variants
CHAIN = {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "repetition_penalty": 1.1}
SAMPLING = {**CHAIN, "seed": models.SEED}
# kvgen / llama.cpp greedy decode tokens/s
FILE_TARGETS = {"q4_1": 1.5, "q8_0": 1.3, "q4_k_m": 1.3, "qwen2_q4_k_m": 1.3, "qwen3moe_q4_k_m": 1.2}
PREFILL_TARGET = 1.5  # kvgen / llama.cpp prefill tokens/s (SmolLM2 Q4_1)
DEFAULT_OUT = harness.RESULTS / "bench_decode_smollm2.json"


def rows(r: dict) -> list[tuple]:
    """The table rows of a result: (label, unit, stats per engine, formatter, ratio kind)."""
    if r["new_tokens"] == 1:
        per = {n: per_prompt_token(s, r["prompt"]) for n, s in r["ttft"].items()}
        return [(f"prefill {r['prompt']}: TTFT", "ms", r["ttft"], harness.ms, "ttft"),
                (f"prefill {r['prompt']}", "tok/s", per, harness.rate, "ttft")]
    head = f"{'chain' if r['chain'] else 'greedy'} {r['prompt']}+{r['new_tokens']}"
    return [(f"{head} decode-only", "tok/s", r["decode_only"], harness.rate, "decode_only"),
            (f"{head} end-to-end", "tok/s", r["end_to_end"], harness.rate, "end_to_end"),
            (f"{head} TTFT", "ms", r["ttft"], harness.ms, "ttft")]


def weight_bytes(engines: dict, path: Path) -> dict:
    """Bytes of weights read per decoded token: kvgen's own count (``weight_bytes`` of its
    core: the quantized bytes), HF's float32 parameters (tied embedding once) and llama.cpp's
    tensors in the file (what it computes on)."""
    out = {"kvgen": engines["kvgen"].weight_bytes(), "llama.cpp": llama_cpp_engine.tensor_bytes(path),
           "file": path.stat().st_size}
    if "HF" in engines:
        hf_params = engines["HF"].parameters()
        out.update({"HF": 4 * hf_params, "HF_parameters": hf_params})
    return out


def sanity(engines: dict, prompt: list[int], new_tokens: int, trained: bool) -> dict:
    """Greedy tokens of every engine against the reference engine's (HF's where it runs).
    kvgen's default mode quantizes activations, so its tokens may leave HF's after a few (as
    llama.cpp's do); the teacher-forced bounds are in tests/model/test_quantized_fidelity.py.
    This only guards the timings against a broken engine: on a trained file it raises if
    kvgen's first token differs from the reference's (on random weights the logits nearly tie)."""
    ref = reference_engine(engines)
    outs = {n: e.run(prompt, new_tokens)["tokens"] for n, e in engines.items()}
    same = {n: common_prefix(outs[n], outs[ref]) for n in engines if n != ref}
    if trained and same.get("kvgen", 1) < 1:
        raise RuntimeError(f"sanity: kvgen's first greedy token differs from {ref}'s")
    text = engines["kvgen"].model.decode(outs[ref]).replace("\n", " ")
    print(f"sanity (greedy, {len(prompt)}-token prompt): leading tokens equal to {ref}'s: " +
          ", ".join(f"{n} {'all' if k == new_tokens else k} of {new_tokens}" for n, k in same.items()) +
          f"; {ref} continues {text[:60]!r}...")
    return {"prompt": len(prompt), "new_tokens": new_tokens, "reference": ref, "same_as_reference": same,
            "reference_tokens": outs[ref]}


def set_threads(engines: dict, threads: int) -> None:
    kvgen_engine.set_threads(threads)
    hf_engine.set_threads(threads)
    if "llama.cpp" in engines:
        engines["llama.cpp"].set_threads(threads)


def run_threads(kind: str, engines: dict, ids: list[int], work: dict, threads: int, weights: dict, args) -> dict:
    """The workloads of one file at one thread count, every engine at that count; printed."""
    set_threads(engines, threads)
    d_prompt, d_new = work["decode"]
    print(f"\n-- {models.FILE_LABELS[kind]}, {threads} thread(s) for every engine: {', '.join(engines)} --")
    checked = sanity(engines, ids[:d_prompt], work["sanity_tokens"], trained=kind not in models.RANDOM_KINDS)
    bw_before = harness.read_bandwidth(threads)
    titles = {n: t for n, t in RATIO_TITLES.items() if n in engines}
    table = workload_table(list(engines), titles)
    table.print_header()
    results = []
    for label, prompt, new_tokens, sampling in (("prefill", ids[:work["prefill"]], 1, None),
                                                ("decode", ids[:d_prompt], d_new, None),
                                                ("decode", ids[:d_prompt], d_new, SAMPLING)):
        results.append(split_workload(label, engines, prompt, new_tokens, sampling, args.rounds))
        print_rows(table, results[-1], rows)
    greedy = results[1]
    bw, fractions = harness.decode_bandwidth(bw_before, threads, greedy["decode_only"], weights)
    for r in results:
        for n, k in r["same_as_reference"].items():
            if k < r["new_tokens"] and not r["chain"]:
                print(f"note: {r['workload']} greedy {r['prompt']}+{r['new_tokens']}: {n}'s tokens differ from "
                      f"{r['reference']}'s from position {k}")
    targets = []
    if "llama.cpp" in engines:
        label = f"{models.FILE_LABELS[kind]}, {threads} thread(s)"
        x = greedy["ratios"]["decode_only"]["llama.cpp/kvgen"]
        targets.append(harness.target(f"{label}: kvgen greedy decode >= {FILE_TARGETS[kind]:g}x llama.cpp", x,
                                      x >= FILE_TARGETS[kind], f"{x:.2f}x"))
        if kind == "q4_1":
            x = results[0]["ratios"]["ttft"]["llama.cpp/kvgen"]
            targets.append(harness.target(f"{label}: kvgen prefill {work['prefill']} >= {PREFILL_TARGET:g}x llama.cpp",
                                          x, x >= PREFILL_TARGET, f"{x:.2f}x"))
    return {"file": kind, "threads": threads, "engines": list(engines), "sanity": checked, "bandwidth": bw,
            "bandwidth_fractions": fractions, "results": results, "targets": targets,
            "kv_cache_bytes": engines["kvgen"].kv_cache_bytes}


def position_rows(r: dict) -> list[tuple]:
    return [(f"decode at {r['prompt']} (+{r['new_tokens']})", "tok/s", r["decode_only"], harness.rate, "decode_only")]


def run_positions(path: Path, kvgen_engine_: KvgenEngine, ids_of, work: dict, thread_counts: list[int], args,
                  llama_cpp) -> dict:
    """Decode speed against the position: greedy decode-only tokens/s of ``new`` tokens after
    a prompt of each length of work["positions"], kvgen and llama.cpp (a context of its own,
    n_ctx large enough) interleaved, at every thread count; printed with each engine's ratio
    to the first position."""
    positions, new = work["positions"]
    engines = {"kvgen": kvgen_engine_}
    titles = {n: t for n, t in RATIO_TITLES.items() if n != "HF"}
    if args.kv_int8:  # the int8 KV cache: kvgen's option and llama.cpp's q8_0 keys and values
        engines[KV_INT8] = KvgenEngine(path, kv_cache_dtype="int8")
        titles[KV_INT8] = "int8/kv"
    if llama_cpp:
        engines["llama.cpp"] = LlamaCppEngine(path, max(thread_counts), n_ctx=max(positions) + new + 16)
        if args.kv_int8:
            try:  # a quantized V cache needs flash attention in llama.cpp
                engines[LLAMA_Q8_0] = LlamaCppEngine(path, max(thread_counts), n_ctx=max(positions) + new + 16,
                                                     type_k=llama_cpp.GGML_TYPE_Q8_0, type_v=llama_cpp.GGML_TYPE_Q8_0,
                                                     flash_attn=True)
                titles[LLAMA_Q8_0] = "q8_0/kv"
            except Exception as e:  # noqa: BLE001 - any failure of the peer's build: skipped, said so
                print(f"llama.cpp with a q8_0 KV cache skipped: {type(e).__name__}: {e}")
    ids = ids_of(max(positions))
    out = {"positions": list(positions), "new_tokens": new, "configs": []}
    for threads in thread_counts:
        set_threads(engines, threads)
        print(f"\n-- position sweep, {models.FILE_LABELS[POSITIONS_FILE]}, {threads} thread(s): greedy decode-only "
              f"tokens/s of {new} tokens after a prompt of each length --")
        table = workload_table(list(engines), {n: t for n, t in titles.items() if n in engines})
        table.print_header()
        results = []
        for p in positions:
            results.append(split_workload("position", engines, ids[:p], new, None, args.rounds))
            print_rows(table, results[-1], position_rows)
        speed = {n: [1e6 / r["decode_only"][n]["median_us"] for r in results] for n in engines}
        to_first = {n: [v / s[0] for v in s] for n, s in speed.items()}
        for n in engines:
            print(f"{n}: tokens/s at position / at {positions[0]}: " +
                  ", ".join(f"{p} {x:.2f}" for p, x in zip(positions, to_first[n])))
        x = to_first["kvgen"][-1]
        targets = [harness.target(f"{threads} thread(s): kvgen decode at {positions[-1]} >= {POSITION_TARGET:g}x its "
                                  f"speed at {positions[0]}", x, x >= POSITION_TARGET, f"{x:.2f}x")]
        if KV_INT8 in engines:
            x = to_first[KV_INT8][-1]
            targets.append(harness.target(f"{threads} thread(s): kvgen with an int8 KV cache at {positions[-1]} >= "
                                          f"{POSITION_TARGET:g}x its speed at {positions[0]}", x,
                                          x >= POSITION_TARGET, f"{x:.2f}x"))
        out["configs"].append({"threads": threads, "results": results, "tokens_per_s": speed,
                               "ratio_to_first": to_first, "targets": targets,
                               "kv_cache_bytes": {n: e.kv_cache_bytes for n, e in engines.items()
                                                  if isinstance(e, KvgenEngine)}})
    return out


def hf_runs(args, kind_index: int, threads: int, thread_counts: list[int]) -> bool:
    """Whether transformers runs in this configuration (--hf: first = the first file at the most threads)."""
    if args.hf == "first":
        return kind_index == 0 and threads == max(thread_counts)
    return args.hf == "all"


def run_file(kind: str, kind_index: int, path: Path, args, thread_counts: list[int], llama_cpp) -> dict:
    work = dict(QUICK if args.quick else FULL)
    if args.new_tokens:
        work["decode"] = (work["decode"][0], args.new_tokens)
    if args.positions is not None:
        work["positions"] = (tuple(args.positions), work["positions"][1])
    most = max(thread_counts)
    kvgen_engine.set_threads(most)
    print(f"\n==== {models.FILE_LABELS[kind]}: {path} ====", flush=True)
    loads = load_memory.measure_loads(path, most, args.rounds, llama_cpp)
    engines = {"kvgen": KvgenEngine(path)}
    if llama_cpp:
        engines["llama.cpp"] = LlamaCppEngine(path, most)
    hf = None
    if any(hf_runs(args, kind_index, t, thread_counts) for t in thread_counts):
        start = time.perf_counter()
        hf = HFEngine.gguf(path)
        loads["HF"] = harness.summarize([time.perf_counter() - start])
    model = engines["kvgen"].model
    print(f"model: {model!r}")
    print("load seconds (median [min-max] of interleaved rounds; HF once): " +
          ", ".join(f"{n} {harness.ms(s).strip()} ms" for n, s in loads.items()))
    ids = models.text_prompt(model, max(work["prefill"], work["decode"][0]))
    rss = load_memory.peak_rss(path, models.PROMPT_TEXT, model.encode(models.PROMPT_TEXT), most, llama_cpp)
    print(f"peak RSS, greedy {load_memory.RSS_NEW_TOKENS} new tokens in a fresh process, {most} threads: " +
          ", ".join(f"{n} {mb:.0f} MB" for n, mb in rss.items()))
    w = weight_bytes({**engines, **({"HF": hf} if hf else {})}, path)
    print("weights read per token: " + ", ".join(f"{n} {w[n] / 1e6:.1f} MB" for n in ("kvgen", "llama.cpp", "HF")
                                                 if n in w) + f" (file {w['file'] / 1e6:.1f} MB)")
    configs = []
    for threads in thread_counts:
        chosen = {**engines, **({"HF": hf} if hf and hf_runs(args, kind_index, threads, thread_counts) else {})}
        configs.append(run_threads(kind, chosen, ids, work, threads, w, args))
    targets = load_memory.targets(kind, loads, rss)
    positions = None
    if kind == POSITIONS_FILE and work["positions"][0]:
        positions = run_positions(path, engines["kvgen"], lambda n: models.text_prompt(model, n), work,
                                  thread_counts, args, llama_cpp)
    return {"file": kind, "path": str(path), "loads": loads, "peak_rss_MB": rss, "weights": w, "workloads": work,
            "prompt_ids": ids, "configs": configs, "targets": targets, "position_sweep": positions}


def plot(files: list[dict], plt):
    """Bars per engine of prefill, greedy and chain tokens/s, one group per (file, threads)."""
    colors = {"kvgen": "tab:blue", "llama.cpp": "tab:purple", "HF": "tab:orange"}
    panels = {"prefill tok/s": [], "greedy decode tok/s": [], "chain decode tok/s": []}
    for f in files:
        for c in f["configs"]:
            label = f"{f['file']}\n{c['threads']}t"
            prefill, greedy, chain = c["results"]
            panels["prefill tok/s"].append((label, {n: per_prompt_token(s, prefill["prompt"])
                                                    for n, s in prefill["ttft"].items()}))
            panels["greedy decode tok/s"].append((label, greedy["decode_only"]))
            panels["chain decode tok/s"].append((label, chain["decode_only"]))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 4.4))
    for ax, (title, groups) in zip(axes, panels.items()):
        names = [n for n in colors if any(n in stats for _, stats in groups)]
        width = 0.8 / len(names)
        for j, name in enumerate(names):
            xs = [i + j * width for i, (_, stats) in enumerate(groups) if name in stats]
            med = [1e6 / stats[name]["median_us"] for _, stats in groups if name in stats]
            ax.bar(xs, med, width, color=colors[name], label=name)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))], [g[0] for g in groups], fontsize=8)
        ax.set(title=title, ylabel="tokens/s")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("GGUF files, batch 1: kvgen against llama-cpp-python (same file) and transformers (dequantized "
                 "float32); median of interleaved rounds; higher is better", fontsize=9)
    return fig


def run_gguf(args: argparse.Namespace) -> None:
    """The GGUF files part: per file (--files) and thread count (--thread-counts)."""
    began = time.perf_counter()
    llama_cpp = llama_cpp_engine.import_peer()
    thread_counts = args.thread_counts or ([args.threads] if args.quick else [1, 2])
    kinds = args.files or (["q4_1"] if args.quick else list(models.FILE_KINDS))
    q4_1 = Path(args.gguf).expanduser() if args.gguf else kvgen.default_model_path()
    print("\n==== GGUF files: kvgen against llama.cpp and transformers ====\n", flush=True)
    versions = {**hf_engine.versions(), "gguf": importlib.metadata.version("gguf")}
    threads = {"every engine": {"counts": ",".join(map(str, thread_counts))}}
    if llama_cpp:
        versions.update(llama_cpp_engine.versions(llama_cpp))
    env = harness.begin(versions, threads, {"every engine": "kvgen.set_num_threads, torch.set_num_threads, "
                                                            "llama.cpp n_threads and n_threads_batch"})
    if llama_cpp:
        env["llama_cpp_system_info"] = llama_cpp_engine.system_info(llama_cpp)
        print(f"llama.cpp: n_ctx {llama_cpp_engine.N_CTX}, n_batch {llama_cpp_engine.N_BATCH}; "
              f"build: {env['llama_cpp_system_info']}")
    print(f"{args.rounds} interleaved rounds, one call per engine each; figures: median [min-max] over rounds; "
          f"kv/llama, kv/HF: kvgen speed / engine speed = engine time / kvgen time of the medians (> 1: kvgen "
          f"faster). chain = repetition penalty 1.1, temperature 0.8, top-k 40, top-p 0.95, seed {models.SEED}")
    paths = {k: models.prepare_file(k, q4_1, max(thread_counts), llama_cpp) for k in kinds}
    files = [run_file(k, i, p, args, thread_counts, llama_cpp) for i, (k, p) in enumerate(paths.items()) if p]
    print(f"\ntook {time.perf_counter() - began:.0f} s")
    settings = {"quick": args.quick, "rounds": args.rounds, "thread_counts": thread_counts, "pause_s": PAUSE_S,
                "seed": models.SEED, "chain": CHAIN, "llama_cpp_penalty_last_n": llama_cpp_engine.PENALTY_LAST_N,
                "n_ctx": llama_cpp_engine.N_CTX, "hf": args.hf, "prompt_text": models.PROMPT_TEXT,
                "llama_recipe": models.LLAMA_RECIPE}
    report = {"environment": env, "settings": settings, "files": files}
    harness.write_outputs(report, args.out_smollm2, lambda plt: plot(files, plt))
