"""kvgen on a Ray cluster through Ray Data (``pip install "kvgen[ray]"``).

Two class-based UDFs for ``Dataset.map_batches``; each actor loads the model once, and its
forward pass runs ``num_cpus`` threads (the CPUs Ray gave the actor)::

    import ray, kvgen.ray
    ds = ray.data.read_json("prompts.jsonl")          # rows: {"prompt": ...} or {"messages": [...]}
    ds = ds.map_batches(kvgen.ray.Generate, fn_constructor_kwargs={"max_tokens": 64},
                        compute=ray.data.ActorPoolStrategy(size=4), num_cpus=2, batch_size=32)
    ds.write_json("out/")                             # + generated_text, finish_reason, ...

- ``Generate``: rows carry a ``prompt`` (text) or ``messages`` (chat; a list or its JSON
  text), and may carry their own settings: ``max_tokens``, ``temperature``, ``top_p``,
  ``top_k``, ``min_p``, ``seed``, ``stop``, ``json_schema`` (an object or its JSON text),
  which override the constructor's. Output columns: ``generated_text``, ``finish_reason``,
  ``prompt_tokens``, ``completion_tokens`` and ``error`` (None, or why the row failed: a bad
  row fails alone). Greedy unless a temperature (or top_p / top_k / min_p) is set.
- ``BatchLines``: a ``request`` column of OpenAI Batch API lines (JSON text) becomes a
  ``result`` column of result lines, as ``kvgen batch`` writes them (kvgen.batch.run).

Both send each row through kvgen.batch.run, so a row gets the checks and the body that
``kvgen serve`` gives the same request. A row's tokens depend on that row alone: greedy rows
always, sampled rows when they carry a seed (the engine keys each draw by seed and step), so
results do not depend on how Ray splits the rows into batches and actors.

``batch_runner(address)`` runs Batch API lines on a cluster for ``kvgen batch --ray``.
``openai_deployment()`` is the ``kvgen serve`` app as a Ray Serve deployment of N replicas
behind one route (``pip install "ray[serve]"``).
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Iterable, Iterator, Optional

import numpy as np

#: Per-row settings that ``Generate`` reads from a column of that name (the request body's fields).
ROW_SETTINGS = ("max_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "json_schema")
#: What ``Generate`` adds to each row.
OUTPUT_COLUMNS = ("generated_text", "finish_reason", "prompt_tokens", "completion_tokens", "error")


def _actor_threads() -> int:
    """The CPUs Ray assigned to this actor (1 outside Ray)."""
    try:
        import ray

        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1)
    except Exception:  # noqa: BLE001 - not in a Ray worker
        cpus = 1
    return max(1, int(math.floor(cpus)))


def _load(model: Optional[str], threads: Optional[int], activations: Optional[str],
          kv_cache_dtype: Optional[str] = None):
    import kvgen

    kvgen.set_num_threads(threads or _actor_threads())
    modes = {"activations": activations, "kv_cache_dtype": kv_cache_dtype}
    return kvgen.Model.load(model or kvgen.default_model_path(), **{k: v for k, v in modes.items() if v})


def _plain(value: Any) -> Any:
    """A column value as plain Python (numpy scalars and arrays as int, float, list); None for missing."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class _Actor:
    def __init__(self, model: Optional[str], max_batch: int, threads: Optional[int], activations: Optional[str],
                 kv_cache_dtype: Optional[str] = None):
        self.model = _load(model, threads, activations, kv_cache_dtype)
        self.max_batch = max_batch

    def _run(self, lines: list[dict]) -> list[dict]:
        from kvgen.batch import run

        return list(run(lines, self.model, max_batch=self.max_batch, ordered=True))


