"""bench_decode.py --model families: the 2026 families' shapes, kvgen against llama-cpp-python.

Random-weight models shaped like the 2026 families, scaled down, each made once under
``~/.cache/kvgen-bench/`` (its recipe in a JSON stamp beside the file): transformers makes the
model (``torch.manual_seed(0)``, bfloat16), llama.cpp's own converter
(``tests/support/llama_cpp_convert.py``) writes it as F16 and llama.cpp's quantizer
(``llama_model_quantize``) quantizes it. Both engines then read the same GGUF file.

* ``gpt_oss``: GPT-OSS-20B-shaped MoE: hidden 1024, 8 layers alternating sliding (window 128) and
  full attention with sinks, 16 heads / 4 KV heads of 64, 32 experts of width 512, top 4,
  SmolLM2's vocabulary; experts in MXFP4 (``MXFP4_MOE``, the type llama.cpp ships GPT-OSS in).
* ``gemma4``: Gemma 4 E2B-shaped: hidden 1536, 8 layers (3 sliding, window 512, then 1 full,
  twice), 8 heads / 1 KV head, head_dim 256 (512 on full layers), per-layer embeddings of 256,
  the last 4 layers reading layers 2 and 3's keys and values with a double-wide MLP (3072 / 6144; as
  in E2B, the last layer that stores its own is a full one: llama.cpp asserts it),
  soft-capped logits; the tests' Gemma tokenizer (500 tokens, so the vocabulary is small); Q8_0.
* ``qwen3_5``: Qwen3.5-shaped hybrid: hidden 1024, 8 layers (3 Gated DeltaNet, then 1 gated
  attention, twice), DeltaNet 8 key / 16 value heads of 128, attention 8 heads / 2 KV heads of
  256 (partial rotary 0.25), feed-forward 3072, SmolLM2's vocabulary; Q4_K_M.
* ``qwen3_5_2b``: Qwen3.5-2B's shape: hidden 2048, 24 layers (3 Gated DeltaNet, then 1 gated
  attention, six times), DeltaNet 16 key / 16 value heads of 128, attention 8 heads / 2 KV heads of
  256, feed-forward 6144, a 248,320-token vocabulary (SmolLM2's tokenizer, padded by the
  converter), tied embeddings, and a random multi-token-prediction head (converted without
  ``--no-mtp``); Q4_K_M. Not in the default ``--families`` (about 10 minutes to make); what
  ``bench_speculative.py --mtp`` drafts with.
* ``lfm2``: the LFM2-350M-shaped hybrid of ``decode/lfm2.py`` (its directory, with SmolLM2's
  tokenizer: the converter pads the vocabulary to 65,536); Q8_0.
* ``granite4``: Granite-4.0-H-Micro's widths: hidden 2048, 12 of its 40 layers (5 Mamba-2, then 1
  attention, twice), Mamba-2 64 heads of 64 with a state of 128 in one group of B and C, a dense
  MLP of 8192, attention 16 heads / 4 KV heads without rotary, SmolLM2's vocabulary; Q4_K_M. Not in
  the default ``--families``.
* ``qwen3_attention``: the ``qwen3_5`` shape with every layer attending (a Qwen3: the same widths,
  8 heads / 2 KV heads of 256, full rotary, no output gate); Q4_K_M. What the hybrid's decode
  at position 4,000 is held against.

Per file, at each thread count (``--thread-counts``, default 1,2; ``--threads`` with ``--quick``),
both engines at that count, interleaved (``decode/workloads.split_workload``): prefill of a
512-token prompt (time to first token; 128 with ``--quick``) and greedy decode of 64 new tokens
after a 64-token prompt (16 with ``--quick``), EOS kept from ending the run; the tables and
ratios of the GGUF files part (``decode/gguf.py``), a greedy sanity check of 16 tokens against
llama.cpp's (random weights: the logits nearly tie, so the tokens may part early; a difference is
reported, not raised) and PASS/MISS lines for the issues' targets (decode >= 1.3x llama.cpp,
prefill >= 1.5x). The memory bandwidth is read around each thread count's timings and every
engine's greedy decode is printed as a fraction of it. On ``qwen3_5``, ``qwen3_5_2b``, ``lfm2``,
``granite4`` and ``qwen3_attention`` (``LONG_FAMILIES``; not with ``--quick``), greedy decode after a 4,000-token
prompt as well, and each engine's decode step there over its step after 64 tokens (issue 35: a
hybrid's step must grow far less than an all-attention model's). An engine that refuses a file is
reported and the others go on.
``--families`` chooses (comma-separated). Writes ``benchmarks/results/bench_decode_families.json``
(``--out-families``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, NamedTuple

import harness
import kvgen
from decode import gguf, lfm2, models
from decode.workloads import split_workload, workload_table
from engines import hf_engine, llama_cpp_engine
from engines.kvgen_engine import KvgenEngine
from engines.llama_cpp_engine import LlamaCppEngine

SUPPORT = Path(__file__).resolve().parents[2] / "tests" / "support"
FULL = {"prefill": 512, "decode": (64, 64), "sanity_tokens": 16}
QUICK = {"prefill": 128, "decode": (64, 16), "sanity_tokens": 8}
DECODE_TARGET, PREFILL_TARGET = 1.3, 1.5  # kvgen / llama.cpp (issues 35 and 36)
DEFAULT_OUT = harness.RESULTS / "bench_decode_families.json"

GPT_OSS = dict(vocab_size=49152, hidden_size=1024, intermediate_size=512, num_hidden_layers=8,
               num_attention_heads=16, num_key_value_heads=4, head_dim=64, num_local_experts=32,
               num_experts_per_tok=4, sliding_window=128, layer_types=["sliding_attention", "full_attention"] * 4,
               max_position_embeddings=4096, tie_word_embeddings=False)
GEMMA4 = dict(hidden_size=1536, intermediate_size=3072, num_hidden_layers=8, num_attention_heads=8,
              num_key_value_heads=1, head_dim=256, global_head_dim=512, sliding_window=512,
              layer_types=(["sliding_attention"] * 3 + ["full_attention"]) * 2,
              num_kv_shared_layers=4, use_double_wide_mlp=True, hidden_size_per_layer_input=256,
              final_logit_softcapping=30.0, tie_word_embeddings=True, max_position_embeddings=4096)
QWEN3_5 = dict(vocab_size=49152, hidden_size=1024, intermediate_size=3072, num_hidden_layers=8,
               num_attention_heads=8, num_key_value_heads=2, head_dim=256, linear_conv_kernel_dim=4,
               linear_key_head_dim=128, linear_value_head_dim=128, linear_num_key_heads=8, linear_num_value_heads=16,
               layer_types=(["linear_attention"] * 3 + ["full_attention"]) * 2, max_position_embeddings=4096,
               rope_parameters=dict(rope_type="default", rope_theta=10000000.0, partial_rotary_factor=0.25,
                                    mrope_section=[11, 11, 10], mrope_interleaved=True),
               tie_word_embeddings=True)
# Qwen3.5-2B's shape (24 layers: 18 Gated DeltaNet, 6 gated attention; its 248,320-token vocabulary,
# SmolLM2's tokenizer padded to it by the converter), with a random multi-token-prediction head
QWEN3_5_2B = dict(vocab_size=248320, hidden_size=2048, intermediate_size=6144, num_hidden_layers=24,
                  num_attention_heads=8, num_key_value_heads=2, head_dim=256, linear_conv_kernel_dim=4,
                  linear_key_head_dim=128, linear_value_head_dim=128, linear_num_key_heads=16,
                  linear_num_value_heads=16, layer_types=(["linear_attention"] * 3 + ["full_attention"]) * 6,
                  max_position_embeddings=8192,
                  rope_parameters=dict(rope_type="default", rope_theta=10000000.0, partial_rotary_factor=0.25,
                                       mrope_section=[11, 11, 10], mrope_interleaved=True),
                  tie_word_embeddings=True)
# the Qwen3.5 shape with every layer attending (Qwen3: the same widths, heads and head_dim; no
# output gate, full rotary): what the hybrid's decode at position LONG_POSITION is compared with
QWEN3_ATTENTION = dict(vocab_size=49152, hidden_size=1024, intermediate_size=3072, num_hidden_layers=8,
                       num_attention_heads=8, num_key_value_heads=2, head_dim=256, max_position_embeddings=4096,
                       rope_theta=10000000.0, tie_word_embeddings=True)
# Granite-4.0-H-Micro's widths (hidden 2048, Mamba-2 64 heads of 64 with a state of 128 in one group,
# dense MLP 8192, 16 heads / 4 KV heads, no rotary), 12 of its 40 layers, 2 of them attention
GRANITE4 = dict(vocab_size=49152, hidden_size=2048, intermediate_size=8192, shared_intermediate_size=8192,
                num_hidden_layers=12, num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=8192,
                layer_types=(["mamba"] * 5 + ["attention"]) * 2, mamba_n_heads=64, mamba_n_groups=1,
                mamba_d_state=128, mamba_d_head=64, mamba_d_conv=4, mamba_expand=2, num_local_experts=0,
                num_experts_per_tok=0, position_embedding_type=None, tie_word_embeddings=True)
SPECIAL_IDS = dict(pad_token_id=None, bos_token_id=1, eos_token_id=2)  # SmolLM2's
LONG_POSITION = 4000  # decode after a prompt this long as well (issue 35), on the families of LONG_FAMILIES


def _support():
    """tests/support on sys.path: the converter's driver and the tests' tokenizers."""
    if str(SUPPORT) not in sys.path:
        sys.path.insert(0, str(SUPPORT))


def random_directory(config_class: str, model_class: str, settings: dict) -> Callable[[Path, Path], None]:
    """A Family.make: transformers' ``model_class`` of ``config_class(**settings)`` (SmolLM2's
    special ids) with random weights (``torch.manual_seed(models.SEED)``), saved in bfloat16
    with SmolLM2's tokenizer."""
    def make(directory: Path, q4_1: Path) -> None:
        import torch
        import transformers
        from llama_cpp_convert import save_smollm2_tokenizer

        torch.manual_seed(models.SEED)
        config = getattr(transformers, config_class)(**settings, **SPECIAL_IDS)
        getattr(transformers, model_class)(config).to(torch.bfloat16).save_pretrained(directory)
        save_smollm2_tokenizer(directory, q4_1)
    return make


