"""Structured output: constrained decode speed on SmolLM2 against unconstrained kvgen and llama-cpp-python.

What is measured
----------------
SmolLM2-135M-Instruct (Q4_1 GGUF, kvgen.default_model_path()), the same chat prompt token ids
for every engine, greedy decoding, one JSON schema (SCHEMA below: nested object, array,
enums, bounded integers and numbers), ``--threads`` threads for every engine (default 1: on
a shared 2-core machine llama.cpp's 2-thread decode, whose threads wait for each other at
every barrier, collapses to a few tokens/s whenever another process takes a core; pin with
``taskset -c 0,1``).

* ``kvgen+schema``: ``Generator(model, GenerationConfig(json_schema=SCHEMA))``; llguidance
  computes each next-token mask in a worker thread while the forward pass runs.
* ``kvgen``: the same model without a constraint, forced (min_new_tokens) to generate as
  many tokens as the constrained output has, so both decode the same number of steps.
* ``llama.cpp+schema``: llama-cpp-python's low-level loop (``eval`` / ``sample``, as
  bench_decode.py; ``engines/llama_cpp_engine.py``) with a C sampler chain: the grammar of
  ``LlamaGrammar.from_json_schema(SCHEMA)`` (``llama_sampler_init_grammar``), then greedy; until EOS.
* ``llama.cpp``: the same chain without the grammar, EOS banned by a logit bias, as many tokens.

Decode tokens/s = decode steps / decode seconds: kvgen from ``last_stats`` (the steps after
the first token: forward, mask, sampling), llama.cpp from the wall time of the loop after its
first token (eval + sample per step). llama-cpp-python runs in its own interpreter (``--llama-python``,
default this one) as a worker process driven over a pipe, so that the engines still
interleave (A B C D A B C D ...).

Also: the per-token mask time (llguidance filling one row's mask, replayed along the
constrained output; consuming the token is timed apart), and the schema compile time
(JSON schema -> llguidance grammar -> matcher against the vocabulary; the tokenizer's
conversion, once per tokenizer, is printed apart) against llama.cpp's GBNF conversion.

Targets: constrained decode >= 0.9x unconstrained kvgen; >= 2x llama-cpp-python's
constrained decode; a schema compiled in < 50 ms.
"""

from __future__ import annotations

import statistics
import sys
import time

import harness
import kvgen
from engines import llama_cpp_engine
from kvgen.generation import constraints as _constraints
from kvgen.generation.constraints import Constraint

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 16},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 16},
                                                      "country": {"enum": ["FR", "DE", "US", "JP"]}},
                    "required": ["city", "country"]},
        "hobbies": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3},
        "height_m": {"type": "number", "minimum": 0.5, "maximum": 2.5},
    },
    "required": ["name", "age", "address", "hobbies", "height_m"],
}
QUESTION = "Invent a person and describe them as JSON with name, age, address, hobbies and height_m."
MAX_NEW_TOKENS = 160


def kvgen_job(generator, prompt: list[int]):
    def run() -> dict:
        result = generator.generate([prompt])
        stats = generator.last_stats
        return {"tokens": result.sequences[0][0].tolist(), "decode_s": stats.decode_seconds,
                "steps": stats.decode_steps}
    return run


def per_token_mask_times(constraint: Constraint, tokens: list[int]) -> dict:
    """llguidance's mask fill for one row at every position of `tokens`, and the consume."""
    rows = constraint.rows(1)
    fill, consume = [], []
    for t in tokens:
        start = time.perf_counter()
        rows.fill()
        fill.append(time.perf_counter() - start)
        start = time.perf_counter()
        rows.advance([t], [True], None)
        consume.append(time.perf_counter() - start)
    return {"fill": harness.summarize(fill), "consume": harness.summarize(consume), "positions": len(tokens)}


def compile_times(config: kvgen.GenerationConfig, model, rounds: int) -> dict:
    _constraints._TOKENIZER_CACHE.clear()
    start = time.perf_counter()
    Constraint(config, model)  # converts the tokenizer (once per tokenizer and EOS set), then compiles
    first = time.perf_counter() - start
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        Constraint(config, model)
        times.append(time.perf_counter() - start)
    return {"first_with_tokenizer_s": first, "compile": harness.summarize(times)}


def decode_rates(calls: list) -> dict:
    """Per round: seconds per decode step, as a time stat (tokens/s via harness.rate)."""
    return harness.summarize([c.result["decode_s"] / c.result["steps"] for c in calls])


