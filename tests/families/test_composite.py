"""Checkpoints as published (kvgen.families.composite): a Gemma3ForConditionalGeneration or
Mistral3ForConditionalGeneration directory loads its text model, which computes the logits of the
composite's own forward on text and of the text model's class on the same weights; the vision
tower and the projector are never read (their shard may be garbage)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import transformers
from family_check import logits
from safetensors import safe_open
from safetensors.torch import save_file

import kvgen
from kvgen.families.composite import COMPOSITES, text_tensor_name

VOCAB = 300
TEXT = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=64, initializer_range=0.3)
# google/gemma-3-4b-it's text_config names only what differs from Gemma3TextConfig's defaults
# (transformers 4.50 saved it so); these are the keys this model sets, the rest are defaults
GEMMA3_SPARSE_TEXT = dict(TEXT, num_hidden_layers=7, head_dim=16, query_pre_attn_scalar=16, sliding_window=7,
                          rope_scaling={"factor": 8.0, "rope_type": "linear"}, model_type="gemma3_text")
SIGLIP = dict(hidden_size=32, intermediate_size=37, num_hidden_layers=1, num_attention_heads=2, image_size=28,
              patch_size=14)


def randomize_norms(model: transformers.PreTrainedModel) -> transformers.PreTrainedModel:
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
    return model.eval()


def split_towers(directory) -> dict:
    """model.safetensors rewritten as two shards and an index, the text model's tensors in one
    and the other towers' in the other, as large checkpoints are published; then the other
    towers' shard is overwritten with bytes no reader could take for safetensors."""
    path = directory / "model.safetensors"
    with safe_open(str(path), "pt") as f:
        tensors = {name: f.get_tensor(name) for name in f.keys()}
    shards = {"text.safetensors": {n: t for n, t in tensors.items() if text_tensor_name(n)},
              "towers.safetensors": {n: t for n, t in tensors.items() if not text_tensor_name(n)}}
    assert shards["text.safetensors"] and shards["towers.safetensors"]
    for shard, held in shards.items():
        save_file(held, str(directory / shard), metadata={"format": "pt"})
    (directory / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {n: shard for shard, held in shards.items() for n in held}}))
    path.unlink()
    return shards


@pytest.fixture(scope="module")
def gemma3(tmp_path_factory):
    config = transformers.Gemma3Config(text_config=transformers.Gemma3TextConfig(
        **{k: v for k, v in GEMMA3_SPARSE_TEXT.items() if k not in ("model_type", "rope_scaling")},
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1_000_000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0}}),
        vision_config=transformers.SiglipVisionConfig(**SIGLIP), mm_tokens_per_image=4)
    transformers.set_seed(0)
    model = randomize_norms(transformers.Gemma3ForConditionalGeneration(config))
    directories = {}
    for dtype in (torch.float32, torch.bfloat16):
        directory = tmp_path_factory.mktemp(f"gemma3-{dtype}".replace("torch.", ""))
        model.to(dtype).save_pretrained(directory)
        saved = json.loads((directory / "config.json").read_text())
        saved["text_config"] = GEMMA3_SPARSE_TEXT
        (directory / "config.json").write_text(json.dumps(saved))
        directories[dtype] = directory
    return directories


