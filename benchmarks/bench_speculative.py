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
decode seconds (``last_stats``), so the prefill is not in it. ``--cpu-time``: CPU tok/s =
new tokens / the process's CPU seconds for the call, with the prefix cache on (after the warm-up
a call reads its prompt from the cache, so the call is nearly all decode; a draft model has no
prefix cache, so its rows still read their prompt); on a loaded machine run it with
``--threads 1``, where CPU time counts this process's work only.

Draft model (skipped with ``--quick`` or ``--no-draft-model``): a random-weight Llama of about
1.1 B parameters (TinyLlama-1.1B's widths: hidden 2048, intermediate 5632, 32 heads / 4 KV heads,
22 layers) with SmolLM2's vocabulary and tokenizer, written once as an F16 GGUF and quantized to
Q4_K_M by llama.cpp's quantizer under ~/.cache/kvgen-bench (benchmarks/decode/models.py; making
it needs llama-cpp-python), greedy on the open-ended prompt (``--draft-tokens`` new tokens):
``plain``; ``smollm2-draft`` (``assistant_model=`` SmolLM2-135M Q4_1, 5 tokens, adaptive: with
random target weights its drafts are rejected, so this measures what a useless draft model
costs); ``self-draft`` (the target drafting for itself: every draft accepted, but each draft
token costs a target decode step). The upper bound of SmolLM2 drafting for a 1 B model is
what it would give if every draft were accepted: (k + 1) t(1) / (k d + t(k + 1)), from pass
times measured in the same run (t(n): the target's pass over n positions returning all their
logits after the prompt, d: a SmolLM2 decode step; k = 5).

llama-cpp-python (optional peer): ``Llama(..., draft_model=LlamaPromptLookupDecoding(
num_pred_tokens=10))`` against the same ``Llama`` without it, greedy, on the grounded prompt
(its high-level API: a logit bias on EOS would run a Python logits processor every token, so
EOS may end its runs early: tokens/s counts what it generated); their tokens/s are end-to-end
(the API times no decode apart), so the kvgen figures set beside them are end-to-end too.

