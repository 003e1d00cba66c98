"""Chat-template control: ``--chat-template`` (a file or the template's text) for ``kvgen
generate``, ``serve`` and ``batch`` gives a model without a template (a base checkpoint) a chat;
``chat_template_kwargs`` reach the template per request (Qwen3's ``enable_thinking``), as
transformers' ``apply_chat_template(**kwargs)`` renders them; a model without a template is a
400 that names it by its served name, never its file's path."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import openai
import pytest
import transformers
from embedding_models import random_qwen3, save_embedding_directory
from fastapi.testclient import TestClient

import kvgen
from kvgen.cli import main
from kvgen.server.app import create_app

QWEN3_TEMPLATE = Path(__file__).parents[1] / "data" / "qwen3_style_chat_template.jinja"
CHATML = ("{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
MESSAGES = [{"role": "user", "content": "Hi there"}]


@pytest.fixture(scope="module")
def base_directory(tmp_path_factory, smollm2_file):
    """A tiny random base checkpoint whose tokenizer files hold no chat template."""
    directory = save_embedding_directory(random_qwen3(), tmp_path_factory.mktemp("base"), smollm2_file, None)
    config = json.loads((directory / "tokenizer_config.json").read_text())
    del config["chat_template"]
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    return directory


@pytest.fixture(scope="module")
def template_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("template") / "chatml.jinja"
    path.write_text(CHATML)
    return path


@pytest.fixture(scope="module")
def hf_tokenizer(base_directory):
    return transformers.AutoTokenizer.from_pretrained(base_directory)


def test_generate_chats_with_a_base_model_given_a_template(base_directory, template_file, hf_tokenizer, capsys):
    assert main(["generate", "--chat", "Hi there", "-m", str(base_directory), "-n", "3", "--no-summary"]) == 2
    assert "no chat template" in capsys.readouterr().err
    for given in (str(template_file), CHATML):  # a file, or the template's text
        assert main(["generate", "--chat", "Hi there", "-m", str(base_directory), "--chat-template", given, "-n", "4",
                     "--no-summary"]) == 0
        printed = capsys.readouterr().out
        model = kvgen.Model.load(base_directory)
        model.chat_template = CHATML
        prompt = hf_tokenizer.apply_chat_template(MESSAGES, chat_template=CHATML, add_generation_prompt=True,
                                                  tokenize=True, return_dict=False)
        assert model.encode_chat(MESSAGES) == list(prompt)
        assert printed == kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=4)).chat(MESSAGES) + "\n"


@pytest.mark.parametrize("given, message", [("missing.jinja", "--chat-template missing.jinja"),
                                            ("{{ unclosed", "--chat-template: chat template"),
                                            ("{% for x in %}", "--chat-template: chat template")])
def test_a_bad_template_option_is_one_line_naming_it(base_directory, capsys, given, message):
    assert main(["generate", "--chat", "Hi", "-m", str(base_directory), "--chat-template", given, "-n", "2",
                 "--no-summary"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kvgen: error: ") and message in err and len(err.strip().splitlines()) == 1


def test_batch_takes_the_template(base_directory, template_file, tmp_path):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Hi there\n")
    for flags, expect_error in (([], True), (["--chat-template", str(template_file)], False)):
        out = tmp_path / f"out{len(flags)}.jsonl"
        assert main(["batch", str(prompts), "-o", str(out), "-m", str(base_directory), "--text", "--max-tokens", "3",
                     "--no-progress", *flags]) == 0
        (line,) = [json.loads(x) for x in out.read_text().splitlines()]
        assert (line["error"] is not None or line["response"]["status_code"] != 200) == expect_error, line
        if not expect_error:
            assert line["response"]["body"]["usage"]["completion_tokens"] == 3


def test_serve_without_a_template_names_the_served_model_not_its_path(base_directory, template_file):
    model = kvgen.Model.load(base_directory)
    with TestClient(create_app(model, max_batch=1, model_name="tiny-base"), base_url="http://localhost") as http:
        for path, body in (("/v1/chat/completions", {"messages": MESSAGES, "max_tokens": 2}),
                           ("/tokenize", {"messages": MESSAGES})):
            answer = http.post(path, json=body)
            assert answer.status_code == 400
            message = answer.json()["error"]["message"]
            assert "'tiny-base' has no chat template" in message and str(base_directory) not in message
    model.chat_template = CHATML  # what kvgen serve --chat-template sets
    with TestClient(create_app(model, max_batch=1, model_name="tiny-base"), base_url="http://localhost") as http:
        client = openai.OpenAI(base_url="http://localhost/v1", api_key="none", http_client=http, max_retries=0)
        out = client.chat.completions.create(model="tiny-base", messages=MESSAGES, max_tokens=3, temperature=0)
        assert out.usage.completion_tokens == 3 and out.choices[0].finish_reason == "length"


def test_chat_template_kwargs_reach_the_template(local_app, smollm2_model):
    model = copy.copy(smollm2_model)
    model.chat_template = QWEN3_TEMPLATE.read_text()
    hf = transformers.PreTrainedTokenizerFast(tokenizer_object=model._need_tokenizer())

    def expected(**kwargs) -> list[int]:
        text = hf.apply_chat_template(MESSAGES, chat_template=model.chat_template, add_generation_prompt=True,
                                      tokenize=False, **kwargs)
        return model.encode(text, add_special_tokens=False)

    thinking, not_thinking = expected(), expected(enable_thinking=False)
    assert thinking != not_thinking
    with TestClient(create_app(model, max_batch=1), base_url="http://localhost") as http:
        for kwargs, ids in ((None, thinking), ({"enable_thinking": False}, not_thinking)):
            body = {"messages": MESSAGES, **({"chat_template_kwargs": kwargs} if kwargs else {})}
            assert http.post("/tokenize", json=body).json()["tokens"] == ids
            answer = http.post("/v1/chat/completions", json={**body, "max_tokens": 1}).json()
            assert answer["usage"]["prompt_tokens"] == len(ids)
        for kwargs in ({"add_generation_prompt": False}, {"tools": []}, {"not a name": 1}):
            answer = http.post("/v1/chat/completions", json={"messages": MESSAGES, "max_tokens": 1,
                                                             "chat_template_kwargs": kwargs})
            error = answer.json()["error"]
            assert answer.status_code == 400 and "chat_template_kwargs" in error["param"], error


def test_an_assistant_s_reasoning_in_the_history_reaches_the_template(smollm2_model):
    """Qwen3's template renders the reasoning of the assistant turn after the last query
    (its ``reasoning_content``), as transformers renders the same messages."""
    model = copy.copy(smollm2_model)
    model.chat_template = QWEN3_TEMPLATE.read_text()
    history = MESSAGES + [{"role": "assistant", "content": "Hello.", "reasoning_content": "A greeting: greet back."}]
    hf = transformers.PreTrainedTokenizerFast(tokenizer_object=model._need_tokenizer())
    text = hf.apply_chat_template(history, chat_template=model.chat_template, add_generation_prompt=False,
                                  tokenize=False)
    assert "A greeting: greet back." in text
    with TestClient(create_app(model, max_batch=1), base_url="http://localhost") as http:
        answer = http.post("/tokenize", json={"messages": history, "add_generation_prompt": False}).json()
    assert answer["tokens"] == model.encode(text, add_special_tokens=False)
