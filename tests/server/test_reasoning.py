"""Reasoning output: ``reasoning_content`` apart from ``content`` in chat messages and stream
deltas (the split exactly at ``<think>`` / ``</think>``, also when a marker is spelled over
several tokens), never in the content nor in the constrained answer (tool calls, JSON schema),
``max_tokens`` counting both; reasoning items of /v1/responses and thinking blocks of
/v1/messages.

The model is a tiny random Qwen3 with SmolLM2's tokenizer plus Qwen3's ``<think>`` and
``</think>`` tokens, and a Qwen3-style template that thinks (tests/data). A random model does
not write ``<think>`` of itself, so the tests script it through the request: a ``regex``
constraint that spells a reasoning block (kvgen's regex applies to the whole reply), or, where
the template opens ``<think>`` in the prompt (Qwen3's thinking-only and DeepSeek-R1's
templates), a ``logit_bias`` on ``</think>`` under sampling so that the reasoning ends after a
few tokens. The reference of each split is the raw reply of the same request on a server with
``reasoning_parser="none"``."""

from __future__ import annotations

import json

import jsonschema
import openai
import pytest
from fastapi.testclient import TestClient
from thinking_model import TEMPLATE, thinking_model

from kvgen.server.app import create_app
from kvgen.server.reasoning import ReasoningMode, ReasoningSplitter, parser_for, split_reasoning

# Qwen3's thinking-only templates (and DeepSeek-R1's) open the reasoning in the prompt
OPENING = TEMPLATE.replace("{{- '<|im_start|>assistant\\n' }}", "{{- '<|im_start|>assistant\\n<think>\\n' }}")
MESSAGES = [{"role": "user", "content": "What is two plus two?"}]
REGEX = r"<think>\n[a-z ]{8,40}\n</think>\n\n[a-z ]{4,30}"


# ---- the parsers, on text ----

TEXTS = [
    ("qwen3", False, "<think>\nadd them\n</think>\n\nIt is four.", ("\nadd them\n", "It is four.")),
    ("qwen3", False, "It is four, <think> not a block </think>", (None, "It is four, <think> not a block </think>")),
    ("qwen3", False, "<think>\ncut before it ends </thi", ("\ncut before it ends </thi", "")),
    ("qwen3", True, "add them</think>\n\nfour", ("add them", "four")),
    ("deepseek_r1", True, "<think>\nagain</think>four", ("\nagain", "four")),
    ("harmony", False, "<|channel|>analysis<|message|>add them<|end|><|start|>assistant<|channel|>final"
                       "<|message|>four<|return|>", ("add them", "four")),
    ("harmony", False, "four", (None, "four")),
]


@pytest.mark.parametrize("parser, opened, text, expected", TEXTS)
def test_the_stream_splits_as_the_whole_reply(parser, opened, text, expected):
    mode = ReasoningMode(parser, opened)
    assert split_reasoning(text, mode) == expected
    for size in (1, 2, 3, 5, 1000):
        splitter, reasoning, content = ReasoningSplitter(mode), "", ""
        pieces = [text[i:i + size] for i in range(0, len(text), size)]
        for k, piece in enumerate(pieces):
            r, c = splitter.feed(piece, final=k == len(pieces) - 1)
            reasoning, content = reasoning + r, content + c
        assert (reasoning or expected[0], content) == expected, size


HARMONY_CALL = ('<|channel|>analysis<|message|>look it up<|end|><|start|>assistant<|channel|>commentary '
                'to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}')
# the recipient in the message's header, as harmony's templates render a past call
HARMONY_CALL_IN_HEADER = ('<|start|>assistant to=functions.get_weather<|channel|>commentary json'
                          '<|message|>{"city": "Oslo"}')


def _split_in_pieces(text: str, mode: ReasoningMode, size: int) -> tuple[str, str]:
    splitter, reasoning, content = ReasoningSplitter(mode), "", ""
    pieces = [text[i:i + size] for i in range(0, len(text), size)]
    for k, piece in enumerate(pieces):
        r, c = splitter.feed(piece, final=k == len(pieces) - 1)
        reasoning, content = reasoning + r, content + c
    return reasoning, content


