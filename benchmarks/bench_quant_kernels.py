"""Quantized matmul kernels in isolation: GB/s of weight bytes read, per CPU path.

One product = ``out (M, N) = x (M, K) @ W^T`` on one thread, for SmolLM2-135M's matrix
shapes (q/o 576x576, k/v 192x576, gate/up 1536x576, down 576x1536, the LM head
49152x576), M = 1 (decode) and M = 4 (4-beam search), each GGUF type, each CPU path this
CPU runs, int8 and exact (float) activations. The reference is NumPy's float32 matmul on
the dequantized weights (OpenBLAS, 4 bytes per weight read). GB/s = the packed bytes of W
over the median time of one product (int8 mode includes quantizing x, as a model pays it
once per input). Weights are random; the speed does not depend on their values.

Run: ``taskset -c 0 python benchmarks/bench_quant_kernels.py [--quick]``. Timings on a
shared VM swing by 30-50%: compare rows of one run, not runs.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from gguf import GGMLQuantizationType  # noqa: E402
from gguf.quants import dequantize, quantize  # noqa: E402

from kvgen import _core  # noqa: E402

SHAPES = {"q/o": (576, 576), "k/v": (192, 576), "gate/up": (1536, 576), "down": (576, 1536), "lm_head": (49152, 576)}
QUICK_SHAPES = ("gate/up", "lm_head")


def median_seconds(fn, min_time: float) -> float:
    """Median of repeated calls, repeated until min_time has passed (at least 5 calls)."""
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two shapes, Q4_1 and Q8_0, less time per figure")
    parser.add_argument("--types", default=None, help="comma-separated GGUF types (default: all five)")
    args = parser.parse_args()
    types = args.types.split(",") if args.types else (["Q4_1", "Q8_0"] if args.quick else
                                                      ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"])
    shapes = {k: v for k, v in SHAPES.items() if not args.quick or k in QUICK_SHAPES}
    min_time = 0.2 if args.quick else 0.5
    paths = _core._quant_supported_paths()
    print(f"paths: {', '.join(paths)} (default {_core._quant_cpu_path()}); one thread; GB/s of weight bytes read")
    print(f"{'shape':>8} {'N x K':>12} {'type':>5} {'M':>2} {'numpy f32':>10} " +
          " ".join(f"{p + ' ' + mode:>15}" for p in paths for mode in ("int8", "exact")))
    rng = np.random.default_rng(0)
    for name, (n, k) in shapes.items():
        w = rng.standard_normal((n, k)).astype(np.float32)
        for qtype in types:
            gtype = GGMLQuantizationType[qtype]
            raw = np.ascontiguousarray(quantize(w, gtype)).reshape(-1).view(np.uint8)
            packed = _core._quant_pack(raw, qtype, n, k)
            w32 = np.ascontiguousarray(dequantize(raw.reshape(n, -1), gtype), dtype=np.float32)
            for m in (1, 4):
                x = rng.standard_normal((m, k)).astype(np.float32)
                ref = median_seconds(lambda: x @ w32.T, min_time)  # noqa: B023  (called at once)
                cells = []
                for path in paths:
                    for exact in (False, True):
                        t = median_seconds(lambda: packed.matmul(x, exact=exact, path=path), min_time)  # noqa: B023
                        cells.append(f"{packed.nbytes / t / 1e9:15.1f}")
                print(f"{name:>8} {f'{n}x{k}':>12} {qtype:>5} {m:>2} {w32.nbytes / ref / 1e9:10.1f} " + " ".join(cells))


if __name__ == "__main__":
    main()
