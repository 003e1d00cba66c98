"""The Llama-like families against transformers' own classes (Qwen2ForCausalLM, Qwen3ForCausalLM,
GraniteForCausalLM, SmolLM3ForCausalLM, Phi3ForCausalLM) on the same random weights: from a Hugging
Face directory in float32 and bfloat16, and from GGUF files written by llama.cpp's own converter."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from family_models import FAMILIES, random_family_model, reference, save_converter_tokenizer, save_family_model
from hf_models import assert_generate_equals_hf
from llama_cpp_convert import convert, converter

import kvgen

PAD = 0
# llama.cpp's q8_0 conversion of a permuted family (Granite), a fused one (Phi-3), q/k norms (Qwen3),
# 3-D expert tensors (Qwen3-MoE) and norms stored as 1 + w (Gemma 2)
QUANTIZED = ("granite", "phi3", "qwen3", "qwen3moe", "gemma2")


@pytest.fixture(scope="module")
def files(request, tmp_path_factory, smollm2_file):
    """family -> (transformers model, {variant: path}): the float32 and bfloat16 directories and
    llama.cpp's GGUF conversions of them (f32, and bf16 from the bfloat16 directory: lossless)."""
    root = converter()
    out, jobs = {}, []
    for family in FAMILIES:
        base = tmp_path_factory.mktemp(family)
        tokenizer = save_converter_tokenizer(base / "tokenizer", smollm2_file, family)
        hf = random_family_model(family)
        paths = {"f32": save_family_model(hf, base / "f32", tokenizer),
                 "bf16": save_family_model(hf, base / "bf16", tokenizer, torch.bfloat16)}
        paths["gguf-f32"], paths["gguf-bf16"] = base / "f32.gguf", base / "bf16.gguf"
        jobs += [(paths["f32"], paths["gguf-f32"], "f32"), (paths["bf16"], paths["gguf-bf16"], "bf16")]
        if family in QUANTIZED:
            paths["gguf-q8_0"] = base / "q8_0.gguf"
            jobs.append((paths["f32"], paths["gguf-q8_0"], "q8_0"))
        out[family] = (hf, paths)
    convert(root, jobs)
    return out


def hf_logits(model, ids):
    with torch.inference_mode():
        return model(torch.as_tensor(ids)).logits.numpy()


@pytest.mark.parametrize("family", list(FAMILIES))
def test_logits_equal_transformers(files, family):
    """float32 directory and f32 GGUF against the model; bfloat16 directory and bf16 GGUF (of
    the same 16-bit weights, computed with the BF16 kernels) against transformers reading that
    directory in float32. Lengths on both sides of Phi-3's LongRoPE switch (16 positions)."""
    hf, paths = files[family]
    hf16 = reference(FAMILIES[family][1], paths["bf16"])
    rng = np.random.default_rng(1)
    for length in (1, 11, 40):
        ids = rng.integers(0, hf.config.vocab_size, (2, length))
        ref, ref16 = hf_logits(hf, ids), hf_logits(hf16, ids)
        for variant, expected in (("f32", ref), ("gguf-f32", ref), ("bf16", ref16), ("gguf-bf16", ref16)):
            model = kvgen.Model.load(paths[variant], exact=True)
            assert model.family == family
            np.testing.assert_allclose(model.forward(ids), expected, atol=2e-4, rtol=1e-4, err_msg=variant)


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("settings", [dict(do_sample=False), dict(num_beams=3, num_return_sequences=2)],
                         ids=["greedy", "beam3"])
def test_generate_equals_transformers(files, family, settings):
    hf, paths = files[family]
    prompts = [[5, 9, 13, 4, 3], [7, 8], [11, 12, 13]]
    models = [kvgen.Model.load(paths[variant], exact=True) for variant in ("f32", "gguf-f32")]
    # 5 + 8 positions: below Phi-3's LongRoPE switch, where transformers recomputes its cache
    assert_generate_equals_hf(models, hf, prompts, PAD, max_new_tokens=8, eos_token_id=[29, 45], **settings)


@pytest.mark.parametrize("family", QUANTIZED)
def test_q8_0_file_of_llama_cpp_equals_quantizing_the_directory_at_load(files, family):
    """llama.cpp's Q8_0 file (its permutations, fused matrices and quantizer) and kvgen's
    dtype="q8_0" on the directory hold the same blocks: the same logits, in float and in
    int8 activations; and both follow transformers' float32 logits (correlation, as Q8_0's error
    grows through these random layers)."""
    hf, paths = files[family]
    ids = np.random.default_rng(2).integers(0, hf.config.vocab_size, (2, 11))
    ref = hf_logits(hf, ids)
    for activations in ("float", "int8x2"):
        from_file = kvgen.Model.load(paths["gguf-q8_0"], activations=activations)
        at_load = kvgen.Model.load(paths["f32"], dtype="q8_0", activations=activations)
        assert from_file.tensor_types.get("Q8_0", 0) > 0 and from_file.weight_bytes == at_load.weight_bytes
        got = from_file.forward(ids)
        np.testing.assert_allclose(got, at_load.forward(ids), atol=1e-4, rtol=1e-4)
        assert np.corrcoef(got.ravel(), ref.ravel())[0, 1] > 0.99


