"""kvgen.ray on a real local Ray (2 CPUs, offline): Ray Data with 2 actors gives generate_batch's
results in input order, greedy and seeded; an actor killed mid-job is restarted by Ray and
no row is lost or duplicated; ``kvgen batch --ray local`` writes the file ``kvgen batch`` writes;
Ray Data's HTTP processor against two ``kvgen serve`` replicas answers as ``kvgen batch`` does.
Skipped only when the ``ray`` extra is not installed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

import kvgen  # noqa: E402
import kvgen.ray  # noqa: E402
from kvgen.batch import run  # noqa: E402

ROWS = 200
WORDS = ["red", "blue", "green", "gold", "gray", "pink", "teal", "black", "white", "brown"]


@pytest.fixture(scope="module")
def local_ray():
    # offline: no usage report; no token authentication (the subprocess below joins this Ray by address)
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=128 << 20)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    yield ray
    ray.shutdown()


def prompts() -> list[str]:
    return [f"My favourite colour is {WORDS[i % 10]} and number {i} because" for i in range(ROWS)]


def seeded(i: int) -> bool:
    return i % 2 == 1  # odd rows sample with their own seed, even rows are greedy


@pytest.fixture(scope="module")
def reference(smollm2_model) -> list[str]:
    """generate_batch on the same prompts and settings."""
    model = smollm2_model
    configs = [kvgen.GenerationConfig(max_new_tokens=3, do_sample=True, temperature=0.9, top_p=1.0, top_k=0,
                                      seed=1000 + i) if seeded(i) else kvgen.GenerationConfig(max_new_tokens=3)
               for i in range(ROWS)]
    texts = kvgen.Generator(model).generate_batch(prompts(), configs, max_batch=8)
    assert len(set(texts)) > ROWS // 5  # the rows differ: a mix-up of rows would show
    return texts


def rows() -> list[dict]:
    return [{"id": i, "prompt": p, "temperature": 0.9 if seeded(i) else 0.0, "seed": 1000 + i if seeded(i) else None}
            for i, p in enumerate(prompts())]


def dataset(local_ray, count: int = ROWS, blocks: int = 20):
    ds = local_ray.data.from_items(rows()[:count], override_num_blocks=blocks)
    return ds.map_batches(kvgen.ray.Generate, fn_constructor_kwargs={"max_tokens": 3, "max_batch": 8},
                          compute=local_ray.data.ActorPoolStrategy(size=2), num_cpus=1, batch_size=10,
                          batch_format="numpy")


def test_the_udfs_load_the_model_with_the_kv_cache_dtype_asked_for(smollm2_model):
    """Generate and BatchLines (built here, outside Ray) pass kv_cache_dtype to Model.load. With
    threads given, nothing asks Ray for the actor's CPUs (which would start a Ray here)."""
    before = kvgen.get_num_threads()
    try:
        for udf in (kvgen.ray.Generate(smollm2_model.path, threads=1, kv_cache_dtype="int8", max_tokens=2),
                    kvgen.ray.BatchLines(smollm2_model.path, threads=1, kv_cache_dtype="int8")):
            assert udf.model.kv_cache_dtype == "int8"
        assert kvgen.ray.Generate(smollm2_model.path, threads=1).model.kv_cache_dtype == "auto"
        assert not ray.is_initialized()
    finally:
        kvgen.set_num_threads(before)


def test_two_actors_give_generate_batch_s_results_in_input_order(local_ray, reference):
    out = dataset(local_ray).take_all()
    assert [r["id"] for r in out] == list(range(ROWS))
    bad = [r for r in out if r["error"] is not None or r["completion_tokens"] < 1]
    assert not bad, bad[:3]
    assert [r["generated_text"] for r in out] == reference