class Generate(_Actor):
    """Ray Data UDF: a prompt or messages per row in, the generated text and its counts out
    (see the module docstring). ``max_tokens`` and the other keyword settings are the rows'
    defaults; ``system``: a system message before each chat; ``model``: a GGUF file or
    Hugging Face directory that every node can read (default: kvgen's default model);
    ``activations`` and ``kv_cache_dtype``: as kvgen.Model.load's."""

    def __init__(self, model: Optional[str] = None, *, max_batch: int = 8, threads: Optional[int] = None,
                 activations: Optional[str] = None, kv_cache_dtype: Optional[str] = None,
                 system: Optional[str] = None, **settings: Any):
        unknown = sorted(set(settings) - set(ROW_SETTINGS))
        if unknown:
            raise TypeError(f"unknown setting(s) {', '.join(unknown)}; the settings are {', '.join(ROW_SETTINGS)}")
        super().__init__(model, max_batch, threads, activations, kv_cache_dtype)
        self.settings, self.system = settings, system

    def _line(self, i: int, row: dict) -> dict:
        from kvgen.batch.files import body_settings, prompt_request

        values = {**self.settings, **{k: row[k] for k in ROW_SETTINGS if row.get(k) is not None}}
        for name in ("max_tokens", "top_k", "seed"):  # an int column with gaps comes as floats
            if isinstance(values.get(name), float) and values[name].is_integer():
                values[name] = int(values[name])
        if isinstance(values.get("json_schema"), str):
            values["json_schema"] = json.loads(values["json_schema"])
        if isinstance(values.get("stop"), str):
            values["stop"] = [values["stop"]]
        if values.get("temperature") is None and all(values.get(k) is None for k in ("top_p", "top_k", "min_p")):
            values["temperature"] = 0.0  # greedy unless the row or the defaults ask for sampling
        settings = body_settings(**values)
        messages = row.get("messages")
        if isinstance(messages, str):
            messages = json.loads(messages)
        if messages is not None:
            return prompt_request(f"row-{i}", messages, settings, chat=True, system=self.system)
        return prompt_request(f"row-{i}", row.get("prompt"), settings, chat=False)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        columns = list(batch)
        size = len(batch[columns[0]]) if columns else 0
        rows = [{name: _plain(batch[name][i]) for name in columns} for i in range(size)]
        lines, failed = [], {}
        for i, row in enumerate(rows):
            try:
                lines.append(self._line(i, row))
            except (ValueError, TypeError) as e:  # a schema that is not JSON, a setting of the wrong kind
                failed[i] = f"{type(e).__name__}: {e}"
        results = {int(r["custom_id"][4:]): r for r in self._run(lines)}
        out: dict[str, list] = {name: [] for name in OUTPUT_COLUMNS}
        for i in range(size):
            result = results.get(i)
            error = failed.get(i) or (result["error"]["message"] if result and result["error"] else None)
            if error is not None:
                for name, value in zip(OUTPUT_COLUMNS, (None, None, 0, 0, error)):
                    out[name].append(value)
                continue
            assert result is not None
            body = result["response"]["body"]
            choice = body["choices"][0]
            text = choice["message"]["content"] if "message" in choice else choice["text"]
            for name, value in zip(OUTPUT_COLUMNS, (text, choice["finish_reason"], body["usage"]["prompt_tokens"],
                                                    body["usage"]["completion_tokens"], None)):
                out[name].append(value)
        return {**batch, **{name: np.array(values, dtype=object) for name, values in out.items()}}


class BatchLines(_Actor):
    """Ray Data UDF: a ``request`` column of OpenAI Batch API request lines (JSON text) in, a
    ``result`` column of Batch API result lines (JSON text) out, as ``kvgen batch`` writes them."""

    def __init__(self, model: Optional[str] = None, *, max_batch: int = 8, threads: Optional[int] = None,
                 activations: Optional[str] = None, kv_cache_dtype: Optional[str] = None):
        super().__init__(model, max_batch, threads, activations, kv_cache_dtype)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        results = self._run([json.loads(text) for text in batch["request"]])
        return {"result": np.array([json.dumps(r, ensure_ascii=False) for r in results], dtype=object)}


