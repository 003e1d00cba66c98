"""End-to-end generation speed: kvgen's built-in GPT-2 against transformers + torch and CTranslate2.

What is measured
----------------
Whole ``generate`` calls at batch 1 on the same GPT-2-small-shaped model with random
weights, the same prompt token ids and the same thread count for every engine:

* ``kvgen``: ``kvgen.Generator(kvgen.Model.load(dir), config).generate([prompt])`` (prefill
  in one pass, then one forward + one Generator step per token, in C++; the KV cache is
  allocated per call). ``kvgen.set_num_threads(--threads)`` (OpenBLAS threads of the matrix
  products; the rest of kvgen runs on the calling thread).
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
became known (``time.perf_counter()`` from kvgen's ``Generator.stream``, an HF streamer
passed to ``generate``, CTranslate2's ``generate_batch(callback=...)``), so one call gives
both its end-to-end time and its decode-only time, without the noise of subtracting a
separately timed prefill. Workloads (BENCHMARKS.md):

* ``prefill``: 512-token prompt, one new token (``max_new_tokens=1``): time to first token
  (prefill + one step) = the whole call; prefill tokens/s = 512 / TTFT.
* ``decode``: 64-token prompt, 256 new tokens, greedy. ``end-to-end`` = 256 / time of the
  whole call (prefill included); ``decode-only`` = 255 / (time of the 256th token - time
  of the first): the decode steps alone. The headline decode figure is decode-only; the
  TTFT of the 64-token prompt is printed too.
* ``beam``: 4 beams, 32-token prompt, 128 new tokens: new tokens of the best sequence per
  second, end-to-end (prefill of 32 tokens included; no token times under beam search).
* ``context``: decode-only tokens/s (64 new tokens) after a prompt of 64, 256, 512, 1024
  and 1900 tokens (so the last point decodes positions 1900-1963): the per-token cost
  grows with the attention over the cache. Plotted.

The model: ``transformers.GPT2Config(n_positions=2048)`` (GPT-2 small: 12 layers, 768
hidden, 12 heads, vocab 50,257, tied embedding; 124M weights) with ``torch.manual_seed(0)``
random weights. The one change from GPT-2 small is ``n_positions=2048`` (1024 in GPT-2) so
the long-context point can sit at ~1,900 as the tracked figure asks; it only grows the
position table (one row of it is read per token). Speed does not depend on trained weights.
It is saved once with ``save_pretrained`` (default ``~/.cache/kvgen-bench/gpt2-small-random``,
``--model-dir``) with a word-level ``tokenizer.json`` over the strings ``t0`` .. ``t50256`` (id
i <-> ``t{i}``, EOS ``t50256``): CTranslate2's converter needs a tokenizer for the vocabulary,
and CTranslate2 takes token strings. It is converted once, offline, with
``ctranslate2.converters.TransformersConverter`` to ``<model-dir>-ct2-float32`` and
``<model-dir>-ct2-int8``. Prompts: seeded uniform token ids without EOS, the same prefix of
one sequence for every workload.

Protocol (BENCHMARKS.md): a sanity check first (greedy, 64-token prompt, 32 new tokens:
kvgen must give HF's tokens, else this raises; CTranslate2's match is printed); then per
workload every engine runs once untimed (warm-up; those outputs are compared with HF's and
printed), and the engines are interleaved (kvgen HF ct2-f32 ct2-int8, ...) for ``--rounds``
rounds (default 5), with a 0.2 s pause before each timed call so that the worker threads of
the previous engine (OpenMP / OpenBLAS threads spin for a while after their work) are asleep. Reported: median
over rounds, min-max spread, and ``x``: engine time / kvgen time of the medians (> 1: kvgen is
faster). Memory bandwidth is measured in the same run (``np.sum`` over a 512 MiB float32
array with 1 thread and with --threads threads, each summing its own slice; best of 5,
before and after the timings) and batch-1 decode is printed as a fraction of the limit
``tokens/s * weight_bytes / bandwidth``, weight_bytes = the bytes of weights read per token
(float32: every parameter once, the tied embedding counted once, one position row;
ct2-int8: its model.bin less the position table, approximate). The KV cache bytes kvgen
allocated are reported. A PASS/MISS line (not an assertion) for the goal "kvgen decode at
batch 1 >= 2x transformers" (decode-only tokens/s).

Run (pinned, as the protocol asks):

    taskset -c 0,1 python benchmarks/bench_decode.py            # full, ~15 minutes
    taskset -c 0,1 python benchmarks/bench_decode.py --quick    # smoke run, ~2 minutes

``--quick``: a 128-token prefill, 32 new tokens for decode, 12 for beam search, context
points 64 and 256 with 16 new tokens, an 8-token sanity check. ``--threads N`` (default 2) for every engine,
``--rounds`` (default 5), ``--model-dir``, ``--out``.

The first run builds and converts the model (~10 s, ~1.1 GB on disk). Writes a table to
stdout, ``benchmarks/results/bench_decode.json`` (``--out``) and a PNG next to it (decode
tokens/s against context length) when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ctranslate2
import numpy as np
import torch
import transformers
from transformers.generation.streamers import BaseStreamer

import kvgen

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sampling import environment, measure, print_environment, pyplot, save_png, summarize, write_outputs  # noqa: E402  (not a package)

SEED = 0
EOS = 50256
N_POSITIONS = 2048
THREADS = 2
PAUSE_S = 0.2
ENGINES = ("kvgen", "HF", "ct2-f32", "ct2-int8")
CT2_TYPES = {"ct2-f32": "float32", "ct2-int8": "int8"}
FULL = {"prefill": 512, "decode": (64, 256), "beam": (32, 128, 4), "context": ((64, 256, 512, 1024, 1900), 64),
        "sanity_tokens": 32}
QUICK = {"prefill": 128, "decode": (64, 32), "beam": (32, 12, 4), "context": ((64, 256), 16),
         "sanity_tokens": 8}
TARGET = 2.0  # kvgen decode tokens/s at batch 1 >= TARGET x HF's
BW_MIB, BW_REPEATS = 512, 5
DEFAULT_MODEL_DIR = Path.home() / ".cache" / "kvgen-bench" / "gpt2-small-random"
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "bench_decode.json"
RECIPE = {"config": {"n_positions": N_POSITIONS}, "seed": SEED, "tokenizer": "wordlevel t0..t50256", "version": 1}


# ---- model: build once, convert once -------------------------------------------------


def stamp_ok(directory: Path, recipe: dict) -> bool:
    stamp = directory / "kvgen-bench.json"
    return stamp.is_file() and json.loads(stamp.read_text()) == recipe


def write_stamp(directory: Path, recipe: dict) -> None:
    (directory / "kvgen-bench.json").write_text(json.dumps(recipe))


def save_tokenizer(directory: Path, vocab_size: int) -> None:
    """A word-level tokenizer whose token i is the string "t{i}" (what CTranslate2 needs)."""
    from tokenizers import Tokenizer, models

    eos = f"t{vocab_size - 1}"
    vocab = {f"t{i}": i for i in range(vocab_size)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token=eos))
    transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=eos, eos_token=eos,
                                         unk_token=eos).save_pretrained(directory)


def build_model(directory: Path) -> None:
    if stamp_ok(directory, RECIPE):
        return
    print(f"building the random GPT-2-small-shaped model in {directory} ...", flush=True)
    torch.manual_seed(SEED)
    config = transformers.GPT2Config(**RECIPE["config"])
    transformers.GPT2LMHeadModel(config).save_pretrained(directory)
    save_tokenizer(directory, config.vocab_size)
    write_stamp(directory, RECIPE)


def ct2_dir(model_dir: Path, quantization: str) -> Path:
    return model_dir.with_name(f"{model_dir.name}-ct2-{quantization}")


def convert_ct2(model_dir: Path, quantization: str) -> Path:
    out = ct2_dir(model_dir, quantization)
    recipe = {**RECIPE, "quantization": quantization, "ctranslate2": ctranslate2.__version__}
    if not stamp_ok(out, recipe):
        print(f"converting for ctranslate2 ({quantization}) to {out} ...", flush=True)
        ctranslate2.converters.TransformersConverter(str(model_dir)).convert(str(out), quantization=quantization,
                                                                             force=True)
        write_stamp(out, recipe)
    return out


def prepare_models(model_dir: Path) -> dict:
    """Directories of the HF model and of both CTranslate2 conversions."""
    model_dir.parent.mkdir(parents=True, exist_ok=True)
    build_model(model_dir)
    return {"HF": model_dir, **{name: convert_ct2(model_dir, q) for name, q in CT2_TYPES.items()}}


def weight_bytes(hf_model: transformers.GPT2LMHeadModel, ct2_int8: Path) -> dict:
    """Bytes of weights read per decoded token: every parameter once (parameters() counts
    the tied embedding once), of the position table one row. ct2-int8: model.bin less
    the float32 position table (approximate: it includes the scales and float biases)."""
    wpe = hf_model.transformer.wpe.weight
    params = sum(p.numel() for p in hf_model.parameters())
    f32 = 4 * (params - wpe.numel() + wpe.shape[1])
    int8 = (ct2_int8 / "model.bin").stat().st_size - 4 * (wpe.numel() - wpe.shape[1])
    return {"parameters": params, "float32": f32, "int8_approx": int8}


# ---- engines: generate(prompt, new_tokens, beams) -> (generated ids, token times) ----
#
# Token times: time.perf_counter() when each new token became known (kvgen: stream();
# HF: a streamer; CTranslate2: generate_batch's callback), for greedy search only (HF
# streamers and CTranslate2 callbacks do not work with beams: an empty list there).


class KvgenEngine:
    def __init__(self, model_dir: Path):
        self.model = kvgen.Model.load(model_dir)
        self.kv_cache_bytes = {}  # (prompt length, new tokens, beams) -> bytes of the last such call

    def generate(self, prompt: list[int], new_tokens: int, beams: int = 1) -> tuple[list[int], list[float]]:
        config = kvgen.GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, num_beams=beams,
                                        eos_token_id=EOS, pad_token_id=EOS)
        gen = kvgen.Generator(self.model, config)
        if beams > 1:
            result, stamps = gen.generate([prompt]), []
        else:
            stamps = [time.perf_counter() for _ in gen.stream([prompt])]
            result = gen.last_result
        self.kv_cache_bytes[len(prompt), new_tokens, beams] = gen.kv_cache_bytes
        return result.sequences[0][0].tolist(), stamps


class TokenTimes(BaseStreamer):
    """HF streamer: generate() puts the prompt first, then each new token."""

    def __init__(self):
        self.times, self.puts = [], 0

    def put(self, value) -> None:
        self.puts += 1
        if self.puts > 1:
            self.times.append(time.perf_counter())

    def end(self) -> None:
        pass


class HFEngine:
    def __init__(self, model_dir: Path):
        self.model = transformers.GPT2LMHeadModel.from_pretrained(model_dir, dtype=torch.float32).eval()

    def generate(self, prompt: list[int], new_tokens: int, beams: int = 1) -> tuple[list[int], list[float]]:
        ids = torch.tensor([prompt])
        streamer = TokenTimes() if beams == 1 else None
        with torch.inference_mode():
            out = self.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                                      min_new_tokens=new_tokens, do_sample=False, num_beams=beams,
                                      eos_token_id=EOS, pad_token_id=EOS, streamer=streamer)
        return out[0, len(prompt):].tolist(), streamer.times if streamer else []


class CT2Engine:
    def __init__(self, directory: Path, compute_type: str, threads: int):
        self.generator = ctranslate2.Generator(str(directory), device="cpu", compute_type=compute_type,
                                               intra_threads=threads, inter_threads=1)

    def generate(self, prompt: list[int], new_tokens: int, beams: int = 1) -> tuple[list[int], list[float]]:
        stamps = []
        callback = (lambda step: stamps.append(time.perf_counter())) if beams == 1 else None
        result = self.generator.generate_batch([[f"t{i}" for i in prompt]], max_length=new_tokens,
                                               min_length=new_tokens, sampling_topk=1, beam_size=beams,
                                               include_prompt_in_result=False, callback=callback)
        return list(result[0].sequences_ids[0]), stamps


def load_engines(dirs: dict, threads: int) -> dict:
    kvgen.set_num_threads(threads)
    torch.set_num_threads(threads)
    engines = {"kvgen": KvgenEngine(dirs["HF"]), "HF": HFEngine(dirs["HF"])}
    for name, compute_type in CT2_TYPES.items():
        engines[name] = CT2Engine(dirs[name], compute_type, threads)
    return engines


def make_prompts(longest: int) -> list[int]:
    """One seeded sequence without EOS; every workload takes a prefix of it."""
    return np.random.default_rng(SEED).integers(0, EOS, longest).tolist()


# ---- sanity and output checks --------------------------------------------------------


def common_prefix(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


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


def check_outputs(label: str, outputs: dict, new_tokens: int, beams: int) -> dict:
    """Every engine generated exactly new_tokens, with a time for each under greedy search
    (raises otherwise); per engine, how many leading tokens equal HF's."""
    for name, (tokens, stamps) in outputs.items():
        if len(tokens) != new_tokens or (beams == 1 and len(stamps) != new_tokens):
            raise RuntimeError(f"{label}: {name} generated {len(tokens)} tokens ({len(stamps)} timed), "
                               f"not {new_tokens}")
    ref = outputs["HF"][0]
    return {name: common_prefix(tokens, ref) for name, (tokens, _) in outputs.items() if name != "HF"}