@pytest.mark.parametrize("text, reasoning, city", [(HARMONY_CALL, "look it up", "Paris"),
                                                   (HARMONY_CALL_IN_HEADER, None, "Oslo")])
def test_a_harmony_message_to_a_function_is_a_tool_call(text, reasoning, city):
    """GPT-OSS's call (its ``<|call|>`` stop token is not in the reply's text) becomes the call
    block that the tool parser reads, whole and streamed; without tools it stays content."""
    from kvgen.server.tools import parse_tool_calls

    mode = ReasoningMode("harmony", calls=True)
    thought, content = split_reasoning(text, mode)
    assert thought == reasoning
    assert content == f'<tool_call>{{"name": "get_weather", "arguments": {{"city": "{city}"}}}}</tool_call>'
    for size in (1, 2, 3, 7, 1000):
        assert _split_in_pieces(text, mode, size) == (reasoning or "", content), size
    text_out, (call,) = parse_tool_calls(content, {"get_weather"})
    assert text_out is None and call["function"] == {"name": "get_weather", "arguments": f'{{"city": "{city}"}}'}
    # cut by max_tokens inside the arguments: the block stays open, a cut call's arguments so far
    cut = text[:-4]
    _, content = split_reasoning(cut, mode)
    assert not content.endswith("</tool_call>")
    _, (call,) = parse_tool_calls(content, {"get_weather"}, truncated=True)
    assert call["function"]["arguments"] == cut[cut.rindex("<|message|>") + len("<|message|>"):]
    # no tools offered: the message is the answer, as it is
    assert split_reasoning(text, ReasoningMode("harmony"))[1] == text[text.rindex("<|message|>") + len("<|message|>"):]


def test_the_parser_comes_from_the_template_or_the_option(smollm2_model):
    assert parser_for("auto", TEMPLATE) == "qwen3"
    assert parser_for("auto", smollm2_model.chat_template) is None
    assert parser_for("auto", "{{ '<|start|>assistant<|channel|>final<|message|>' }}") == "harmony"
    assert parser_for("deepseek_r1", smollm2_model.chat_template) == "deepseek_r1"
    assert parser_for("none", TEMPLATE) is None
    with pytest.raises(ValueError, match="--reasoning-parser"):
        parser_for("qwen", TEMPLATE)


# ---- served ----

@pytest.fixture(scope="module")
def models(tmp_path_factory, smollm2_file):
    """{"spelled": markers over several tokens, "tokens": markers as added tokens}"""
    return {kind: thinking_model(tmp_path_factory.mktemp(f"qwen3-{kind}"), smollm2_file, kind == "tokens")
            for kind in ("spelled", "tokens")}


@pytest.fixture(scope="module")
def model(models):
    return models["tokens"]


@pytest.fixture(scope="module")
def clients(models):
    """openai clients of servers: the spelled-marker model with its reasoning parsed ("auto"),
    raw ("none") and read as harmony's channels ("harmony"); the added-token model with the
    template that opens <think>, parsed ("opening") and raw ("opening-raw")."""
    import contextlib
    import copy

    opening = copy.copy(models["tokens"])
    opening.chat_template = OPENING
    with contextlib.ExitStack() as stack:
        out = {}
        for name, served, parser in (("auto", models["spelled"], "auto"), ("none", models["spelled"], "none"),
                                     ("opening", opening, "auto"), ("opening-raw", opening, "none"),
                                     ("harmony", models["spelled"], "harmony")):
            http = stack.enter_context(TestClient(create_app(served, max_batch=2, reasoning_parser=parser),
                                                  base_url="http://localhost"))
            out[name] = openai.OpenAI(base_url="http://localhost/v1", api_key="none", http_client=http, max_retries=0)
        yield out


def _ids(model, *texts):
    return [model.encode(t, add_special_tokens=False)[0] for t in texts]


def _streamed(client, **args) -> tuple[str, str, list]:
    chunks = list(client.chat.completions.create(**args, stream=True))
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    reasoning = "".join(getattr(d, "reasoning_content", None) or "" for d in deltas)
    content = "".join(d.content or "" for d in deltas)
    return reasoning, content, deltas