def qwen3_5_mtp_directory(directory: Path, q4_1: Path) -> None:
    """The Qwen3.5-2B shape (``QWEN3_5_2B``) with random weights made in bfloat16, and a random
    multi-token-prediction head (tests/support/mtp_reference.py) in its checkpoint, as the
    published checkpoints carry one."""
    import torch
    import transformers
    from llama_cpp_convert import save_smollm2_tokenizer
    from mtp_reference import MtpReference

    torch.manual_seed(models.SEED)
    torch.set_default_dtype(torch.bfloat16)  # 2.3 B parameters: made in 16 bits
    try:
        model = transformers.Qwen3_5ForCausalLM(transformers.Qwen3_5TextConfig(**QWEN3_5_2B, **SPECIAL_IDS))
        head = MtpReference(model, seed=models.SEED)
    finally:
        torch.set_default_dtype(torch.float32)
    model.save_pretrained(directory)
    del model
    head.add_to(directory)
    save_smollm2_tokenizer(directory, q4_1)


def gemma4_directory(directory: Path, q4_1: Path) -> None:
    import torch
    import transformers
    from family_models import save_gemma_tokenizer
    from hf_models import TEXT_CORPUS

    # llama.cpp's Gemma 4 converter appends 3 tokens (runs of 2-4 spaces) to the tokenizer's, and
    # llama.cpp checks the embedding's rows against that count
    vocab = len(save_gemma_tokenizer(directory, TEXT_CORPUS)) + 3
    torch.manual_seed(models.SEED)
    config = transformers.Gemma4TextConfig(**GEMMA4, vocab_size=vocab, vocab_size_per_layer_input=vocab,
                                           pad_token_id=0, bos_token_id=2, eos_token_id=1)
    transformers.Gemma4ForCausalLM(config).to(torch.bfloat16).save_pretrained(directory)


