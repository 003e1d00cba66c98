"""Quality of quantized compute: perplexity over a fixed text, kvgen against transformers and llama.cpp.

Teacher-forced over the public-domain text ``tests/data/pride_and_prejudice_ch1-2.txt``
(2,262 tokens under SmolLM2's tokenizer; ``--tokens`` takes a prefix), one forward pass over
all positions per engine, the same token ids for every engine:

* ``kvgen``: ``kvgen.Model.load(path).forward(ids)`` (the default mode: quantized weights,
  activations quantized per 32-block to int8 in two levels, ``activations="int8x2"``);
* ``kvgen-int8``: ``activations="int8"`` (one level, llama.cpp's arithmetic);
* ``kvgen-bf16``: ``activations="bf16"`` (activations and dequantized weights rounded to
  bfloat16, float32 sums); skipped with the reason on a CPU without AVX512_BF16;
* ``kvgen-exact``: ``kvgen.Model.load(path, exact=True)`` (quantized weights, float
  activations); skipped with a note where this kvgen has no ``exact``;
* ``kvgen-kv-int8``: ``kv_cache_dtype="int8"`` (the default mode with an int8 KV cache, a scale
  per position and KV head); skipped with a note where this kvgen lacks it;
* ``HF``: transformers' ``AutoModelForCausalLM.from_pretrained(dir, gguf_file=...)`` in float32
  (the file's weights dequantized at load): the reference, what kvgen promises to match;
* ``llama.cpp``: llama-cpp-python's ``Llama(..., logits_all=True).eval(ids)``, its logits of
  every position (``Llama.scores``); skipped with a note when llama-cpp-python is missing
  (``pip install -r benchmarks/requirements-peers.txt``);
* ``llama.cpp-kv-q8_0``: the same with ``type_k``/``type_v`` q8_0 (and flash attention, which a
  quantized V cache needs); skipped with a note where the peer refuses it.

The engines are the adapters of ``engines/``; the protocol is ``PROTOCOL.md``.

Perplexity = exp(mean negative log-likelihood of tokens 1..N-1), each from the log-softmax
(float64) of the logits at the position before it. Also per engine, against HF: the
fraction of positions whose argmax agrees, the largest absolute logit difference, and the
perplexity ratio (the goals: argmax >= 99%, perplexity within 0.5%). The seconds of
the one forward pass are printed for information (one call, not a speed benchmark: see
bench_decode.py). The ids are kvgen's tokenizer's; transformers' and llama.cpp's tokenizers
are checked to give the same ids (printed).

``--gguf PATH`` (repeatable, default ``kvgen.default_model_path()``, the SmolLM2 Q4_1 file)
measures other files, e.g. the Q8_0 version that bench_decode.py writes under
``~/.cache/kvgen-bench/``. ``--quick``: the first 256 tokens. Writes
``benchmarks/results/bench_perplexity.json`` (``--out``).

    taskset -c 0,1 python benchmarks/bench_perplexity.py            # ~1 minute per file
    taskset -c 0,1 python benchmarks/bench_perplexity.py --quick
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
import time
from pathlib import Path

import numpy as np

import kvgen

BENCHMARKS = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCHMARKS), str(BENCHMARKS.parent / "tests" / "support")]
from teacher_forcing import TEXT, perplexity  # noqa: E402  (tests/support/teacher_forcing.py)

import harness  # noqa: E402  (benchmarks/ is not a package)
from engines import hf_engine, kvgen_engine, llama_cpp_engine  # noqa: E402
from engines.hf_engine import HFEngine  # noqa: E402
from engines.kvgen_engine import KvgenEngine  # noqa: E402
from engines.llama_cpp_engine import LlamaCppEngine  # noqa: E402

QUICK_TOKENS = 256
THREADS = 2
MIN_ARGMAX_AGREEMENT = 0.99
MAX_PERPLEXITY_REL_DIFF = 0.005
DEFAULT_OUT = harness.RESULTS / "bench_perplexity.json"


# ---- metrics -------------------------------------------------------------------------


def against_reference(logits: np.ndarray, ref: np.ndarray, ids: np.ndarray) -> dict:
    """Perplexity, and the argmax agreement, largest logit difference and perplexity ratio against ref."""
    ppl, ref_ppl = perplexity(logits, ids), perplexity(ref, ids)
    return {"perplexity": ppl, "perplexity_ratio": ppl / ref_ppl,
            "argmax_agreement": float((logits.argmax(-1) == ref.argmax(-1)).mean()),
            "max_abs_logit_diff": float(np.abs(logits - ref).max())}


# ---- engines: logits(ids) -> [length, vocab] float32 (the adapters' ``logits``) -----


def kvgen_mode(name: str, path: Path, **mode) -> KvgenEngine | None:
    """kvgen in a mode (Model.load keywords), or None (with a note) when this kvgen lacks it."""
    try:
        return KvgenEngine(path, **mode)
    except TypeError:
        print(f"skipped: {name} (this kvgen's Model.load has no {', '.join(mode)}=)")
    except ValueError as e:  # a mode this CPU cannot run (activations="bf16" without AVX512_BF16)
        print(f"skipped: {name} ({e})")
    return None


# ---- one file ------------------------------------------------------------------------


def tokenizer_check(path: Path, text: str, ids: list[int], llm: LlamaCppEngine | None) -> dict:
    """Whether transformers' and llama.cpp's tokenizers give kvgen's ids for the whole text."""
    same = {"HF": hf_engine.gguf_tokenizer(path)(text)["input_ids"] == ids}
    if llm is not None:
        same["llama.cpp"] = llm.tokenize(text) == ids
    return same


