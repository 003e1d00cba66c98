"""SmolLM3 (kvgen.families.smollm3) against SmolLM3ForCausalLM: no rotary embedding on every 4th
layer (transformers' no_rope_layers), which llama.cpp's files do not store (its fixed rule)."""

from __future__ import annotations

from family_check import check_family
from family_models import random_family_model

from kvgen.families import smollm3


def test_smollm3_equals_transformers(tmp_path, smollm2_file):
    hf = random_family_model("smollm3")
    assert hf.config.no_rope_layers == [1, 1, 1, 0]
    check_family("smollm3", hf, tmp_path, smollm2_file)


def test_the_rotary_free_layers_follow_the_config():
    assert smollm3.FAMILY.rope_layers({}, 8) == [1, 1, 1, 0, 1, 1, 1, 0]
    assert smollm3.FAMILY.rope_layers({"no_rope_layer_interval": 2}, 4) == [1, 0, 1, 0]
    assert smollm3.FAMILY.rope_layers({"no_rope_layers": [0, 1]}, 2) == [0, 1]
