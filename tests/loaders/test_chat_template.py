"""kvgen's chat-template rendering against transformers' ``apply_chat_template(..., tokenize=False)``:
SmolLM2's template from its GGUF file, and hand-written templates exercising the environment."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
import tokenizers
import transformers

from kvgen.loaders.chat_template import render_chat

CHATS = {
    "single_user": [{"role": "user", "content": "What is the capital of France?"}],
    "system_user": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Explain gravity in one line."},
    ],
    "multi_turn": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Hi! 你好 😀"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Write `print('x')`\nin Python.\n"},
    ],
    "ends_with_assistant": [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4"},
    ],
}


@pytest.fixture
def smollm2(smollm2_tokenizer_info, smollm2_hf_tokenizer):
    """kvgen's and transformers' tokenizers for the SmolLM2 GGUF (session fixtures in conftest.py)."""
    return smollm2_tokenizer_info, smollm2_hf_tokenizer


@pytest.mark.parametrize("add_generation_prompt", [True, False])
@pytest.mark.parametrize("chat", sorted(CHATS))
def test_smollm2_template_matches_transformers(smollm2, chat, add_generation_prompt):
    info, hf = smollm2
    messages = CHATS[chat]
    expected = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)
    got = render_chat(info.chat_template, messages, add_generation_prompt=add_generation_prompt,
                      bos_token=info.bos_token, eos_token=info.eos_token)
    assert got == expected
    assert "<|im_start|>" in got


@pytest.fixture(scope="module")
def hf_plain():
    """A transformers tokenizer with ``<s>``/``</s>``, to render arbitrary templates."""
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel({"<unk>": 0, "<s>": 1, "</s>": 2}, unk_token="<unk>"))
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>",
                                                unk_token="<unk>")


TEMPLATES = {
    "trim_lstrip_blocks": """\
{{ bos_token }}
{% for m in messages %}
    {% if m.role == 'system' %}
