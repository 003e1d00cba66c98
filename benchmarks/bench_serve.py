"""Serving: kvgen serve against llama-cpp-python's server, 1 to 16 concurrent streaming clients.

What is measured
----------------
Both servers run as subprocesses on 127.0.0.1 over the same GGUF file (SmolLM2-135M-Instruct
Q4_1 by default) with the same thread count, pinned to the same cores when --pin is given:

* ``kvgen``: ``kvgen serve --model FILE --threads T --max-batch 16`` (continuous batching:
  the concurrent requests decode together, one forward pass per step).
* ``llama.cpp``: ``python -m llama_cpp.server --model FILE --n_threads T --n_threads_batch T
  --n_ctx 2048 --interrupt_requests False`` from the ``--llama-python`` interpreter (default
  this one; llama-cpp-python's ``[server]`` extra; one request at a time, the others queue).
  Without it, kvgen runs alone.

For N in 1, 4, 8, 16, N clients in this process (a thread each, http.client) start
together; each sends its own 64-token prompt (the round and its index first, so no server
answers from a cached prompt prefix) to /v1/completions with ``stream: true``,
``max_tokens: 128``, ``temperature: 0`` and EOS banned by ``logit_bias`` (every stream is
exactly 128 tokens; checked by its ``finish_reason: length``). The engines are
interleaved (A B, then B A, ...) for --rounds rounds. Per engine and N:

* total tokens/s = N x 128 / (time from the first request sent to the last stream's end),
  median and min-max over the rounds;
* time to first token (request sent -> first text chunk), p50 and p99 over every client of
  every round;
* inter-token latency (gaps between consecutive text chunks of a stream), p50 and p99.

Targets, at 8 clients: kvgen total tokens/s >= 3x llama-cpp-python's server and
>= 3x kvgen's own at 1 client; kvgen's p99 inter-token latency <= 2.5x its 1-client figure.
``--quick``: 1 and 4 clients, 32 new tokens, 5 rounds.

Multi-turn chat (``--multi-turn``)
----------------------------------
8 clients (``--clients``) chat for 5 turns each (``--turns``) through /v1/chat/completions
with ``stream: true``, every conversation opening with the same 500-token system prompt; a
client's turn k sends the system prompt, its k - 1 earlier questions and the replies it got,
and a new question of its own (client and turn named in it). Replies are 32 tokens
(``--new-tokens``; EOS and the end-of-turn token banned by ``logit_bias``, greedy). The
clients start each turn together (a barrier), so every turn is measured at the same
concurrency. Per engine and turn: the prompt's tokens and the time to first token (request
sent -> first content chunk), p50 and p99 over every client of every round; the engines
alternate per round. Engines: ``kvgen`` (its prefix cache: a turn reuses the slot that holds
its conversation's earlier prompt, positions of whole 32-token chunks, and prefills the rest),
``kvgen-nocache`` (``kvgen serve --no-prefix-cache``: every turn prefills its whole history)
and llama-cpp-python's server (it keeps its last prompt's KV and reuses the common prefix;
one request at a time). Target: kvgen's TTFT p50 at the last turn >= 3x faster with its
prefix cache than without. ``--quick``: 2 clients, 3 turns, 8 new tokens.
"""

from __future__ import annotations

import http.client
import json
import socket
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import harness
import kvgen
from engines import kvgen_engine, llama_cpp_engine

OUT = harness.RESULTS / "bench_serve.json"
PROMPT_TOKENS = 64
FILLER = " The quick brown fox jumps over the lazy dog while the river runs past the old mill."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prompts(model, count: int, round_: int) -> list[str]:
    """count texts of PROMPT_TOKENS tokens each, client i's starting with the round and its
    index: no prompt repeats, so no server answers from a cached prefix."""
    out = []
    for i in range(count):
        ids = model.encode(f"{round_}-{i}." + FILLER * 8, add_special_tokens=False)[:PROMPT_TOKENS]
        text = model.decode(ids)
        assert len(model.encode(text, add_special_tokens=False)) == PROMPT_TOKENS
        out.append(text)
    return out


