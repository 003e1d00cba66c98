"""Batch jobs: kvgen batch against kvgen serve with 8 clients and llama-cpp-python's loop; Ray's overhead.

What is measured
----------------
The same chat requests (short user questions, ``max_tokens`` new tokens, ``temperature: 0``,
EOS and end of turn banned by ``logit_bias`` so that every answer is exactly ``max_tokens``
tokens: checked from each answer's usage), on the same GGUF file (SmolLM2-135M-Instruct Q4_1
by default), every engine with ``--threads`` threads:

* ``kvgen batch``: ``kvgen.batch.run`` in this process (what ``kvgen batch`` runs, without
  its file), ``--max-batch`` rows decoded together;
* ``kvgen serve x8``: ``kvgen serve --max-batch M`` as a subprocess, 8 client threads here
  posting the requests (non-streamed) until none is left;
* ``llama.cpp loop``: llama-cpp-python's ``Llama.create_chat_completion`` called for one
  request after the other (the loop a user writes today; optional peer);
* Ray (``--ray``, needs the ``ray`` extra): ``ray 2x1``, the requests through Ray Data with
  two kvgen.ray.BatchLines actors of 1 CPU (1 thread) each, on a local Ray of 2 CPUs, each
  round from the dataset's creation to its last row, the actors' start and model load
  included (what a job pays); against ``kvgen batch`` in one process with 2 threads. Each
  Ray round also prints where its time went: per actor, its start and model load, its
  calls' busy time and when its last call ended.

Engines are interleaved (A B C ..., then reversed) for --rounds rounds; per engine the median
completion tokens/s and its min-max. Targets: kvgen batch >= 4x llama-cpp-python's loop and
>= 0.9x the server's; Ray 2x1 >= 0.75x one process of 2 threads.
``--quick``: 16 requests of 8 tokens (Ray only with --ray).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import harness
import kvgen
from engines import kvgen_engine, llama_cpp_engine

OUT = harness.RESULTS / "bench_batch.json"
TOPICS = ["rain", "bread", "music", "ships", "maps", "bees", "stone", "clocks", "paper", "snow", "trains", "salt"]


def requests(count: int, max_tokens: int, banned: list[int]) -> list[dict]:
    """count Batch API chat lines; every answer is max_tokens long (EOS and end of turn banned)."""
    bias = {str(t): -100 for t in banned}
    return [{"custom_id": f"q{i}", "method": "POST", "url": "/v1/chat/completions",
             "body": {"messages": [{"role": "user", "content": f"Tell me one fact about {TOPICS[i % len(TOPICS)]} "
                                                               f"(question {i})."}],
                      "max_tokens": max_tokens, "temperature": 0, "logit_bias": bias}} for i in range(count)]


def checked(tokens: list[int], want: int) -> int:
    if any(t != want for t in tokens):
        raise RuntimeError(f"an answer was not {want} tokens long: {sorted(set(tokens))}")
    return sum(tokens)


def run_kvgen(model, reqs: list[dict], max_batch: int) -> float:
    from kvgen.batch import run

    start = time.perf_counter()
    lines = list(run(reqs, model, max_batch=max_batch))
    seconds = time.perf_counter() - start
    if any(line["error"] for line in lines):
        raise RuntimeError(next(line["error"] for line in lines if line["error"]))
    return checked([line["response"]["body"]["usage"]["completion_tokens"] for line in lines],
                   reqs[0]["body"]["max_tokens"]) / seconds


def post(port: int, body: dict) -> dict:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    connection.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {data[:200]!r}")
    return json.loads(data)


def run_server(port: int, reqs: list[dict], clients: int) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:  # each client takes the next request when its answer is in
        bodies = list(pool.map(lambda r: post(port, r["body"]), reqs))
    seconds = time.perf_counter() - start
    return checked([b["usage"]["completion_tokens"] for b in bodies], reqs[0]["body"]["max_tokens"]) / seconds


def run_llama(llm, reqs: list[dict]) -> float:
    start = time.perf_counter()
    tokens = []
    for r in reqs:
        body = r["body"]
        out = llm.create_chat_completion(messages=body["messages"], max_tokens=body["max_tokens"], temperature=0.0,
                                         logit_bias={int(t): float(b) for t, b in body["logit_bias"].items()})
        tokens.append(out["usage"]["completion_tokens"])
    seconds = time.perf_counter() - start
    return checked(tokens, reqs[0]["body"]["max_tokens"]) / seconds


def timed_lines():
    """kvgen.ray.BatchLines that appends (pid, constructor start and end, call start and end,
    rows) to the file ``log`` for each call: where a Ray round's time goes."""
    import numpy as np

    from kvgen.ray import BatchLines

    class TimedLines(BatchLines):
        log = ""

        def __init__(self, **kwargs):
            self.started = time.time()
            super().__init__(**kwargs)
            self.loaded = time.time()

        def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            begin = time.time()
            out = super().__call__(batch)
            with open(self.log, "a") as f:
                f.write(json.dumps([os.getpid(), self.started, self.loaded, begin, time.time(), len(out["result"])])
                        + "\n")
            return out

    return TimedLines