# ---- timing --------------------------------------------------------------------------


def run_once(fn, _units: int) -> dict:
    """One timed call after a pause: seconds of the whole call, to the first token, and from
    the first to the last token (None without token times)."""
    time.sleep(PAUSE_S)
    start = time.perf_counter()
    _, stamps = fn()
    total = time.perf_counter() - start
    if not stamps:
        return {"total": total, "ttft": None, "decode": None}
    return {"total": total, "ttft": stamps[0] - start, "decode": stamps[-1] - stamps[0]}


def timed_rounds(jobs: dict, rounds: int) -> tuple[dict, dict]:
    """Warm-up (one untimed call each, outputs kept), then interleaved rounds of one call per
    job (bench_sampling.measure with run_once); returns (outputs, run_once dicts per round)."""
    outputs = {key: fn() for key, fn in jobs.items()}
    samples, _ = measure(jobs, rounds, 0.0, calibrate=lambda fn, _: 1, run=run_once)
    return outputs, samples


def ratios(stats: dict) -> dict:
    """Engine time / kvgen time of the medians (> 1: kvgen faster)."""
    kv = stats["kvgen"]["median_us"]
    return {f"{name}/kvgen": s["median_us"] / kv for name, s in stats.items() if name != "kvgen"}


def bench_workload(label: str, engines: dict, prompt: list[int], new_tokens: int, rounds: int,
                   beams: int = 1) -> dict:
    """Interleaved generate calls; per engine, time stats (bench_sampling.summarize, us) of:
    ``call`` (whole call), ``end_to_end`` (call / new tokens) and, under greedy search with
    more than one new token, ``ttft`` (to the first token) and ``decode_only`` (first to last
    token / (new tokens - 1): the decode steps, prefill left out)."""
    jobs = {name: (lambda e=e: e.generate(prompt, new_tokens, beams)) for name, e in engines.items()}
    outputs, samples = timed_rounds(jobs, rounds)
    r = {"workload": label, "prompt": len(prompt), "new_tokens": new_tokens, "beams": beams,
         "same_as_HF": check_outputs(label, outputs, new_tokens, beams),
         "kv_cache_bytes": engines["kvgen"].kv_cache_bytes[len(prompt), new_tokens, beams],
         "call": {n: summarize([s["total"] for s in samples[n]]) for n in engines},
         "end_to_end": {n: summarize([s["total"] / new_tokens for s in samples[n]]) for n in engines}}
    if beams == 1 and new_tokens > 1:
        r["ttft"] = {n: summarize([s["ttft"] for s in samples[n]]) for n in engines}
        r["decode_only"] = {n: summarize([s["decode"] / (new_tokens - 1) for s in samples[n]]) for n in engines}
    r["ratios"] = {kind: ratios(r[kind]) for kind in ("call", "end_to_end", "ttft", "decode_only") if kind in r}
    return r