def text_model_of(composite: transformers.PreTrainedModel, causal_class: type) -> transformers.PreTrainedModel:
    """The text model's class over the composite's text weights."""
    causal = causal_class(composite.config.text_config).eval()
    causal.model.load_state_dict(composite.model.language_model.state_dict())
    causal.lm_head.weight = composite.lm_head.weight
    return causal


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_gemma3_checkpoint_as_published_runs_its_text_model(gemma3, dtype):
    directory = gemma3[dtype]
    reference = transformers.Gemma3ForConditionalGeneration.from_pretrained(directory, dtype=torch.float32).eval()
    # transformers read the sparse text_config with its class's defaults (as kvgen must)
    assert reference.config.text_config.rope_parameters["full_attention"]["rope_theta"] == 1_000_000.0
    causal = text_model_of(reference, transformers.Gemma3ForCausalLM)
    towers = split_towers(directory)
    (directory / "towers.safetensors").write_bytes(b"\xff" * 64)  # never read
    model = kvgen.Model.load(directory, exact=True)
    assert model.family == "gemma3"
    assert sum(model.tensor_types.values()) == len(towers["text.safetensors"])
    ids = np.random.default_rng(0).integers(0, VOCAB, (2, 40))
    ours = model.forward(ids)
    np.testing.assert_allclose(ours, logits(reference, ids), atol=2e-4, rtol=1e-4)
    np.testing.assert_allclose(ours, logits(causal, ids), atol=2e-4, rtol=1e-4)


@pytest.mark.parametrize("text_class, settings", [
    (transformers.MistralConfig, dict(sliding_window=None)),  # Mistral Small 3.1's text model
    (transformers.MistralConfig, dict(sliding_window=7)),
])
def test_a_mistral3_checkpoint_as_published_runs_its_text_model(tmp_path, text_class, settings):
    text = text_class(**TEXT, num_hidden_layers=2, tie_word_embeddings=False, rope_theta=1e6, **settings)
    vision = transformers.PixtralVisionConfig(**SIGLIP, head_dim=16)
    config = transformers.Mistral3Config(text_config=text, vision_config=vision, tie_word_embeddings=False)
    transformers.set_seed(0)
    randomize_norms(transformers.Mistral3ForConditionalGeneration(config)).save_pretrained(tmp_path)
    reference = transformers.Mistral3ForConditionalGeneration.from_pretrained(tmp_path, dtype=torch.float32).eval()
    causal = text_model_of(reference, transformers.MistralForCausalLM)
    with safe_open(str(tmp_path / "model.safetensors"), "np") as f:
        assert "language_model.lm_head.weight" in f.keys()  # the published layout
    split_towers(tmp_path)
    (tmp_path / "towers.safetensors").write_bytes(b"\xff" * 64)
    model = kvgen.Model.load(tmp_path, exact=True)
    assert model.family == "mistral"
    ids = np.random.default_rng(0).integers(0, VOCAB, (2, 40))
    ours = model.forward(ids)
    np.testing.assert_allclose(ours, logits(reference, ids), atol=2e-4, rtol=1e-4)
    np.testing.assert_allclose(ours, logits(causal, ids), atol=2e-4, rtol=1e-4)


def test_the_text_tensors_of_both_layouts():
    assert text_tensor_name("language_model.model.layers.0.mlp.up_proj.weight") == "model.layers.0.mlp.up_proj.weight"
    assert text_tensor_name("model.language_model.norm.weight") == "model.norm.weight"
    assert text_tensor_name("language_model.lm_head.weight") == text_tensor_name("lm_head.weight") == "lm_head.weight"
    assert text_tensor_name("vision_tower.vision_model.post_layernorm.weight") is None
    assert text_tensor_name("model.vision_tower.patch_conv.weight") is None
    assert text_tensor_name("multi_modal_projector.linear_1.weight") is None


def test_the_gemma3_text_defaults_are_transformers():
    defaults = transformers.Gemma3TextConfig()
    for key, value in COMPOSITES["gemma3"].text_defaults.items():
        if key == "rope_theta":
            assert defaults.rope_parameters["full_attention"]["rope_theta"] == value
        elif key == "rope_local_base_freq":
            assert defaults.rope_parameters["sliding_attention"]["rope_theta"] == value
        else:
            assert getattr(defaults, key) == value, key


def test_a_text_config_of_another_shape_is_an_error_naming_it(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mistral3", "text_config": [1, 2]}))
    with pytest.raises(ValueError, match="text_config must be an object"):
        kvgen.Model.load(tmp_path)
