"""Gemma 4 (kvgen.families.gemma4) against Gemma4ForCausalLM: sliding and full-attention layers of
different head_dims and kv heads, the full ones' proportional rotary and values from the key
projection, the last two layers reading the first two's keys and values (with MLPs twice as
wide), per-layer embeddings, layer scalars and soft-capped logits. From float32 and bfloat16
directories, a Gemma4ForConditionalGeneration-shaped directory and llama.cpp's gemma4 file: logits
at every position past the window, greedy and 4-beam sequences; the engine's features over the
shared keys and values equal fresh runs."""

from __future__ import annotations

import copy
import json
import shutil

import numpy as np
import pytest
import torch
from family_check import PAD, check_beams, check_family, logits
from family_models import GEMMA_TOKENIZER_SIZE, random_family_model, reference
from hf_models import assert_generate_equals_hf
from hybrid_checks import (
    check_batch_of_configs_equals_one_by_one,
    check_prefix_cache_equals_fresh_run,
    check_prompt_lookup_equals_plain,
    check_rows_share_the_prompts_state,
)
from llama_cpp_convert import convert, converter
from safetensors.torch import load_file, save_file

import kvgen
from kvgen.families import gemma4
from kvgen.loaders.gguf.file import read_gguf_file
from kvgen.loaders.gguf.model import GGUFContents
from kvgen.loaders.quantize import to_float32


def gemma4_model():
    """The random Gemma 4 of family_models, its layer scalars random too (a buffer transformers
    starts at 1)."""
    hf = random_family_model("gemma4")
    with torch.no_grad():
        for i, layer in enumerate(hf.model.layers):
            layer.layer_scalar.fill_(0.6 + 0.2 * i)
    return hf


@pytest.fixture(scope="module")
def checked(tmp_path_factory, smollm2_file):
    hf = gemma4_model()
    assert hf.config.kv_sharing_modes == ["store", "store", "reuse", "reuse"]
    assert hf.model.layers[1].self_attn.v_proj is None  # values from the key projection
    root = tmp_path_factory.mktemp("gemma4")
    models = check_family("gemma4", hf, root, smollm2_file)
    return hf, models, root


def test_gemma4_equals_transformers(checked):
    hf, models, _ = checked
    check_beams(models, hf)
    sizes = gemma4.FAMILY.sizes(hf.config.to_dict())
    assert sizes.layer_head_dims == [16, 32, 16, 32] and sizes.layer_kv_heads == [2, 1, 2, 1]
    assert sizes.kv_sources == [0, 1, 0, 1]


def test_a_gemma4_checkpoint_as_published_runs_its_text_model(checked, tmp_path):
    """A Gemma4ForConditionalGeneration directory (the text model under text_config and
    model.language_model., a tower's tensor beside it, never read) gives the text model's logits."""
    hf, _, root = checked
    tensors = load_file(str(root / "f32" / "model.safetensors"))
    composite = {("model.language_model." + n[len("model."):] if n.startswith("model.") else n): t
                 for n, t in tensors.items()}
    composite["model.vision_tower.patch_embedder.input_proj.weight"] = torch.full((3, 3), float("nan"))
    save_file(composite, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    text = json.loads((root / "f32" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({
        "model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"], "text_config": text,
        "tie_word_embeddings": True}))
    for f in (root / "f32").glob("tokenizer*"):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    model = kvgen.Model.load(tmp_path, exact=True)
    assert model.family == "gemma4"
    ids = np.random.default_rng(0).integers(0, GEMMA_TOKENIZER_SIZE, (2, 30))
    np.testing.assert_allclose(model.forward(ids), logits(hf, ids), atol=2e-4, rtol=1e-4)


@pytest.fixture(scope="module")
def fast(checked):
    """The float32 directory in kvgen's default (int8 activations) mode."""
    return kvgen.Model.load(checked[2] / "f32")


def test_shared_keys_and_values_through_the_engine(checked, fast):
    """The prefix cache, prompt-lookup speculation, n > 1 and generate_batch over the layers that
    read another layer's keys and values: each equals a fresh run."""
    rng = np.random.default_rng(4)
    first = rng.integers(3, GEMMA_TOKENIZER_SIZE, 44).tolist()
    second = first[:36] + rng.integers(3, GEMMA_TOKENIZER_SIZE, 9).tolist()
    check_prefix_cache_equals_fresh_run(fast, first, second)
    check_prompt_lookup_equals_plain(fast, first)
    check_rows_share_the_prompts_state(fast)
    check_batch_of_configs_equals_one_by_one(fast)


def test_the_int8_kv_cache_holds_each_layers_shape(checked, fast):
    """An int8 KV cache (a scale per row of each layer's own head_dim) computes the float cache's
    logits within its rounding (unscaled scores make this model sensitive: a half cache moves them
    by up to 0.07), takes fewer bytes, and generates."""
    root = checked[2]
    ids = np.random.default_rng(5).integers(3, GEMMA_TOKENIZER_SIZE, (2, 40))
    float32 = kvgen.Model.load(root / "f32", kv_cache_dtype="float32")
    int8 = kvgen.Model.load(root / "f32", kv_cache_dtype="int8")
    a, b = float32.forward(ids), int8.forward(ids)
    assert np.abs(a - b).mean() < 0.1 and np.corrcoef(a.ravel(), b.ravel())[0, 1] > 0.999
    assert int8._core.kv_cache_bytes(1, 64) < float32._core.kv_cache_bytes(1, 64) / 3
    config = kvgen.GenerationConfig(max_new_tokens=4, num_beams=2, do_sample=False, eos_token_id=[])
    assert len(kvgen.Generator(int8, config).generate([ids[0, :9].tolist()]).sequences[0][0]) == 4


def test_the_shared_layers_read_the_last_earlier_layer_of_their_kind():
    s, f = "sliding_attention", "full_attention"
    assert gemma4.kv_sources([s, s, f, s, f, s, f], 3) == [0, 1, 2, 3, 2, 3, 2]
    assert gemma4.kv_sources([s, f, s, f], 0) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="no"):
        gemma4.kv_sources([s, s, f, f], 2)
    # proportional rotary: a quarter of the frequencies rotate, the rest are 0
    freq = gemma4.proportional_inv_freq(32, {"rope_theta": 1e6, "partial_rotary_factor": 0.25})
    assert freq.shape == (16,) and np.all(freq[:4] > 0) and np.all(freq[4:] == 0)


