"""The Llama-like families against transformers' own classes (Qwen2ForCausalLM, Qwen3ForCausalLM,
GraniteForCausalLM, SmolLM3ForCausalLM, Phi3ForCausalLM) on the same random weights: from a Hugging
Face directory in float32 and bfloat16, and from GGUF files written by llama.cpp's own converter."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from family_models import FAMILIES, random_family_model, reference, save_family_model
from hf_models import assert_generate_equals_hf
from llama_cpp_convert import convert, converter, save_smollm2_tokenizer

import kvgen

PAD = 0


@pytest.fixture(scope="module")
def files(request, tmp_path_factory, smollm2_file):
    """family -> (transformers model, {variant: path}): the float32 and bfloat16 directories and
    llama.cpp's GGUF conversions of them (f32, and bf16 from the bfloat16 directory: lossless)."""
    root = converter(request.config.cache.mkdir("llama-cpp-converter"))
    tokenizer = tmp_path_factory.mktemp("tokenizer")
    save_smollm2_tokenizer(tokenizer, smollm2_file)
    out, jobs = {}, []
    for family in FAMILIES:
        base = tmp_path_factory.mktemp(family)
        hf = random_family_model(family)
        paths = {"f32": save_family_model(hf, base / "f32", tokenizer),
                 "bf16": save_family_model(hf, base / "bf16", tokenizer, torch.bfloat16)}
        paths["gguf-f32"], paths["gguf-bf16"] = base / "f32.gguf", base / "bf16.gguf"
        jobs += [(paths["f32"], paths["gguf-f32"], "f32"), (paths["bf16"], paths["gguf-bf16"], "bf16")]
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
    assert main(["info", str(paths["bf16"])]) == 0
    assert "BF16 x" in capsys.readouterr().out