def ray_breakdown(log: str, start: float, end: float) -> str:
    """Per actor: when it started and had loaded the model, its calls' busy seconds, when its
    last call ended (seconds from the round's start)."""
    actors: dict[int, list] = {}
    with open(log) as f:
        for pid, started, loaded, begin, finish, _rows in map(json.loads, f):
            actors.setdefault(pid, [started, loaded, []])[2].append((begin, finish))
    parts = [f"start +{s - start:.1f} s, model +{m - s:.1f} s, {len(calls)} calls busy "
             f"{sum(b - a for a, b in calls):.1f} s, done +{max(b for _, b in calls) - start:.1f} s"
             for s, m, calls in sorted(actors.values())]
    return f"ray round {end - start:.1f} s: " + "; ".join(parts)


def run_ray(path: str, reqs: list[dict], max_batch: int) -> float:
    import tempfile

    from kvgen.ray import batch_runner

    udf = timed_lines()
    with tempfile.TemporaryDirectory() as folder:
        udf.log = os.path.join(folder, "calls.jsonl")
        runner = batch_runner("local", model=path, actors=2, cpus_per_actor=1, max_batch=max_batch, udf=udf)
        start = time.time()
        lines = list(runner(reqs))
        end = time.time()
        print("  " + ray_breakdown(udf.log, start, end))
    return checked([line["response"]["body"]["usage"]["completion_tokens"] for line in lines],
                   reqs[0]["body"]["max_tokens"]) / (end - start)


def start_server(path: str, threads: int, max_batch: int, port: int) -> subprocess.Popen:
    return harness.start_server(kvgen_engine.serve_command(path, threads, max_batch, "int8x2", port), port)