def test_bidirectional_attention_is_refused_by_name():
    config = gemma4_model().config.to_dict()
    with pytest.raises(ValueError, match="use_bidirectional_attention"):
        gemma4.FAMILY.check_config({**config, "use_bidirectional_attention": "all"})


def test_the_mixture_of_experts_equals_transformers(tmp_path, checked):
    """Gemma 4's MoE block (the 26B-A4B's shape in small: 4 experts, top 2, beside the dense MLP,
    no per-layer embeddings), its router and per-expert scales random: logits at every position
    from float32 and bfloat16 directories and llama.cpp's files, greedy tokens."""
    hf = random_family_model("gemma4", enable_moe_block=True, num_experts=4, top_k_experts=2,
                             moe_intermediate_size=24, hidden_size_per_layer_input=0, num_kv_shared_layers=0,
                             use_double_wide_mlp=False)
    with torch.no_grad():
        for layer in hf.model.layers:
            layer.router.scale.copy_(1 + 0.5 * torch.randn_like(layer.router.scale))
            layer.router.per_expert_scale.copy_(0.5 + torch.rand_like(layer.router.per_expert_scale))
    hf.save_pretrained(tmp_path / "f32")
    copy.deepcopy(hf).to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    model = kvgen.Model.load(tmp_path / "f32", exact=True)
    ids = np.random.default_rng(2).integers(0, GEMMA_TOKENIZER_SIZE, (2, 30))
    np.testing.assert_allclose(model.forward(ids), logits(hf, ids), atol=2e-4, rtol=1e-4)
    assert_generate_equals_hf(model, hf, [[5, 9, 13, 4, 3], [7, 8]], PAD, max_new_tokens=10, do_sample=False)
    bf16 = kvgen.Model.load(tmp_path / "bf16", exact=True)
    np.testing.assert_allclose(bf16.forward(ids), logits(reference(type(hf), tmp_path / "bf16"), ids), atol=2e-4,
                               rtol=1e-4)
    # llama.cpp's files: float32 exactly; Q8_0's fused gate/up experts cut into views that stay quantized
    for f in (checked[2] / "tokenizer").iterdir():
        shutil.copy(f, tmp_path / "f32" / f.name)
    convert(converter(), [(tmp_path / "f32", tmp_path / "f32.gguf", "f32"), (tmp_path / "f32", tmp_path / "q8.gguf",
                                                                              "q8_0")])
    np.testing.assert_allclose(kvgen.Model.load(tmp_path / "f32.gguf", exact=True).forward(ids), logits(hf, ids),
                               atol=2e-4, rtol=1e-4)
    # the Q8_0 file's expert views hold the rows of the stacked tensor they come from, still quantized
    read = gemma4.FAMILY.from_gguf(GGUFContents(read_gguf_file(tmp_path / "q8.gguf"), tmp_path / "q8.gguf"))
    stacked = to_float32_stacked(GGUFContents(read_gguf_file(tmp_path / "q8.gguf"), tmp_path / "q8.gguf"),
                                 "blk.1.ffn_gate_up_exps.weight", (4, 48, 64))
    for e in range(4):
        for proj, rows in (("gate_proj", slice(0, 24)), ("up_proj", slice(24, 48))):
            view = read.arrays[f"model.layers.1.mlp.experts.{e}.{proj}.weight"]
            assert view.type == "Q8_0"
            np.testing.assert_array_equal(to_float32(view), stacked[e, rows])
    assert kvgen.Model.load(tmp_path / "q8.gguf").family == "gemma4"


def to_float32_stacked(gguf, name: str, shape: tuple) -> np.ndarray:
    """A stacked (E, out, in) GGUF tensor as float32, dequantized whole by gguf-py."""
    import gguf as gguf_py

    t = gguf.find(name, shape)
    return gguf_py.quants.dequantize(t.data, t.tensor_type).reshape(shape)