def granite4_directory(directory: Path, q4_1: Path) -> None:
    """``GRANITE4`` made by random_directory; config.json's layer types written back as ``mamba`` /
    ``attention`` (transformers saves them as ``linear_attention`` / ``full_attention``, which
    llama.cpp's converter does not read)."""
    random_directory("GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM", GRANITE4)(directory, q4_1)
    config = json.loads((directory / "config.json").read_text())
    config["layer_types"] = GRANITE4["layer_types"]
    (directory / "config.json").write_text(json.dumps(config, indent=2))


def lfm2_directory(directory: Path, q4_1: Path) -> None:
    from llama_cpp_convert import save_smollm2_tokenizer

    shutil.copytree(lfm2.model_dir(True), directory, dirs_exist_ok=True)
    save_smollm2_tokenizer(directory, q4_1)


class Family(NamedTuple):
    label: str
    make: Callable[[Path, Path], None]  # (directory, SmolLM2's GGUF) -> a transformers directory with a tokenizer
    ftype: str  # llama.cpp's quantization, LLAMA_FTYPE_MOSTLY_*
    recipe: dict
    options: tuple = ()  # the converter's


FAMILIES = {
    "gpt_oss": Family("GPT-OSS-20B-shaped MoE (32 experts, top 4), MXFP4 experts",
                      random_directory("GptOssConfig", "GptOssForCausalLM", GPT_OSS), "MXFP4_MOE", GPT_OSS),
    "gemma4": Family("Gemma 4 E2B-shaped (per-layer embeddings, KV-shared layers), Q8_0", gemma4_directory, "Q8_0",
                     GEMMA4),
    "qwen3_5": Family("Qwen3.5-shaped hybrid (Gated DeltaNet + attention), Q4_K_M",
                      random_directory("Qwen3_5TextConfig", "Qwen3_5ForCausalLM", QWEN3_5), "Q4_K_M", QWEN3_5,
                      ("--no-mtp",)),
    "qwen3_5_2b": Family("Qwen3.5-2B-shaped hybrid with a multi-token-prediction head, Q4_K_M",
                         qwen3_5_mtp_directory, "Q4_K_M", {**QWEN3_5_2B, "mtp_num_hidden_layers": 1}),
    "lfm2": Family("LFM2-350M-shaped hybrid (short convolutions + attention), Q8_0", lfm2_directory, "Q8_0",
                   lfm2.RECIPE),
    "granite4": Family("Granite-4.0-H-Micro-shaped hybrid (Mamba-2 + attention), Q4_K_M", granite4_directory,
                       "Q4_K_M", GRANITE4),
    "qwen3_attention": Family("the Qwen3.5 shape with every layer attending (Qwen3), Q4_K_M",
                              random_directory("Qwen3Config", "Qwen3ForCausalLM", QWEN3_ATTENTION), "Q4_K_M",
                              QWEN3_ATTENTION),
}
LONG_FAMILIES = {"qwen3_5", "qwen3_5_2b", "lfm2", "qwen3_attention", "granite4"}
ON_REQUEST = {"qwen3_5_2b", "granite4"}  # made and run only when --families names them