def stream(port: int, prompt: str, new_tokens: int, eos: int, go: threading.Barrier) -> dict:
    """One streaming completion: when it was sent and when each text chunk arrived."""
    body = json.dumps({"model": "m", "prompt": prompt, "max_tokens": new_tokens, "temperature": 0, "stream": True,
                       "logit_bias": {str(eos): -100}})
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    go.wait()
    sent = time.perf_counter()
    connection.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {response.read()[:200]!r}")
    times, reason = [], None
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        choice = json.loads(line[6:])["choices"][0]
        if choice.get("text"):
            times.append(time.perf_counter())
        reason = choice.get("finish_reason") or reason
    connection.close()
    if reason != "length":
        raise RuntimeError(f"a stream ended with finish_reason {reason!r}, not 'length'")
    return {"sent": sent, "times": times}


def one_run(port: int, texts: list[str], new_tokens: int, eos: int) -> dict:
    """len(texts) clients at once (a thread each, released together)."""
    go = threading.Barrier(len(texts))
    with ThreadPoolExecutor(len(texts)) as pool:
        streams = list(pool.map(lambda t: stream(port, t, new_tokens, eos, go), texts))
    start = min(s["sent"] for s in streams)
    end = max(s["times"][-1] for s in streams)
    return {"tokens_per_s": len(texts) * new_tokens / (end - start),
            "ttft": [s["times"][0] - s["sent"] for s in streams],
            "itl": [b - a for s in streams for a, b in zip(s["times"], s["times"][1:])]}


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def summary(runs: list[dict]) -> dict:
    rates = [r["tokens_per_s"] for r in runs]
    ttft = [t for r in runs for t in r["ttft"]]
    itl = [t for r in runs for t in r["itl"]]
    return {"tokens_per_s": statistics.median(rates), "tokens_per_s_min": min(rates), "tokens_per_s_max": max(rates),
            "ttft_p50_ms": 1e3 * percentile(ttft, 50), "ttft_p99_ms": 1e3 * percentile(ttft, 99),
            "itl_p50_ms": 1e3 * percentile(itl, 50), "itl_p99_ms": 1e3 * percentile(itl, 99)}


def plot(results: dict, counts: list[int]):
    def draw(plt):
        fig, axes = plt.subplots(1, 3, figsize=(13, 4))
        for engine, per in results.items():
            xs = [c for c in counts if str(c) in per]
            s = [per[str(c)] for c in xs]
            axes[0].plot(xs, [x["tokens_per_s"] for x in s], "o-", label=engine)
            axes[1].plot(xs, [x["ttft_p50_ms"] for x in s], "o-", label=f"{engine} p50")
            axes[1].plot(xs, [x["ttft_p99_ms"] for x in s], "x--", label=f"{engine} p99")
            axes[2].plot(xs, [x["itl_p50_ms"] for x in s], "o-", label=f"{engine} p50")
            axes[2].plot(xs, [x["itl_p99_ms"] for x in s], "x--", label=f"{engine} p99")
        for ax, title in zip(axes, ("total tokens/s", "time to first token (ms)", "inter-token latency (ms)")):
            ax.set_title(title)
            ax.set_xlabel("concurrent clients")
            ax.set_xticks(counts)
            ax.legend(fontsize=7)
        axes[1].set_yscale("log")
        return fig
    return draw


SYSTEM_TOKENS = 500
TOPICS = ("rivers", "mountains", "bread", "music", "trains", "bees", "clocks", "ships", "forests", "glass",
          "paper", "salt", "bridges", "kites", "stars", "tea")


def system_prompt(model) -> str:
    """The shared system prompt: SYSTEM_TOKENS tokens of filler."""
    ids = model.encode("You are a helpful assistant." + FILLER * 60, add_special_tokens=False)[:SYSTEM_TOKENS]
    return model.decode(ids)


