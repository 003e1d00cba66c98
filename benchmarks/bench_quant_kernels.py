"""Quantized matmul kernels in isolation: GB/s of weight bytes read, per CPU path.

One product = ``out (M, N) = x (M, K) @ W^T`` on one thread, for SmolLM2-135M's matrix
shapes (q/o 576x576, k/v 192x576, gate/up 1536x576, down 576x1536, the LM head
49152x576) and three with K a multiple of 256 for the K-quants (1024x1024, 2816x1024, and
8192x4096, "8k x 4k", whose weights outgrow smaller caches; a K-quant runs only on shapes whose K
is a multiple of 256; on request, ``--shapes "16k x 8k"``, 16384x8192, whose weights (72 MB in
Q4_K) outgrow a 32 MiB L3 too: a pass streams them from memory), M = 1, 2 (batch-1 decode in one
and two activation levels), 8 (4 beams in two levels) and 16 (8 batch rows in two levels:
one pass over the weights on AVX-512), each GGUF type, each CPU path this CPU runs, int8 and exact (float)
activations (F16 / BF16 have exact mode only), and on the default path both modes again on
2 threads (the second thread takes half the 16-row groups; the binding releases the GIL).
The lookup-table types IQ4_NL, IQ4_XS (K a multiple of 256) and MXFP4 have int8 kernels on
every path (exact mode: AVX2's on an AVX-512 CPU). So have the types the loader
decodes into kvgen's index blocks (Q2_K, Q3_K, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S,
IQ1_M, TQ1_0, TQ2_0: 4-bit indices into the tensor's 16 values, a scale per 16 weights); their
GB/s count the bytes the kernel reads (4.66 bits a weight, Q2_K 5.28), not the file's. The
reference is NumPy's float32 matmul on the dequantized weights (OpenBLAS, 4 bytes per
weight read). GB/s = the packed bytes of W over the median time of one product (int8 mode
includes quantizing x, as a model pays it once per input). Weights are random (K-quants,
IQ and TQ types: random valid blocks, as gguf-py cannot quantize them); the speed does not
depend on their values.

Per configuration the reference and every path and mode are warmed up, calibrated to
~--round-s and interleaved for --rounds rounds (harness.measure); the figure is the
median over rounds of the mean time per product.

On the default path two more columns: ``int8x2``, the models' default two-level activations
(``activations="int8x2"``), and ``bf16`` (``activations="bf16"``, where the CPU has
AVX512_BF16); where the default is the ``amx`` path, both again on the ``avx512`` path (VNNI
and vdpbf16ps, against the AMX tiles); ``--rows 32,128`` measures them on a prompt pass's row
counts.

Run: ``taskset -c 0,1 python benchmarks/bench_quant_kernels.py [--quick] [--types Q4_0,Q4_K,IQ4_NL]
[--shapes "1k,ffn 1k"] [--rows 1,32,128]``. Timings on a
shared VM swing by 30-50%: compare rows of one run, not runs. Writes
``benchmarks/results/bench_quant_kernels.json`` (``--out``).
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType  # noqa: E402
from gguf.quants import dequantize, quantize  # noqa: E402

from kvgen import _core  # noqa: E402
from kvgen.loaders.quantize import to_core  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (benchmarks/ is not a package)

SHAPES = {"q/o": (576, 576), "k/v": (192, 576), "gate/up": (1536, 576), "down": (576, 1536), "lm_head": (49152, 576),
          "1k": (1024, 1024), "ffn 1k": (2816, 1024), "8k x 4k": (8192, 4096)}
MORE_SHAPES = {"16k x 8k": (16384, 8192)}  # on request (--shapes): 0.5 GB of float32 reference weights
QUICK_SHAPES = ("gate/up", "lm_head", "1k", "ffn 1k")
DECODED = ("Q2_K", "Q3_K", "IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0")
TYPES = ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K", "F16", "BF16", "IQ4_NL", "IQ4_XS", "MXFP4",
         *DECODED)
# byte offsets of a decoded type's fp16 scales (IQ1_M: none, its d is spread over 4 nibbles)
DECODED_SCALES = {"Q2_K": (80, 82), "Q3_K": (108,), "TQ1_0": (52,), "TQ2_0": (64,), "IQ1_M": ()}
QUICK_TYPES = ("Q4_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K", "F16", "BF16")
K_QUANTS = {"Q4_K": 144, "Q5_K": 176, "Q6_K": 210}  # block bytes
IQ_TYPES = {"IQ4_NL": (32, 18), "IQ4_XS": (256, 136)}  # (weights, bytes) of a block: random blocks
SUPER = (*K_QUANTS, "IQ4_XS", *DECODED)  # rows of whole 256-weight super-blocks
DENSE = ("F16", "BF16")  # no int8 mode
ROWS = (1, 2, 8, 16)  # M: decode in one and two levels, 4 beams and 8 batch rows in two levels
ROUND_S, QUICK_ROUND_S = 0.1, 0.03
DEFAULT_OUT = harness.RESULTS / "bench_quant_kernels.json"


_HELPER = ThreadPoolExecutor(1)  # the second thread of the 2-thread products


def two_threads(packed, x: np.ndarray, exact: bool, path: str):
    """A product on 2 threads: the helper computes the first half of the 16-row groups, the
    caller the second (each writes NaN outside its range; the halves are not joined)."""
    groups = -(-packed.rows // 16)
    half = groups // 2

    def call():
        first = _HELPER.submit(packed.matmul, x, exact=exact, path=path, groups=(0, half))
        packed.matmul(x, exact=exact, path=path, groups=(half, groups))
        first.result()
    return call


def engines(packed, w32: np.ndarray, x: np.ndarray, paths: list[str], qtype: str) -> dict:
    """The NumPy reference and every (path, activation mode) product, as zero-argument calls;
    on the default path (paths[0]) both modes on 2 threads too, and the models' two-level
    int8 (``int8x2``) and, where the CPU has AVX512_BF16, bf16 activations."""
    calls = {"numpy f32": lambda: x @ w32.T}
    for path in paths:
        for mode, exact in (("int8", False), ("exact", True)):
            if exact or qtype not in DENSE:
                calls[f"{path} {mode}"] = lambda path=path, exact=exact: packed.matmul(x, exact=exact, path=path)
                if path == paths[0]:
                    calls[f"{path} {mode} 2t"] = two_threads(packed, x, exact, path)
    if qtype not in DENSE:
        for path in model_paths(paths):
            calls[f"{path} int8x2"] = lambda path=path: packed.matmul(x, path=path, two_level=True)
            if not _core._bf16_unavailable_reason(path):
                calls[f"{path} bf16"] = lambda path=path: packed.matmul(x, path=path, bf16=True)
    return calls


def model_paths(paths: list[str]) -> list[str]:
    """The paths whose int8x2 and bf16 products are measured: the default, and beside amx the
    avx512 path (the same products on VNNI and vdpbf16ps: the tiles' gain in one run)."""
    return paths[:2] if paths[0] == "amx" else paths[:1]


def file_bytes(qtype: str, w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The GGUF bytes of w as `qtype`; for K-quants and IQ4 types random valid blocks of w's
    shape (random bytes, small finite fp16 scales), since gguf-py does not quantize them."""
    if qtype in IQ_TYPES:
        weights, size = IQ_TYPES[qtype]
        n, k = w.shape
        raw = rng.integers(0, 256, (n * k // weights, size), dtype=np.uint8)
        raw[:, 0:2] = rng.uniform(0.0001, 0.001, (raw.shape[0], 1)).astype(np.float16).view(np.uint8)
        return raw.reshape(-1)
    if qtype in DECODED:
        n, k = w.shape
        size = GGML_QUANT_SIZES[GGMLQuantizationType[qtype]][1]
        raw = rng.integers(0, 256, (n * k // 256, size), dtype=np.uint8)
        for at in DECODED_SCALES.get(qtype, (0,)):
            raw[:, at:at + 2] = rng.uniform(0.0001, 0.001, (raw.shape[0], 1)).astype(np.float16).view(np.uint8)
        if qtype == "IQ1_M":
            raw[:, 55] &= 0x3F  # d's top nibble below 0xC: finite
        return raw.reshape(-1)
    if qtype not in K_QUANTS:
        return np.ascontiguousarray(quantize(w, GGMLQuantizationType[qtype])).reshape(-1).view(np.uint8)
    n, k = w.shape
    raw = rng.integers(0, 256, (n * k // 256, K_QUANTS[qtype]), dtype=np.uint8)
    scales = rng.uniform(0.001, 0.01, (raw.shape[0], 2)).astype(np.float16).view(np.uint8)
    if qtype == "Q6_K":
        raw[:, 208:210] = scales[:, :2]
    else:
        raw[:, 0:4] = scales
    return raw.reshape(-1)


def bench_config(name: str, qtype: str, w: np.ndarray, paths: list[str], rounds: int, round_s: float,
                 rng: np.random.Generator, rows: tuple[int, ...] = ROWS) -> list[dict]:
    """Every M for one shape and type: median time and GB/s per engine."""
    n, k = w.shape
    gtype = GGMLQuantizationType[qtype]
    raw = file_bytes(qtype, w, rng)
    core = to_core(qtype, raw.reshape(n, -1), (n, k)) if qtype in DECODED else None
    packed = _core._quant_pack(core.data, core.type, n, k) if core else _core._quant_pack(raw, qtype, n, k)
    w32 = np.ascontiguousarray(dequantize(raw.reshape(n, -1), gtype), dtype=np.float32)
    results = []
    for m in rows:
        x = rng.standard_normal((m, k)).astype(np.float32)
        stats, _ = harness.compare(engines(packed, w32, x, paths, qtype), rounds, round_s)
        weight_bytes = {e: w32.nbytes if e == "numpy f32" else packed.nbytes for e in stats}
        results.append({"shape": name, "n": n, "k": k, "type": qtype, "m": m, "engines": stats,
                        "GBps": {e: weight_bytes[e] / (s["median_us"] * 1e-6) / 1e9 for e, s in stats.items()}})
    return results


def table(names: list[str]) -> harness.Table:
    return harness.Table([
        harness.Column("shape", 8, lambda r: r["shape"]),
        harness.Column("N x K", 12, lambda r: f"{r['n']}x{r['k']}"),
        harness.Column("type", 5, lambda r: r["type"]),
        harness.Column("M", 2, lambda r: str(r["m"])),
        *[harness.Column(e, max(10, len(e)), lambda r, e=e: f"{r['GBps'][e]:.1f}" if e in r["GBps"] else "-")
          for e in names],
    ])


def main() -> None:
    parser = harness.cli(__doc__, DEFAULT_OUT, None, "",
                         "gate/up, lm_head, 1k, ffn 1k; Q4_1, Q8_0, the K-quants, F16, BF16; short rounds",
                         round_s=(ROUND_S, QUICK_ROUND_S))
    parser.add_argument("--types", help="comma-separated GGUF types (default: all)")
    parser.add_argument("--shapes", help=f"comma-separated shapes (default: all of {', '.join(SHAPES)}; also "
                                         f"{', '.join(MORE_SHAPES)})")
    parser.add_argument("--rows", help=f"comma-separated activation rows M (default {','.join(map(str, ROWS))}; "
                                       "a prompt pass has 32 to 128)")
    args = harness.parse_args(parser)
    types = args.types.split(",") if args.types else (QUICK_TYPES if args.quick else TYPES)
    chosen = args.shapes.split(",") if args.shapes else (QUICK_SHAPES if args.quick else tuple(SHAPES))
    shapes = {k: v for k, v in {**SHAPES, **MORE_SHAPES}.items() if k in chosen}
    rows = tuple(int(m) for m in args.rows.split(",")) if args.rows else ROWS
    paths = list(_core._quant_supported_paths())
    env = harness.begin({"gguf": importlib.metadata.version("gguf")},
                        {"kvgen": {"most columns": 1, "the 2t columns": 2},
                         "numpy": os.environ["OPENBLAS_NUM_THREADS"]},
                        {"kvgen": "the kernels run on the calling thread", "numpy": "OpenBLAS"})
    print(f"\npaths: {', '.join(paths)} (default {_core._quant_cpu_path()}); {args.rounds} interleaved rounds of "
          f"~{args.round_s:g} s per engine; GB/s of weight bytes read (median over rounds)\n")
    names = ["numpy f32"] + [f"{p} {mode}" for p in paths for mode in ("int8", "exact")]
    names[3:3] = [f"{paths[0]} int8 2t", f"{paths[0]} exact 2t"]
    at = 5
    for path in model_paths(paths):
        for mode in ("int8x2", "bf16"):
            if mode == "int8x2" or not _core._bf16_unavailable_reason(path):
                names.insert(at, f"{path} {mode}")
                at += 1
    tab = table(names)
    tab.print_header()
    rng = np.random.default_rng(0)
    results = []
    for name, (n, k) in shapes.items():
        w = rng.standard_normal((n, k)).astype(np.float32)
        for qtype in types:
            if qtype in SUPER and k % 256 != 0:
                continue  # K-quant rows are whole 256-weight super-blocks
            for r in bench_config(name, qtype, w, paths, args.rounds, args.round_s, rng, rows):
                results.append(r)
                tab.print_row(r)
    settings = harness.settings(args, types=list(types), shapes=shapes, rows=rows, paths=paths,
                                default_path=_core._quant_cpu_path())
    harness.write_outputs({"environment": env, "settings": settings, "results": results}, args.out)


if __name__ == "__main__":
    main()