def prepare(name: str, q4_1: Path, threads: int) -> Path:
    """The family's GGUF file, made once (transformers, llama.cpp's converter to F16, its quantizer)."""
    _support()
    from llama_cpp_convert import convert, converter

    family = FAMILIES[name]
    out = models.CACHE_DIR / f"random-{name}.{family.ftype}.gguf"
    recipe = {"shape": family.recipe, "seed": models.SEED, "dtype": "bfloat16", "converter": "llama.cpp 0.3.36 f16",
              "type": family.ftype, "version": 4}
    if models.file_ok(out, recipe):
        return out
    models.CACHE_DIR.mkdir(parents=True, exist_ok=True)
    print(f"making the random {name} (transformers, llama.cpp's converter to F16, its quantizer to {family.ftype}: "
          f"{out}) ...", flush=True)
    with tempfile.TemporaryDirectory(dir=models.CACHE_DIR) as tmp:
        directory, f16 = Path(tmp) / "hf", Path(tmp) / "f16.gguf"
        family.make(directory, q4_1)
        convert(converter(), [(directory, f16, "f16")], family.options)
        llama_cpp_engine.quantize(f16, out, family.ftype, threads)
    models.sidecar(out).write_text(json.dumps(recipe))
    return out


def refused(engine: str, name: str, e: Exception) -> str:
    line = f"{engine} refused the {name} file: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    print(f"FINDING: {line}", flush=True)
    return line