def test_bf16_checkpoint_stays_16_bit_or_is_quantized_at_load(files):
    hf, paths = files["qwen3"]
    f32 = kvgen.Model.load(paths["f32"])
    bf16 = kvgen.Model.load(paths["bf16"])
    q8 = kvgen.Model.load(paths["bf16"], dtype="q8_0")
    # 16-bit matrices at 2 bytes a weight, Q8_0 at 34 bytes per 32 (vectors stay float32 in all)
    assert bf16.weight_bytes < 0.55 * f32.weight_bytes
    assert q8.weight_bytes < 0.55 * bf16.weight_bytes + 4 * 64 * 8
    ids = np.arange(3, 30)[None]
    ref = hf_logits(reference(FAMILIES["qwen3"][1], paths["bf16"]), ids)
    assert np.abs(q8.forward(ids) - ref).max() < 0.1 * np.abs(ref).max()


def test_unsupported_architectures_name_the_supported_ones(files, tmp_path):
    import json
    import shutil

    d = tmp_path / "m"
    shutil.copytree(files["qwen2"][1]["f32"], d)
    config = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**config, "model_type": "mamba"}))
    with pytest.raises(ValueError, match=r"model_type='mamba' is not supported \(kvgen runs: gpt2, llama, .*qwen2"):
        kvgen.Model.load(d)


def test_kvgen_info_shows_the_family_and_each_tensor_type(files, capsys):
    from kvgen.cli import main

    _, paths = files["phi3"]
    assert main(["info", str(paths["gguf-bf16"])]) == 0
    out = capsys.readouterr().out
    assert "Model(phi3," in out and "Phi3ForCausalLM" in out and "computed by kvgen's llama model" in out
    assert "BF16 x" in out and "kept 16-bit" in out and "F32 x" in out
    # the capabilities the family module derived from the file: LongRoPE's switch at 16
    assert "capabilities: prefix reuse inside a prefill chunk: no" in out and "computed again past 16 positions" in out
    assert main(["info", str(paths["bf16"])]) == 0
    assert "BF16 x" in capsys.readouterr().out


TEXT = ("Grüße aus Zürich! 你好，世界 — こんにちは Привет 😀🎉👩‍💻\n"
        "def add(a, b):\n    return a + b  # 12345 3.14\n<|im_start|>user\nhi<|im_end|>")


@pytest.mark.parametrize("family", ["qwen2", "phi3"])
def test_tokenizer_and_template_travel_through_the_converter(files, family):
    """The GGUF file's tokenizer (llama.cpp's converter wrote SmolLM2's, pre-tokenizer "smollm")
    encodes and decodes as transformers' tokenizer of the directory it came from; BOS/EOS and
    add_bos follow the file; the chat template renders as transformers renders it."""
    from transformers import TokenizersBackend

    _, paths = files[family]
    hf_tok = TokenizersBackend.from_pretrained(paths["f32"])
    model = kvgen.Model.load(paths["gguf-f32"])
    ids = hf_tok.encode(TEXT)
    assert model.encode(TEXT) == ids
    assert model.decode(ids) == hf_tok.decode(ids)
    assert model.decode(ids, skip_special_tokens=True) == hf_tok.decode(ids, skip_special_tokens=True)
    assert model.eos_token == hf_tok.eos_token and model.bos_token == hf_tok.bos_token
    chat = [{"role": "user", "content": "Hi 😀"}, {"role": "assistant", "content": "Hello"},
            {"role": "user", "content": "2+2?"}]
    assert model.apply_chat_template(chat) == hf_tok.apply_chat_template(chat, tokenize=False,
                                                                         add_generation_prompt=True)


