"""GPT-OSS (GptOssForCausalLM) against transformers: a tiny random model with attention sinks that
bind, sliding and full layers (a window of 8 within 40 positions), YaRN, biases everywhere, four
experts (top 2) whose clamped SwiGLU clamps, from a float32 and a bfloat16 directory, llama.cpp's
GGUF of it, an MXFP4 directory written from random MXFP4 codes (and llama.cpp's MXFP4 GGUF of
that), greedy and 4-beam generations; the engine's paths over the sinks (the int8 KV cache, the
prefix cache, speculation, n > 1); the harmony chat format through kvgen's sandboxed renderer."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
import transformers
from family_check import check_family, logits
from family_models import random_family_model, save_converter_tokenizer
from hf_models import assert_generate_equals_hf
from hybrid_checks import check_prefix_cache_equals_fresh_run, check_prompt_lookup_equals_plain
from safetensors.numpy import save_file

import kvgen
from kvgen.families.gpt_oss import expert_arrays
from kvgen.loaders.gguf.model import open_gguf

PAD = 0
PROMPTS = [[5, 9, 13, 4, 3], [7, 8]]


def gpt_oss_model() -> transformers.GptOssForCausalLM:
    """The family model (tests/support/family_models.py) with sinks large enough to take a share
    of every softmax and gate / up projections large enough that the SwiGLU's clamp at 7 binds."""
    model = random_family_model("gpt_oss")
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("self_attn.sinks"):
                p.copy_(2.0 * torch.randn_like(p))
            elif name.endswith("gate_up_proj"):
                p.mul_(6.0)
    return model


@pytest.fixture(scope="module")
def checked(tmp_path_factory, smollm2_file):
    """check_family's models (float32, bfloat16 and GGUF) and its float32 reference; the MXFP4
    directory (write_mxfp4_directory) and its GGUF file, written by the same converter run."""
    hf = gpt_oss_model()
    root = tmp_path_factory.mktemp("gpt_oss")
    tokenizer = save_converter_tokenizer(root / "mxfp4-tokenizer", smollm2_file, "gpt_oss")
    parts = write_mxfp4_directory(hf, root / "mxfp4", tokenizer)
    models = check_family("gpt_oss", hf, root, smollm2_file,
                          also_convert=[(root / "mxfp4", root / "mxfp4.gguf", "f32")])
    return hf, root, models, parts


def test_the_model_binds_what_gpt_oss_changes(checked):
    """The sinks, the window and the clamp change transformers' own logits (else the family
    check could pass without them)."""
    hf = checked[0]
    ids = np.random.default_rng(1).integers(0, hf.config.vocab_size, (1, 40))
    base = logits(hf, ids)
    layers = hf.model.layers
    saved = [layer.self_attn.sinks.detach().clone() for layer in layers]
    with torch.no_grad():
        for layer in layers:
            layer.self_attn.sinks.fill_(-1e4)  # no sink: a plain softmax
    without_sinks = logits(hf, ids)
    with torch.no_grad():
        for layer, s in zip(layers, saved):
            layer.self_attn.sinks.copy_(s)
    limit = layers[0].mlp.experts.limit
    for layer in layers:
        layer.mlp.experts.limit = 1e9
    unclamped = logits(hf, ids)
    for layer in layers:
        layer.mlp.experts.limit = limit
    assert np.abs(base - without_sinks).max() > 0.1
    assert np.abs(base - unclamped).max() > 0.1
    assert hf.config.layer_types == ["sliding_attention", "full_attention"] * 2 and hf.config.sliding_window < 40


def test_greedy_and_four_beams_equal_transformers(checked):
    hf, _, models, _ = checked
    for variant in ("f32", "gguf"):
        assert_generate_equals_hf(models[variant], hf, PROMPTS, PAD, max_new_tokens=12, num_beams=4,
                                  num_return_sequences=2, do_sample=False, early_stopping=True)
    assert_generate_equals_hf(models["f32"], hf, PROMPTS, PAD, max_new_tokens=30, do_sample=False)