MTP head (``--mtp``; needs llama-cpp-python to make the file): the Qwen3.5-2B-shaped file of
``bench_decode.py --model families --families qwen3_5_2b`` (random weights, Q4_K_M, with a
random multi-token-prediction head converted by llama.cpp's converter), greedy on the
open-ended prompt: ``plain``, ``mtp`` (``assistant_model=model.mtp_head``, adaptive) and
``lookup``. No trained Qwen3.5 checkpoint is reachable offline, so the head's acceptance on real
text cannot be measured here: a random head's drafts are rejected, so ``mtp`` measures what
drafting with a useless head costs. The cost side is measured instead (``mtp_bound``): the
target's decode step t(1), its verification pass over k + 1 positions t(k + 1) (logits and
hidden states of every position), and one pass of the head d (one position: its layer, fc and
the LM head); from them the speed-up if every draft were accepted, (k + 1) t(1) / (k d +
t(k + 1)), and the acceptance rate per position a drafting of k = 1 needs to break even,
(d + t(2)) / t(1) - 1.

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
        start, cpu = time.perf_counter(), time.process_time()
        result = generator.generate([prompt], **overrides, **seed)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        stats = generator.last_stats
        return {"tokens": [int(t) for t in result.sequences[0][0]], "decode_s": stats.decode_seconds,
                "decode_tokens": stats.decode_tokens, "total_s": seconds, "cpu_s": cpu, "steps": stats.decode_steps,
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
    parser.add_argument("--no-draft-model", action="store_true", help="skip the 1 B draft-model target (also --quick)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="also time kvgen's calls in process CPU time, with the prefix cache on (a call after "
                             "the warm-up reads its prompt from the cache); with --threads 1 on a loaded machine")
    parser.add_argument("--draft-tokens", type=int, default=64, help="new tokens per draft-model run (default 64)")
    parser.add_argument("--mtp", action="store_true",
                        help="also the Qwen3.5-2B-shaped file with its MTP head (made once, about 10 minutes)")
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
    # every call prefills its whole prompt (no reuse across the timed calls), but with --cpu-time
    fresh = dict(prefix_cache=args.cpu_time)
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

    target_model = None
    if not (args.quick or args.no_draft_model):
        target_model = draft_model_target(llama_cpp, args.threads)
    if target_model is not None:
        nd = args.draft_tokens
        cfg = kvgen.GenerationConfig(max_new_tokens=nd, min_new_tokens=nd)
        jobs["1B greedy plain"] = kvgen_job(kvgen.Generator(target_model, cfg, **fresh), story)
        jobs["1B greedy smollm2-draft"] = kvgen_job(
            kvgen.Generator(target_model, cfg, assistant_model=model, **fresh), story)
        jobs["1B greedy self-draft"] = kvgen_job(
            kvgen.Generator(target_model, cfg, assistant_model=target_model, **fresh), story)

    mtp_model = mtp_target(llama_cpp, args.threads) if args.mtp else None
    if mtp_model is not None:
        nm = args.draft_tokens
        cfg = kvgen.GenerationConfig(max_new_tokens=nm, min_new_tokens=nm)
        mtp_story = open_prompt(mtp_model)
        jobs["2B greedy plain"] = kvgen_job(kvgen.Generator(mtp_model, cfg, **fresh), mtp_story)
        jobs["2B greedy mtp"] = kvgen_job(
            kvgen.Generator(mtp_model, cfg, assistant_model=mtp_model.mtp_head, **fresh), mtp_story)
        jobs["2B greedy lookup"] = kvgen_job(kvgen.Generator(mtp_model, cfg, **fresh), mtp_story, **lookup)

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
    if target_model is not None:
        same["1B smollm2-draft"] = outputs["1B greedy smollm2-draft"]["tokens"] == outputs["1B greedy plain"]["tokens"]
        same["1B self-draft"] = outputs["1B greedy self-draft"]["tokens"] == outputs["1B greedy plain"]["tokens"]
    if mtp_model is not None:
        same["2B mtp"] = outputs["2B greedy mtp"]["tokens"] == outputs["2B greedy plain"]["tokens"]
        same["2B lookup"] = outputs["2B greedy lookup"]["tokens"] == outputs["2B greedy plain"]["tokens"]
    print("greedy tokens identical to plain decoding: " + ", ".join(f"{k} {v}" for k, v in same.items()))
    if not all(same.values()):
        raise SystemExit("speculative greedy output differs from plain greedy output")

    rows = {}
    for name, calls in samples.items():
        results = [c.result for c in calls]
        decode = [r["decode_tokens"] / r["decode_s"] for r in results if r.get("decode_s")]
        total = [r["decode_tokens"] / r["total_s"] for r in results]
        cpu = [r["decode_tokens"] / r["cpu_s"] for r in results if r.get("cpu_s")]
        drafted = sum(r.get("drafted", 0) for r in results)
        accepted = sum(r.get("accepted", 0) for r in results)
        rows[name] = {"decode_tps": statistics.median(decode) if decode else None,
                      "decode_tps_range": [min(decode), max(decode)] if decode else None,
                      "total_tps": statistics.median(total),
                      "cpu_tps": statistics.median(cpu) if cpu else None,
                      "acceptance": accepted / drafted if drafted else None,
                      "steps": results[0].get("steps")}

    print(f"\ntokens/s, median over {args.rounds} interleaved rounds, {args.threads} threads")
    table = harness.Table([harness.Column("engine / workload", 34, lambda r: r[0], left=True),
                           harness.Column("decode tok/s", 13, lambda r: f"{r[1]['decode_tps']:.1f}"
                                          if r[1]["decode_tps"] else "-"),
                           harness.Column("end-to-end", 11, lambda r: f"{r[1]['total_tps']:.1f}"),
                           harness.Column("CPU tok/s", 10, lambda r: f"{r[1]['cpu_tps']:.1f}"
                                          if args.cpu_time and r[1]["cpu_tps"] else "-"),
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
    if args.cpu_time:
        for name in ("grounded greedy lookup", "grounded t0.7 lookup", "open t0.7 lookup"):
            figures[f"{name}/plain (CPU time)"] = ratio(name, name.replace("lookup", "plain"), "cpu_tps")
    bound = None
    if target_model is not None:
        figures["1B smollm2-draft/plain"] = ratio("1B greedy smollm2-draft", "1B greedy plain")
        figures["1B self-draft/plain"] = ratio("1B greedy self-draft", "1B greedy plain")
        bound = draft_bound(target_model, model, story, ASSISTANT_TOKENS, args.rounds)
        figures["1B smollm2-draft all accepted (bound)"] = bound["speedup"]
        k1 = ASSISTANT_TOKENS + 1
        print(f"\npass times (median of {args.rounds} interleaved rounds): 1B decode step t(1) "
              f"{bound['t1_ms']:.1f} ms, 1B pass over {k1} positions t({k1}) {bound['tk_ms']:.1f} ms, "
              f"SmolLM2 decode step d {bound['d_ms']:.2f} ms")
    head_bound = None
    if mtp_model is not None:
        figures["2B mtp/plain (random head)"] = ratio("2B greedy mtp", "2B greedy plain")
        figures["2B lookup/plain"] = ratio("2B greedy lookup", "2B greedy plain")
        head_bound = mtp_bound(mtp_model, mtp_story, (1, 2, 3), args.rounds)
        for k, x in head_bound["speedup"].items():
            figures[f"2B mtp k={k} all accepted (bound)"] = x
        t_ms, d_ms = head_bound["t_ms"], head_bound["d_ms"]
        passes = ", ".join(f"t({n}) {v:.1f} ms" for n, v in t_ms.items() if n > 1)
        print(f"\nMTP pass times (median of {args.rounds} interleaved rounds): 2B decode step t(1) {t_ms[1]:.1f} ms, "
              f"{passes}, head pass d {d_ms:.1f} ms ({d_ms / t_ms[1]:.2f} t(1)); k = 1 breaks even at "
              f"{100 * head_bound['break_even']:.0f}% acceptance")
    if llama_cpp is not None:
        figures["llama.cpp lookup/plain (end-to-end)"] = ratio("llama.cpp grounded greedy lookup",
                                                               "llama.cpp grounded greedy plain", "total_tps")
        if args.cpu_time:  # kvgen's calls then read their prompts from the prefix cache, llama.cpp's do not
            print("(--cpu-time: kvgen's end-to-end figures skip most of the prefill: no kvgen / llama.cpp ratio)")
        else:
            for kind in ("lookup", "plain"):
                figures[f"kvgen {kind}/llama.cpp {kind} (end-to-end)"] = ratio(
                    f"grounded greedy {kind}", f"llama.cpp grounded greedy {kind}", "total_tps")
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
              "ratios": figures, "greedy_identical": same, "targets": targets, "draft_bound": bound,
              "mtp_bound": head_bound}
    harness.write_outputs(report, args.out)


def draft_model_target(llama_cpp, threads: int):
    """The ~1.1 B random Llama (Q4_K_M), made once; None (with a note) when it cannot be made."""
    from decode import models

    shape = models.LLAMA_1B_SHAPE
    if llama_cpp is None and not models.file_ok(models.random_llama_path(shape), models.random_llama_recipe(shape)):
        print("skipped: the 1 B draft-model target (made with llama.cpp's quantizer: pip install llama-cpp-python)")
        return None
    return kvgen.Model.load(models.random_llama_file(models.LLAMA_1B_SHAPE, kvgen.default_model_path(), threads))


def draft_bound(target: kvgen.Model, draft: kvgen.Model, prompt: list[int], k: int, rounds: int) -> dict:
    """Pass times after `prompt` (wall, median over interleaved rounds of 5 passes each): the
    target's decode step t(1) and its pass over k + 1 positions returning every position's
    logits t(k + 1), and the draft's decode step d; the speed-up of k drafts all accepted."""
    import numpy as np

    from kvgen._core import _ModelSlots

    ids = np.asarray(prompt, dtype=np.int64)
    target_slots = _ModelSlots(target._core, 1, len(prompt) + k + 2, k + 1)
    draft_slots = _ModelSlots(draft._core, 1, len(prompt) + 2, 1)
    target_slots.forward([(0, ids)])
    draft_slots.forward([(0, ids)])
    tokens = ids[-(k + 1):]

    def timed(slots, n: int, verify: bool) -> float:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            slots.forward([(0, tokens[:n])], [0] if verify else [])
            times.append(time.perf_counter() - start)
            slots.truncate(0, len(prompt))
        return statistics.median(times)

    t1, tk, d = [], [], []
    for _ in range(rounds):
        t1.append(timed(target_slots, 1, False))
        tk.append(timed(target_slots, k + 1, True))
        d.append(timed(draft_slots, 1, False))
    t1_s, tk_s, d_s = statistics.median(t1), statistics.median(tk), statistics.median(d)
    return {"k": k, "t1_ms": 1e3 * t1_s, "tk_ms": 1e3 * tk_s, "d_ms": 1e3 * d_s,
            "speedup": (k + 1) * t1_s / (k * d_s + tk_s)}


def mtp_target(llama_cpp, threads: int):
    """The Qwen3.5-2B-shaped file with its MTP head, made once; None (with a note) when it cannot be made."""
    from decode import families, models

    family = families.FAMILIES["qwen3_5_2b"]
    path = models.CACHE_DIR / f"random-qwen3_5_2b.{family.ftype}.gguf"
    if llama_cpp is None and not path.exists():
        print("skipped: the MTP head's 2B file (made with llama.cpp's quantizer: pip install llama-cpp-python)")
        return None
    return kvgen.Model.load(families.prepare("qwen3_5_2b", kvgen.default_model_path(), threads))


def mtp_bound(target: kvgen.Model, prompt: list[int], ks: tuple[int, ...], rounds: int) -> dict:
    """Pass times after ``prompt`` (wall, median over interleaved rounds of 5 passes each), as
    the engine runs them when drafting with the MTP head: the target's decode step t(1) and its
    verification passes t(k + 1) (every position's logits and hidden states), and one pass of
    the head over one position d; the speed-up of k drafts all accepted per k, and the
    acceptance per position at which k = 1 breaks even."""
    import numpy as np

    from kvgen._core import _ModelSlots

    head = target.mtp_head._core
    head.activations, head.kv_cache_dtype = target._core.activations, target._core.kv_cache_dtype
    ids, width, top = np.asarray(prompt, dtype=np.int64), target._core.hidden_size, max(ks)
    # a hybrid's state cannot step back: snapshot 0 holds it after the prompt, and the verification
    # passes write a checkpoint per token into 1 .. top + 1 (as the engine's do)
    checkpoints = target._core.token_checkpoints
    slots = _ModelSlots(target._core, 1, len(prompt) + top + 2, top + 1, snapshots=top + 2)
    head_slots = _ModelSlots(head, 1, len(prompt) + 2, 1)
    states = np.empty((len(prompt), width), dtype=np.float32)
    slots.forward([(0, ids)], hidden_and_logits=[(0, states)])
    slots.snapshot(0, 0)
    head_slots.forward([(0, ids[1:])], input_hidden=[(0, states[:-1].copy())])
    tokens, last = ids[-(top + 1):], states[-1:].copy()

    def target_pass(n: int) -> float:
        out = np.empty((n, width), dtype=np.float32)
        start = time.perf_counter()
        slots.forward([(0, tokens[:n])], [0] if n > 1 else [], hidden_and_logits=[(0, out)],
                      checkpoints=[(0, 1)] if n > 1 and checkpoints else [])
        seconds = time.perf_counter() - start
        slots.resume(0, len(prompt), 0)
        return seconds

    def head_pass() -> float:
        out = np.empty((1, width), dtype=np.float32)
        start = time.perf_counter()
        head_slots.forward([(0, tokens[:1])], input_hidden=[(0, last)], hidden_and_logits=[(0, out)])
        seconds = time.perf_counter() - start
        head_slots.truncate(0, len(prompt) - 1)
        return seconds

    times: dict = {n: [] for n in (1, *[k + 1 for k in ks])}
    heads = []
    for _ in range(rounds):
        for n in times:
            times[n].append(statistics.median(target_pass(n) for _ in range(5)))
        heads.append(statistics.median(head_pass() for _ in range(5)))
    t = {n: statistics.median(v) for n, v in times.items()}
    d = statistics.median(heads)
    return {"t_ms": {n: 1e3 * v for n, v in t.items()}, "d_ms": 1e3 * d,
            "speedup": {k: (k + 1) * t[1] / (k * d + t[k + 1]) for k in ks},
            "break_even": (d + t[2]) / t[1] - 1}


def llama_cpp_module():
    return harness.optional_peer("llama_cpp", "llama.cpp prompt lookup", "pip install llama-cpp-python")


if __name__ == "__main__":
    main()
