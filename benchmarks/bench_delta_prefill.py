"""Prefill time of a Qwen3.5-shaped hybrid (Gated DeltaNet layers beside gated attention).

A random-weight Qwen3.5-shaped model: hidden 1024, 8 layers (6 Gated DeltaNet, every fourth
layer attending: Qwen3.5's layout), 16 key / 32 value heads of 128 in the DeltaNet layers, 8
query / 2 KV heads of 256 in the attention ones, feed-forward 3072, vocabulary 32,000. Made by
transformers (``Qwen3_5ForCausalLM``, float32, seeded) once under ``~/.cache/kvgen-bench/`` and
loaded with ``--dtype`` (default q8_0). Times the prefill (time to first token, one generated
token) of a ``--tokens``-token prompt (default 1,024) and, alone, one layer's chunked delta rule
over as many tokens (the model's heads: ``kvgen._core._gated_delta_rule``), at each of
``--threads`` (default 1,2), ``--rounds`` times, and prints the medians in ms, a line each::

    taskset -c 0,1 python benchmarks/bench_delta_prefill.py --threads 1,2 --rounds 3

To compare two builds of kvgen, run it under each build's PYTHONPATH in turn (interleaved),
e.g. ``for i in 1 2 3; do PYTHONPATH=A python ... --rounds 1; PYTHONPATH=B python ... --rounds 1; done``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

SHAPE = dict(vocab_size=32000, hidden_size=1024, intermediate_size=3072, num_hidden_layers=8,
             num_attention_heads=8, num_key_value_heads=2, head_dim=256, max_position_embeddings=8192,
             linear_conv_kernel_dim=4, linear_key_head_dim=128, linear_value_head_dim=128,
             linear_num_key_heads=16, linear_num_value_heads=32,
             layer_types=["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3
             + ["full_attention"],
             rope_parameters=dict(rope_type="default", rope_theta=10000000.0, partial_rotary_factor=0.25,
                                  mrope_section=[11, 11, 10], mrope_interleaved=True),
             tie_word_embeddings=True, pad_token_id=None, bos_token_id=1, eos_token_id=2)
DIRECTORY = Path.home() / ".cache" / "kvgen-bench" / "qwen3_5-1024x8-random"


def model_dir() -> Path:
    """The random Qwen3.5-shaped model, made once."""
    if (DIRECTORY / "config.json").exists():
        return DIRECTORY
    import torch
    import transformers

    torch.manual_seed(0)
    model = transformers.Qwen3_5ForCausalLM(transformers.Qwen3_5TextConfig(**SHAPE))
    model.save_pretrained(DIRECTORY)
    return DIRECTORY


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, default=1024, help="prompt length (default 1024)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--rounds", type=int, default=3, help="timed prefills per thread count (default 3)")
    p.add_argument("--dtype", default="q8_0", help="load dtype (default q8_0)")
    args = p.parse_args()
    directory = model_dir()
    import kvgen

    model = kvgen.Model.load(directory, dtype=args.dtype)
    prompt = np.random.default_rng(0).integers(3, SHAPE["vocab_size"], args.tokens).tolist()
    config = kvgen.GenerationConfig(max_new_tokens=1, min_new_tokens=1, eos_token_id=2)
    rng = np.random.default_rng(0)
    hk, hv, d = SHAPE["linear_num_key_heads"], SHAPE["linear_num_value_heads"], SHAPE["linear_key_head_dim"]
    q, k = (rng.standard_normal((args.tokens, hk, d), dtype=np.float32) for _ in range(2))
    v = rng.standard_normal((args.tokens, hv, d), dtype=np.float32)
    g = -rng.uniform(0.01, 0.5, (args.tokens, hv)).astype(np.float32)
    beta = rng.uniform(0, 1, (args.tokens, hv)).astype(np.float32)

    def rule() -> float:
        state = np.zeros((hv, d, d), np.float32)
        began = time.perf_counter()
        kvgen._core._gated_delta_rule(q, k, v, g, beta, state, chunked=True)
        return time.perf_counter() - began

    for threads in [int(t) for t in args.threads.split(",")]:
        kvgen.set_num_threads(threads)
        kvgen.Generator(model, config).generate([prompt])  # warm-up
        times, rules = [], []
        for _ in range(args.rounds):
            gen = kvgen.Generator(model, config)
            gen.generate([prompt])
            times.append(gen.last_stats.prefill_seconds)
            rules.append(rule())
        print(f"{kvgen.__file__}: {threads} thread(s), {args.tokens} tokens: prefill ({args.dtype}) "
              f"{1000 * statistics.median(times):.0f} ms, one layer's chunked delta rule "
              f"{1000 * statistics.median(rules):.1f} ms (medians of {args.rounds})", flush=True)


if __name__ == "__main__":
    main()
