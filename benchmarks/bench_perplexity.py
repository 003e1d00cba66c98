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

``--types IQ4_XS,IQ4_NL,...`` (``all``: ``TYPES``) measures, instead, the first ``--gguf`` file
requantized by llama.cpp's quantizer (``llama_model_quantize``, ``allow_requantize``) into each
of those file types, each made once under ``~/.cache/kvgen-bench/`` with its recipe beside it.
Every type is quantized with an importance matrix, as the published i-quant files are: the mean
squared input of each linear layer of transformers' float model of the source file over the
first ``CALIBRATION_TOKENS`` tokens of ``docs/architecture.md`` (a text other than the measured
one; ``decode/importance.py``). Where a matrix's input width is not a multiple of 256
(SmolLM2's hidden 576), llama.cpp's quantizer stores it in a fallback type (IQ4_NL for the
i-quants and Q2_K / Q3_K), so each file's tensor types are printed with their share of the
weights. A summary per type follows: every engine's argmax agreement with transformers on that
file's dequantized weights, and a PASS/MISS line for kvgen's default mode agreeing at least as
often as llama.cpp (issue 37: per type, kvgen's activations keep llama.cpp's level or better).

    taskset -c 0,1 python benchmarks/bench_perplexity.py            # ~1 minute per file
    taskset -c 0,1 python benchmarks/bench_perplexity.py --quick
    taskset -c 0,1 python benchmarks/bench_perplexity.py --types all   # ~15 minutes
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import sys
import time
from pathlib import Path

import numpy as np

import kvgen

BENCHMARKS = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCHMARKS), str(BENCHMARKS.parent / "tests" / "support")]
from teacher_forcing import TEXT, perplexity  # noqa: E402  (tests/support/teacher_forcing.py)

import harness  # noqa: E402  (benchmarks/ is not a package)
from decode import importance, models  # noqa: E402
from decode.types import tensor_types  # noqa: E402
from engines import hf_engine, kvgen_engine, llama_cpp_engine  # noqa: E402
from engines.hf_engine import HFEngine  # noqa: E402
from engines.kvgen_engine import KvgenEngine  # noqa: E402
from engines.llama_cpp_engine import LlamaCppEngine  # noqa: E402

QUICK_TOKENS = 256
THREADS = 2
MIN_ARGMAX_AGREEMENT = 0.99
MAX_PERPLEXITY_REL_DIFF = 0.005
DEFAULT_OUT = harness.RESULTS / "bench_perplexity.json"
TYPES = ("IQ4_XS", "IQ4_NL", "IQ3_S", "IQ3_XXS", "IQ2_XS", "IQ2_XXS", "IQ1_M", "Q2_K", "Q3_K_M", "Q4_K_M")
CALIBRATION = BENCHMARKS.parent / "docs" / "architecture.md"
CALIBRATION_TOKENS = 2048
MODES = ("kvgen", "kvgen-int8", "kvgen-bf16", "kvgen-exact")  # kvgen's activations modes, in the summary


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


# ---- --types: one file requantized into each type ------------------------------------


def type_path(source: Path, ftype: str) -> Path:
    stem = source.stem.rsplit(".", 1)[0] if "." in source.stem else source.stem  # SmolLM2-135M-Instruct.Q4_1
    return models.CACHE_DIR / f"{stem}.{ftype}.gguf"


def requantize(source: Path, ftypes: list[str], threads: int, llama_cpp) -> dict[str, Path | str]:
    """Each type's file (made once, its recipe in a JSON stamp beside it); a type the quantizer
    cannot make maps to its error."""
    text = CALIBRATION.read_text(encoding="utf-8")
    ids = KvgenEngine(source).model.encode(text)[:CALIBRATION_TOKENS]
    calibration = {"text": CALIBRATION.relative_to(BENCHMARKS.parent).as_posix(), "tokens": len(ids),
                   "sha256": hashlib.sha256(text.encode()).hexdigest(),
                   "statistic": "mean squared input per column, transformers' float model of the source"}

    def recipe(ftype: str) -> dict:
        return {"source": source.name, "source_bytes": source.stat().st_size, "type": ftype,
                "quantizer": f"llama_model_quantize (llama-cpp-python {llama_cpp.__version__})",
                "imatrix": calibration, "version": 1}

    out, imatrix = {}, None
    for ftype in ftypes:
        path = type_path(source, ftype)
        if not models.file_ok(path, recipe(ftype)):
            if imatrix is None:
                print(f"importance matrix: {calibration['statistic']} over {len(ids)} tokens of "
                      f"{calibration['text']} ...", flush=True)
                imatrix = importance.ImatrixArray(importance.from_activations(source, ids))
            print(f"requantizing {source.name} to {ftype} ({path}) ...", flush=True)
            models.CACHE_DIR.mkdir(parents=True, exist_ok=True)
            try:
                llama_cpp_engine.quantize(source, path, ftype, threads, imatrix=imatrix.array)
            except Exception as exc:  # noqa: BLE001 - a type the quantizer cannot make: reported, the others go on
                out[ftype] = f"{type(exc).__name__}: {exc}"
                print(f"FINDING: making {ftype} failed: {out[ftype]}", flush=True)
                continue
            models.sidecar(path).write_text(json.dumps(recipe(ftype)))
        out[ftype] = path
    return out