# ---- memory bandwidth ----------------------------------------------------------------


def read_bandwidth(threads: int) -> dict:
    """GB/s (1e9 bytes) of np.sum over a BW_MIB MiB float32 array, best of BW_REPEATS: one
    thread, and `threads` threads each summing its own slice (np.sum releases the GIL)."""
    a = np.ones(BW_MIB * 2**20 // 4, dtype=np.float32)
    chunks = np.array_split(a, threads)
    with ThreadPoolExecutor(threads) as pool:
        def best(fn) -> float:
            fn()
            times = []
            for _ in range(BW_REPEATS):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            return a.nbytes / min(times) / 1e9

        return {"1_thread_GBps": best(a.sum), f"{threads}_threads_GBps": best(lambda: list(pool.map(np.sum, chunks)))}


def bandwidth_fractions(decode: dict, weights: dict, limit_gbps: float) -> dict:
    """Batch-1 decode-only tokens/s * weight bytes / bandwidth, per engine."""
    out = {}
    for name, s in decode["decode_only"].items():
        nbytes = weights["int8_approx"] if name == "ct2-int8" else weights["float32"]
        tps = 1e6 / s["median_us"]
        out[name] = {"tokens_per_s": tps, "weight_bytes": nbytes, "GBps": tps * nbytes / 1e9,
                     "fraction": tps * nbytes / 1e9 / limit_gbps}
    return out


# ---- report --------------------------------------------------------------------------


def rate(s: dict) -> str:
    """tokens/s of a per-token time: median [min-max]."""
    return f"{1e6 / s['median_us']:7.1f} [{1e6 / s['max_us']:.1f}-{1e6 / s['min_us']:.1f}]"


def ms(s: dict) -> str:
    return f"{s['median_us'] / 1e3:7.1f} [{s['min_us'] / 1e3:.1f}-{s['max_us'] / 1e3:.1f}]"


def table_row(label: str, unit: str, stats: dict, fmt, ratio: dict) -> str:
    cells = " | ".join(f"{fmt(stats[name]):>24}" for name in ENGINES)
    xs = " ".join(f"{ratio[f'{name}/kvgen']:>6.2f}" for name in ENGINES[1:])
    return f"{label:<30} {unit:<6} | {cells} | {xs}"


HEADER = (f"{'workload':<30} {'unit':<6} | " + " | ".join(f"{name + ' [min-max]':>24}" for name in ENGINES) +
          " | " + " ".join(f"{'x ' + name.split('-')[-1]:>6}" for name in ENGINES[1:]))


def per_prompt_token(stats: dict, tokens: int) -> dict:
    return {k: v / tokens for k, v in stats.items() if k != "rounds_us"}


def shown_rows(r: dict) -> list[tuple]:
    """The table rows of a result: (label, unit, stats per engine, formatter, ratio kind)."""
    head = f"{r['workload']} {r['prompt']}+{r['new_tokens']}"
    if r["workload"] == "prefill":
        per = {n: per_prompt_token(s, r["prompt"]) for n, s in r["call"].items()}
        return [(f"prefill {r['prompt']}: TTFT", "ms", r["call"], ms, "call"),
                (f"prefill {r['prompt']}", "tok/s", per, rate, "call")]
    if r["workload"] == "beam":
        return [(f"beam {r['beams']}, {r['prompt']}+{r['new_tokens']} e2e", "tok/s", r["end_to_end"], rate,
                 "end_to_end")]
    if r["workload"] == "decode":
        return [(f"{head} end-to-end", "tok/s", r["end_to_end"], rate, "end_to_end"),
                (f"{head} decode-only", "tok/s", r["decode_only"], rate, "decode_only"),
                (f"{head} TTFT", "ms", r["ttft"], ms, "ttft")]
    return [(f"{head} decode-only", "tok/s", r["decode_only"], rate, "decode_only")]


def print_rows(r: dict) -> None:
    for label, unit, stats, fmt, kind in shown_rows(r):
        print(table_row(label, unit, stats, fmt, r["ratios"][kind]), flush=True)


def mismatch_notes(results: list[dict]) -> list[str]:
    notes = []
    for r in results:
        for name, same in r["same_as_HF"].items():
            if same < r["new_tokens"] and name != "ct2-int8":
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


def print_bandwidth(bw: dict, weights: dict, fractions: dict, threads: int) -> None:
    key = f"{threads}_threads_GBps"
    print(f"memory bandwidth (np.sum over {BW_MIB} MiB float32, best of {BW_REPEATS}): before "
          f"{bw['before']['1_thread_GBps']:.1f} GB/s with 1 thread, {bw['before'][key]:.1f} with {threads}; after "
          f"{bw['after']['1_thread_GBps']:.1f} / {bw['after'][key]:.1f}; limit used: {bw['limit_GBps']:.1f} GB/s")
    print(f"weights read per token: float32 {weights['float32'] / 1e6:.1f} MB ({weights['parameters'] / 1e6:.1f}M "
          f"parameters, tied embedding once, one position row); ct2-int8 ~{weights['int8_approx'] / 1e6:.1f} MB")
    print("batch-1 decode-only, fraction of the bandwidth limit (tokens/s x weight bytes / bandwidth): " +
          ", ".join(f"{n} {f['tokens_per_s']:.1f} tok/s = {f['GBps']:.1f} GB/s = {100 * f['fraction']:.0f}%"
                    for n, f in fractions.items()))


def check_target(decode: dict) -> dict:
    """The issue's goal, as PASS/MISS (not an assertion)."""
    got = decode["ratios"]["decode_only"]["HF/kvgen"]
    e2e = decode["ratios"]["end_to_end"]["HF/kvgen"]
    ok = got >= TARGET
    target = f"kvgen decode at batch 1 >= {TARGET:g}x transformers (decode-only tokens/s)"
    print(f"{'PASS' if ok else 'MISS'}: {target} (measured {got:.2f}x; end-to-end {e2e:.2f}x)")
    return {"target": target, "value": got, "end_to_end": e2e, "pass": ok}


def write_plot(context: list[dict], path: Path, threads: int) -> Path | None:
    plt = pyplot()
    if plt is None:
        return None
    colors = {"kvgen": "tab:blue", "HF": "tab:orange", "ct2-f32": "tab:green", "ct2-int8": "tab:red"}
    x = [r["prompt"] for r in context]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for name, color in colors.items():
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
    return save_png(fig, plt, path)


# ---- main ----------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run: fewer new tokens, two context points")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5; at least 5)")
    p.add_argument("--threads", type=int, default=THREADS, help=f"threads of every engine (default {THREADS})")
    p.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR,
                   help=f"where the random model is built once (default {DEFAULT_MODEL_DIR})")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON output (default {DEFAULT_OUT})")
    args = p.parse_args()
    if args.rounds < 5:
        p.error("--rounds must be at least 5 (BENCHMARKS.md)")
    return args


