"""Tool calls: parsed out of the model's text (Hermes / Qwen ``<tool_call>`` blocks, Llama
3.1's JSON) into OpenAI's ``tool_calls``, and the llguidance grammar that makes the real
SmolLM2's calls parse and validate against the tools' JSON schemas."""

from __future__ import annotations

import json

import jsonschema
import pytest

import kvgen
from kvgen.server.tools import ToolCallStream, parse_tool_calls, tool_grammar

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                            "parameters": {"type": "object", "properties": {
                                                "city": {"type": "string"},
                                                "unit": {"type": "string", "enum": ["C", "F"]}},
                                                "required": ["city", "unit"], "additionalProperties": False}}}
ADD = {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}
NAMES = {"get_weather", "add"}


def _calls(calls):
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]


def test_hermes_blocks_become_openai_tool_calls():
    text = ('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}\n'
            '</tool_call>\n<tool_call>{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}</tool_call>')
    content, calls = parse_tool_calls(text, NAMES)
    assert content == "Let me check."
    assert _calls(calls) == [("get_weather", {"city": "Paris", "unit": "C"}), ("add", {"a": 1, "b": 2})]
    assert all(c["type"] == "function" and c["id"].startswith("call_") for c in calls)
    assert len({c["id"] for c in calls}) == 2
    # a last call cut off after complete ones is dropped
    assert _calls(parse_tool_calls(text + '\n<tool_call>\n{"name": "add", "argu', NAMES)[1]) == _calls(calls)
    # the closing tag may be cut off at the end of the text
    assert _calls(parse_tool_calls('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}', NAMES)[1]) == \
        [("add", {"a": 1, "b": 2})]


def test_llama_json_calls():
    content, calls = parse_tool_calls('<|python_tag|>{"name": "add", "parameters": {"a": 3, "b": 4}}', NAMES)
    assert content is None and _calls(calls) == [("add", {"a": 3, "b": 4})]
    text = '{"name": "add", "parameters": {"a": 1, "b": 2}}; {"name": "get_weather", "parameters": {"city": "Rome", ' \
           '"unit": "F"}}'
    assert _calls(parse_tool_calls(text, NAMES)[1]) == [("add", {"a": 1, "b": 2}),
                                                        ("get_weather", {"city": "Rome", "unit": "F"})]


@pytest.mark.parametrize("text", [
    "Just text, no call.",
    '{"name": "unknown_tool", "parameters": {}}',                      # not one of the tools
    '<tool_call>{"name": "add", "arguments": {"a": 1</tool_call>',      # broken JSON
    '{"answer": 42}',                                                  # JSON that is no call
    '{"name": "add", "parameters": [1, 2]}',                           # arguments not an object
])
def test_what_is_not_a_call_stays_text(text):
    assert parse_tool_calls(text, NAMES) == (text, [])


@pytest.mark.parametrize("question, tool", [("What is the weather in Paris?", WEATHER), ("What is 2 plus 3?", ADD)])
def test_the_grammar_makes_the_models_call_parse_and_validate(smollm2_model, question, tool):
    grammar = tool_grammar([WEATHER, ADD], parallel=False)
    config = kvgen.GenerationConfig(max_new_tokens=80, grammar=grammar)
    text = kvgen.Generator(smollm2_model, config).chat([{"role": "user", "content": question}])
    content, calls = parse_tool_calls(text, NAMES)
    assert content is None and len(calls) == 1, text
    name, arguments = _calls(calls)[0]
    schema = next(t for t in (WEATHER, ADD) if t["function"]["name"] == name)["function"]["parameters"]
    jsonschema.validate(arguments, schema)


def test_a_named_tool_grammar_allows_that_tool_only(smollm2_model):
    config = kvgen.GenerationConfig(max_new_tokens=80, grammar=tool_grammar([ADD], parallel=False))
    text = kvgen.Generator(smollm2_model, config).chat([{"role": "user", "content": "Weather in Oslo?"}])
    (name, arguments), = _calls(parse_tool_calls(text, NAMES)[1])
    assert name == "add"
    jsonschema.validate(arguments, ADD["function"]["parameters"])


# ---- through kvgen serve, with the official openai client ----