@pytest.mark.parametrize("family,key,value", [
    ("granite", "embedding_multiplier", "12"),
    ("granite", "logits_scaling", 0),
    ("granite", "residual_multiplier", float("inf")),
    ("granite", "attention_multiplier", 1e300),
    ("smollm3", "no_rope_layers", [1, 0]),
    ("smollm3", "no_rope_layers", [1, 1, 2, 1]),
    ("smollm3", "no_rope_layer_interval", 0),
    ("phi3", "partial_rotary_factor", 1.5),
    ("phi3", "rope_scaling", {"rope_type": "longrope", "short_factor": [1.0], "long_factor": [1.0]}),
    ("phi3", "rope_scaling", {"rope_type": "longrope", "short_factor": [1.0] * 6, "long_factor": [0.0] * 6,
                              "original_max_position_embeddings": 16}),
    ("phi3", "sliding_window", 0),
    ("phi3", "sliding_window", True),
    ("qwen2", "use_sliding_window", True),  # with a window of "8"
    ("granite", "sliding_window", 8),  # a family whose class has no window
    ("gemma2", "sliding_window", -3),
    ("gemma2", "attn_logit_softcapping", -1.0),
    ("gemma2", "query_pre_attn_scalar", 0),
    ("gemma3", "layer_types", ["sliding_attention"]),
    ("gemma3", "use_bidirectional_attention", True),
    ("qwen3moe", "num_experts_per_tok", 99),
    ("gpt_oss", "swiglu_limit", -1.0),
    ("gpt_oss", "swiglu_alpha", float("nan")),
    ("gpt_oss", "quantization_config", {"quant_method": "gptq"}),
    ("gpt_oss", "layer_types", ["full_attention"]),
])
def test_hostile_family_settings_are_errors_naming_them(files, tmp_path, family, key, value):
    import json
    import shutil

    d = tmp_path / "m"
    shutil.copytree(files[family][1]["f32"], d)
    config = json.loads((d / "config.json").read_text())
    if key == "rope_scaling":
        config.pop("rope_parameters")
    if key == "no_rope_layer_interval":  # used only without the list
        config.pop("no_rope_layers")
    if key == "partial_rotary_factor":  # rope_parameters' own wins, as in transformers
        config["rope_parameters"][key] = value
    config[key] = value
    if key == "use_sliding_window":
        config.update(sliding_window="8", layer_types=["sliding_attention"] * config["num_hidden_layers"])
    (d / "config.json").write_text(json.dumps(config))
    with pytest.raises((ValueError, TypeError), match=f"{d}: .*({key.split('_')[0]}|sliding_window|factor)"):
        kvgen.Model.load(d)


@pytest.mark.parametrize("settings", [dict(do_sample=False), dict(num_beams=3, num_return_sequences=2)],
                         ids=["greedy", "beam3"])
@pytest.mark.parametrize("length", [5, 2], ids=["crosses-at-16", "crosses-at-16-short"])
def test_phi3_generation_past_the_longrope_switch_equals_transformers(files, settings, length):
    """Past original_max_position_embeddings (16), transformers' Phi-3 computes the whole
    sequence with the long factors (its generate drops the cache when the sequence crosses 16);
    kvgen computes the crossing row again. One prompt per transformers call: its batches pick
    the factors by their longest row."""
    hf, paths = files["phi3"]
    prompt = np.random.default_rng(length).integers(3, hf.config.vocab_size, length).tolist()
    models = [kvgen.Model.load(paths[variant], exact=True) for variant in ("f32", "gguf-f32")]
    assert all(m._long_rope_context == 16 for m in models)
    assert_generate_equals_hf(models, hf, [prompt], PAD, max_new_tokens=20, **settings)


@pytest.mark.parametrize("settings", [dict(do_sample=False), dict(num_beams=3, num_return_sequences=2)],
                         ids=["greedy", "beam3"])
def test_phi3_prompt_past_the_switch_uses_the_long_factors_throughout(tmp_path, settings):
    """A 50-token prompt past a switch at 40: transformers computes it with the long factors in
    one pass; kvgen feeds it in one piece, not in 32-token chunks (the first of which ends
    before the switch)."""
    hf = random_family_model("phi3", max_position_embeddings=128, original_max_position_embeddings=40)
    hf.save_pretrained(tmp_path)
    model = kvgen.Model.load(tmp_path, exact=True)
    assert model._long_rope_context == 40
    prompt = np.random.default_rng(4).integers(3, hf.config.vocab_size, 50).tolist()
    assert_generate_equals_hf(model, hf, [prompt], PAD, max_new_tokens=10, **settings)


def test_phi3_rows_past_the_switch_do_not_change_the_others(files):
    """generate_batch puts rows before and after the switch in passes of their own: each prompt
    gets the tokens it gets alone."""
    _, paths = files["phi3"]
    model = kvgen.Model.load(paths["f32"], exact=True)
    rng = np.random.default_rng(3)
    prompts = [rng.integers(3, 100, n).tolist() for n in (3, 14, 40, 9)]
    config = kvgen.GenerationConfig(max_new_tokens=20, do_sample=False)
    singles = [kvgen.Generator(model, config).generate([p]).sequences[0][0].tolist() for p in prompts]
    batched = kvgen.Generator(model, config).generate_batch(prompts, max_batch=4)
    assert [b.sequences[0][0].tolist() for b in batched] == singles