def test_the_gguf_file_reads_llama_cpps_rules(checked):
    """llama.cpp's file stores the window but not the layers it binds, nor the SwiGLU's limit and
    alpha: kvgen applies llama.cpp's rules (even layers slide; 7, 1.702), which are this model's."""
    _, root, models, _ = checked
    gguf = open_gguf(root / "f32.gguf")
    assert gguf.architecture == "gpt-oss" and gguf.get("gpt-oss.attention.sliding_window", int) == 8
    assert gguf.flags("gpt-oss.attention.sliding_window_pattern", 4) is None
    assert set(gguf.tensors) >= {"blk.0.attn_sinks.weight", "blk.0.ffn_gate_exps.bias",
                                 "blk.0.post_attention_norm.weight"}
    assert models["gguf"].capabilities == models["f32"].capabilities


def test_a_config_without_rope_settings_takes_gpt_oss_defaults(tmp_path):
    """GptOssConfig's YaRN (factor 32 over 4096 positions, theta 150000) where config.json states
    no rope settings (transformers fills them in when it reads such a config)."""
    hf = random_family_model("gpt_oss", rope_parameters=None, num_hidden_layers=2)
    hf.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config.pop("rope_parameters")["rope_type"] == "yarn"
    (tmp_path / "config.json").write_text(json.dumps(config))
    ids = np.random.default_rng(6).integers(0, hf.config.vocab_size, (1, 30))
    np.testing.assert_allclose(kvgen.Model.load(tmp_path, exact=True).forward(ids), logits(hf, ids), atol=2e-4,
                               rtol=1e-4)


# ---- MXFP4 ----

