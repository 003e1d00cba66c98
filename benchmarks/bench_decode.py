"""End-to-end generation speed: kvgen against transformers + torch, CTranslate2 and llama.cpp.

Six parts, ``--model gpt2|smollm2|batch|lfm2|families|types|all`` (default all), each a module of ``decode/``
whose docstring says what it measures:

* ``gpt2`` (``decode/gpt2.py``): a GPT-2-small-shaped model with random weights (kvgen float32
  and ``dtype="q8_0"``, transformers, CTranslate2 float32 and int8): prefill/TTFT, decode
  tokens/s, 4-beam search, decode at context 64-1900, bandwidth fraction.
* ``smollm2`` (``decode/gguf.py``, ``decode/load_memory.py``): GGUF files (SmolLM2-135M-Instruct
  Q4_1 and Q8_0, a random Llama in Q4_K_M: kvgen, llama.cpp, transformers) at 1 and 2 threads:
  prefill, greedy and sampling-chain decode, load time, peak RSS; on Q4_1, decode speed at
  positions 64-3000 (kvgen and llama.cpp).
* ``batch`` (``decode/batch.py``): kvgen's batched decode (4 beams, batch 8) against its
  batch-1 greedy.
* ``families`` (``decode/families.py``): random-weight models shaped like the 2026 families
  (GPT-OSS MoE in MXFP4, Gemma 4 E2B, Qwen3.5, LFM2, and the Qwen3.5 shape all attention), made by
  llama.cpp's converter and quantizer, kvgen against llama.cpp on the same files at 1 and 2 threads:
  prefill and decode, and decode at position 4,000 on the hybrids and the all-attention shape.
* ``types`` (``decode/types.py``): the random Llama of the GGUF files part quantized by llama.cpp's
  quantizer into each GGUF type (IQ4_XS, IQ4_NL, IQ3_S, IQ3_XXS, Q3_K_M, Q2_K, IQ2_XS; Q4_K_M the
  baseline), kvgen against llama.cpp on the same files at 1 and 2 threads: prefill, decode, weight bytes.
* ``lfm2`` (``decode/lfm2.py``): an LFM2-350M-shaped hybrid (random weights, q8_0) against the
  same model with every layer attending, kvgen alone: prefill, and decode at positions 64 and 4,000.

The models are made once under ``~/.cache/kvgen-bench/`` (``decode/models.py``); the engines
are the adapters of ``engines/``; the protocol (pinning, equal threads, warm-up, interleaved
rounds, medians and spread, EOS kept from ending a run) is ``PROTOCOL.md``, in code in
``harness.py``. A peer whose package is not installed (ctranslate2, llama-cpp-python) is named
and skipped; the other engines run.

Run (pinned, as the protocol asks):

    taskset -c 0,1 python benchmarks/bench_decode.py --model gpt2            # full, ~15 minutes
    taskset -c 0,1 python benchmarks/bench_decode.py --model gpt2 --quick    # smoke run, ~2 minutes
    taskset -c 0,1 python benchmarks/bench_decode.py --model smollm2 --new-tokens 128   # ~8 minutes
    taskset -c 0,1 python benchmarks/bench_decode.py --model smollm2 --quick            # ~2 minutes
    taskset -c 0,1 python benchmarks/bench_decode.py --model batch    # ~1 minute
    taskset -c 0,1 python benchmarks/bench_decode.py --model lfm2 --quick   # ~5 minutes
    taskset -c 0,1 python benchmarks/bench_decode.py --model families --quick --families qwen3_5
    taskset -c 0,1 python benchmarks/bench_decode.py --model types --quick --types IQ4_XS,Q4_K_M

``--threads N`` (default 2) for every engine, ``--rounds`` (default 5), ``--new-tokens``
(decode workload), ``--model-dir``, ``--out`` (GPT-2 part), ``--out-smollm2``, ``--out-batch``, ``--out-lfm2``,
``--out-families`` (the families part also takes ``--families`` and ``--thread-counts``), ``--out-types``
(the types part also takes ``--types`` and ``--thread-counts``);
the GGUF files part also takes ``--files``, ``--thread-counts``, ``--positions``, ``--hf`` and ``--gguf``.
Without ``--model``, every part runs, GPT-2 first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (benchmarks/ is not a package)
from decode import batch, families, gguf, gpt2, lfm2, models, types  # noqa: E402
from engines import hf_engine  # noqa: E402

THREADS = 2


def parse_args() -> argparse.Namespace:
    p = harness.cli(__doc__, gpt2.DEFAULT_OUT, THREADS, "threads of every engine",
                    "fewer new tokens, two context points", rounds=5)
    p.add_argument("--model-dir", type=Path, default=models.DEFAULT_MODEL_DIR,
                   help=f"where the random model is built once (default {models.DEFAULT_MODEL_DIR})")
    p.add_argument("--model", choices=("gpt2", "smollm2", "batch", "lfm2", "families", "types", "all"),
                   default="all",
                   help="which part: the random GPT-2 (kvgen, HF, CTranslate2), the GGUF files (SmolLM2 Q4_1 and "
                        "Q8_0, a random Llama in Q4_K_M: kvgen, llama.cpp, HF), kvgen's batched decode, an "
                        "LFM2-shaped hybrid against context (kvgen), the 2026 families' shapes (GPT-OSS, Gemma 4, "
                        "Qwen3.5, LFM2: kvgen, llama.cpp), one random Llama in each GGUF type (kvgen, llama.cpp), "
                        "or all (default)")
    p.add_argument("--new-tokens", type=int, help="new tokens of the decode workload (default 256, 32 with --quick)")
    p.add_argument("--gguf", type=Path, help="the SmolLM2 GGUF file (default kvgen.default_model_path())")
    p.add_argument("--out-smollm2", type=Path, default=gguf.DEFAULT_OUT,
                   help=f"JSON output of the GGUF files part (default {gguf.DEFAULT_OUT})")
    p.add_argument("--out-batch", type=Path, default=batch.DEFAULT_OUT,
                   help=f"JSON output of the batched decode part (default {batch.DEFAULT_OUT})")
    p.add_argument("--out-lfm2", type=Path, default=lfm2.DEFAULT_OUT,
                   help=f"JSON output of the LFM2 part (default {lfm2.DEFAULT_OUT})")
    p.add_argument("--out-families", type=Path, default=families.DEFAULT_OUT,
                   help=f"JSON output of the families part (default {families.DEFAULT_OUT})")
    p.add_argument("--families", type=lambda v: v.split(","), help=f"families part: comma-separated, of "
                   f"{','.join(families.FAMILIES)} (default all but {','.join(sorted(families.ON_REQUEST))})")
    p.add_argument("--out-types", type=Path, default=types.DEFAULT_OUT,
                   help=f"JSON output of the types part (default {types.DEFAULT_OUT})")
    p.add_argument("--types", type=lambda v: v.split(","), help=f"types part: comma-separated llama.cpp file types, "
                   f"of {','.join(types.TYPES + types.MORE_TYPES)} (default {','.join(types.TYPES)})")
    p.add_argument("--files", type=lambda v: v.split(","), help=f"GGUF files part: comma-separated, of "
                   f"{','.join(models.FILE_KINDS)} (default all; q4_1 with --quick)")
    p.add_argument("--thread-counts", type=lambda v: [int(t) for t in v.split(",")],
                   help="GGUF files part: thread counts, comma-separated (default 1,2; --threads with --quick)")
    p.add_argument("--positions", type=lambda v: [] if v == "none" else [int(t) for t in v.split(",")],
                   help="GGUF files part: prompt lengths of the position sweep on the Q4_1 file, comma-separated "
                        "(default 64,512,1024,2048,3000; 64,512 with --quick; none: no sweep)")
    p.add_argument("--no-kv-int8", dest="kv_int8", action="store_false",
                   help="position sweep: without the int8 KV cache variants (kvgen kv_cache_dtype='int8', "
                        "llama.cpp type_k/type_v q8_0 with flash attention)")
    p.add_argument("--hf", choices=("first", "all", "none"), default="first",
                   help="GGUF files part: where transformers runs (default first: the first file at the most threads)")
    args = harness.parse_args(p)
    if args.new_tokens is not None and args.new_tokens < 2:
        p.error("--new-tokens must be at least 2")
    if args.families and not set(args.families) <= set(families.FAMILIES):
        p.error(f"--families: choose among {', '.join(families.FAMILIES)}")
    if args.types and not set(args.types) <= set(types.TYPES + types.MORE_TYPES):
        p.error(f"--types: choose among {', '.join(types.TYPES + types.MORE_TYPES)}")
    if args.files and not set(args.files) <= set(models.FILE_KINDS):
        p.error(f"--files: choose among {', '.join(models.FILE_KINDS)}")
    return args


def main() -> None:
    args = parse_args()
    hf_engine.quiet()
    if args.model in ("gpt2", "all"):
        gpt2.run_gpt2(args)
    if args.model in ("smollm2", "all"):
        gguf.run_gguf(args)
    if args.model in ("batch", "all"):
        batch.run_batch(args)
    if args.model in ("lfm2", "all"):
        lfm2.run_lfm2(args)
    if args.model in ("families", "all"):
        families.run_families(args)
    if args.model in ("types", "all"):
        types.run_types(args)


if __name__ == "__main__":
    main()
