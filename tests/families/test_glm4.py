"""GLM-4 (kvgen.families.glm4) against Glm4ForCausalLM: norms before and after each branch, a
rotary embedding over adjacent pairs of the first half of each head, q/k/v biases, fused gate/up;
from a directory and llama.cpp's glm4 file (its converter looks up <|user|> in the tokenizer:
added to SmolLM2's), logits, greedy and beam search."""

from __future__ import annotations

import numpy as np
from family_check import check_beams, check_family
from family_models import random_family_model

from kvgen.families import glm4
from kvgen.families.llama import halves_from_pairs


def test_glm4_equals_transformers(tmp_path, smollm2_file):
    hf = random_family_model("glm4")
    models = check_family("glm4", hf, tmp_path, smollm2_file)
    check_beams(models, hf)


def test_partial_rotary_rows_are_reordered_within_the_rotary_part():
    # per head, rows (0 1 2 3 | 4 5) with 4 rotary dimensions in adjacent pairs (0,1) (2,3)
    # become kvgen's halves (0 2 1 3), and the rows that do not rotate stay
    rows = np.arange(12, dtype=np.float32)[:, None]  # 2 heads of 6
    out = halves_from_pairs({"self_attn.k_proj.weight": rows}, 2, 2, 4)["self_attn.k_proj.weight"]
    assert out[:, 0].tolist() == [0, 2, 1, 3, 4, 5, 6, 8, 7, 9, 10, 11]


def test_glm4_config_defaults():
    config = random_family_model("glm4").config.to_dict()
    bare = {k: v for k, v in config.items() if k != "head_dim"}
    bare["rope_parameters"] = {k: v for k, v in config["rope_parameters"].items() if k != "partial_rotary_factor"}
    bare.pop("partial_rotary_factor", None)
    # Glm4Config's head_dim 128 and half of it rotating
    assert glm4.FAMILY.sizes(bare).head_dim == 128
    assert glm4.FAMILY.options(bare, glm4.FAMILY.sizes(bare)).rotary_dim == 64
