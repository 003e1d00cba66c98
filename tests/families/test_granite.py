"""Granite (kvgen.families.granite) against GraniteForCausalLM: its embedding, residual and
attention multipliers and logit divisor, in the directory and through llama.cpp's converter
(which stores them as embedding_scale, residual_scale, attention.scale and logit_scale)."""

from __future__ import annotations

from family_check import check_family
from family_models import random_family_model

from kvgen.families import granite


def test_granite_equals_transformers(tmp_path, smollm2_file):
    hf = random_family_model("granite")
    models = check_family("granite", hf, tmp_path, smollm2_file)
    # the GGUF keys (float32) give back the config's multipliers
    import numpy as np

    from kvgen.families import read_gguf

    config = read_gguf(models["gguf"].path).config
    for key in ("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling"):
        assert config[key] == np.float32(getattr(hf.config, key)), key


def test_the_multipliers_are_options_of_the_core():
    options = granite.FAMILY.extra_options({"embedding_multiplier": 12.0, "logits_scaling": 8.0})
    assert options == dict(embedding_multiplier=12.0, residual_multiplier=None, attention_scale=1.0,
                           logit_scale=0.125)