[SYS] {{ m.content }}
    {% else %}
{{ m.role | upper }}: {{ m.content | trim }}
    {% endif %}
{% endfor %}
{% if add_generation_prompt %}
    ASSISTANT:
{%- endif %}""",
    "tojson": "{{ messages | tojson }}|{{ messages[0] | tojson(indent=2, sort_keys=True) }}|{{ tools | tojson }}",
    "loop_controls_namespace": """\
{% set ns = namespace(n=0, last='') %}
{% for m in messages %}
{% if loop.index > 2 %}{% break %}{% endif %}
{% if m.role == 'system' %}{% continue %}{% endif %}
{% set ns.n = ns.n + 1 %}{% set ns.last = m.content %}
{% endfor %}
{{ ns.n }}:{{ ns.last }}:{{ dict(a=1) | tojson }}:{{ messages | length }}{{ eos_token }}""",
    "generation_tag": """\
{% for m in messages %}
{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{{ eos_token }}{% endgeneration %}
{% else %}<{{ m.role }}>{{ m.content }}
{% endif %}
{% endfor %}""",
    "undefined_and_extra": ("{{ missing }}[{{ unk_token }}]{{ custom_flag }}"
                            "{% if enable_thinking is defined %}T{% endif %}"),
    "reasoning_alias": "{% for m in messages %}{{ m.reasoning_content }}/{{ m.thinking }};{% endfor %}",
}

MESSAGES = [
    {"role": "system", "content": "Be <nice> & \"precise\" — café"},
    {"role": "user", "content": "  Hello\n  "},
    {"role": "assistant", "content": "Hi.", "reasoning": "greet back"},
    {"role": "user", "content": "ünïcode 😀", "name": None},
]


@pytest.mark.parametrize("add_generation_prompt", [True, False])
@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_hand_written_templates_match_transformers(hf_plain, name, add_generation_prompt):
    template = TEMPLATES[name]
    extra = {"custom_flag": "yes", "tools": [{"type": "function", "function": {"name": "f", "description": "é"}}]}
    expected = hf_plain.apply_chat_template(MESSAGES, chat_template=template, tokenize=False,
                                            add_generation_prompt=add_generation_prompt, **extra)
    got = render_chat(template, MESSAGES, add_generation_prompt=add_generation_prompt, bos_token="<s>",
                      eos_token="</s>", unk_token="<unk>", **extra)
    assert got == expected


def test_tojson_does_not_escape(hf_plain):
    got = render_chat("{{ messages[0].content | tojson }}", MESSAGES)
    assert got == '"Be <nice> & \\"precise\\" — café"'


def test_default_add_generation_prompt_is_true():
    template = "{% if add_generation_prompt %}GEN{% endif %}"
    assert render_chat(template, MESSAGES[:1]) == "GEN"
    assert render_chat(template, MESSAGES[:1], add_generation_prompt=False) == ""


def test_raise_exception_becomes_value_error(hf_plain):
    template = ("{% if messages[0].role != 'user' %}{{ raise_exception('first message must be from the user') }}"
                "{% endif %}ok")
    with pytest.raises(jinja2.TemplateError, match="first message must be from the user"):
        hf_plain.apply_chat_template(MESSAGES, chat_template=template, tokenize=False)
    with pytest.raises(ValueError, match="^chat template: first message must be from the user"):
        render_chat(template, MESSAGES)
    assert render_chat(template, MESSAGES[1:]) == hf_plain.apply_chat_template(
        MESSAGES[1:], chat_template=template, tokenize=False) == "ok"


@pytest.mark.parametrize("template", [
    "{% for m in messages %}{{ m.content }",           # syntax error
    "{% if %}",                                        # syntax error
    "{{ messages[0].nothing.deeper }}",                # undefined attribute
    "{{ messages.append(1) }}",                        # sandbox: immutable
    "{{ messages.__class__ }}{{ ''.__class__.__mro__ }}",  # sandbox: no dunders
    "{{ 'a' + 1 }}",                                   # type error while rendering
])
def test_bad_templates_raise_value_error(template):
    with pytest.raises(ValueError, match="^chat template: "):
        render_chat(template, MESSAGES)


@pytest.mark.parametrize("messages, error, match", [
    ("hello", TypeError, r"not a str: pass \[\{'role': 'user', 'content': 'hello'\}\]"),
    ([], ValueError, "empty"),
    ([{"role": "user", "content": "a"}, "b"], TypeError, r"messages\[1\]"),
    ([{"content": "a"}], ValueError, r"messages\[0\] has no 'role'"),
    ([{"role": "user"}], ValueError, r"messages\[0\] has no 'content'"),
    ([{"role": "user", "content": None}], TypeError, r"messages\[0\]\['content'\]"),
    ([{"role": "user", "content": "a"}, {"role": 3, "content": "b"}], TypeError, r"messages\[1\]\['role'\]"),
])
def test_bad_messages_are_refused(messages, error, match):
    with pytest.raises(error, match=match):
        render_chat("{{ messages }}", messages)


def test_caller_messages_are_not_modified():
    messages = [{"role": "assistant", "content": "x", "reasoning": "r"}]
    render_chat("{% for m in messages %}{{ m.thinking }}{% endfor %}", messages)
    assert messages == [{"role": "assistant", "content": "x", "reasoning": "r"}]


# Templates that hung or exhausted the process: each stops at a rendering limit (time, size,
# recursion) with a ValueError, quickly.
BOMBS = {
    "nested loops": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "string product": "{{ 'a' * 1000000000 }}",
    "list product": "{% set x = [1] * 100000000 %}{{ x|length }}",
    "doubling in a namespace (~)": "{% set ns = namespace(s='ab') %}{% for i in range(60) %}"
                                   "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
    "doubling in a namespace (+)": "{% set ns = namespace(s='ab') %}{% for i in range(60) %}"
                                   "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}",
    "endless recursion": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "huge output": "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_template_bombs_stop_at_the_rendering_limits(name):
    import time

    from kvgen.loaders.chat_template import RENDER_SECONDS, ChatTemplateLimitError

    start = time.monotonic()
    with pytest.raises(ChatTemplateLimitError, match="chat template"):
        render_chat(BOMBS[name], [{"role": "user", "content": "hi"}])
    assert time.monotonic() - start < RENDER_SECONDS + 2
    assert issubclass(ChatTemplateLimitError, ValueError)


def test_a_template_bomb_is_a_value_error_at_load(tmp_path):
    import shutil

    from llama_models import random_llama

    import kvgen

    d = tmp_path / "model"
    random_llama(vocab_size=16, hidden_size=8, intermediate_size=12, num_hidden_layers=1, num_attention_heads=2,
                 num_key_value_heads=1, max_position_embeddings=16).save_pretrained(d)
    (d / "chat_template.jinja").write_text(BOMBS["nested loops"])
    with pytest.raises(ValueError, match="exceeds kvgen's rendering limits"):
        kvgen.Model.load(d)
    (d / "chat_template.jinja").write_text("{{ raise_exception('needs a system turn') }}")
    assert kvgen.Model.load(d).chat_template  # other errors wait for a chat
    shutil.rmtree(d)


QWEN3_STYLE = (Path(__file__).parents[1] / "data" / "qwen3_style_chat_template.jinja").read_text()
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city — «today»",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
TOOL_CHAT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Weather in Zürich? 🌦"},
    {"role": "assistant", "content": "", "reasoning_content": "I should call the tool.",
     "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich"}}}]},
    {"role": "tool", "content": '{"temp": 21, "sky": "☀"}'},
    {"role": "tool", "content": '{"wind": "4 km/h"}'},
    {"role": "assistant", "content": "<think>\nsummarise\n</think>\n\nIt is 21 °C and sunny."},
    {"role": "user", "content": "And tomorrow?"},
]


@pytest.mark.parametrize("thinking", [None, True, False])
@pytest.mark.parametrize("tools", [None, TOOLS], ids=["no_tools", "tools"])
@pytest.mark.parametrize("add_generation_prompt", [True, False])
def test_qwen_style_template_with_tools_and_thinking_matches_transformers(hf_plain, thinking, tools,
                                                                          add_generation_prompt):
    extra = {} if thinking is None else {"enable_thinking": thinking}
    for chat in (TOOL_CHAT, TOOL_CHAT[1:2]):
        expected = hf_plain.apply_chat_template(chat, chat_template=QWEN3_STYLE, tools=tools, tokenize=False,
                                                add_generation_prompt=add_generation_prompt, **extra)
        got = render_chat(QWEN3_STYLE, chat, add_generation_prompt=add_generation_prompt, tools=tools, **extra)
        assert got == expected
    assert ("<think>\n\n</think>" in got) == (thinking is False and add_generation_prompt)