def main() -> None:
    parser = harness.cli(__doc__, harness.RESULTS / "structured.json", threads=1,
                         threads_help="threads of every engine", quick_help="5 rounds, fewer compile rounds")
    parser.add_argument("--llama-python", default=sys.executable,
                        help="interpreter with llama-cpp-python installed (default: this one)")
    parser.add_argument("--pause-s", type=float, default=0.2, help="pause before each timed call (0.2)")
    args = harness.parse_args(parser)
    compile_rounds = 10 if args.quick else 50

    kvgen.set_num_threads(args.threads)
    model = kvgen.load_default()
    prompt = model.encode(model.apply_chat_template([{"role": "user", "content": QUESTION}],
                                                    add_generation_prompt=True), add_special_tokens=False)
    # prefix_cache=False: every timed call prefills its whole prompt, as before the Generator kept a cache
    constrained = kvgen.Generator(model, kvgen.GenerationConfig(json_schema=SCHEMA, max_new_tokens=MAX_NEW_TOKENS),
                                  prefix_cache=False)
    first = kvgen_job(constrained, prompt)()
    n = len(first["tokens"])
    free = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=n, min_new_tokens=n), prefix_cache=False)
    jobs = {"kvgen+schema": kvgen_job(constrained, prompt), "kvgen": kvgen_job(free, prompt)}

    versions = {"llguidance": __import__("llguidance").__version__}
    worker = None
    if llama_cpp_engine.version_in(args.llama_python):
        worker = llama_cpp_engine.Worker(args.llama_python, model.path, prompt, args.threads, SCHEMA, compile_rounds)
        versions["llama_cpp_python"] = worker.ready["version"]
        jobs["llama.cpp+schema"] = lambda: worker.generate(True, MAX_NEW_TOKENS)
        jobs["llama.cpp"] = lambda: worker.generate(False, n)

    env = harness.environment(versions, {name: args.threads for name in jobs})
    harness.print_environment(env)
    print(f"prompt: {len(prompt)} tokens (chat template); kvgen's constrained output: {n} tokens: "
          f"{model.decode(first['tokens'])}")

    outputs, samples = harness.interleave_calls(jobs, args.rounds, args.pause_s)
    if worker:
        text = model.decode(outputs["llama.cpp+schema"]["tokens"])
        print(f"llama.cpp's constrained output: {len(outputs['llama.cpp+schema']['tokens'])} tokens: {text}")
    stats = {name: decode_rates(calls) for name, calls in samples.items()}

    config = kvgen.GenerationConfig(json_schema=SCHEMA, eos_token_id=model.eos_token_id)
    masks = per_token_mask_times(Constraint(config, model), first["tokens"])
    compiled = compile_times(config, model, compile_rounds)

    print(f"\ndecode tokens/s, median [min-max] over {args.rounds} interleaved rounds, {args.threads} threads")
    table = harness.Table([harness.Column("engine", 18, lambda r: r[0], left=True),
                           harness.Column("tokens/s", 24, lambda r: harness.rate(r[1])),
                           harness.Column("ms/token", 22, lambda r: harness.ms(r[1]))])
    table.print_header()
    for name, s in stats.items():
        table.print_row((name, s))
    fill, consume = masks["fill"], masks["consume"]
    print(f"\nper-token mask (llguidance, one row, {masks['positions']} positions): fill {harness.us(fill)} us, "
          f"consume {harness.us(consume)} us; overlapped with the forward pass "
          f"({stats['kvgen']['median_us'] / 1e3:.1f} ms/token unconstrained)")
    c = compiled["compile"]
    print(f"schema compile (kvgen/llguidance, tokenizer already converted): {harness.ms(c)} ms over "
          f"{compile_rounds} rounds; first call with the tokenizer's conversion: "
          f"{compiled['first_with_tokenizer_s'] * 1e3:.0f} ms (once per tokenizer)")
    report = {"environment": env, "schema": SCHEMA, "prompt_tokens": len(prompt), "constrained_tokens": n,
              "decode": stats, "mask": masks, "compile": compiled, "targets": []}
    if worker:
        llama_compile = harness.summarize(worker.ready["compile_s"])
        report["llama_cpp_compile"] = llama_compile
        print(f"schema compile (llama.cpp: LlamaGrammar.from_json_schema + llama_sampler_init_grammar): "
              f"{harness.ms(llama_compile)} ms")
        worker.close()

    print()
    ratio = stats["kvgen"]["median_us"] / stats["kvgen+schema"]["median_us"]
    report["targets"].append(harness.target("constrained decode >= 0.9x unconstrained kvgen", ratio, ratio >= 0.9,
                                            f"{ratio:.2f}x"))
    if worker:
        ratio = stats["llama.cpp+schema"]["median_us"] / stats["kvgen+schema"]["median_us"]
        report["targets"].append(harness.target("constrained decode >= 2x llama-cpp-python's constrained decode",
                                                ratio, ratio >= 2.0, f"{ratio:.2f}x"))
        free_ratio = stats["llama.cpp"]["median_us"] / stats["kvgen"]["median_us"]
        print(f"(for context: unconstrained kvgen / llama.cpp = {free_ratio:.2f}x; llama.cpp's own grammar cost: "
              f"{stats['llama.cpp+schema']['median_us'] / stats['llama.cpp']['median_us']:.2f}x its free decode)")
    ms_compile = c["median_us"] / 1e3
    report["targets"].append(harness.target("schema compiled in < 50 ms", ms_compile, ms_compile < 50,
                                            f"{ms_compile:.1f} ms"))
    report["median_mask_fill_us"] = statistics.median(fill["rounds_us"])
    harness.write_outputs(report, args.out)


if __name__ == "__main__":
    sys.exit(main())