def _map_workers() -> list[int]:
    """The pids of Ray Data's map actors (their process title is ray::MapWorker(...))."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                title = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if title.startswith(b"ray::MapWorker"):
                found.append(int(entry.name))
    return found


def test_an_actor_killed_mid_job_is_retried_with_no_row_lost_or_duplicated(local_ray, reference):
    out, killed = [], None
    for row in dataset(local_ray, count=ROWS // 2, blocks=20).iter_rows():
        out.append(row)
        if killed is None and len(out) == 10:
            workers = _map_workers()
            assert workers, "no Ray Data actor process found"
            killed = workers[0]
            os.kill(killed, signal.SIGKILL)
    assert killed is not None and not Path(f"/proc/{killed}").exists()
    assert [r["id"] for r in out] == list(range(ROWS // 2))  # each row once, in order
    assert [r["generated_text"] for r in out] == reference[:ROWS // 2]


def test_kvgen_batch_with_ray_writes_what_kvgen_batch_writes(tmp_path, local_ray, smollm2_model):
    requests = [{"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
                 "body": {"messages": [{"role": "user", "content": f"Name a {WORDS[i % 10]} thing."}],
                          "max_tokens": 6, "temperature": 0.7, "seed": i}} for i in range(12)]
    requests.append({"custom_id": "bad", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": 3}})
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in requests))
    output = tmp_path / "out.jsonl"
    address = local_ray.get_runtime_context().gcs_address
    done = subprocess.run([sys.executable, "-m", "kvgen", "batch", str(source), "-o", str(output), "--ray", address,
                           "--ray-actors", "2", "--max-batch", "4", "--no-progress"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert sorted(r["custom_id"] for r in lines) == sorted(r["custom_id"] for r in requests)
    expected = {r["custom_id"]: r for r in run(requests, smollm2_model, max_batch=4)}
    for line in lines:
        want = expected[line["custom_id"]]
        assert line["error"] == want["error"]
        body, want_body = line["response"]["body"], want["response"]["body"]
        assert {k: v for k, v in body.items() if k not in ("id", "created")} == \
            {k: v for k, v in want_body.items() if k not in ("id", "created")}


def test_ray_serve_runs_the_openai_app_in_two_replicas_behind_one_route(local_ray, smollm2_model):
    serve = pytest.importorskip("ray.serve")
    import urllib.request

    from serve_process import free_port

    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        serve.run(kvgen.ray.openai_deployment(replicas=2, max_batch=4), name="kvgen", route_prefix="/")
        app = serve.status().applications["kvgen"]
        replicas = app.deployments["kvgen-openai"].replica_states
        assert replicas.get("RUNNING") == 2, replicas
        requests = [{"custom_id": f"s{i}", "method": "POST", "url": "/v1/chat/completions",
                     "body": {"messages": [{"role": "user", "content": f"Name a {WORDS[i]} fruit."}],
                              "max_tokens": 6, "temperature": 0}} for i in range(4)]
        expected = {r["custom_id"]: r["response"]["body"] for r in run(requests, smollm2_model, max_batch=4)}
        for request in requests:
            call = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                          data=json.dumps(request["body"]).encode(),
                                          headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(call, timeout=120) as answer:
                body = json.load(answer)
            assert body["choices"] == expected[request["custom_id"]]["choices"]
            assert body["usage"] == expected[request["custom_id"]]["usage"]
    finally:
        serve.shutdown()


def _generated_tokens(url: str) -> float:
    """kvgen:generation_tokens_total of a kvgen serve at url (its /metrics)."""
    import re
    import urllib.request

    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    return float(re.search(r"^kvgen:generation_tokens_total (\S+)$", text, re.M).group(1))


def test_http_processor_against_two_kvgen_serve_replicas_gives_kvgen_batch_s_results(tmp_path, local_ray,
                                                                                      smollm2_model):
    """The README's recipe: Ray Data's HttpRequestProcessorConfig, one processor per replica, on
    this 2-CPU Ray (the HTTP workers and the map tasks take a tenth of a CPU each, so the read
    tasks are not starved); every row's answer equals kvgen batch's for the same body."""
    pytest.importorskip("ray.data.llm")
    from ray.data.llm import HttpRequestProcessorConfig, build_processor
    from serve_process import ServeProcess

    replicas = [ServeProcess(tmp_path / f"serve{k}.log", "--max-batch", "4", "--threads", "1") for k in range(2)]
    try:
        urls = [f"{r.url}/v1/chat/completions" for r in replicas]
        count = 16

        def payload(row):
            return {"messages": [{"role": "user", "content": f"Name a {WORDS[row['id'] % 10]} thing."}],
                    "max_tokens": 8, "temperature": 0}

        def processor(url):
            return build_processor(
                HttpRequestProcessorConfig(url=url, concurrency=1, batch_size=1, http_request_stage={"num_cpus": 0.1}),
                preprocess=lambda row: {"id": row["id"], "payload": payload(row)},
                postprocess=lambda row: {"id": row["id"],
                                         "text": row["http_response"]["choices"][0]["message"]["content"],
                                         "finish_reason": row["http_response"]["choices"][0]["finish_reason"],
                                         "completion_tokens": row["http_response"]["usage"]["completion_tokens"]},
                preprocess_map_kwargs={"num_cpus": 0.1}, postprocess_map_kwargs={"num_cpus": 0.1})

        from ray.data.expressions import col

        ds = local_ray.data.from_items([{"id": i} for i in range(count)], override_num_blocks=2)
        parts = [processor(url)(ds.filter(expr=col("id") % len(urls) == k)) for k, url in enumerate(urls)]
        out = sorted(parts[0].union(*parts[1:]).take_all(), key=lambda r: r["id"])
        served = [_generated_tokens(r.url) for r in replicas]  # each replica answered its share
        assert all(n > 0 for n in served) and sum(served) == sum(r["completion_tokens"] for r in out), served
        assert [r["id"] for r in out] == list(range(count))
        requests = [{"custom_id": str(i), "method": "POST", "url": "/v1/chat/completions", "body": payload({"id": i})}
                    for i in range(count)]
        expected = [line["response"]["body"] for line in run(requests, smollm2_model, max_batch=4, ordered=True)]
        assert [(r["text"], r["finish_reason"], r["completion_tokens"]) for r in out] == \
            [(b["choices"][0]["message"]["content"], b["choices"][0]["finish_reason"], b["usage"]["completion_tokens"])
             for b in expected]
        assert len({r["text"] for r in out}) > 3  # the rows differ: a mix-up of rows would show
    finally:
        for replica in replicas:
            replica.stop()
