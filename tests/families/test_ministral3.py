"""Ministral 3 (kvgen.families.ministral3) against Ministral3ForCausalLM: YaRN, and Llama 4's
attention temperature, which scales the queries past the original context: kvgen's context ends
there, and within it the model is transformers' (from a directory and llama.cpp's mistral3 file)."""

from __future__ import annotations

import numpy as np
import pytest
from family_check import check_family, logits
from family_models import random_family_model

from kvgen.families import ministral3, read_gguf

ORIGINAL = 48


def test_ministral3_equals_transformers(tmp_path, smollm2_file):
    hf = random_family_model("ministral3")
    models = check_family("ministral3", hf, tmp_path, smollm2_file)
    assert {m.context_length for m in models.values()} == {ORIGINAL}
    # llama.cpp's file keeps the YaRN settings and the temperature (attention.temperature_scale)
    params = read_gguf(models["gguf"].path).config["rope_parameters"]
    assert params["llama_4_scaling_beta"] == np.float32(0.1)
    assert ministral3.attention_temperature({"rope_parameters": params}) == (params["llama_4_scaling_beta"], ORIGINAL)
    # past the original context transformers scales the queries: the logits there are others
    ids = np.random.default_rng(0).integers(0, hf.config.vocab_size, (1, 60))
    plain = random_family_model("ministral3", rope_parameters={**hf.config.rope_parameters, "llama_4_scaling_beta": 0})
    ours, without = logits(hf, ids), logits(plain, ids)
    np.testing.assert_array_equal(ours[:, :ORIGINAL], without[:, :ORIGINAL])
    assert not np.allclose(ours[:, ORIGINAL:], without[:, ORIGINAL:], atol=1e-3)
    with pytest.raises(ValueError, match="context"):
        models["f32"].forward(ids)


def test_the_context_ends_only_where_queries_are_scaled():
    config = random_family_model("ministral3").config.to_dict()
    assert ministral3.FAMILY.sizes(config).context_length == ORIGINAL
    for beta, context in ((0.0, 64), (None, "llama_4_scaling_beta"), ("0.1", "llama_4_scaling_beta")):
        changed = {**config, "rope_parameters": {**config["rope_parameters"], "llama_4_scaling_beta": beta}}
        if isinstance(context, int):
            assert ministral3.FAMILY.sizes(changed).context_length == context
        else:
            with pytest.raises(ValueError, match=context):
                ministral3.FAMILY.sizes(changed)