@pytest.mark.parametrize("markers", ["spelled", "tokens"])
def test_reasoning_content_whole_and_streamed(clients, model, markers):
    """``spelled``: a vocabulary without the markers, the regex makes the model write them;
    ``tokens``: the template opens <think>, and </think> comes as its one token, pushed by a bias."""
    (end,) = _ids(model, "</think>")
    if markers == "spelled":
        parsed, plain = "auto", "none"
        args = dict(model="m", messages=MESSAGES, max_tokens=80, temperature=1.0, seed=3, extra_body={"regex": REGEX})
    else:
        parsed, plain = "opening", "opening-raw"
        args = dict(model="m", messages=MESSAGES, max_tokens=40, temperature=1.0, seed=3, logit_bias={str(end): 7})
    raw_out = clients[plain].chat.completions.create(**args, logprobs=True)
    raw = raw_out.choices[0].message
    assert getattr(raw, "reasoning_content", None) is None
    tokens = [t.token for t in raw_out.choices[0].logprobs.content]
    assert ("</think>" in tokens) == (markers == "tokens"), tokens
    reasoning, answer = (raw.content[len("<think>"):] if markers == "spelled" else raw.content).split("</think>")
    out = clients[parsed].chat.completions.create(**args)
    message = out.choices[0].message
    assert (message.reasoning_content, message.content) == (reasoning, answer.lstrip())
    assert reasoning and answer.strip()
    assert out.usage.completion_tokens == raw_out.usage.completion_tokens
    streamed_reasoning, streamed_content, deltas = _streamed(clients[parsed], **args)
    assert (streamed_reasoning, streamed_content) == (message.reasoning_content, message.content)
    assert not any("</" in (d.content or "") or "</" in (getattr(d, "reasoning_content", None) or "")
                   for d in deltas)


def test_max_tokens_counts_the_reasoning(clients):
    args = dict(model="m", messages=MESSAGES, max_tokens=6, temperature=1.0, seed=3, extra_body={"regex": REGEX})
    raw = clients["none"].chat.completions.create(**args).choices[0].message.content
    out = clients["auto"].chat.completions.create(**args)
    assert out.choices[0].finish_reason == "length" and out.usage.completion_tokens == 6
    assert out.choices[0].message.reasoning_content == raw[len("<think>"):] and not out.choices[0].message.content


def test_enable_thinking_false_is_all_content(clients):
    args = dict(model="m", messages=MESSAGES, max_tokens=8, temperature=0,
                extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    raw = clients["none"].chat.completions.create(**args).choices[0].message.content
    message = clients["auto"].chat.completions.create(**args).choices[0].message
    assert message.content == raw and getattr(message, "reasoning_content", None) is None


WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"enum": ["Paris", "Oslo"]}}, "required": ["city"]}}}
SCHEMA = {"type": "object", "properties": {"answer": {"type": "boolean"}}, "required": ["answer"]}