def main() -> int:
    parser = harness.cli(__doc__, OUT, threads=2, threads_help="threads of every engine (Ray: its 2 actors x 1)",
                         quick_help="16 requests of 8 tokens", rounds=5)
    parser.add_argument("--model", default=None, help="GGUF file (default: kvgen's default model)")
    parser.add_argument("--requests", type=int, default=None, help="chat requests per round (256; 16 with --quick)")
    parser.add_argument("--max-tokens", type=int, default=None, help="tokens per answer (32; 8 with --quick)")
    parser.add_argument("--max-batch", type=int, default=8, help="kvgen's rows decoded together (8)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients of kvgen serve (8)")
    parser.add_argument("--ray", action="store_true", help="also Ray 2x1 against one process of 2 threads")
    parser.add_argument("--no-ray", action="store_true", help="no Ray run (the default with --quick)")
    parser.add_argument("--no-llama", action="store_true", help="no llama-cpp-python loop")
    args = harness.parse_args(parser)
    count = args.requests or (16 if args.quick else 256)
    max_tokens = args.max_tokens or (8 if args.quick else 32)
    path = args.model or str(kvgen.default_model_path())
    kvgen_engine.set_threads(args.threads)
    model = kvgen.Model.load(path)
    banned = sorted({model.eos_token_id, model.end_of_turn_token_id} - {None})
    reqs = requests(count, max_tokens, banned)

    llama_cpp = None if args.no_llama else llama_cpp_engine.import_peer("llama.cpp loop")
    want_ray = (args.ray or not args.quick) and not args.no_ray
    ray_ok = False
    if want_ray:
        try:
            import ray.data  # noqa: F401

            ray_ok = True
        except ImportError:
            print('note: Ray is not installed (pip install "kvgen[ray]"): no Ray figures')
    env = harness.environment({"llama_cpp_python": llama_cpp.__version__ if llama_cpp else "missing",
                               **({"ray": __import__("ray").__version__} if ray_ok else {})},
                              {"kvgen": args.threads, "llama.cpp": args.threads, "ray": "2 actors x 1"})
    harness.print_environment(env)
    print(f"model: {path}; {count} chat requests of {max_tokens} tokens per round (greedy, EOS and end of turn "
          f"banned); kvgen max batch {args.max_batch}; {args.clients} server clients; {args.rounds} rounds")

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port_number = probe.getsockname()[1]
    server = start_server(path, args.threads, args.max_batch, port_number)
    engines = {"kvgen batch": lambda: run_kvgen(model, reqs, args.max_batch),
               "kvgen serve x8": lambda: run_server(port_number, reqs, args.clients)}
    if llama_cpp is not None:
        llm = llama_cpp_engine.load(path, args.threads, n_ctx=512)
        engines["llama.cpp loop"] = lambda: run_llama(llm, reqs)
    if ray_ok:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        from kvgen.ray import connect

        connect("local", num_cpus=2)
        engines["ray 2x1"] = lambda: run_ray(path, reqs, args.max_batch)
    rates: dict[str, list[float]] = {name: [] for name in engines}
    try:
        warm = requests(4, 4, banned)
        run_kvgen(model, warm, args.max_batch)
        run_server(port_number, warm, 4)
        table = harness.Table([harness.Column("round", 5, lambda r: str(r[0]))],
                              [harness.Column(name, max(14, len(name)), lambda r, n=name: f"{r[1][n]:.1f}")
                               for name in engines])
        print("completion tokens/s per round:")
        table.print_header()
        for r in range(args.rounds):
            order = list(engines) if r % 2 == 0 else list(engines)[::-1]
            row = {}
            for name in order:
                time.sleep(0.2)
                row[name] = engines[name]()
                rates[name].append(row[name])
            table.print_row((r, row))
    finally:
        server.terminate()
        server.wait(timeout=30)

    results = {name: {"tokens_per_s": statistics.median(v), "min": min(v), "max": max(v), "rounds": v}
               for name, v in rates.items()}
    print("\nmedian completion tokens/s [min-max]:")
    for name, s in results.items():
        print(f"  {name:<16} {s['tokens_per_s']:8.1f} [{s['min']:.1f}-{s['max']:.1f}]")
    # ratios per round (the engines of one round ran back to back), then their median
    def ratio(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(rates[a], rates[b]))

    report = {"environment": env, "model": path, "requests": count, "max_tokens": max_tokens,
              "max_batch": args.max_batch, "clients": args.clients, "rounds": args.rounds, "results": results,
              "targets": []}
    print("\ntargets (median of per-round ratios):")
    if "llama.cpp loop" in rates:
        x = ratio("kvgen batch", "llama.cpp loop")
        report["targets"].append(harness.target("kvgen batch >= 4x llama-cpp-python's create_chat_completion loop",
                                                x, x >= 4, f"{x:.2f}x"))
    x = ratio("kvgen batch", "kvgen serve x8")
    report["targets"].append(harness.target(f"kvgen batch within 10% of kvgen serve with {args.clients} clients",
                                            x, x >= 0.9, f"{x:.2f}x"))
    if "ray 2x1" in rates:
        x = ratio("ray 2x1", "kvgen batch")
        report["targets"].append(harness.target("Ray Data 2 actors x 1 thread within 25% of one process x 2 threads",
                                                x, x >= 0.75, f"{x:.2f}x"))
    harness.write_outputs(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
