"""``/metrics`` of ``kvgen serve``: Prometheus' text format (``prometheus_client``), named as
vLLM names its metrics, with ``kvgen:`` in place of ``vllm:``.

- ``kvgen:num_requests_running`` / ``kvgen:num_requests_waiting``: engine requests (one per
  prompt, or per prompt and choice under greedy ``n``) that are generating tokens / that are
  queued or in prefill (no token yet);
- ``kvgen:num_slots`` / ``kvgen:num_slots_in_use``: the engine's KV-cache rows;
- ``kvgen:prompt_tokens_total`` / ``kvgen:generation_tokens_total``: tokens prefilled and generated;
- ``kvgen:prefix_cache_queries_total`` / ``kvgen:prefix_cache_hits_total``: prompt tokens
  looked up in the prefix cache / found there (kvgen.generation.engine);
- ``kvgen:request_success_total{finished_reason}``: finished HTTP requests by their first
  choice's finish reason; ``kvgen:request_failure_total{status}``: requests answered with an error;
- histograms ``kvgen:time_to_first_token_seconds`` (arrival to the first generated token),
  ``kvgen:inter_token_latency_seconds`` (between a choice's steps), ``kvgen:e2e_request_latency_seconds``,
  ``kvgen:request_prompt_tokens`` and ``kvgen:request_generation_tokens``.

Each server has its own registry (several apps may live in one process).
"""

from __future__ import annotations

import time
from typing import Callable, Optional

#: vLLM's buckets (seconds)
_TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
_ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
                40.0, 80.0)
_E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
                480.0, 960.0, 1920.0, 7680.0)
_TOKEN_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """The server's counters, gauges and histograms; ``render()`` is the /metrics body."""

    def __init__(self, slots: Callable[[], int], slots_in_use: Callable[[], int],
                 prefix_cache: Optional[Callable[[], tuple[int, int]]] = None):
        """``prefix_cache()``: the engine's (prompt tokens looked up, tokens found) so far."""
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
        from prometheus_client.core import CounterMetricFamily

        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.running = 0
        self.waiting = 0
        Gauge("kvgen:num_requests_running", "Engine requests generating tokens.",
              registry=r).set_function(lambda: self.running)
        Gauge("kvgen:num_requests_waiting", "Engine requests queued or in prefill (no token yet).",
              registry=r).set_function(lambda: self.waiting)
        Gauge("kvgen:num_slots", "KV-cache rows of the engine (--max-batch).", registry=r).set_function(slots)
        Gauge("kvgen:num_slots_in_use", "KV-cache rows in use.", registry=r).set_function(slots_in_use)
        self.prompt_tokens = Counter("kvgen:prompt_tokens", "Prompt tokens prefilled.", registry=r)
        self.generation_tokens = Counter("kvgen:generation_tokens", "Tokens generated.", registry=r)
        self.success = Counter("kvgen:request_success", "Requests finished, by finish reason.", ["finished_reason"],
                               registry=r)
        self.failure = Counter("kvgen:request_failure", "Requests answered with an error, by HTTP status.",
                               ["status"], registry=r)
        self.ttft = Histogram("kvgen:time_to_first_token_seconds", "Seconds from a request's arrival to its first "
                              "generated token.", buckets=_TTFT_BUCKETS, registry=r)
        self.itl = Histogram("kvgen:inter_token_latency_seconds", "Seconds between a choice's successive tokens.",
                             buckets=_ITL_BUCKETS, registry=r)
        self.e2e = Histogram("kvgen:e2e_request_latency_seconds", "Seconds from a request's arrival to its answer.",
                             buckets=_E2E_BUCKETS, registry=r)
        self.request_prompt = Histogram("kvgen:request_prompt_tokens", "Prompt tokens per request.",
                                        buckets=_TOKEN_BUCKETS, registry=r)
        self.request_generation = Histogram("kvgen:request_generation_tokens", "Generated tokens per request.",
                                            buckets=_TOKEN_BUCKETS, registry=r)

        if prefix_cache is not None:
            class PrefixCache:
                def collect(self):
                    queries, hits = prefix_cache()
                    yield CounterMetricFamily("kvgen:prefix_cache_queries", "Prompt tokens looked up in the prefix "
                                              "cache.", value=queries)
                    yield CounterMetricFamily("kvgen:prefix_cache_hits", "Prompt tokens found in the prefix cache "
                                              "(not prefilled again).", value=hits)

                def describe(self):
                    return []

            r.register(PrefixCache())

    def render(self) -> bytes:
        """The text format of every metric."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


class RequestTimer:
    """One HTTP request's share of the metrics: its engine requests waiting, then running, its
    first token and the time between tokens. ``metrics`` None: counts nothing."""

    def __init__(self, metrics: Optional[Metrics], engine_requests: int, prompt_tokens: int):
        self.metrics = metrics
        self.arrival = time.perf_counter()
        self.pending = engine_requests      # submitted, no token yet
        self.generating = 0
        self.first = True
        self.last: dict[int, float] = {}    # engine request -> the time of its last step
        self.prompt_tokens = prompt_tokens
        self.closed = False
        if metrics is not None:
            metrics.waiting += engine_requests

    def step(self, request: int, tokens: int, done: bool) -> None:
        """Engine request ``request`` made a step of ``tokens`` tokens (over its rows)."""
        m = self.metrics
        if m is None or self.closed:
            return
        now = time.perf_counter()
        if tokens:
            m.generation_tokens.inc(tokens)
            if self.first:
                self.first = False
                m.ttft.observe(now - self.arrival)
            if request in self.last:
                m.itl.observe(now - self.last[request])
            else:
                self.pending -= 1
                self.generating += 1
                m.waiting -= 1
                m.running += 1
            self.last[request] = now
        if done:
            if request in self.last:
                self.generating -= 1
                m.running -= 1
            else:
                self.pending -= 1
                m.waiting -= 1
            self.last[request] = now

    def finish(self, finish_reason: Optional[str], generated: int, failed: bool = False) -> None:
        """The request is answered, abandoned or ``failed`` (its error is counted where it is answered)."""
        m = self.metrics
        if m is None or self.closed:
            return
        self.closed = True
        m.waiting -= self.pending
        m.running -= self.generating
        m.prompt_tokens.inc(self.prompt_tokens)
        if failed:
            return
        m.success.labels(finished_reason=finish_reason or "abort").inc()
        m.e2e.observe(time.perf_counter() - self.arrival)
        m.request_prompt.observe(self.prompt_tokens)
        m.request_generation.observe(generated)