def print_types_summary(by_type: dict[str, dict]) -> list[dict]:
    """Per type: argmax agreement with HF of each engine; PASS/MISS for kvgen's default mode at
    llama.cpp's level or better."""
    names = [n for n in (*MODES, "llama.cpp") if any(n in r["engines"] for r in by_type.values())]
    print("\nper type: argmax agreement with transformers on the file's dequantized weights (perplexity x HF)")
    print(f"  {'type':<8} " + " ".join(f"{n:>20}" for n in names) + "  tensor types (share of the weights)")
    targets = []
    for ftype, r in by_type.items():
        cells = [f"{100 * r['engines'][n]['argmax_agreement']:6.2f}% ({r['engines'][n]['perplexity_ratio']:.4f})"
                 if n in r["engines"] else "-" for n in names]
        print(f"  {ftype:<8} " + " ".join(f"{c:>20}" for c in cells) + "  " +
              ", ".join(f"{t} {100 * share:.0f}%" for t, share in r["tensor_types"].items()))
    for ftype, r in by_type.items():
        if "llama.cpp" in r["engines"]:
            kv, peer = r["engines"]["kvgen"]["argmax_agreement"], r["engines"]["llama.cpp"]["argmax_agreement"]
            targets.append(harness.target(f"{ftype}: kvgen's argmax agreement with HF >= llama.cpp's", kv - peer,
                                          kv >= peer, f"{100 * kv:.2f}% vs {100 * peer:.2f}%"))
    return targets


# ---- main ----------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    p = harness.cli(__doc__, DEFAULT_OUT, THREADS, "threads of every engine", f"the first {QUICK_TOKENS} tokens",
                    rounds=5)
    p.add_argument("--gguf", type=Path, action="append",
                   help="a GGUF file (repeatable; default kvgen.default_model_path(), the SmolLM2 Q4_1 file)")
    p.add_argument("--tokens", type=int, help="tokens of the text (default all of it)")
    p.add_argument("--types", help=f"the first --gguf file requantized into each of these llama.cpp file types, "
                                   f"comma-separated, or all: {','.join(TYPES)}")
    args = harness.parse_args(p)
    if args.tokens is not None and args.tokens < 2:
        p.error("--tokens must be at least 2")
    if args.types:
        args.types = list(TYPES) if args.types == "all" else args.types.split(",")
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
    report = {"environment": env}
    if args.types:
        if llama_cpp is None:
            sys.exit(f"--types needs llama.cpp's quantizer: {llama_cpp_engine.INSTALL}")
        made = requantize(files[0], args.types, args.threads, llama_cpp)
        report["failed_types"] = {t: p for t, p in made.items() if isinstance(p, str)}
        typed = {t: p for t, p in made.items() if not isinstance(p, str)}
        files = list(typed.values())
    results = [measure_file(path, args, llama_cpp) for path in files]
    if args.types:
        by_type = {}
        for ftype, r in zip(typed, results):
            r["type"], r["tensor_types"] = ftype, tensor_types(Path(r["file"]))
            by_type[ftype] = r
        report["targets"] = print_types_summary(by_type)
        for ftype, why in report["failed_types"].items():
            print(f"finding: {ftype}: making its file failed: {why[-400:]}")
    settings = harness.settings(args, threads=args.threads, text=str(TEXT), tokens=args.tokens,
                                calibration=str(CALIBRATION) if args.types else None)
    harness.write_outputs({**report, "settings": settings, "results": results}, args.out)


if __name__ == "__main__":
    main()
