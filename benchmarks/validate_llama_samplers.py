"""Checks kvgen's DRY, XTC, top-n-sigma and mirostat against llama.cpp's own samplers.

llama-cpp-python's low-level API applies one llama.cpp sampler (llama_sampler_init_dry /
_xtc / _top_n_sigma / _mirostat / _mirostat_v2) to a llama_token_data_array of the same
logits, after accepting the same history; kvgen processes those logits with the same history
in a Generator (Generator.last_logits). Both use SmolLM2's vocabulary (the GGUF file of
kvgen.default_model_path(), loaded by llama.cpp with vocab_only), so DRY's string sequence
breakers meet real token texts. Prints one row per case: what each engine keeps or how far
the penalized logits are apart. Not run in CI (llama-cpp-python takes minutes to build).

Run it where llama-cpp-python is installed (benchmarks/requirements-peers.txt); llama.cpp is
reached through engines/llama_cpp_engine.py:
    python benchmarks/validate_llama_samplers.py [--quick]
"""

from __future__ import annotations

import argparse
import ctypes
import sys

import numpy as np

import kvgen
from engines import llama_cpp_engine
from engines.llama_cpp_engine import Vocab, apply_sampler
from kvgen import GenerationConfig, Generator

REPETITIVE = [
    "The cat sat on the mat. The cat sat on the mat. The cat sat on the mat. The cat sat on",
    'Q: "what is it?" A: a cat.\nQ: "what is it?" A: a cat.\nQ: "what is it?" A:',
    "one two three four one two three four one two three four one two",
]


def kvgen_apply(config: GenerationConfig, logits: np.ndarray, history: list[int], texts) -> dict[int, float]:
    """The candidates kvgen leaves (id -> processed logit) after the same history."""
    g = Generator(config, token_strings=texts)
    g.append_tokens([history])
    g.step(logits[None])
    row = g.last_logits[0]
    kept = np.flatnonzero(np.isfinite(row))
    return dict(zip(kept.tolist(), row[kept].tolist()))


def compare(name: str, params: str, ours: dict, theirs: dict, values: bool, logits: np.ndarray) -> bool:
    """Prints a row; values: compare the logits too, else only the kept sets. `changed`: the
    kept tokens whose logit kvgen changed (DRY's penalized tokens)."""
    same_set = set(ours) == set(theirs)
    diff = max((abs(ours[t] - theirs[t]) for t in ours if t in theirs), default=0.0) if values else 0.0
    agree = same_set and diff <= 1e-4 * max(1.0, max((abs(v) for v in theirs.values()), default=1.0))
    shown = f"{diff:.2e}" if values else "-"
    changed = sum(1 for t, v in ours.items() if v != logits[t])
    verdict = "yes" if agree else "NO"
    print(f"{name:<12} {params:<44} {len(ours):>8} {len(theirs):>8} {changed:>8} {shown:>10}  {verdict}")
    return agree


def dry_cases(quick: bool, vocab: Vocab, rng):
    texts = REPETITIVE[:2] if quick else REPETITIVE
    for text in texts:
        history = vocab.tokenize(text)
        for mult, base, allowed, last_n in [(0.8, 1.75, 2, 64), (1.0, 2.0, 3, 32), (0.5, 1.5, 1, len(history))]:
            logits = rng.normal(size=vocab.size).astype(np.float32)
            yield (f"{text[:18]!r} x{mult} b{base} a{allowed} n{last_n}", logits, history,
                   dict(dry_multiplier=mult, dry_base=base, dry_allowed_length=allowed, dry_penalty_last_n=last_n))
    # random histories over a few tokens (some of them breakers) repeat a lot
    plain, breaking = vocab.tokenize(" cat dog mat sat on the"), vocab.tokenize(" cat dog: mat\n sat \"on\" the*")
    for case in range(1 if quick else 4):
        alphabet = breaking if case % 2 else plain
        history = [int(t) for t in rng.choice(alphabet, size=int(rng.integers(40, 300)))]
        logits = rng.normal(size=vocab.size).astype(np.float32)
        allowed, last_n = [(2, 64), (1, 200), (3, 500), (0, 32)][case]
        yield (f"random {len(history)} tokens a{allowed} n{last_n}", logits, history,
               dict(dry_multiplier=0.8, dry_base=1.75, dry_allowed_length=allowed, dry_penalty_last_n=last_n))


