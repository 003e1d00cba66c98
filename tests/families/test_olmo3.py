"""OLMo 3 (kvgen.families.olmo3) against Olmo3ForCausalLM: OLMo 2 with a sliding window on three
layers of four, from a directory and from llama.cpp's file (an ``olmo2`` file with the window and
its layers, read as OLMo 3's); logits past the window, greedy and beam search."""

from __future__ import annotations

import pytest
from family_check import check_beams, check_family
from family_models import random_family_model

from kvgen.families import olmo3, read_gguf


def test_olmo3_equals_transformers(tmp_path, smollm2_file):
    hf = random_family_model("olmo3")
    assert hf.config.layer_types == ["sliding_attention"] * 3 + ["full_attention"]
    models = check_family("olmo3", hf, tmp_path, smollm2_file)
    check_beams(models, hf)
    assert read_gguf(models["gguf"].path).family.name == "olmo3"


def test_olmo3_config_defaults_and_rotary_per_layer_kind():
    config = random_family_model("olmo3").config.to_dict()
    # transformers' defaults where config.json leaves them out: every 4th layer full, a window of 4096
    bare = {k: v for k, v in config.items() if k not in ("layer_types", "sliding_window")}
    assert olmo3.FAMILY.layer_windows(bare, 8) == [4096, 4096, 4096, 0] * 2
    # one rotary embedding for both kinds of layer; YaRN on the full layers only is refused
    yarn = dict(rope_type="yarn", factor=8.0, original_max_position_embeddings=32, rope_theta=500000.0)
    scaled = {**config, "rope_parameters": {**config["rope_parameters"], "full_attention": yarn}}
    with pytest.raises(ValueError, match="rope_parameters differ between sliding_attention"):
        olmo3.one_rotary(scaled)
    assert olmo3.one_rotary(config)["rope_parameters"]["rope_theta"] == 500000.0