def _reference(model, messages, tools, grammar=None, max_new_tokens=60):
    """kvgen's own generation on the prompt the server renders (the tools in a Hermes system
    message: SmolLM2's template renders none)."""
    from kvgen.server.protocol import _messages, _without_tool_syntax

    ids = model.encode_chat(_without_tool_syntax(_messages(messages), tools), add_generation_prompt=True)
    config = kvgen.GenerationConfig(max_new_tokens=max_new_tokens, grammar=grammar)
    out = kvgen.Generator(model, config).generate([ids], eos_token_id=[model.eos_token_id,
                                                                      model.end_of_turn_token_id])
    return len(ids), model.decode(out.sequences[0][0], skip_special_tokens=True)


QUESTION = [{"role": "user", "content": "What is the weather in Paris, in Celsius?"}]


def test_required_tool_choice_returns_a_valid_call(client, smollm2_model):
    out = client.chat.completions.create(model="m", messages=QUESTION, tools=[WEATHER, ADD], tool_choice="required",
                                         parallel_tool_calls=False, max_tokens=60, temperature=0)
    choice = out.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    prompt_tokens, text = _reference(smollm2_model, QUESTION, [WEATHER, ADD], tool_grammar([WEATHER, ADD],
                                                                                          parallel=False))
    assert out.usage.prompt_tokens == prompt_tokens
    assert [(call.function.name, json.loads(call.function.arguments))] == _calls(parse_tool_calls(text, NAMES)[1])
    schema = {"get_weather": WEATHER, "add": ADD}[call.function.name]["function"]["parameters"]
    jsonschema.validate(json.loads(call.function.arguments), schema)


def test_a_named_tool_choice_and_the_streamed_call(client):
    args = dict(model="m", messages=QUESTION, tools=[WEATHER, ADD], max_tokens=60, temperature=0,
                tool_choice={"type": "function", "function": {"name": "add"}})
    whole = client.chat.completions.create(**args)
    (call,) = whole.choices[0].message.tool_calls
    assert call.function.name == "add"
    jsonschema.validate(json.loads(call.function.arguments), ADD["function"]["parameters"])
    chunks = list(client.chat.completions.create(**args, stream=True))
    content, calls, pieces = _streamed(chunks)
    assert calls == [("add", json.loads(call.function.arguments))] and content is None
    assert pieces[0] > 1  # the arguments came in pieces
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def _streamed(chunks) -> tuple:
    """(content, [(name, arguments)], argument pieces per call) of a streamed reply, checking
    OpenAI's shape: a call's first delta has its id, type and name (arguments ""), the later
    ones only pieces of its arguments."""
    content, calls = "", {}
    for chunk in chunks:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for d in choice.delta.tool_calls or []:
                if d.index not in calls:
                    assert d.id.startswith("call_") and d.type == "function" and d.function.name, d
                    assert d.function.arguments == ""
                    calls[d.index] = [d.function.name, "", 0]
                else:
                    assert d.id is None and d.function.name is None and d.function.arguments, d
                    calls[d.index][1] += d.function.arguments
                    calls[d.index][2] += 1
    assert sorted(calls) == list(range(len(calls)))
    return (content or None, [(n, json.loads(a)) for n, a, _ in calls.values()], [k for *_, k in calls.values()])


def test_tool_choice_none_is_plain_chat(client, smollm2_model):
    out = client.chat.completions.create(model="m", messages=QUESTION, tools=[WEATHER], tool_choice="none",
                                         max_tokens=12, temperature=0)
    reply = kvgen.Generator(smollm2_model, kvgen.GenerationConfig(max_new_tokens=12)).chat(QUESTION)
    assert out.choices[0].message.content == reply and not out.choices[0].message.tool_calls


def test_a_history_with_tool_calls_and_results(client, smollm2_model):
    history = QUESTION + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": json.dumps({"city": "Paris", "unit": "C"})}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "21 degrees, sunny"}]
    out = client.chat.completions.create(model="m", messages=history, tools=[WEATHER], max_tokens=20, temperature=0)
    prompt_tokens, text = _reference(smollm2_model, history, [WEATHER], tool_grammar([WEATHER], free_text=True),
                                     max_new_tokens=20)
    assert out.usage.prompt_tokens == prompt_tokens
    cut = out.choices[0].finish_reason == "length"  # the model calls again, cut by max_tokens
    content, calls = parse_tool_calls(text, {"get_weather"}, truncated=cut)
    assert out.choices[0].message.content == content
    assert [(c.function.name, c.function.arguments) for c in out.choices[0].message.tool_calls or []] == \
        [(c["function"]["name"], c["function"]["arguments"]) for c in calls]