def chat_turn(port: int, messages: list[dict], new_tokens: int, banned: list[int]) -> tuple[float, str]:
    """One streamed chat turn: (seconds to the first content chunk, the reply's text)."""
    body = json.dumps({"model": "m", "messages": messages, "max_tokens": new_tokens, "temperature": 0,
                       "stream": True, "logit_bias": {str(t): -100 for t in banned}})
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    sent = time.perf_counter()
    connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {response.read()[:200]!r}")
    first, text = None, ""
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        choices = json.loads(line[6:]).get("choices") or [{}]
        piece = (choices[0].get("delta") or {}).get("content")
        if piece:
            first = first or time.perf_counter()
            text += piece
    connection.close()
    if first is None:
        raise RuntimeError("a chat turn streamed no content")
    return first - sent, text


def conversations(port: int, model, clients: int, turns: int, new_tokens: int, banned: list[int],
                  round_: int) -> list[list[dict]]:
    """``clients`` conversations of ``turns`` turns at once; per client, per turn:
    {"ttft", "prompt_tokens"}."""
    system = system_prompt(model)
    go = threading.Barrier(clients)

    def client(i: int) -> list[dict]:
        messages = [{"role": "system", "content": system}]
        out = []
        for t in range(turns):
            topic = TOPICS[(i + t + round_) % len(TOPICS)]
            messages.append({"role": "user", "content": f"Client {i}, turn {t + 1} of round {round_}: tell me "
                                                        f"one fact about {topic}."})
            prompt_tokens = len(model.encode_chat(messages, add_generation_prompt=True))
            go.wait()
            ttft, reply = chat_turn(port, messages, new_tokens, banned)
            messages.append({"role": "assistant", "content": reply})
            out.append({"ttft": ttft, "prompt_tokens": prompt_tokens})
        return out

    with ThreadPoolExecutor(clients) as pool:
        return list(pool.map(client, range(clients)))


def multi_turn(args, model, path: str, engines: list[str], ports: dict, procs: dict, env: dict) -> int:
    """The multi-turn chat workload (see the module's docstring)."""
    clients = int(args.clients) if args.clients else (2 if args.quick else 8)
    turns = args.turns or (3 if args.quick else 5)
    new_tokens = args.new_tokens or (8 if args.quick else 32)
    banned = sorted({t for t in (model.eos_token_id, model.end_of_turn_token_id) if t is not None})
    print(f"model: {path} (kvgen activations {args.activations}); multi-turn chat: {clients} clients x {turns} "
          f"turns, {SYSTEM_TOKENS}-token shared system prompt, "
          f"{new_tokens}-token replies, greedy; {args.rounds} interleaved rounds")
    runs: dict = {name: [] for name in engines}
    try:
        for name in engines:  # warm-up
            conversations(ports[name], model, 1, 1, 4, banned, -1)
        for r in range(args.rounds):
            for name in engines if r % 2 == 0 else engines[::-1]:
                runs[name].append(conversations(ports[name], model, clients, turns, new_tokens, banned, r))
    finally:
        for proc in procs.values():
            proc.terminate()
            proc.wait(timeout=30)
    results: dict = {}
    table = harness.Table([harness.Column("turn", 5, lambda r: str(r[1])),
                           harness.Column("engine", 13, lambda r: r[0], left=True)],
                          [harness.Column("prompt tok", 10, lambda r: f"{r[2]['prompt_tokens']:.0f}"),
                           harness.Column("TTFT p50", 9, lambda r: f"{r[2]['ttft_p50_ms']:.0f} ms"),
                           harness.Column("TTFT p99", 9, lambda r: f"{r[2]['ttft_p99_ms']:.0f} ms")])
    table.print_header()
    for t in range(turns):
        for name in engines:
            at_turn = [c[t] for run in runs[name] for c in run]
            ttft = [x["ttft"] for x in at_turn]
            row = {"prompt_tokens": statistics.median(x["prompt_tokens"] for x in at_turn),
                   "ttft_p50_ms": 1e3 * percentile(ttft, 50), "ttft_p99_ms": 1e3 * percentile(ttft, 99)}
            results.setdefault(name, {})[str(t + 1)] = row
            table.print_row((name, t + 1, row))
    k, last = results["kvgen"], str(turns)
    report = {"environment": env, "model": path, "workload": "multi-turn", "clients": clients, "turns": turns,
              "system_tokens": SYSTEM_TOKENS, "new_tokens": new_tokens, "rounds": args.rounds,
              "results": results, "targets": []}
    print()
    ratio = results["kvgen-nocache"][last]["ttft_p50_ms"] / k[last]["ttft_p50_ms"]
    report["targets"].append(harness.target(f"TTFT p50 at turn {turns} >= 3x faster with kvgen's prefix cache than "
                                            "without", ratio, ratio >= 3, f"{ratio:.2f}x"))
    if "llama.cpp" in results:
        ratio = k[str(turns)]["ttft_p50_ms"] / results["llama.cpp"][str(turns)]["ttft_p50_ms"]
        print(f"kvgen / llama-cpp-python TTFT p50 at turn {turns}: {ratio:.2f}x")
        report["kvgen_over_llama_cpp_ttft_p50_last_turn"] = ratio
    harness.write_outputs(report, args.out, multi_turn_plot(results, turns))
    return 0