def test_tool_calls_and_json_are_constrained_after_the_reasoning(clients, model):
    """The template opens <think>: the reasoning comes first, unconstrained, and the call (or
    the JSON) after </think>; a bias on </think> ends the random model's reasoning early, and
    one against whitespace tokens keeps it from filling the tool call's JSON with them."""
    (end,) = _ids(model, "</think>")
    bias = {str(t): -100 for t, text in enumerate(model.token_strings()) if text and not text.strip()}
    common = dict(model="m", messages=MESSAGES, max_tokens=60, temperature=1.0, seed=2,
                  logit_bias={**bias, str(end): 9})
    tools = dict(tools=[WEATHER], tool_choice="required", parallel_tool_calls=False)
    out = clients["opening"].chat.completions.create(**common, **tools)
    message = out.choices[0].message
    assert out.choices[0].finish_reason == "tool_calls", message
    assert message.reasoning_content and "<" not in message.reasoning_content and not message.content
    (call,) = message.tool_calls
    jsonschema.validate(json.loads(call.function.arguments), WEATHER["function"]["parameters"])
    streamed_reasoning, streamed_content, deltas = _streamed(clients["opening"], **common, **tools)
    assert (streamed_reasoning, streamed_content) == (message.reasoning_content, "")
    arguments = "".join(c.function.arguments for d in deltas for c in d.tool_calls or [])
    assert json.loads(arguments) == json.loads(call.function.arguments)
    out = clients["opening"].chat.completions.create(**common, response_format={
        "type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}})
    message = out.choices[0].message
    assert message.reasoning_content and out.choices[0].finish_reason == "stop", message
    jsonschema.validate(json.loads(message.content), SCHEMA)
    # without the parser the grammar allows no reasoning: the call comes at once
    raw = clients["opening-raw"].chat.completions.create(**common, **tools).choices[0].message
    assert raw.content is None and raw.tool_calls


def test_responses_reasoning_items_and_messages_thinking_blocks(clients, model):
    """Greedy, the random model never closes the reasoning the template opened: the whole
    reply is reasoning, the same in the three APIs."""
    chat = clients["opening"].chat.completions.create(model="m", messages=MESSAGES, max_tokens=6, temperature=0)
    thought = chat.choices[0].message.reasoning_content
    assert thought and chat.choices[0].message.content == ""
    response = clients["opening"].responses.create(model="m", input=MESSAGES[0]["content"], max_output_tokens=6,
                                                   temperature=0)
    (item,) = [i for i in response.output if i.type == "reasoning"]
    assert item.content[0].text == thought
    http = clients["opening"]._client
    answer = http.post("http://localhost/v1/messages", json={"model": "m", "max_tokens": 6, "temperature": 0,
                                                             "messages": MESSAGES}).json()
    assert [b["thinking"] for b in answer["content"] if b["type"] == "thinking"] == [thought]


def test_harmony_channels_through_the_server(clients):
    """GPT-OSS's channels, spelled by a regex (the vocabulary has no harmony tokens): analysis
    is reasoning, final the answer, whole and streamed."""
    regex = (r"<\|channel\|>analysis<\|message\|>[a-z ]{5,20}<\|end\|><\|start\|>assistant"
             r"<\|channel\|>final<\|message\|>[a-z ]{3,12}")
    args = dict(model="m", messages=MESSAGES, max_tokens=80, temperature=1.0, seed=5, extra_body={"regex": regex})
    raw = clients["none"].chat.completions.create(**args).choices[0].message.content
    analysis = raw[raw.index("<|message|>") + len("<|message|>"):raw.index("<|end|>")]
    final = raw[raw.rindex("<|message|>") + len("<|message|>"):]
    message = clients["harmony"].chat.completions.create(**args).choices[0].message
    assert (message.reasoning_content, message.content) == (analysis, final)
    assert _streamed(clients["harmony"], **args)[:2] == (analysis, final)


def test_harmony_tool_calls_through_the_server(clients, model):
    """tool_choice "required" under harmony: the grammar is harmony's call (its markers spelled
    here: the vocabulary has no harmony tokens), after an optional analysis message; the call
    comes back as ``tool_calls``, its arguments following the schema, whole and streamed.
    "auto": no grammar (the model writes its own format); a call the model writes (scripted by
    a regex) is parsed."""
    bias = {str(t): -100 for t, text in enumerate(model.token_strings()) if text and not text.strip()}
    common = dict(model="m", messages=MESSAGES, max_tokens=80, temperature=1.0, seed=3, logit_bias=bias,
                  tools=[WEATHER])
    raw = clients["none"].chat.completions.create(**common, tool_choice="required").choices[0].message
    assert raw.tool_calls  # without the harmony parser, the grammar is Hermes's
    out = clients["harmony"].chat.completions.create(**common, tool_choice="required", logprobs=True)
    message = out.choices[0].message
    assert out.choices[0].finish_reason == "tool_calls", message
    written = "".join(t.token for t in out.choices[0].logprobs.content)  # harmony's call, not a Hermes block
    assert "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{" in written
    (call,) = message.tool_calls
    assert call.function.name == "get_weather" and not message.content
    jsonschema.validate(json.loads(call.function.arguments), WEATHER["function"]["parameters"])
    streamed_reasoning, streamed_content, deltas = _streamed(clients["harmony"], **common, tool_choice="required")
    assert (streamed_reasoning or None, streamed_content) == (getattr(message, "reasoning_content", None), "")
    (streamed,) = [c for d in deltas for c in d.tool_calls or [] if c.id]
    arguments = "".join(c.function.arguments for d in deltas for c in d.tool_calls or [])
    assert streamed.function.name == "get_weather" and json.loads(arguments) == json.loads(call.function.arguments)
    regex = (r"<\|channel\|>analysis<\|message\|>[a-z ]{5,20}<\|end\|><\|start\|>assistant<\|channel\|>commentary "
             r'to=functions\.get_weather <\|constrain\|>json<\|message\|>\{"city": "(Paris|Oslo)"\}')
    scripted = dict(common, extra_body={"regex": regex}, tool_choice="auto")
    reply = clients["none"].chat.completions.create(**scripted).choices[0].message.content
    message = clients["harmony"].chat.completions.create(**scripted).choices[0].message
    assert message.reasoning_content == reply[reply.index("<|message|>") + 11:reply.index("<|end|>")]
    (call,) = message.tool_calls
    assert json.loads(call.function.arguments) == json.loads(reply[reply.rindex("<|message|>") + 11:])



def test_thinking_and_reasoning_effort_reach_the_template(models):
    """Anthropic's ``thinking`` is the template's ``enable_thinking`` (disabled: the empty think
    block the template writes), OpenAI's ``reasoning_effort`` (chat) and ``reasoning.effort``
    (Responses) its ``reasoning_effort``: each prompt is the one chat_template_kwargs render."""
    import copy

    served = copy.copy(models["spelled"])
    served.chat_template = TEMPLATE.replace(  # a template that writes the effort, as GPT-OSS's does
        "{{- '<|im_start|>assistant\\n' }}",
        "{%- if reasoning_effort is defined %}{{- 'Reasoning: ' + reasoning_effort + '\\n' }}{%- endif %}"
        "{{- '<|im_start|>assistant\\n' }}")
    assert served.chat_template != TEMPLATE
    common = {"model": "m", "messages": MESSAGES, "temperature": 0}
    with TestClient(create_app(served, max_batch=2), base_url="http://localhost") as http:
        def prompt_tokens(path: str, **extra) -> int:
            reply = http.post(path, json={**common, "max_tokens": 2, **extra})
            assert reply.status_code == 200, reply.text
            usage = reply.json()["usage"]
            return usage.get("prompt_tokens", usage.get("input_tokens"))

        plain = prompt_tokens("/v1/chat/completions")
        closed = prompt_tokens("/v1/chat/completions", chat_template_kwargs={"enable_thinking": False})
        low = prompt_tokens("/v1/chat/completions", chat_template_kwargs={"reasoning_effort": "low"})
        assert plain < closed and plain < low
        assert prompt_tokens("/v1/messages", thinking={"type": "disabled"}) == closed
        assert prompt_tokens("/v1/messages", thinking={"type": "adaptive"}) == plain
        assert prompt_tokens("/v1/messages", thinking={"type": "enabled", "budget_tokens": 1}) == plain
        assert prompt_tokens("/v1/chat/completions", reasoning_effort="low") == low
        response = http.post("/v1/responses", json={"model": "m", "input": MESSAGES, "max_output_tokens": 2,
                                                    "temperature": 0, "reasoning": {"effort": "low"}}).json()
        assert response["usage"]["input_tokens"] == low and response["reasoning"]["effort"] == "low"
        for thinking in ({"type": "enabled"}, {"type": "disabled", "budget_tokens": 2000}, {"type": "on"},
                         {"type": "enabled", "budget_tokens": 2}):  # the budget is not below max_tokens 2
            assert http.post("/v1/messages", json={**common, "max_tokens": 2, "thinking": thinking}).status_code == 400
        conflict = http.post("/v1/chat/completions", json={**common, "reasoning_effort": "high",
                                                          "chat_template_kwargs": {"reasoning_effort": "low"}})
        assert conflict.status_code == 400 and "reasoning_effort" in conflict.text