def run_file(name: str, label: str, path: Path, work: dict, thread_counts: list[int], rounds: int, llama_cpp,
             goals: dict[str, float], bandwidth_goal: float | None = None, long_position: int | None = None) -> dict:
    """Both engines on one GGUF file at every thread count: sanity, prefill, greedy decode; a
    PASS/MISS line per workload kind of ``goals`` ({"ttft" or "decode_only": kvgen / llama.cpp
    at least}). Per thread count, the memory bandwidth read before and after the timings
    (``harness.read_bandwidth``) and each engine's greedy decode as a fraction of it (tokens/s x
    weight bytes / bandwidth), with a PASS/MISS line for kvgen when ``bandwidth_goal`` is given.
    With ``long_position``, greedy decode after a prompt that long too, and each engine's decode
    step there against its step after the short prompt (``long_growth``). Also used by
    ``decode/types.py``."""
    out = {"family": name, "label": label, "path": str(path), "findings": [], "configs": []}
    print(f"\n==== {label}: {path} ({path.stat().st_size / 1e6:.0f} MB) ====", flush=True)
    engines = {}
    context = {"n_ctx": long_position + work["decode"][1] + 16} if long_position else {}
    if llama_cpp:  # a file llama.cpp asserts on would end this process: a short generation in another first
        probe = subprocess.run(llama_cpp_engine.rss_command(), input=llama_cpp_engine.rss_job(path, [1, 2, 3], 2, 1),
                               capture_output=True, text=True)
        if probe.returncode:
            last = [line for line in probe.stderr.splitlines() if "error" in line.lower() or "assert" in line.lower()]
            out["findings"].append(refused("llama.cpp", name, RuntimeError(
                f"exit {probe.returncode}: {(last or probe.stderr.splitlines() or [''])[-1].strip()}")))
            llama_cpp = None
    for engine, load in (("kvgen", lambda: KvgenEngine(path)),
                         ("llama.cpp", lambda: LlamaCppEngine(path, max(thread_counts), **context) if llama_cpp
                          else None)):
        try:
            e = load()
        except Exception as exc:  # noqa: BLE001 - a refusal is a finding: reported, the others go on
            out["findings"].append(refused(engine, name, exc))
            continue
        if e is not None:
            engines[engine] = e
    if "kvgen" not in engines:
        return out
    model = engines["kvgen"].model
    print(f"model: {model!r}")
    out["weights"] = gguf.weight_bytes(engines, path)
    ids = models.text_prompt(model, max(work["prefill"], work["decode"][0], long_position or 0))
    d_prompt, d_new = work["decode"]
    workloads = [(ids[:work["prefill"]], 1), (ids[:d_prompt], d_new)]
    if long_position:
        workloads.append((ids[:long_position], d_new))
    for threads in thread_counts:
        gguf.set_threads(engines, threads)
        print(f"\n-- {name}, {threads} thread(s) for every engine: {', '.join(engines)} --", flush=True)
        config = {"threads": threads, "results": [], "targets": []}
        if "llama.cpp" in engines:
            config["sanity"] = gguf.sanity(engines, ids[:d_prompt], work["sanity_tokens"], trained=False)
        bw_before = harness.read_bandwidth(threads)
        table = workload_table(list(engines), {n: t for n, t in gguf.RATIO_TITLES.items() if n in engines})
        table.print_header()
        for prompt, new_tokens in workloads:
            try:
                r = split_workload("prefill" if new_tokens == 1 else "decode", engines, prompt, new_tokens, None,
                                   rounds)
            except Exception as exc:  # noqa: BLE001 - an engine failing a workload: a finding
                out["findings"].append(refused("an engine", name, exc))
                continue
            config["results"].append(r)
            gguf.print_rows(table, r, gguf.rows)
            kind = "ttft" if new_tokens == 1 else "decode_only"
            if "llama.cpp" in engines and kind in goals and len(prompt) != long_position:
                goal, x = goals[kind], r["ratios"][kind]["llama.cpp/kvgen"]
                what = f"prefill {len(prompt)}" if new_tokens == 1 else "greedy decode"
                config["targets"].append(harness.target(f"{name}, {threads} thread(s): kvgen {what} >= {goal:g}x "
                                                        f"llama.cpp", x, x >= goal, f"{x:.2f}x"))
        decode = [r for r in config["results"] if r["new_tokens"] > 1]
        if len(decode) == 2:
            config["long_growth"] = {n: decode[1]["decode_only"][n]["median_us"] / s["median_us"]
                                     for n, s in decode[0]["decode_only"].items()}
            print(f"decode step after {decode[1]['prompt']} tokens / after {decode[0]['prompt']}: " +
                  ", ".join(f"{n} {g:.2f}x" for n, g in config["long_growth"].items()))
        if decode:
            config["bandwidth"], fractions = harness.decode_bandwidth(bw_before, threads, decode[0]["decode_only"],
                                                                      out["weights"])
            config["bandwidth_fractions"] = fractions
            if bandwidth_goal is not None:
                f = fractions["kvgen"]["fraction"]
                config["targets"].append(harness.target(
                    f"{name}, {threads} thread(s): kvgen greedy decode reads >= {bandwidth_goal:.0%} of the memory "
                    f"bandwidth", f, f >= bandwidth_goal, f"{100 * f:.0f}%"))
        out["configs"].append(config)
    return out