def setup(args: argparse.Namespace) -> tuple[dict, dict, dict]:
    """Builds / converts the model, loads the engines, prints the environment; returns
    (directories, engines, environment)."""
    dirs = prepare_models(args.model_dir.expanduser())
    engines = load_engines(dirs, args.threads)
    env = environment(args.threads, numpy_engine=False)
    env["versions"]["ctranslate2"] = ctranslate2.__version__
    env["threads"] = {"kvgen": kvgen.get_num_threads(), "torch": torch.get_num_threads(),
                      "ctranslate2_intra": args.threads}
    print_environment(env, kvgen_note="OpenBLAS threads of its matrix products")
    print(f"threads: ctranslate2 intra_threads {args.threads}, inter_threads 1")
    if env["affinity"] and len(env["affinity"]) > args.threads:
        print(f"note: {len(env['affinity'])} cores allowed; the protocol recommends pinning (`taskset -c 0,1`)")
    print(f"model: {engines['kvgen'].model!r} (random weights, n_positions {N_POSITIONS})")
    return dirs, engines, env


def run_workloads(engines: dict, work: dict, rounds: int) -> list[dict]:
    """Prefill, decode, beam and the context points, each printed as it finishes."""
    contexts, ctx_new = work["context"]
    ids = make_prompts(max(contexts))
    (d_prompt, d_new), (b_prompt, b_new, beams) = work["decode"], work["beam"]
    plan = [("prefill", ids[:work["prefill"]], 1, 1), ("decode", ids[:d_prompt], d_new, 1),
            ("beam", ids[:b_prompt], b_new, beams)] + [("context", ids[:n], ctx_new, 1) for n in contexts]
    print(f"\n{rounds} interleaved rounds, one call per engine each; figures: median [min-max] over rounds; "
          f"x: engine time / kvgen time (> 1: kvgen faster)\n")
    print(HEADER)
    results = []
    for label, prompt, new_tokens, num_beams in plan:
        results.append(bench_workload(label, engines, prompt, new_tokens, rounds, num_beams))
        print_rows(results[-1])
    return results


