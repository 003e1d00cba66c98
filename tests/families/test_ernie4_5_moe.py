"""ERNIE 4.5 MoE (kvgen.families.ernie4_5_moe) against Ernie4_5_MoeForCausalLM: dense and MoE layers
as moe_layer_start_index / moe_layer_end_index / moe_layer_interval place them, the router's
selection bias (moe_statics.e_score_correction_bias), the renormalised top-k weights and the
shared experts, from a directory and from llama.cpp's ernie4_5-moe file (its converter reads only
a SentencePiece vocabulary: one is trained beside SmolLM2's tokenizer), in float32 and with its
matrices and experts in Q8_0."""

from __future__ import annotations

import copy
import json

import gguf
import numpy as np
import pytest
import torch
import transformers
from family_check import check_beams, check_family, logits
from family_models import random_family_model
from hf_models import assert_generate_equals_hf

import kvgen
from kvgen.families.ernie4_5_moe import moe_layers


@pytest.fixture(scope="module")
def hf():
    return random_family_model("ernie4_5_moe")


def rounded_through_q8_0(hf: transformers.PreTrainedModel) -> transformers.PreTrainedModel:
    """``hf`` with the matrices llama.cpp's converter writes as Q8_0 (every 2-D and 3-D weight but
    the routers', which it keeps in float32) rounded through Q8_0 (blocks of 32 along each row)."""
    rounded = copy.deepcopy(hf)
    q8 = gguf.GGMLQuantizationType.Q8_0
    with torch.no_grad():
        for name, p in rounded.named_parameters():
            if p.dim() >= 2 and ".mlp.gate." not in name:
                blocks = gguf.quants.quantize(p.numpy(), q8)
                p.copy_(torch.from_numpy(gguf.quants.dequantize(blocks, q8).reshape(p.shape)))
    return rounded


def test_ernie4_5_moe_equals_transformers(hf, tmp_path, smollm2_file):
    assert [hasattr(layer.mlp, "gate") for layer in hf.model.layers] == [False, True, True, False]
    q8_0 = tmp_path / "q8_0.gguf"
    models = check_family("ernie4_5_moe", hf, tmp_path, smollm2_file, also_convert=[(tmp_path / "f32", q8_0, "q8_0")])
    check_beams(models, hf)
    # the converter's Q8_0 file: the 3-D experts and the shared experts stay Q8_0 blocks, and compute
    # transformers' logits over the same rounded weights
    types = {t.name: t.tensor_type.name for t in gguf.GGUFReader(q8_0).tensors}
    assert {types[f"blk.{name}.weight"] for name in ("1.ffn_gate_exps", "1.ffn_down_exps", "1.ffn_up_shexp",
                                                      "1.attn_q", "0.ffn_gate")} == {"Q8_0"}
    quantized, reference = kvgen.Model.load(q8_0, exact=True), rounded_through_q8_0(hf)
    assert quantized.weight_bytes < models["gguf"].weight_bytes / 3
    ids = np.random.default_rng(3).integers(0, hf.config.vocab_size, (2, 24))
    np.testing.assert_allclose(quantized.forward(ids), logits(reference, ids), atol=2e-4, rtol=1e-4)
    assert_generate_equals_hf(quantized, reference, [[5, 9, 13, 4, 3], [7, 8]], 0, max_new_tokens=12,
                              do_sample=False)


@pytest.mark.parametrize("start, end, interval", [(1, -1, 1), (0, 5, 2), (2, 4, 3), (1, 2, 1)])
def test_the_moe_layers_are_transformers(start, end, interval):
    config = transformers.Ernie4_5_MoeConfig(num_hidden_layers=6, hidden_size=16, intermediate_size=16,
                                             num_attention_heads=2, num_key_value_heads=1, moe_num_experts=2, moe_k=1,
                                             moe_intermediate_size=8, vocab_size=8, moe_layer_start_index=start,
                                             moe_layer_end_index=end, moe_layer_interval=interval)
    built = transformers.Ernie4_5_MoeModel(config)
    raw = json.loads(config.to_json_string())
    raw["moe_layer_end_index"] = end  # as a published config states it (-1: the last layer)
    assert moe_layers(raw, 6) == [hasattr(layer.mlp, "gate") for layer in built.layers]


def test_routers_where_the_config_puts_none_are_refused(hf, tmp_path):
    hf.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "moe_layer_interval": 2}))
    with pytest.raises(ValueError, match="layer 2 has a router"):
        kvgen.Model.load(tmp_path)
