"""bench_decode.py --model lfm2: a hybrid's decode cost against the length of its context.

kvgen alone (llama-cpp-python is not compared here) on an LFM2-350M-shaped model with random
weights: hidden 1024, 16 layers of which 6 attend (LFM2-350M's layers 2, 5, 8, 10, 12, 14) and 10
are gated short convolutions of kernel 3, 16 heads / 8 KV heads, feed-forward 6656 (adjusted to
4608), vocabulary 65,536, tied embedding; and the same model with every layer attending (the
``layer_types`` changed, nothing else), for the pure-attention figure of the same size. Made by
transformers (``Lfm2ForCausalLM``, bfloat16, ``torch.manual_seed(0)``) once under
``~/.cache/kvgen-bench/`` and loaded with ``dtype="q8_0"``. At ``--threads``: prefill of a
512-token prompt (time to first token) and greedy decode tokens/s after prompts of 64 and 4,000
tokens (64 and 1,000 with ``--quick``), one whole generate call per round, interleaved.
Writes ``benchmarks/results/bench_decode_lfm2.json`` (``--out-lfm2``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import harness
from decode import models
from engines import kvgen_engine
from engines.kvgen_engine import KvgenEngine

SHAPE = {"hidden_size": 1024, "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 8,
         "intermediate_size": 6656, "vocab_size": 65536, "max_position_embeddings": 8192, "conv_L_cache": 3}
ATTENTION_LAYERS = [2, 5, 8, 10, 12, 14]
RECIPE = {"shape": SHAPE, "attention_layers": ATTENTION_LAYERS, "seed": models.SEED, "dtype": "bfloat16",
          "version": 1}
PREFILL = 512
POSITIONS, QUICK_POSITIONS = (64, 4000), (64, 1000)
NEW_TOKENS, QUICK_NEW_TOKENS = 64, 16
DEFAULT_OUT = harness.RESULTS / "bench_decode_lfm2.json"


def model_dir(hybrid: bool) -> Path:
    """The random LFM2 (hybrid) or its all-attention twin, made once."""
    import torch
    import transformers

    directory = models.CACHE_DIR / ("lfm2-350m-random" if hybrid else "lfm2-350m-random-attention")
    recipe = {**RECIPE, "hybrid": hybrid}
    if models.stamp_ok(directory, recipe):
        return directory
    layers = SHAPE["num_hidden_layers"]
    types = ["full_attention" if (i in ATTENTION_LAYERS or not hybrid) else "conv" for i in range(layers)]
    torch.manual_seed(models.SEED)
    config = transformers.Lfm2Config(**SHAPE, layer_types=types, pad_token_id=None, bos_token_id=1, eos_token_id=2)
    transformers.Lfm2ForCausalLM(config).to(torch.bfloat16).save_pretrained(directory)
    models.write_stamp(directory, recipe)
    return directory


def run_lfm2(args: argparse.Namespace) -> None:
    """Prefill and decode at each position, the hybrid against its all-attention twin."""
    began = time.perf_counter()
    positions = QUICK_POSITIONS if args.quick else POSITIONS
    new = QUICK_NEW_TOKENS if args.quick else NEW_TOKENS
    kvgen_engine.set_threads(args.threads)
    print(f"\n==== LFM2-350M-shaped (random, q8_0): decode against context, kvgen, {args.threads} threads ====\n",
          flush=True)
    env = harness.begin({}, {"kvgen": kvgen_engine.threads()})
    engines = {"hybrid": KvgenEngine(model_dir(True), eos=2, dtype="q8_0"),
               "all attention": KvgenEngine(model_dir(False), eos=2, dtype="q8_0")}
    rng = np.random.default_rng(models.SEED)
    prompt = rng.integers(3, SHAPE["vocab_size"], max(*positions, PREFILL)).tolist()
    jobs = {}
    for name, engine in engines.items():
        jobs[f"{name} prefill {PREFILL}"] = lambda e=engine: e.run(prompt[:PREFILL], 2)
        for p in positions:
            jobs[f"{name} decode @{p}"] = lambda e=engine, p=p: e.run(prompt[:p], new)
    _, calls = harness.interleave_calls(jobs, args.rounds, 0.5)
    stats = {}
    for name, cs in calls.items():
        per = [c.result["ttft"] if "prefill" in name else c.result["decode"] / c.result["steps"] for c in cs]
        stats[name] = harness.summarize(per)
    print(f"{args.rounds} interleaved rounds; prefill: time to first token of a {PREFILL}-token prompt; decode: "
          f"tokens/s over {new} new tokens after a prompt of that many tokens\n")
    table = harness.Table([harness.Column("workload", 28, lambda r: r[0], left=True),
                           harness.Column("ms or tok/s [min-max]", 28,
                                          lambda r: harness.ms(r[1]) + " ms" if "prefill" in r[0]
                                          else harness.rate(r[1]))])
    table.print_header()
    for name, s in stats.items():
        table.print_row((name, s))
    growth = {name: stats[f"{name} decode @{positions[-1]}"]["median_us"] / stats[f"{name} decode @{positions[0]}"][
        "median_us"] for name in engines}
    for name, g in growth.items():
        print(f"{name}: a decode step at position {positions[-1]} costs {g:.2f}x one at {positions[0]}")
    print(f"took {time.perf_counter() - began:.0f} s")
    report = {"environment": env, "settings": {"quick": args.quick, "rounds": args.rounds, "threads": args.threads,
                                               "shape": SHAPE, "attention_layers": ATTENTION_LAYERS,
                                               "positions": positions, "new_tokens": new, "prefill": PREFILL},
              "per_token": stats, "decode_growth": growth}
    harness.write_outputs(report, args.out_lfm2)