def print_summary(results: list[dict]) -> dict:
    """KV cache bytes, the long-context ratios and the notes; returns them."""
    kv_bytes = {f"{r['workload']} {r['prompt']}+{r['new_tokens']}": r["kv_cache_bytes"] for r in results}
    print("kvgen KV cache bytes: " + ", ".join(f"{k}: {v / 2**20:.1f} MiB" for k, v in kv_bytes.items()))
    context = [r for r in results if r["workload"] == "context"]
    first, last = context[0]["decode_only"], context[-1]["decode_only"]
    long_ratio = {n: first[n]["median_us"] / last[n]["median_us"] for n in ENGINES}
    print(f"long context: decode tokens/s after {context[-1]['prompt']} tokens / after {context[0]['prompt']}: " +
          ", ".join(f"{n} {x:.2f}" for n, x in long_ratio.items()))
    notes = mismatch_notes(results) + slower_notes(results)
    for line in notes:
        print(line)
    return {"kv_cache_bytes": kv_bytes, "long_context_ratio": long_ratio, "notes": notes}


def main() -> None:
    args = parse_args()
    began = time.perf_counter()
    transformers.logging.set_verbosity_error()
    work = QUICK if args.quick else FULL
    dirs, engines, env = setup(args)
    weights = weight_bytes(engines["HF"].model, dirs["ct2-int8"])
    sanity = sanity_check(engines, make_prompts(64), work["sanity_tokens"])

    bw_before = read_bandwidth(args.threads)
    results = run_workloads(engines, work, args.rounds)
    bw_after = read_bandwidth(args.threads)
    key = f"{args.threads}_threads_GBps"
    bw = {"before": bw_before, "after": bw_after, "limit_GBps": max(bw_before[key], bw_after[key])}
    decode = next(r for r in results if r["workload"] == "decode")
    fractions = bandwidth_fractions(decode, weights, bw["limit_GBps"])
    print()
    print_bandwidth(bw, weights, fractions, args.threads)
    summary = print_summary(results)
    target = check_target(decode)
    print(f"took {time.perf_counter() - began:.0f} s")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    settings = {"quick": args.quick, "rounds": args.rounds, "threads": args.threads, "pause_s": PAUSE_S,
                "seed": SEED, "workloads": work, "model_dir": str(dirs["HF"]),
                "ct2_dirs": {k: str(dirs[k]) for k in CT2_TYPES}, "model_recipe": RECIPE}
    report = {"environment": env, "settings": settings, "weights": weights, "sanity": sanity, "bandwidth": bw,
              "bandwidth_fractions": fractions, **summary, "results": results, "target": target}
    context = [r for r in results if r["workload"] == "context"]
    write_outputs(report, args.out, lambda out: write_plot(context, out, args.threads))


if __name__ == "__main__":
    main()
