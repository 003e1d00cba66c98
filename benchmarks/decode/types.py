"""bench_decode.py --model types: one model in every GGUF type, kvgen against llama-cpp-python.

The model is the random Llama of ``decode/models.py`` (``LLAMA_SHAPE``: hidden 1024, feed-forward
2816, 24 layers, 16 heads / 4 KV heads, SmolLM2's vocabulary; every width a multiple of 256, so
every type applies to every matrix), written once as F16 (``models.write_random_llama``) and
quantized by llama.cpp's own quantizer (``llama_model_quantize``) into each file type of
``--types`` (comma-separated; default ``IQ4_XS,IQ4_NL,IQ3_S,IQ3_XXS,Q3_K_M,Q2_K,IQ2_XS,Q4_K_M``,
Q4_K_M the baseline row). Each file is made once under ``~/.cache/kvgen-bench/`` with its recipe
in a JSON stamp beside it; llama.cpp's quantizer picks its own mix per file type (the embedding,
``attn_v`` and ``ffn_down`` often a type above the rest), and the output reports each file's
tensor types with their share of the weights.

kvgen computes IQ4_NL, IQ4_XS and Q4_K / Q5_K / Q6_K / Q8_0 as stored; Q2_K, Q3_K and the IQ3 / IQ2 /
IQ1 types are decoded at load into its "index" core types (4-bit indices into a table of 16
values per tensor, a scale per 16 weights: 4.66 bits a weight, Q2_K 5.28), so its weight bytes in
memory (``weight_bytes``, its core's count) can exceed the file's on those rows.

Importance matrix: llama.cpp refuses IQ3_XXS, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S and IQ1_M without one
("this quantization requires an imatrix"). llama-cpp-python's ``llama_model_quantize_params.imatrix``
takes one (per tensor, a float per input column); the model has random weights and no
calibration text, so for those types this part passes a **uniform** importance matrix (ones:
every column weighted alike, the plain squared error the quantizer minimizes without one). The
file's layout and so its speed are those of a real imatrix quantization; its quality is not
measured here (random weights have none). The stamp says so (``"imatrix": "uniform"``).

MXFP4: llama.cpp's quantizer writes MXFP4 only for MoE experts (``MXFP4_MOE``), so this dense
model has no MXFP4 file; MXFP4 decode is measured by ``--model families`` (``gpt_oss``).

Per file, at each thread count (``--thread-counts``, default 1,2; ``--threads`` with ``--quick``),
both engines interleaved (``decode/families.run_file``): prefill of a 512-token prompt (128 with
``--quick``) and greedy decode of 64 new tokens after a 64-token prompt (16 with ``--quick``,
``--new-tokens``), EOS kept from ending the run; tokens/s, the kvgen / llama.cpp ratio, a PASS/MISS
line for decode >= 1.2x llama.cpp (issue 37), each engine's decode as a fraction of the memory
bandwidth measured around the timings (tokens/s x weight bytes / bandwidth; a PASS/MISS line for
kvgen reading >= 60% of it on IQ4_XS, issue 37), a greedy sanity check of 16 tokens against
llama.cpp's (random weights: the logits nearly tie, so a difference is reported, not raised), and
kvgen's weight bytes against the file's size. Writes ``benchmarks/results/bench_decode_types.json``
(``--out-types``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

import harness
import kvgen
from decode import families, importance, models
from engines import hf_engine, llama_cpp_engine

TYPES = ("IQ4_XS", "IQ4_NL", "IQ3_S", "IQ3_XXS", "Q3_K_M", "Q2_K", "IQ2_XS", "Q4_K_M")
MORE_TYPES = ("IQ2_XXS", "IQ2_S", "IQ1_S", "IQ1_M")  # also made on request (--types), uniform importance matrix
NEEDS_IMATRIX = {"IQ3_XXS", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M"}  # llama.cpp refuses them without one
NOT_MEASURED = {
    "MXFP4": "llama.cpp's quantizer writes MXFP4 only for MoE experts (MXFP4_MOE): measured by --model families "
             "(gpt_oss)",
}
DECODE_TARGET = 1.2  # kvgen / llama.cpp greedy decode tokens/s (issue 37)
BANDWIDTH_TARGETS = {"IQ4_XS": 0.6}  # kvgen greedy decode, fraction of the measured memory bandwidth (issue 37)
DEFAULT_OUT = harness.RESULTS / "bench_decode_types.json"


def f16_path() -> Path:
    return models.CACHE_DIR / f"random-llama-{models.LLAMA_SHAPE['hidden']}x{models.LLAMA_SHAPE['layers']}.F16.gguf"


def type_path(ftype: str) -> Path:
    return f16_path().with_name(f16_path().name.replace(".F16.", f".{ftype}."))


def recipe(ftype: str) -> dict:
    return {**models.LLAMA_RECIPE, "type": f"{ftype} from F16 by llama.cpp's quantizer",
            "imatrix": "uniform" if ftype in NEEDS_IMATRIX else None, "version": 1}


def quantize(src: Path, dst: Path, ftype: str, threads: int) -> None:
    """llama.cpp's quantizer, with a uniform importance matrix for the types that need one."""
    imatrix = importance.ImatrixArray(importance.uniform(src)) if ftype in NEEDS_IMATRIX else None
    llama_cpp_engine.quantize(src, dst, ftype, threads, imatrix=imatrix and imatrix.array)