@pytest.mark.parametrize("tools, choice", [
    ([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "bogus": 1}}], "auto"),
    ([{"type": "function", "function": {"name": "bad name!"}}], "auto"),
    ([{"type": "function", "function": {"name": "f", "parameters": {"type": 5}}}], "auto"),
    ([WEATHER], {"type": "function", "function": {"name": "missing"}}),
    ([WEATHER], "sometimes"),
])
def test_bad_tools_are_a_400(served, tools, choice):
    status, _, body = served.request("/v1/chat/completions", {"messages": QUESTION, "tools": tools,
                                                              "tool_choice": choice, "max_tokens": 2})
    assert status == 400, body


def test_a_template_that_renders_tools_gets_them_and_the_history_as_transformers_does(smollm2_model):
    """The request's tools and OpenAI-shaped history (arguments as a JSON string, null content)
    reach a tool-rendering template (Qwen3's style) as transformers' apply_chat_template(tools=...)
    renders them (arguments as an object)."""
    import copy
    from pathlib import Path

    import transformers

    from kvgen.server.protocol import chat_request

    template = (Path(__file__).parents[1] / "data" / "qwen3_style_chat_template.jinja").read_text()
    model = copy.copy(smollm2_model)
    model.chat_template = template
    history = QUESTION + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": json.dumps({"city": "Paris", "unit": "C"})}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "21 degrees"}]
    req = chat_request({"messages": history, "tools": [WEATHER], "max_tokens": 4}, model)
    hf_history = QUESTION + [
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
            "name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}}]},
        {"role": "tool", "content": "21 degrees"}]
    hf = transformers.PreTrainedTokenizerFast(tokenizer_object=model._need_tokenizer())
    text = hf.apply_chat_template(hf_history, chat_template=template, tools=[WEATHER], tokenize=False,
                                  add_generation_prompt=True)
    assert "get_weather" in text and "21 degrees" in text
    assert req.prompts[0] == model.encode(text, add_special_tokens=False)


def _call_message(i: int, name: str, arguments: dict) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


# two worked examples: the model goes on calling tools in the Hermes form
EXAMPLES = [
    {"role": "user", "content": "What is the weather in Paris, in Celsius?"},
    _call_message(1, "get_weather", {"city": "Paris", "unit": "C"}),
    {"role": "tool", "tool_call_id": "call_1", "content": "21 degrees"},
    {"role": "assistant", "content": "It is 21 degrees in Paris."},
    {"role": "user", "content": "What is 2 plus 3?"}, _call_message(2, "add", {"a": 2, "b": 3}),
    {"role": "tool", "tool_call_id": "call_2", "content": "5"}, {"role": "assistant", "content": "2 plus 3 is 5."}]
CALLING = EXAMPLES + [{"role": "user", "content": "What is the weather in Rome, in Fahrenheit?"}]
ANSWERING = EXAMPLES + [{"role": "user", "content": "What is 7 plus 8?"}]


def test_the_auto_grammar_allows_text_or_text_then_calls_that_follow_the_schemas(smollm2_model):
    import llguidance

    from kvgen.generation.constraints import llg_tokenizer

    grammar = llguidance.LLMatcher.grammar_from_lark(tool_grammar([WEATHER, ADD], free_text=True))
    tokenizer = llg_tokenizer(smollm2_model._need_tokenizer(), [smollm2_model.eos_token_id])

    def accepts(text: str) -> tuple[bool, bool]:
        """(every token accepted, the text a complete reply)"""
        matcher = llguidance.LLMatcher(tokenizer, grammar)
        ok = matcher.consume_tokens(smollm2_model.encode(text, add_special_tokens=False))
        return ok and not matcher.is_error(), matcher.is_accepting()

    good = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    assert accepts("Just text, < and <tool, no call.") == (True, True)
    assert accepts("Sure. " + good) == (True, True)
    assert accepts(good + "\n" + good) == (True, True)
    assert accepts("Sure. " + good[:30]) == (True, False)  # a call begun must be finished
    assert accepts('Sure. <tool_call>\n{"name": "fahrenheit", ')[0] is False  # not a tool
    assert accepts('<tool_call>\n{"name": "add", "arguments": {"a": "one"')[0] is False  # not its schema
    assert accepts(good + " and more text")[0] is False
    assert accepts(good + "\n" + good)[1] and not accepts(good + "\n" + good[:40])[1]
    single = llguidance.LLMatcher(tokenizer, llguidance.LLMatcher.grammar_from_lark(
        tool_grammar([ADD], parallel=False, free_text=True)))
    assert not single.consume_tokens(smollm2_model.encode(good + "\n" + good, add_special_tokens=False))


