"""OLMo 2 (kvgen.families.olmo2) against Olmo2ForCausalLM: norms after attention and the MLP
instead of before, q/k norms over the whole projection; from a directory and llama.cpp's olmo2
file, logits, greedy and beam search."""

from __future__ import annotations

from family_check import check_beams, check_family
from family_models import random_family_model

from kvgen.families import read_gguf


def test_olmo2_equals_transformers(tmp_path, smollm2_file):
    hf = random_family_model("olmo2")
    models = check_family("olmo2", hf, tmp_path, smollm2_file)
    check_beams(models, hf)
    # llama.cpp's file: norms after each branch only, q/k norms of heads x head_dim values
    arrays = read_gguf(models["gguf"].path).arrays
    layer = {name.removeprefix("model.layers.0.") for name in arrays if name.startswith("model.layers.0.")}
    assert {"post_self_attn_layernorm.weight", "post_mlp_layernorm.weight"} <= layer
    assert not {"input_layernorm.weight", "post_attention_layernorm.weight"} & layer
    assert arrays["model.layers.0.self_attn.k_norm.weight"].shape == (hf.config.num_key_value_heads * 16,)