def run(quick: bool) -> int:
    llama_cpp = llama_cpp_engine.import_peer("the comparison with llama.cpp's samplers")
    if llama_cpp is None:
        return 2
    llama_cpp.llama_backend_init()
    vocab = Vocab(llama_cpp, str(kvgen.default_model_path()))
    rng = np.random.default_rng(0)
    breakers = ["\n", ":", '"', "*"]
    c_breakers = (ctypes.c_char_p * len(breakers))(*[b.encode() for b in breakers])
    print(f"llama-cpp-python {llama_cpp.__version__}, kvgen {kvgen.__version__}, vocabulary {vocab.size} tokens")
    print(f"{'sampler':<12} {'case':<44} {'kvgen':>8} {'llama':>8} {'changed':>8} {'max |d|':>10}  agree")
    results = []

    for params, logits, history, fields in dry_cases(quick, vocab, rng):
        sampler = llama_cpp.llama_sampler_init_dry(vocab.vocab, fields["dry_multiplier"], fields["dry_base"],
                                                   fields["dry_allowed_length"], fields["dry_penalty_last_n"],
                                                   c_breakers, len(breakers))
        theirs = apply_sampler(llama_cpp, sampler, logits, history)
        ours = kvgen_apply(GenerationConfig(max_new_tokens=1, **fields), logits, history, vocab.texts)
        results.append(compare("dry", params, ours, theirs, values=True, logits=logits))

    sampling = dict(do_sample=True, top_k=0, max_new_tokens=1, seed=0)
    for n in ([1.0] if quick else [0.5, 1.0, 2.0, 3.0]):
        logits = (rng.normal(size=vocab.size) * 2).astype(np.float32)
        theirs = apply_sampler(llama_cpp, llama_cpp.llama_sampler_init_top_n_sigma(n), logits, [])
        ours = kvgen_apply(GenerationConfig(top_n_sigma=n, **sampling), logits, [0], None)
        results.append(compare("top-n-sigma", f"n={n}", ours, theirs, values=True, logits=logits))

    for threshold in ([0.1] if quick else [0.05, 0.1, 0.2, 0.3]):
        # a peaked distribution, so that several tokens pass the threshold
        logits = (rng.normal(size=vocab.size) * 1.5).astype(np.float32)
        logits[rng.choice(vocab.size, 6, replace=False)] = 14.0 + rng.normal(size=6).astype(np.float32) * 0.3
        theirs = apply_sampler(llama_cpp, llama_cpp.llama_sampler_init_xtc(1.0, threshold, 1, 0), logits, [])
        ours = kvgen_apply(GenerationConfig(xtc_probability=1.0, xtc_threshold=threshold, **sampling), logits, [0],
                           None)
        results.append(compare("xtc", f"p=1 threshold={threshold}", ours, theirs, values=True, logits=logits))

    for version in (1, 2):
        for tau in ([3.0] if quick else [1.0, 3.0, 5.0, 8.0]):
            logits = (rng.normal(size=vocab.size) * 3).astype(np.float32)
            if version == 1:
                sampler = llama_cpp.llama_sampler_init_mirostat(vocab.size, 0, tau, 0.1, 100)
            else:
                sampler = llama_cpp.llama_sampler_init_mirostat_v2(0, tau, 0.1)
            theirs = apply_sampler(llama_cpp, sampler, logits, [])
            config = GenerationConfig(mirostat=version, mirostat_tau=tau, mirostat_eta=0.1, **sampling)
            ours = kvgen_apply(config, logits, [0], None)
            # llama.cpp's mirostat leaves softmax-sorted candidates: compare the kept sets
            results.append(compare(f"mirostat v{version}", f"tau={tau} (mu = {2 * tau})", ours, theirs,
                                   values=False, logits=logits))

    print(f"{sum(results)}/{len(results)} cases agree")
    vocab.free()
    return 0 if all(results) else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one case per sampler (a smoke run)")
    sys.exit(run(parser.parse_args().quick))


if __name__ == "__main__":
    main()
