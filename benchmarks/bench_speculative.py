"""Speculative decoding: prompt lookup and a draft model against plain decode and llama-cpp-python's lookup.

What is measured
----------------
SmolLM2-135M-Instruct (Q4_1 GGUF, kvgen.default_model_path()), ``--threads`` threads (default 2),
one interleaved run (A B C ... per round), ``--rounds`` rounds; EOS kept from ending a run
(min_new_tokens = max_new_tokens), so every engine generates the same number of tokens.

Workloads (the same prompt token ids for every engine):

* ``grounded``: input-grounded rewriting: a ~1,000-token passage of the public-domain text in
  tests/data (Pride and Prejudice, chapters 1-2), then "The same passage again, word for word:"
  and its first words; the model goes on copying it (with its own small edits), the case
  prompt lookup is for. Greedy, and sampling at temperature 0.7 (seeded: round i samples
  with seed i for plain and lookup alike). A sampled text may leave the passage at its first
  tokens (SmolLM2-135M at 0.7 does with seed 1), and then nothing is drafted: one fixed seed
  would report that one sample, so the seeds change from round to round.
* ``open``: open-ended text (a short story from a one-line chat request), sampling at
  temperature 0.7: drafts are rarely right, so the adaptive draft length must keep the
  speed close to plain decoding.

kvgen engines: ``plain`` (no drafts); ``lookup`` (``prompt_lookup_num_tokens=10``,
``max_matching_ngram_size=2``: transformers' and llama-cpp-python's defaults; adaptive draft
length); ``self-draft`` (``assistant_model=`` SmolLM2 itself, 5 tokens: the upper bound of a
draft model, every greedy draft is accepted). Decode tokens/s = tokens after the first /
decode seconds (``last_stats``), so the prefill is not in it.

llama-cpp-python (optional peer): ``Llama(..., draft_model=LlamaPromptLookupDecoding(
num_pred_tokens=10))`` against the same ``Llama`` without it, greedy, on the grounded prompt
(its high-level API: a logit bias on EOS would run a Python logits processor every token, so
EOS may end its runs early: tokens/s counts what it generated); their tokens/s are end-to-end
(the API times no decode apart), so the kvgen figures set beside them are end-to-end too.

Targets (kvgen against its own plain decode): prompt lookup on the grounded task >= 1.8x
greedy and >= 1.5x sampling; open-ended >= 0.95x.
"""

from __future__ import annotations

import itertools
import statistics
import time
from pathlib import Path

import harness
import kvgen

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "pride_and_prejudice_ch1-2.txt"
LOOKUP_TOKENS, NGRAM = 10, 2
ASSISTANT_TOKENS = 5


def grounded_prompt(model: kvgen.Model, tokens: int) -> list[int]:
    """About `tokens` tokens of the passage, then the request to write it again and its first words."""
    words = DATA.read_text().split()
    passage: list[str] = []
    for word in words:
        passage.append(word)
        if len(passage) % 50 == 0 and len(model.encode(" ".join(passage))) >= tokens:
            break
    text = " ".join(passage)
    return model.encode(f"{text}\n\nThe same passage again, word for word:\n\n{' '.join(passage[:8])}")


def open_prompt(model: kvgen.Model) -> list[int]:
    messages = [{"role": "user", "content": "Write a short story about a lighthouse keeper who finds a map."}]
    return model.encode(model.apply_chat_template(messages, add_generation_prompt=True), add_special_tokens=False)


def kvgen_job(generator, prompt: list[int], seeded: bool = False, **overrides):
    """A timed call; ``seeded``: the i-th call (from 1) samples with seed i (the jobs of one workload share
    each round's seed), so the figures average over samples rather than follow one sampled text."""
    calls = itertools.count(1)

    def run() -> dict:
        seed = {"seed": next(calls)} if seeded else {}
        start = time.perf_counter()
        result = generator.generate([prompt], **overrides, **seed)
        seconds = time.perf_counter() - start
        stats = generator.last_stats
        return {"tokens": [int(t) for t in result.sequences[0][0]], "decode_s": stats.decode_seconds,
                "decode_tokens": stats.decode_tokens, "total_s": seconds, "steps": stats.decode_steps,
                "drafted": stats.drafted_tokens, "accepted": stats.accepted_tokens}
    return run