def measure_file(path: Path, args: argparse.Namespace, llama_cpp) -> dict:
    text = TEXT.read_text(encoding="utf-8")
    kv = KvgenEngine(path)
    all_ids = kv.model.encode(text)
    n = min(args.tokens or (QUICK_TOKENS if args.quick else len(all_ids)), len(all_ids))
    ids = np.asarray(all_ids[:n], dtype=np.int64)
    hf = HFEngine.gguf(path)
    llm = LlamaCppEngine(path, args.threads, n_ctx=n, logits_all=True) if llama_cpp else None
    same_ids = tokenizer_check(path, text, all_ids, llm)
    print(f"\n{path.name}: {n} of {len(all_ids)} tokens of {TEXT.name}; tokenizers giving kvgen's ids: " +
          ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same_ids.items()))
    llm_q8 = None
    if llama_cpp:
        try:
            llm_q8 = LlamaCppEngine(path, args.threads, n_ctx=n, logits_all=True, type_k=llama_cpp.GGML_TYPE_Q8_0,
                                    type_v=llama_cpp.GGML_TYPE_Q8_0, flash_attn=True)
        except Exception as e:  # noqa: BLE001 - any failure of the peer's build: skipped, said so
            print(f"skipped: llama.cpp-kv-q8_0 ({type(e).__name__}: {e})")
    engines = {"kvgen": kv, "kvgen-int8": kvgen_mode("kvgen-int8", path, activations="int8"),
               "kvgen-exact": kvgen_mode("kvgen-exact", path, exact=True),
               "kvgen-bf16": kvgen_mode("kvgen-bf16", path, activations="bf16"),
               "kvgen-kv-int8": kvgen_mode("kvgen-kv-int8", path, kv_cache_dtype="int8"), "HF": hf, "llama.cpp": llm,
               "llama.cpp-kv-q8_0": llm_q8}
    logits, seconds = {}, {}
    for name, engine in engines.items():
        if engine is None:
            continue
        start = time.perf_counter()
        logits[name] = engine.logits(ids)
        seconds[name] = time.perf_counter() - start
    rows = {name: {**against_reference(x, logits["HF"], ids), "forward_seconds": seconds[name]}
            for name, x in logits.items()}
    print_table(rows)
    return {"file": str(path), "tokens": n, "text_tokens": len(all_ids), "tokenizers_agree": same_ids,
            "engines": rows}


def print_table(rows: dict) -> None:
    table = harness.Table([
        harness.Column("engine", 17, lambda r: r[0], left=True),
        harness.Column("perplexity", 10, lambda r: f"{r[1]['perplexity']:.4f}"),
        harness.Column("x HF", 8, lambda r: f"{r[1]['perplexity_ratio']:.5f}"),
        harness.Column("argmax=HF", 9, lambda r: f"{100 * r[1]['argmax_agreement']:.2f}%"),
        harness.Column("max |dlogit|", 12, lambda r: f"{r[1]['max_abs_logit_diff']:.2e}"),
        harness.Column("forward s", 9, lambda r: f"{r[1]['forward_seconds']:.2f}"),
    ])
    table.print_header()
    for name, row in rows.items():
        table.print_row((name, row))
    for name in ("kvgen", "kvgen-int8", "kvgen-exact", "kvgen-bf16"):
        if name in rows:
            r = rows[name]
            harness.target(f"{name}: argmax agrees with HF at >= {MIN_ARGMAX_AGREEMENT:.0%} of positions",
                           r["argmax_agreement"], r["argmax_agreement"] >= MIN_ARGMAX_AGREEMENT,
                           f"{100 * r['argmax_agreement']:.2f}%")
            rel = abs(r["perplexity_ratio"] - 1)
            harness.target(f"{name}: perplexity within {MAX_PERPLEXITY_REL_DIFF:.1%} of HF's", rel,
                           rel <= MAX_PERPLEXITY_REL_DIFF, f"{100 * rel:.3f}%")


# ---- main ----------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    p = harness.cli(__doc__, DEFAULT_OUT, THREADS, "threads of every engine", f"the first {QUICK_TOKENS} tokens",
                    rounds=5)
    p.add_argument("--gguf", type=Path, action="append",
                   help="a GGUF file (repeatable; default kvgen.default_model_path(), the SmolLM2 Q4_1 file)")
    p.add_argument("--tokens", type=int, help="tokens of the text (default all of it)")
    args = harness.parse_args(p)
    if args.tokens is not None and args.tokens < 2:
        p.error("--tokens must be at least 2")
    return args


def main() -> None:
    args = parse_args()
    llama_cpp = llama_cpp_engine.import_peer()
    kvgen_engine.set_threads(args.threads)
    hf_engine.set_threads(args.threads)
    versions = {**hf_engine.versions(), "gguf": importlib.metadata.version("gguf")}
    threads = {"kvgen": kvgen_engine.threads(), "torch": hf_engine.threads()}
    if llama_cpp:
        versions.update(llama_cpp_engine.versions(llama_cpp))
        threads["llama.cpp"] = args.threads
    env = harness.begin(versions, threads)
    print("teacher-forced perplexity (float64 log-softmax) over one forward pass; x HF, argmax=HF and max |dlogit| "
          "against transformers' float32 computation of the dequantized file")
    files = [Path(p).expanduser() for p in args.gguf] if args.gguf else [kvgen.default_model_path()]
    results = [measure_file(path, args, llama_cpp) for path in files]
    settings = harness.settings(args, threads=args.threads, text=str(TEXT), tokens=args.tokens)
    harness.write_outputs({"environment": env, "settings": settings, "results": results}, args.out)


if __name__ == "__main__":
    main()
