"""Which int8 activation schemes keep transformers' argmax: a simulation, before any kernel is written.

Batch rows, beams and speculative verification pay each row's integer arithmetic in full
(bench_quant_kernels.py: the multi-row kernels run at about one ``vpdpbusd`` a cycle), and
kvgen's default quantizes activations in two int8 levels per 32-value block (``activations=
"int8x2"``), which doubles that arithmetic. A cheaper scheme may serve batch rows only if the
teacher-forced argmax agreement with transformers stays at 99% or more. This script measures,
for candidate schemes, that agreement without writing their kernels: transformers' float32
model of the GGUF file (its weights dequantized at load, the reference the fidelity tests use)
with every ``nn.Linear`` input fake-quantized by the scheme (quantize, then dequantize), over
the public-domain text of the fidelity tests, against the same model unquantized.

Schemes (int8 symmetric, scale = max|x| / 127 per block, rounding half away from zero as
kvgen's quantizer):

* ``two-level/32``: kvgen's default; the residual quantized again per block, with the fixed
  scale d1 / 256;
* ``one-level/B`` for B = 32 (llama.cpp's Q8_1, ``activations="int8"``), 16, 8, 4, 2: one
  level with a scale per B values. The ``vpdpbusd`` count is one level's, but every scale finer
  than 32 adds float conversions and multiply-adds per instruction (per 4 values: one of each);
* ``widest/F``: two levels only on the fraction F of blocks with the largest max/rms (the
  outliers), one level elsewhere (a second level for some blocks costs only those blocks);
* ``one-level except NAME`` / ``only NAME``: one level everywhere but one projection kind, and
  one level only there: whether one place carries the error.

    python benchmarks/sim_activation_schemes.py            # ~3 minutes at 2 threads
    python benchmarks/sim_activation_schemes.py --tokens 512

Writes ``benchmarks/results/sim_activation_schemes.json`` (``--out``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

import kvgen

BENCHMARKS = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCHMARKS), str(BENCHMARKS.parent / "tests" / "support")]
from teacher_forcing import TEXT, perplexity  # noqa: E402  (tests/support/teacher_forcing.py)

import harness  # noqa: E402
from engines import hf_engine  # noqa: E402

PROJECTIONS = ["q_proj+k_proj+v_proj", "o_proj", "gate_proj+up_proj", "down_proj", "lm_head"]


def one_level(x: torch.Tensor, block: int) -> torch.Tensor:
    """x quantized to int8 per `block` values (scale max|x| / 127) and dequantized."""
    shape, x = x.shape, x.reshape(-1, block)
    d = x.abs().amax(-1, keepdim=True) / 127
    inverse = torch.where(d > 0, 1 / d, torch.zeros_like(d))
    q = torch.clamp(torch.sign(x) * torch.floor((x * inverse).abs() + 0.5), -127, 127)
    return (q * d).reshape(shape)


def second_level(xb: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
    """The residual xb - first of (n, 32) blocks quantized as kvgen's second level: the fixed
    scale d1 / 256 (d1 = the first level's max|x| / 127), clamped to +-127, and dequantized."""
    d2 = xb.abs().amax(-1, keepdim=True) / 127 / 256
    inverse = torch.where(d2 > 0, 1 / d2, torch.zeros_like(d2))
    residual = xb - first
    q = torch.clamp(torch.sign(residual) * torch.floor((residual * inverse).abs() + 0.5), -127, 127)
    return q * d2


def two_level(x: torch.Tensor) -> torch.Tensor:
    shape, xb = x.shape, x.reshape(-1, 32)
    first = one_level(xb, 32)
    return (first + second_level(xb, first)).reshape(shape)


def widest_two_level(x: torch.Tensor, fraction: float) -> torch.Tensor:
    """Two levels on the `fraction` of 32-blocks with the largest max / rms, one elsewhere."""
    shape, xb = x.shape, x.reshape(-1, 32)
    first = one_level(xb, 32)
    spread = xb.abs().amax(-1) / (xb.pow(2).mean(-1).sqrt() + 1e-30)
    cut = torch.quantile(spread.float()[:100_000], 1 - fraction)
    second = torch.where((spread > cut).unsqueeze(-1), second_level(xb, first), torch.zeros_like(xb))
    return (first + second).reshape(shape)


def bf16(x: torch.Tensor) -> torch.Tensor:
    """x rounded to bfloat16 (nearest, ties to even) and back: ``activations="bf16"``'s inputs."""
    return x.to(torch.bfloat16).to(x.dtype)


def main() -> None:
    p = harness.cli(__doc__, harness.RESULTS / "sim_activation_schemes.json", 2, "torch threads",
                    "the first 512 tokens")
    p.add_argument("--tokens", type=int, help="tokens of the text (default all of it)")
    args = harness.parse_args(p)
    torch.set_num_threads(args.threads)
    path = kvgen.default_model_path()
    model = hf_engine.load_gguf(path).eval()
    ids = hf_engine.gguf_tokenizer(path)(TEXT.read_text())["input_ids"]
    ids = ids[: args.tokens or (512 if args.quick else len(ids))]
    batch = torch.tensor([ids])

    def logits(scheme=None, where=lambda name: True, weights=None) -> np.ndarray:
        linears = [m for name, m in model.named_modules() if isinstance(m, torch.nn.Linear) and where(name)]
        hooks = [m.register_forward_pre_hook(lambda m, a: (scheme(a[0]),)) for m in linears if scheme]
        kept = [m.weight.data for m in linears] if weights else []
        try:
            for m in linears if weights else []:
                m.weight.data = weights(m.weight.data)
            with torch.no_grad():
                return model(batch).logits[0].float().numpy()
        finally:
            for h in hooks:
                h.remove()
            for m, w in zip(linears, kept):
                m.weight.data = w

    reference = logits()
    ref_argmax, ref_ppl = reference.argmax(-1), perplexity(reference, np.array(ids))
    schemes = [("two-level/32", two_level, None), ("bf16 inputs", bf16, None),
               ("bf16 inputs and weights", bf16, None, bf16)]
    schemes += [(f"one-level/{b}", lambda x, b=b: one_level(x, b), None) for b in (32, 16, 8, 4, 2)]
    schemes += [(f"widest/{f}", lambda x, f=f: widest_two_level(x, f), None) for f in (0.25, 0.5)]
    for kinds in PROJECTIONS:
        names = kinds.split("+")
        schemes.append((f"one-level except {kinds}", lambda x: one_level(x, 32),
                        lambda n, names=names: not any(k in n for k in names)))
        schemes.append((f"one-level only {kinds}", lambda x: one_level(x, 32),
                        lambda n, names=names: any(k in n for k in names)))
    print(f"{path.name}, {len(ids)} tokens, transformers float32 with Linear inputs fake-quantized; "
          "argmax agreement and perplexity ratio against the same model unquantized")
    table = harness.Table([harness.Column("scheme", 44, lambda r: r["scheme"], left=True),
                           harness.Column("argmax", 8, lambda r: f"{100 * r['argmax_agreement']:.2f}%"),
                           harness.Column("ppl ratio", 10, lambda r: f"{r['perplexity_ratio']:.4f}"),
                           harness.Column(">= 99%", 7, lambda r: "yes" if r["argmax_agreement"] >= 0.99 else "no")])
    table.print_header()
    results = []
    for name, scheme, where, *weights in schemes:
        out = logits(scheme, where or (lambda n: True), *weights)
        row = {"scheme": name, "argmax_agreement": float((out.argmax(-1) == ref_argmax).mean()),
               "perplexity_ratio": perplexity(out, np.array(ids)) / ref_ppl}
        table.print_row(row)
        results.append(row)
    harness.write_outputs({"settings": harness.settings(args, tokens=len(ids), file=str(path)), "results": results},
                          args.out)


if __name__ == "__main__":
    main()