def prepare(ftypes: list[str], q4_1: Path, threads: int) -> dict[str, Path | str]:
    """Each type's file, made once from one F16 file (written, then removed when every file is
    made); a type that fails maps to its error."""
    out, missing = {}, [t for t in ftypes if not models.file_ok(type_path(t), recipe(t))]
    out.update({t: type_path(t) for t in ftypes if t not in missing})
    if not missing:
        return out
    models.CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=models.CACHE_DIR) as tmp:
        f16 = Path(tmp) / f16_path().name
        print(f"writing the random Llama (F16, {f16}) ...", flush=True)
        models.write_random_llama(f16, q4_1)
        for ftype in missing:
            path = type_path(ftype)
            print(f"quantizing it to {ftype} ({path}) ...", flush=True)
            began = time.perf_counter()
            try:
                quantize(f16, path, ftype, threads)
            except Exception as exc:  # noqa: BLE001 - a type llama.cpp cannot make: reported, the others go on
                out[ftype] = f"{type(exc).__name__}: {exc}"
                print(f"FINDING: making {ftype} failed: {out[ftype]}", flush=True)
                continue
            print(f"  {time.perf_counter() - began:.0f} s", flush=True)
            models.sidecar(path).write_text(json.dumps(recipe(ftype)))
            out[ftype] = path
    return out


def tensor_types(path: Path) -> dict[str, float]:
    """The file's tensor types, each with its share of the weights (elements)."""
    import gguf

    count = Counter()
    for t in gguf.GGUFReader(str(path)).tensors:
        count[t.tensor_type.name] += int(t.n_elements)
    total = sum(count.values())
    return {name: round(n / total, 4) for name, n in count.most_common()}


def print_table(results: list[dict]) -> None:
    """Per file and thread count: tokens/s of both engines, ratios, and weight bytes against the file."""
    print("\nper type (median tokens/s; kvgen weight bytes in memory / file size):")
    print(f"  {'type':<8} {'thr':>3} {'prefill kvgen':>13} {'llama':>8} {'x':>5} {'decode kvgen':>12} {'llama':>8} "
          f"{'x':>5}  {'weights MB':>10} {'file MB':>8}")
    for f in results:
        w = f.get("weights", {})
        for c in f["configs"]:
            cells = []
            for r in c["results"]:
                kind, speed = families.engine_speeds(r)
                x = r["ratios"][kind].get("llama.cpp/kvgen", float("nan"))
                cells.append(f"{speed.get('kvgen', float('nan')):>13.1f} {speed.get('llama.cpp', float('nan')):>8.1f} "
                             f"{x:>5.2f}")
            print(f"  {f['family']:<8} {c['threads']:>3} {' '.join(cells)}  {w.get('kvgen', 0) / 1e6:>10.1f} "
                  f"{w.get('file', 0) / 1e6:>8.1f}")


def run_types(args: argparse.Namespace) -> None:
    """The types part: per type (--types) and thread count (--thread-counts)."""
    began = time.perf_counter()
    llama_cpp = llama_cpp_engine.import_peer()
    thread_counts = args.thread_counts or ([args.threads] if args.quick else [1, 2])
    ftypes = args.types or list(TYPES)
    work = dict(families.QUICK if args.quick else families.FULL)
    work["sanity_tokens"] = families.FULL["sanity_tokens"]
    if args.new_tokens:
        work["decode"] = (work["decode"][0], args.new_tokens)
    q4_1 = Path(args.gguf).expanduser() if args.gguf else kvgen.default_model_path()
    print("\n==== GGUF types (a random Llama, llama.cpp's quantizer): kvgen against llama.cpp ====\n", flush=True)
    findings = [f"{t}: not measured: {why}" for t, why in NOT_MEASURED.items()]
    for line in findings:
        print(line)
    if llama_cpp is None:
        print(f"skipped: every type (made with llama.cpp's quantizer: {llama_cpp_engine.INSTALL})")
        return
    versions = {**hf_engine.versions(), **llama_cpp_engine.versions(llama_cpp)}
    env = harness.begin(versions, {"every engine": {"counts": ",".join(map(str, thread_counts))}},
                        {"every engine": "kvgen.set_num_threads, llama.cpp n_threads and n_threads_batch"})
    env["llama_cpp_system_info"] = llama_cpp_engine.system_info(llama_cpp)
    print(f"llama.cpp: n_ctx {llama_cpp_engine.N_CTX}, n_batch {llama_cpp_engine.N_BATCH}; "
          f"build: {env['llama_cpp_system_info']}")
    print(f"{args.rounds} interleaved rounds, one call per engine each; median [min-max]; kv/llama: kvgen speed / "
          f"llama.cpp speed (> 1: kvgen faster)")
    files = prepare(ftypes, q4_1, max(thread_counts))
    results = []
    for ftype in ftypes:
        path = files[ftype]
        if isinstance(path, str):
            findings.append(f"{ftype}: making its file failed: {path[-600:]}")
            continue
        label = f"random Llama {ftype}" + (" (uniform importance matrix)" if ftype in NEEDS_IMATRIX else "")
        result = families.run_file(ftype, label, path, work, thread_counts, args.rounds, llama_cpp,
                                   {"decode_only": DECODE_TARGET}, BANDWIDTH_TARGETS.get(ftype))
        result["tensor_types"] = tensor_types(path)
        print(f"tensor types (share of the weights): {result['tensor_types']}")
        results.append(result)
        findings += [f"{ftype}: {f}" for f in result["findings"]]
    families.print_summary(results)
    print_table(results)
    for line in findings:
        print(f"finding: {line}")
    print(f"took {time.perf_counter() - began:.0f} s")
    report = {"environment": env, "settings": {"quick": args.quick, "rounds": args.rounds,
                                               "thread_counts": thread_counts, "workloads": work,
                                               "shape": models.LLAMA_SHAPE, "types": ftypes,
                                               "uniform_imatrix": sorted(NEEDS_IMATRIX & set(ftypes)),
                                               "decode_target": DECODE_TARGET},
              "types": results, "findings": findings}
    harness.write_outputs(report, args.out_types)
