"""OLMo 3 (kvgen.families.olmo3) against Olmo3ForCausalLM: OLMo 2 with a sliding window on three
layers of four, from a directory and from llama.cpp's file (an ``olmo2`` file with the window and
its layers, read as OLMo 3's); logits past the window, greedy and beam search."""

from __future__ import annotations

import pytest
from family_check import check_beams, check_family
from family_models import random_family_model

from kvgen.families import olmo3, read_gguf

YARN = dict(rope_type="yarn", factor=2.0, original_max_position_embeddings=32, rope_theta=500000.0, beta_fast=8.0,
            beta_slow=1.0)
PLAIN = dict(rope_type="default", rope_theta=500000.0)


def test_olmo3_equals_transformers(tmp_path, smollm2_file):
    hf = random_family_model("olmo3")
    assert hf.config.layer_types == ["sliding_attention"] * 3 + ["full_attention"]
    models = check_family("olmo3", hf, tmp_path, smollm2_file)
    check_beams(models, hf)
    assert read_gguf(models["gguf"].path).family.name == "olmo3"


def test_olmo3_with_yarn_on_its_full_layers_equals_transformers(tmp_path, smollm2_file):
    # OLMo 3's published rotary settings: YaRN on the full layers, the sliding ones unscaled;
    # llama.cpp's file stores the full layers' scaling and the sliding layers' base
    # (rope.freq_base_swa), read back per kind
    hf = random_family_model("olmo3", rope_parameters={"full_attention": YARN, "sliding_attention": PLAIN})
    models = check_family("olmo3", hf, tmp_path, smollm2_file)
    for model in models.values():
        assert model.forward([[5, 9, 13]]).shape == (1, 3, hf.config.vocab_size)
    kinds = olmo3.rope_per_kind(read_gguf(models["gguf"].path).config)
    assert kinds["full_attention"]["rope_type"] == "yarn" and kinds["sliding_attention"]["rope_type"] == "default"


def test_olmo3_config_defaults_and_rotary_per_layer_kind():
    config = random_family_model("olmo3").config.to_dict()
    # transformers' defaults where config.json leaves them out: every 4th layer full, a window of 4096
    bare = {k: v for k, v in config.items() if k not in ("layer_types", "sliding_window")}
    assert olmo3.FAMILY.layer_windows(bare, 8) == [4096, 4096, 4096, 0] * 2
    # an older config's rope_scaling applies to the full layers only
    scaling = {k: v for k, v in YARN.items() if k != "rope_theta"}
    old = {**bare, "rope_parameters": None, "rope_theta": 10000.0, "rope_scaling": scaling}
    kinds = olmo3.rope_per_kind(old)
    assert kinds["full_attention"]["rope_type"] == "yarn"
    assert kinds["sliding_attention"] == {"rope_type": "default", "rope_theta": 10000.0}
    with pytest.raises(ValueError, match="sliding_attention"):
        olmo3.rope_per_kind({**config, "rope_parameters": {"sliding_attention": "yarn", "full_attention": YARN}})