def test_auto_tool_choice_constrains_the_call_the_model_starts(client, smollm2_model):
    """Unconstrained, SmolLM2 calls a tool that does not exist; under "auto" the call it starts
    is one of the tools, with arguments that follow its schema, as kvgen's own generation
    with the same grammar makes it."""
    _, free = _reference(smollm2_model, CALLING, [WEATHER, ADD])
    assert "<tool_call>" in free and not parse_tool_calls(free, NAMES)[1], free
    out = client.chat.completions.create(model="m", messages=CALLING, tools=[WEATHER, ADD], max_tokens=60,
                                         temperature=0)
    _, text = _reference(smollm2_model, CALLING, [WEATHER, ADD], tool_grammar([WEATHER, ADD], free_text=True))
    choice = out.choices[0]
    assert choice.finish_reason == "tool_calls"
    got = _calls([c.model_dump() for c in choice.message.tool_calls])
    assert got == _calls(parse_tool_calls(text, NAMES)[1]) and len(got) == 1
    name, arguments = got[0]
    jsonschema.validate(arguments, {"get_weather": WEATHER, "add": ADD}[name]["function"]["parameters"])
    # streamed token by token: the same call
    chunks = list(client.chat.completions.create(model="m", messages=CALLING, tools=[WEATHER, ADD], max_tokens=60,
                                                 temperature=0, stream=True))
    content, calls, pieces = _streamed(chunks)
    assert (content, calls) == (choice.message.content, got) and pieces[0] > 1
    assert chunks[-1].choices[0].finish_reason == "tool_calls" and chunks[-1].choices[0].delta.content is None


def test_auto_tool_choice_lets_the_model_answer_in_text_streamed_as_it_comes(client, smollm2_model):
    out = client.chat.completions.create(model="m", messages=ANSWERING, tools=[WEATHER, ADD], max_tokens=30,
                                         temperature=0)
    _, text = _reference(smollm2_model, ANSWERING, [WEATHER, ADD], tool_grammar([WEATHER, ADD], free_text=True),
                         max_new_tokens=30)
    assert out.choices[0].message.content == text and not out.choices[0].message.tool_calls
    assert out.choices[0].finish_reason == "stop"
    chunks = list(client.chat.completions.create(model="m", messages=ANSWERING, tools=[WEATHER, ADD], max_tokens=30,
                                                 temperature=0, stream=True))
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(pieces) == text and len(pieces) > 2
    assert chunks[-1].choices[0].finish_reason == "stop"


@pytest.mark.parametrize("text", [
    "Just text, no call.", "  Spaces around  ", "a < b and <tool x",
    'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa\\"ris}", "unit": "C"}}\n'
    '</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>',
    '<tool_call>{"arguments": {"a": 1, "b": 2}, "name": "add"}</tool_call>',   # parsed whole when it closes
    '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}',              # the closing tag cut off
    '{"name": "add", "parameters": {"a": 1, "b": 2}}',                          # Llama 3.1's form: held
])
@pytest.mark.parametrize("size", [1, 2, 5, 1000])
def test_the_stream_parser_gives_what_the_whole_reply_s_parse_gives(text, size):
    stream = ToolCallStream(NAMES)
    pieces = [text[i:i + size] for i in range(0, len(text), size)]
    deltas = [d for k, p in enumerate(pieces) for d in stream.feed(p, final=k == len(pieces) - 1)]
    content = "".join(d.get("content", "") for d in deltas) or None
    calls: dict = {}
    for d in deltas:
        for c in d.get("tool_calls", []):
            entry = calls.setdefault(c["index"], [c["function"].get("name"), ""])
            entry[1] += c["function"]["arguments"]
    expected_content, expected_calls = parse_tool_calls(text, NAMES)
    assert content == expected_content
    assert [(n, json.loads(a)) for n, a in calls.values()] == _calls(expected_calls)