def multi_turn_plot(results: dict, turns: int):
    def draw(plt):
        fig, ax = plt.subplots(figsize=(6, 4))
        xs = list(range(1, turns + 1))
        for engine, per in results.items():
            ax.plot(xs, [per[str(t)]["ttft_p50_ms"] for t in xs], "o-", label=f"{engine} p50")
            ax.plot(xs, [per[str(t)]["ttft_p99_ms"] for t in xs], "x--", label=f"{engine} p99")
        ax.set_title("multi-turn chat: time to first token (ms)")
        ax.set_xlabel("turn")
        ax.set_xticks(xs)
        ax.legend(fontsize=7)
        return fig
    return draw


def main() -> int:
    parser = harness.cli(__doc__, OUT, threads=2, threads_help="threads of both servers",
                         quick_help="1 and 4 clients, 32 new tokens")
    parser.add_argument("--model", default=None, help="GGUF file (default: kvgen's default model)")
    parser.add_argument("--llama-python", default=sys.executable,
                        help="interpreter with llama-cpp-python[server] (default: this one)")
    parser.add_argument("--pin", default=None, help="taskset core list for both servers, e.g. 0,1")
    parser.add_argument("--activations", choices=("int8x2", "int8", "float"), default="int8x2",
                        help="kvgen serve --activations (default int8x2, kvgen's default)")
    parser.add_argument("--clients", default=None,
                        help="comma-separated client counts (default 1,4,8,16; 1,4 with --quick)")
    parser.add_argument("--new-tokens", type=int, default=None, help="new tokens per stream (128; 32 with --quick)")
    parser.add_argument("--multi-turn", action="store_true",
                        help="the multi-turn chat workload instead (--clients: one count, default 8)")
    parser.add_argument("--turns", type=int, default=None, help="turns per conversation with --multi-turn (5)")
    args = harness.parse_args(parser)
    if args.multi_turn and args.out == OUT:
        args.out = OUT.with_name("bench_serve_multi_turn.json")
    counts = [int(c) for c in args.clients.split(",")] if args.clients else [1, 4] if args.quick else [1, 4, 8, 16]
    if args.multi_turn:
        counts = [max(counts) if args.clients else (2 if args.quick else 8)]
    elif 1 not in counts:
        parser.error("--clients must include 1 (the targets compare with it)")
    new_tokens = args.new_tokens or (32 if args.quick else 128)
    path = args.model or str(kvgen.default_model_path())
    model = kvgen.Model.load(path)
    eos = model.eos_token_id

    llama_version = llama_cpp_engine.version_in(args.llama_python, module="llama_cpp.server.app")
    env = harness.environment({"llama_cpp_python": llama_version or "missing"},
                              {"kvgen": args.threads, "llama.cpp": args.threads})
    harness.print_environment(env)
    if not args.multi_turn:
        print(f"model: {path} (kvgen activations {args.activations}); {PROMPT_TOKENS}-token prompts, "
              f"{new_tokens} new tokens per stream, greedy, EOS banned; "
              f"clients {counts}; {args.rounds} interleaved rounds")

    ports = {"kvgen": free_port(), "llama.cpp": free_port()}
    commands = {
        "kvgen": kvgen_engine.serve_command(path, args.threads, max(counts), args.activations, ports["kvgen"]),
        "llama.cpp": llama_cpp_engine.server_command(args.llama_python, path, args.threads, ports["llama.cpp"]),
    }
    engines = list(commands) if llama_version else ["kvgen"]
    if "llama.cpp" not in engines:
        print("note: kvgen alone")
    if args.multi_turn:  # kvgen without its prefix cache beside it
        ports["kvgen-nocache"] = free_port()
        commands["kvgen-nocache"] = kvgen_engine.serve_command(path, args.threads, max(counts), args.activations,
                                                               ports["kvgen-nocache"]) + ["--no-prefix-cache"]
        engines.insert(1, "kvgen-nocache")
    procs = {name: harness.start_server(commands[name], ports[name], args.pin) for name in engines}
    if args.multi_turn:
        return multi_turn(args, model, path, engines, ports, procs, env)
    results: dict = {name: {} for name in engines}
    table = harness.Table([harness.Column("clients", 7, lambda r: str(r[1])),
                           harness.Column("engine", 9, lambda r: r[0], left=True)],
                          [harness.Column("tok/s [min-max]", 22, lambda r: f"{r[2]['tokens_per_s']:.1f} "
                                          f"[{r[2]['tokens_per_s_min']:.1f}-{r[2]['tokens_per_s_max']:.1f}]"),
                           harness.Column("TTFT p50", 9, lambda r: f"{r[2]['ttft_p50_ms']:.0f} ms"),
                           harness.Column("TTFT p99", 9, lambda r: f"{r[2]['ttft_p99_ms']:.0f} ms"),
                           harness.Column("ITL p50", 9, lambda r: f"{r[2]['itl_p50_ms']:.1f} ms"),
                           harness.Column("ITL p99", 9, lambda r: f"{r[2]['itl_p99_ms']:.1f} ms")])
    try:
        for name in engines:  # warm-up: load pages, fill caches
            one_run(ports[name], prompts(model, 2, -1), 8, eos)
        table.print_header()
        for n in counts:
            runs: dict = {name: [] for name in engines}
            for r in range(args.rounds):
                texts = prompts(model, n, r)  # the same texts for both engines
                for name in engines if r % 2 == 0 else engines[::-1]:
                    runs[name].append(one_run(ports[name], texts, new_tokens, eos))
            for name in engines:
                results[name][str(n)] = summary(runs[name])
                table.print_row((name, n, results[name][str(n)]))
    finally:
        for proc in procs.values():
            proc.terminate()
            proc.wait(timeout=30)

    report = {"environment": env, "model": path, "kvgen_activations": args.activations,
              "prompt_tokens": PROMPT_TOKENS, "new_tokens": new_tokens,
              "rounds": args.rounds, "results": results, "targets": []}
    at = "8" if "8" in results["kvgen"] else str(max(counts))
    k = results["kvgen"]
    print(f"\ntargets at {at} clients:")
    if "llama.cpp" in results:
        ratio = k[at]["tokens_per_s"] / results["llama.cpp"][at]["tokens_per_s"]
        report["targets"].append(harness.target(f"total tokens/s >= 3x llama-cpp-python's server at {at} clients",
                                                ratio, ratio >= 3, f"{ratio:.2f}x"))
    ratio = k[at]["tokens_per_s"] / k["1"]["tokens_per_s"]
    report["targets"].append(harness.target(f"total tokens/s >= 3x kvgen's 1-client figure at {at} clients", ratio,
                                            ratio >= 3, f"{ratio:.2f}x"))
    ratio = k[at]["itl_p99_ms"] / k["1"]["itl_p99_ms"]
    report["targets"].append(harness.target(f"p99 inter-token latency <= 2.5x the 1-client figure at {at} clients",
                                            ratio, ratio <= 2.5, f"{ratio:.2f}x"))
    harness.write_outputs(report, args.out, plot(results, counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