def engine_speeds(r: dict) -> tuple[str, dict]:
    """A workload result's measure ("ttft" for prefill, else "decode_only") and each engine's
    median tokens/s by it."""
    kind = "ttft" if r["new_tokens"] == 1 else "decode_only"
    scale = r["prompt"] if kind == "ttft" else 1
    return kind, {n: scale * 1e6 / s["median_us"] for n, s in r[kind].items()}


def print_summary(results: list[dict]) -> None:
    """One line per file and thread count: median tokens/s of each engine and their ratio."""
    print("\nsummary (median tokens/s, kvgen / llama.cpp):")
    for f in results:
        for c in f["configs"]:
            cells = []
            for r in c["results"]:
                kind, speed = engine_speeds(r)
                cells.append(f"{r['workload']} " + " / ".join(f"{v:.1f}" for v in speed.values()) +
                             (f" = {r['ratios'][kind]['llama.cpp/kvgen']:.2f}x" if "llama.cpp" in speed else ""))
            print(f"  {f['family']}, {c['threads']} thread(s): " + "; ".join(cells))


def run_families(args: argparse.Namespace) -> None:
    """The families part: per family (--families) and thread count (--thread-counts)."""
    began = time.perf_counter()
    llama_cpp = llama_cpp_engine.import_peer()
    thread_counts = args.thread_counts or ([args.threads] if args.quick else [1, 2])
    names = args.families or [n for n in FAMILIES if n not in ON_REQUEST]
    work = dict(QUICK if args.quick else FULL)
    if args.new_tokens:
        work["decode"] = (work["decode"][0], args.new_tokens)
    q4_1 = Path(args.gguf).expanduser() if args.gguf else kvgen.default_model_path()
    print("\n==== 2026 families (random weights, llama.cpp's files): kvgen against llama.cpp ====\n", flush=True)
    versions = {**hf_engine.versions(), **(llama_cpp_engine.versions(llama_cpp) if llama_cpp else {})}
    env = harness.begin(versions, {"every engine": {"counts": ",".join(map(str, thread_counts))}},
                        {"every engine": "kvgen.set_num_threads, llama.cpp n_threads and n_threads_batch"})
    if llama_cpp:
        env["llama_cpp_system_info"] = llama_cpp_engine.system_info(llama_cpp)
        print(f"llama.cpp: n_ctx {llama_cpp_engine.N_CTX}, n_batch {llama_cpp_engine.N_BATCH}; "
              f"build: {env['llama_cpp_system_info']}")
    print(f"{args.rounds} interleaved rounds, one call per engine each; median [min-max]; kv/llama: kvgen speed / "
          f"llama.cpp speed (> 1: kvgen faster)")
    results, findings = [], []
    for name in names:
        if llama_cpp is None:
            findings.append(f"{name}: skipped (made with llama.cpp's quantizer: {llama_cpp_engine.INSTALL})")
            print(findings[-1])
            continue
        try:
            path = prepare(name, q4_1, max(thread_counts))
        except Exception as exc:  # noqa: BLE001 - a family that cannot be made: reported, the others go on
            findings.append(f"{name}: making its file failed: {type(exc).__name__}: {str(exc)[-600:]}")
            print(f"FINDING: {findings[-1]}", flush=True)
            continue
        results.append(run_file(name, FAMILIES[name].label, path, work, thread_counts, args.rounds, llama_cpp,
                                {"ttft": PREFILL_TARGET, "decode_only": DECODE_TARGET},
                                long_position=LONG_POSITION if name in LONG_FAMILIES and not args.quick else None))
        findings += [f"{name}: {f}" for f in results[-1]["findings"]]
    print_summary(results)
    for line in findings:
        print(f"finding: {line}")
    print(f"took {time.perf_counter() - began:.0f} s")
    report = {"environment": env, "settings": {"quick": args.quick, "rounds": args.rounds,
                                               "thread_counts": thread_counts, "workloads": work,
                                               "shapes": {n: FAMILIES[n].recipe for n in names},
                                               "types": {n: FAMILIES[n].ftype for n in names}},
              "families": results, "findings": findings}
    harness.write_outputs(report, args.out_families)