def write_mxfp4_directory(hf: transformers.GptOssForCausalLM, directory, tokenizer, seed: int = 2):
    """``hf``'s float32 directory with its experts replaced by random MXFP4 codes and exponents, as
    transformers' MXFP4 checkpoints store them (``*_blocks`` (E, out, in / 32, 16) and ``*_scales``
    (E, out, in / 32) uint8, quantization_config mxfp4). Returns the blocks and scales written."""
    from safetensors.numpy import load_file

    hf.save_pretrained(directory)
    tensors = load_file(directory / "model.safetensors")
    rng = np.random.default_rng(seed)
    E, C, I = hf.config.num_local_experts, hf.config.hidden_size, hf.config.intermediate_size
    parts = {}
    for layer in range(hf.config.num_hidden_layers):
        p = f"model.layers.{layer}.mlp.experts."
        del tensors[p + "gate_up_proj"], tensors[p + "down_proj"]
        for proj, out, inner in (("gate_up_proj", 2 * I, C), ("down_proj", C, I)):
            parts[p + proj + "_blocks"] = rng.integers(0, 256, (E, out, inner // 32, 16), dtype=np.uint8)
            parts[p + proj + "_scales"] = rng.integers(119, 125, (E, out, inner // 32), dtype=np.uint8)
    save_file({**tensors, **parts}, directory / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((directory / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    (directory / "config.json").write_text(json.dumps(config))
    for f in tokenizer.iterdir():
        shutil.copy(f, directory / f.name)
    return parts


@pytest.fixture(scope="module")
def mxfp4(checked):
    """The MXFP4 directory's parts, the directory, llama.cpp's GGUF of it (its experts MXFP4 too)
    and transformers' reading of the directory (its own dequantization of the codes, computed in
    float32)."""
    _, root, _, parts = checked
    ref = transformers.GptOssForCausalLM.from_pretrained(root / "mxfp4", dtype=torch.float32).eval()
    return parts, root / "mxfp4", root / "mxfp4.gguf", ref


def test_mxfp4_experts_stay_mxfp4_and_equal_transformers(mxfp4):
    parts, directory, gguf_file, ref = mxfp4
    tensors = open_gguf(gguf_file).tensors
    assert {tensors[f"blk.0.ffn_{p}_exps.weight"].tensor_type.name for p in ("gate", "up", "down")} == {"MXFP4"}
    rng = np.random.default_rng(3)
    for path in (directory, gguf_file):
        model = kvgen.Model.load(path, exact=True)
        assert model.family == "gpt_oss"
        for length in (1, 11, 40):
            ids = rng.integers(0, ref.config.vocab_size, (2, length))
            np.testing.assert_allclose(model.forward(ids), logits(ref, ids), atol=2e-4, rtol=1e-4,
                                       err_msg=f"{path.name}, {length} positions")
        assert_generate_equals_hf(model, ref, PROMPTS, PAD, max_new_tokens=10, num_beams=4, do_sample=False)
    # the directory's experts reach the core as MXFP4 blocks (the bytes of the file, repacked): an
    # expert's weights take 17 bytes per 32 values, not 4 per value
    arrays = expert_arrays({}, dict(parts))
    gate = arrays["model.layers.0.mlp.experts.gate_proj.weight"]
    assert gate.type == "MXFP4" and gate.data.nbytes == np.prod(gate.shape) // 32 * 17


def test_mxfp4_pairs_must_be_whole(mxfp4):
    parts, _, _, _ = mxfp4
    blocks = {k: v for k, v in parts.items() if k.endswith("_blocks")}
    with pytest.raises(ValueError, match="has no gate_up_proj_scales"):
        expert_arrays({}, blocks)
    scales = {k: v for k, v in parts.items() if k.endswith("_scales")}
    with pytest.raises(ValueError, match="has no _blocks"):
        expert_arrays({}, scales)


def test_an_unknown_quantization_is_refused(checked, tmp_path):
    root = checked[1]
    config = json.loads((root / "f32" / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "fp8"}
    shutil.copytree(root / "f32", tmp_path / "fp8")
    (tmp_path / "fp8" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="quant_method = 'fp8' is not supported"):
        kvgen.Model.load(tmp_path / "fp8")


# ---- the engine over the sinks ----

@pytest.fixture(scope="module")
def fast(checked):
    """The float32 directory in kvgen's default (int8 activations) mode."""
    root = checked[1]
    return kvgen.Model.load(root / "f32")


def test_the_int8_kv_cache_keeps_the_sinks(checked, fast):
    """The int8 cache's decode steps merge the sinks as the float cache's do (near its logits)."""
    root = checked[1]
    int8 = kvgen.Model.load(root / "f32", kv_cache_dtype="int8")
    config = kvgen.GenerationConfig(max_new_tokens=3, do_sample=False, eos_token_id=[])
    prompt = np.random.default_rng(5).integers(3, 1000, 20).tolist()
    a = kvgen.Generator(fast, config).generate([prompt])
    b = kvgen.Generator(int8, config).generate([prompt])
    assert a.sequences[0][0].tolist() == b.sequences[0][0].tolist()
    np.testing.assert_allclose(a.token_logprobs[0][0], b.token_logprobs[0][0], atol=0.05)


def test_prefix_cache_speculation_and_n_rows_equal_fresh_runs(fast):
    rng = np.random.default_rng(4)
    first = rng.integers(3, 1000, 40).tolist()
    second = first[:30] + rng.integers(3, 1000, 15).tolist()
    check_prefix_cache_equals_fresh_run(fast, first, second)
    check_prompt_lookup_equals_plain(fast, first)
    # n = 3 rows from one prompt: each is a separate request's with the same key
    settings = dict(do_sample=True, seed=5, top_k=0, temperature=1.5, max_new_tokens=10, eos_token_id=[])
    together = kvgen.Generator(fast, kvgen.GenerationConfig(**settings, num_return_sequences=3)).generate([first])
    apart = [kvgen.Generator(fast, kvgen.GenerationConfig(**settings)).generate([first], sequence_ids=[k])
             .sequences[0][0].tolist() for k in range(3)]
    assert [s.tolist() for s in together.sequences[0]] == apart


# ---- the harmony chat format ----

# A template of the harmony format's shape (written for this test, not OpenAI's file): a system
# turn with the date (strftime_now) and the reasoning effort, a developer turn with the
# instructions and the tools, assistant turns on the final channel, the analysis channel for the
# thinking of a turn that calls a tool, tool calls with JSON arguments to the commentary channel,
# tool results named after the last call (a namespace), raise_exception on channel tags in content.
HARMONY_TEMPLATE = (
    "{%- macro system() -%}{{- 'You are a test model.\\nKnowledge cutoff: 2024-06\\nCurrent date: ' + "
    "strftime_now('%Y-%m-%d') + '\\n\\nReasoning: ' + (reasoning_effort if reasoning_effort is defined else "
    "'medium') + '\\n\\n# Valid channels: analysis, commentary, final.' -}}{%- endmacro -%}"
    "{{- '<|start|>system<|message|>' + system() + '<|end|>' -}}"
    "{%- if messages[0].role in ('developer', 'system') -%}{%- set instructions = messages[0].content -%}"
    "{%- set rest = messages[1:] -%}{%- else -%}{%- set instructions = '' -%}{%- set rest = messages -%}{%- endif -%}"
    "{%- if instructions or tools -%}{{- '<|start|>developer<|message|>' -}}"
    "{%- if instructions -%}{{- '# Instructions\\n\\n' + instructions + '\\n\\n' -}}{%- endif -%}"
    "{%- if tools -%}{{- '# Tools\\n\\nnamespace functions {\\n' -}}{%- for t in tools -%}"
    "{{- '// ' + t.function.description + '\\ntype ' + t.function.name + ' = (_: ' + "
    "t.function.parameters.properties | tojson + ') => any;\\n' -}}{%- endfor -%}{{- '}' -}}{%- endif -%}"
    "{{- '<|end|>' -}}{%- endif -%}"
    "{%- set last = namespace(name=none) -%}"
    "{%- for m in rest -%}"
    "{%- if m.role == 'assistant' -%}"
    "{%- if m.content and '<|channel|>' in m.content -%}"
    "{{- raise_exception('pass the analysis in thinking, not channel tags in content') -}}{%- endif -%}"
    "{%- if m.tool_calls -%}{%- set call = m.tool_calls[0].function -%}"
    "{%- if m.thinking -%}{{- '<|start|>assistant<|channel|>analysis<|message|>' + m.thinking + '<|end|>' -}}"
    "{%- endif -%}"
    "{{- '<|start|>assistant to=functions.' + call.name + '<|channel|>commentary json<|message|>' + "
    "call.arguments | tojson + '<|call|>' -}}{%- set last.name = call.name -%}"
    "{%- elif loop.last and not add_generation_prompt -%}"
    "{{- '<|start|>assistant<|channel|>final<|message|>' + m.content + '<|return|>' -}}"
    "{%- else -%}{{- '<|start|>assistant<|channel|>final<|message|>' + m.content + '<|end|>' -}}{%- endif -%}"
    "{%- elif m.role == 'tool' -%}"
    "{{- '<|start|>functions.' + last.name + ' to=assistant<|channel|>commentary<|message|>' + m.content | tojson + "
    "'<|end|>' -}}"
    "{%- else -%}{{- '<|start|>' + m.role + '<|message|>' + m.content + '<|end|>' -}}{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|start|>assistant' -}}{%- endif -%}"
)

HARMONY_TOKENS = ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|call|>", "<|return|>", "<|constrain|>"]


def test_the_harmony_template_renders_as_transformers_renders_it(checked, tmp_path):
    """A GPT-OSS directory whose tokenizer carries a harmony-shaped template (and harmony's
    special tokens): kvgen's sandboxed renderer gives transformers' text for a conversation with
    instructions, a tool, a tool call with its reasoning, the tool's result and the reasoning
    effort, with and without the generation prompt; channel tags in content are refused."""
    root = checked[1]
    directory = tmp_path / "harmony"
    shutil.copytree(root / "f32", directory)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    tokenizer.add_special_tokens({"additional_special_tokens": HARMONY_TOKENS})
    tokenizer.chat_template = HARMONY_TEMPLATE
    tokenizer.save_pretrained(directory)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    tools = [{"type": "function", "function": {"name": "weather", "description": "The weather in a city.",
                                               "parameters": {"type": "object",
                                                              "properties": {"city": {"type": "string"}}}}}]
    messages = [{"role": "developer", "content": "Answer briefly."},
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": "", "thinking": "I should call the tool.",
                 "tool_calls": [{"type": "function", "function": {"name": "weather", "arguments": {"city": "Paris"}}}]},
                {"role": "tool", "content": "sunny, 21 C"},
                {"role": "assistant", "content": "Sunny, 21 C."},
                {"role": "user", "content": "Thanks!"}]
    model = kvgen.Model.load(directory)
    assert model.family == "gpt_oss"
    for conversation, prompt in ((messages, True), (messages[:5], False)):
        expected = tokenizer.apply_chat_template(conversation, tools=tools, tokenize=False,
                                                 add_generation_prompt=prompt, reasoning_effort="high")
        assert model.apply_chat_template(conversation, add_generation_prompt=prompt, tools=tools,
                                         reasoning_effort="high") == expected
        assert "<|channel|>analysis<|message|>I should call the tool.<|end|>" in expected
    ids = model.encode_chat(messages, tools=tools)
    assert ids == tokenizer.apply_chat_template(messages, tools=tools, tokenize=True, add_generation_prompt=True,
                                                return_dict=False)
    bad = [{"role": "user", "content": "hi"},
           {"role": "assistant", "content": "<|channel|>final<|message|>hello"}, {"role": "user", "content": "?"}]
    with pytest.raises(Exception, match="channel tags in content"):
        model.apply_chat_template(bad)