def llama_job(llm, prompt: list[int], n: int):
    def run() -> dict:
        start = time.perf_counter()
        llm.reset()
        out = llm.create_completion(prompt, max_tokens=n, temperature=0.0, top_k=1)
        seconds = time.perf_counter() - start
        tokens = llm.tokenize(out["choices"][0]["text"].encode(), add_bos=False, special=True)
        return {"tokens": tokens, "total_s": seconds, "decode_tokens": out["usage"]["completion_tokens"]}
    return run


def main() -> None:
    parser = harness.cli(__doc__, harness.RESULTS / "speculative.json", threads=2,
                         threads_help="threads of every engine", quick_help="5 rounds, short generations")
    parser.add_argument("--pause-s", type=float, default=0.2, help="pause before each timed call (0.2)")
    parser.add_argument("--tokens", type=int, default=None, help="new tokens per generation (default 160, 32 quick)")
    parser.add_argument("--no-llama", action="store_true", help="skip llama-cpp-python")
    parser.add_argument("--llama-threads", type=int, default=1,
                        help="llama.cpp's threads (default 1: its threads wait for each other at every barrier, "
                             "and on a shared 2-core machine 2 threads collapse whenever another process takes a core)")
    args = harness.parse_args(parser)
    n = args.tokens or (32 if args.quick else 160)

    kvgen.set_num_threads(args.threads)
    model = kvgen.load_default()
    grounded = grounded_prompt(model, 300 if args.quick else 1000)
    story = open_prompt(model)
    base = dict(max_new_tokens=n, min_new_tokens=n)
    fresh = dict(prefix_cache=False)  # every call prefills its whole prompt (no reuse across the timed calls)
    greedy = kvgen.Generator(model, kvgen.GenerationConfig(**base), **fresh)
    sampled = kvgen.Generator(model, kvgen.GenerationConfig(**base, do_sample=True, temperature=0.7, seed=1), **fresh)
    self_draft = kvgen.Generator(model, kvgen.GenerationConfig(**base), assistant_model=model, **fresh)
    lookup = dict(prompt_lookup_num_tokens=LOOKUP_TOKENS, max_matching_ngram_size=NGRAM)
    jobs = {
        "grounded greedy plain": kvgen_job(greedy, grounded),
        "grounded greedy lookup": kvgen_job(greedy, grounded, **lookup),
        "grounded greedy self-draft": kvgen_job(self_draft, grounded),
        "grounded t0.7 plain": kvgen_job(sampled, grounded, seeded=True),
        "grounded t0.7 lookup": kvgen_job(sampled, grounded, seeded=True, **lookup),
        "open t0.7 plain": kvgen_job(sampled, story, seeded=True),
        "open t0.7 lookup": kvgen_job(sampled, story, seeded=True, **lookup),
        "open greedy self-draft": kvgen_job(self_draft, story),
        "open greedy plain": kvgen_job(greedy, story),
    }
    versions: dict = {}
    llama_cpp = None if args.no_llama else llama_cpp_module()
    if llama_cpp is not None:
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        versions["llama_cpp_python"] = llama_cpp.__version__
        common = dict(model_path=str(model.path), n_ctx=2048, n_threads=args.llama_threads,
                      n_threads_batch=args.llama_threads,
                      verbose=False, logits_all=False)
        plain_llm = llama_cpp.Llama(**common)
        lookup_llm = llama_cpp.Llama(**{**common, "logits_all": True}, draft_model=LlamaPromptLookupDecoding(
            max_ngram_size=NGRAM, num_pred_tokens=LOOKUP_TOKENS))
        jobs["llama.cpp grounded greedy plain"] = llama_job(plain_llm, grounded, n)
        jobs["llama.cpp grounded greedy lookup"] = llama_job(lookup_llm, grounded, n)

    env = harness.environment(versions, {name: args.llama_threads if name.startswith("llama.cpp") else args.threads
                                         for name in jobs})
    harness.print_environment(env, {"load": "the machine is shared with other work: compare rows of one run"})
    print(f"prompts: grounded {len(grounded)} tokens, open {len(story)} tokens; {n} new tokens per run")

    outputs, samples = harness.interleave_calls(jobs, args.rounds, args.pause_s)
    # speculation must not change greedy tokens
    same = {
        "grounded lookup": outputs["grounded greedy lookup"]["tokens"] == outputs["grounded greedy plain"]["tokens"],
        "grounded self-draft": (outputs["grounded greedy self-draft"]["tokens"]
                                == outputs["grounded greedy plain"]["tokens"]),
        "open self-draft": outputs["open greedy self-draft"]["tokens"] == outputs["open greedy plain"]["tokens"],
    }
    print("greedy tokens identical to plain decoding: " + ", ".join(f"{k} {v}" for k, v in same.items()))
    if not all(same.values()):
        raise SystemExit("speculative greedy output differs from plain greedy output")

    rows = {}
    for name, calls in samples.items():
        results = [c.result for c in calls]
        decode = [r["decode_tokens"] / r["decode_s"] for r in results if r.get("decode_s")]
        total = [r["decode_tokens"] / r["total_s"] for r in results]
        drafted = sum(r.get("drafted", 0) for r in results)
        accepted = sum(r.get("accepted", 0) for r in results)
        rows[name] = {"decode_tps": statistics.median(decode) if decode else None,
                      "decode_tps_range": [min(decode), max(decode)] if decode else None,
                      "total_tps": statistics.median(total),
                      "acceptance": accepted / drafted if drafted else None,
                      "steps": results[0].get("steps")}

    print(f"\ntokens/s, median over {args.rounds} interleaved rounds, {args.threads} threads")
    table = harness.Table([harness.Column("engine / workload", 34, lambda r: r[0], left=True),
                           harness.Column("decode tok/s", 13, lambda r: f"{r[1]['decode_tps']:.1f}"
                                          if r[1]["decode_tps"] else "-"),
                           harness.Column("end-to-end", 11, lambda r: f"{r[1]['total_tps']:.1f}"),
                           harness.Column("accepted", 9, lambda r: f"{100 * r[1]['acceptance']:.0f}%"
                                          if r[1]["acceptance"] is not None else "-"),
                           harness.Column("steps", 6, lambda r: str(r[1]["steps"] or "-"))])
    table.print_header()
    for name, row in rows.items():
        table.print_row((name, row))

    def ratio(a: str, b: str, key: str = "decode_tps") -> float:
        return rows[a][key] / rows[b][key]

    figures = {
        "grounded greedy lookup/plain": ratio("grounded greedy lookup", "grounded greedy plain"),
        "grounded t0.7 lookup/plain": ratio("grounded t0.7 lookup", "grounded t0.7 plain"),
        "open t0.7 lookup/plain": ratio("open t0.7 lookup", "open t0.7 plain"),
        "grounded greedy self-draft/plain": ratio("grounded greedy self-draft", "grounded greedy plain"),
        "open greedy self-draft/plain": ratio("open greedy self-draft", "open greedy plain"),
    }
    if llama_cpp is not None:
        figures["llama.cpp lookup/plain (end-to-end)"] = ratio("llama.cpp grounded greedy lookup",
                                                               "llama.cpp grounded greedy plain", "total_tps")
        figures["kvgen lookup/llama.cpp lookup (end-to-end)"] = ratio("grounded greedy lookup",
                                                                      "llama.cpp grounded greedy lookup", "total_tps")
        figures["kvgen plain/llama.cpp plain (end-to-end)"] = ratio("grounded greedy plain",
                                                                    "llama.cpp grounded greedy plain", "total_tps")
    print("\nratios (decode tokens/s unless marked)")
    for name, value in figures.items():
        print(f"  {name:44s} {value:.2f}x")
    targets = [
        harness.target("prompt lookup, grounded, greedy >= 1.8x plain", figures["grounded greedy lookup/plain"],
                       figures["grounded greedy lookup/plain"] >= 1.8,
                       f"{figures['grounded greedy lookup/plain']:.2f}x"),
        harness.target("prompt lookup, grounded, t0.7 >= 1.5x plain", figures["grounded t0.7 lookup/plain"],
                       figures["grounded t0.7 lookup/plain"] >= 1.5, f"{figures['grounded t0.7 lookup/plain']:.2f}x"),
        harness.target("prompt lookup, open-ended >= 0.95x plain", figures["open t0.7 lookup/plain"],
                       figures["open t0.7 lookup/plain"] >= 0.95, f"{figures['open t0.7 lookup/plain']:.2f}x"),
    ]
    report = {"environment": env, "settings": harness.settings(args, threads=args.threads, new_tokens=n,
                                                                 lookup_tokens=LOOKUP_TOKENS, ngram=NGRAM,
                                                                 assistant_tokens=ASSISTANT_TOKENS),
              "prompt_tokens": {"grounded": len(grounded), "open": len(story)}, "rows": rows,
              "ratios": figures, "greedy_identical": same, "targets": targets}
    harness.write_outputs(report, args.out)


def llama_cpp_module():
    return harness.optional_peer("llama_cpp", "llama.cpp prompt lookup", "pip install llama-cpp-python")


if __name__ == "__main__":
    main()