def connect(address: str, *, num_cpus: Optional[int] = None) -> None:
    """``ray.init`` for ``address``: ``local`` starts a Ray of ``num_cpus`` CPUs here, ``auto``
    joins the running one, anything else is a cluster address (``ray://host:10001`` or
    ``host:6379``). Usage statistics are off."""
    import os

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise ImportError('kvgen batch --ray needs Ray Data: pip install "kvgen[ray]"') from None
    if ray.is_initialized():
        return
    import logging

    logging.getLogger("ray.data").setLevel(logging.WARNING)
    if address == "local":
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    else:
        ray.init(address=address, log_to_driver=False)


def batch_runner(address: str, *, model: Optional[str] = None, actors: int = 2, cpus_per_actor: int = 1,
                 max_batch: int = 8, activations: Optional[str] = None, kv_cache_dtype: Optional[str] = None,
                 batch_size: Optional[int] = None,
                 udf: Optional[type] = None) -> Callable[[Iterable[dict]], Iterator[dict]]:
    """A runner for kvgen.batch.run_job: Batch API lines through Ray Data on ``address`` (see
    connect), ``actors`` BatchLines actors of ``cpus_per_actor`` CPUs each; results as the
    blocks finish (``batch_size`` lines per actor call, default 4 x max_batch, fewer where
    that leaves an actor without a call). ``udf``: a
    subclass of BatchLines to run instead (one that also records timings, say); its extra
    output columns are dropped."""
    udf = udf or BatchLines
    if not (isinstance(udf, type) and issubclass(udf, BatchLines)):
        raise TypeError(f"udf must be a subclass of kvgen.ray.BatchLines, got {udf!r}")
    if actors < 1 or cpus_per_actor < 1:
        raise ValueError(f"--ray-actors and --ray-cpus must be at least 1, got {actors} and {cpus_per_actor}")

    def runner(requests: Iterable[dict]) -> Iterator[dict]:
        connect(address, num_cpus=actors * cpus_per_actor)
        import ray.data

        ray.data.DataContext.get_current().enable_progress_bars = False  # kvgen batch shows its own
        items = [{"request": json.dumps(r, ensure_ascii=False)} for r in requests]
        # calls of 4 x max_batch lines, but at least one call per actor: a small job keeps every actor busy
        size = batch_size or max(1, min(4 * max_batch, -(-len(items) // actors)))
        ds = ray.data.from_items(items, override_num_blocks=max(1, min(len(items), 4 * actors, -(-len(items) // size))))
        ds = ds.map_batches(udf, fn_constructor_kwargs={"model": model, "max_batch": max_batch,
                                                               "activations": activations,
                                                               "kv_cache_dtype": kv_cache_dtype},
                            # one call at a time per actor: the first actor up does not queue the others' calls
                            compute=ray.data.ActorPoolStrategy(size=actors, max_tasks_in_flight_per_actor=1),
                            num_cpus=cpus_per_actor, batch_size=size,
                            batch_format="numpy")
        for row in ds.iter_rows():
            yield json.loads(row["result"])

    return runner


def openai_deployment(model: Optional[str] = None, *, replicas: int = 2, cpus_per_replica: int = 1,
                      max_batch: int = 8, activations: Optional[str] = None,
                      kv_cache_dtype: Optional[str] = None, allowed_hosts: tuple[str, ...] = ()):
    """The OpenAI-compatible app of ``kvgen serve`` (kvgen.server.create_app) as a Ray Serve
    application of ``replicas`` replicas behind one route; each replica loads ``model`` once
    and runs ``cpus_per_replica`` threads. Run it with ``serve.run(openai_deployment(),
    route_prefix="/")``; clients use ``http://HOST:8000/v1``. ``allowed_hosts``: Host names
    that clients use besides localhost (see kvgen serve --allowed-hosts)."""
    from ray import serve

    def build_app():
        from kvgen.server import create_app

        loaded = _load(model, cpus_per_replica, activations, kv_cache_dtype)
        return create_app(loaded, max_batch=max_batch, allowed_hosts=allowed_hosts)

    deployment = serve.deployment(serve.ingress(build_app)(), name="kvgen-openai", num_replicas=replicas,
                                  ray_actor_options={"num_cpus": cpus_per_replica})
    return deployment.bind()
