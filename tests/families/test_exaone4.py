"""EXAONE 4 (kvgen.families.exaone4) against Exaone4ForCausalLM: norms after each branch, per-head
q/k norms, three sliding-window layers with the rotary embedding and a global one without it; from
a directory and llama.cpp's exaone4 file, logits past the window, greedy and beam search."""

from __future__ import annotations

import pytest
from family_check import check_beams, check_family
from family_models import random_family_model

from kvgen.families import exaone4


def test_exaone4_equals_transformers(tmp_path, smollm2_file):
    hf = random_family_model("exaone4")
    assert hf.config.layer_types == ["sliding_attention"] * 3 + ["full_attention"]
    models = check_family("exaone4", hf, tmp_path, smollm2_file)
    check_beams(models, hf)


def test_exaone4_rotates_the_sliding_layers_only():
    config = random_family_model("exaone4").config.to_dict()
    assert exaone4.FAMILY.rope_layers(config, 4) == [1, 1, 1, 0]
    # without a window every layer is global and rotates
    assert exaone4.FAMILY.rope_layers({**config, "sliding_window": None}, 4) is None
    # transformers' rule where config.json has no layer_types: every sliding_window_pattern-th layer global
    bare = {k: v for k, v in config.items() if k != "layer_types"}
    assert exaone4.FAMILY.layer_windows({**bare, "sliding_window_pattern": 2}, 4) == [7, 0, 7, 0]
    for hostile, error in ((0, ValueError), ("LLLG", TypeError), (True, TypeError)):
        with pytest.raises(error, match="sliding_window_pattern"):
            exaone4.FAMILY.layer_windows({**bare, "sliding_window_pattern": hostile}, 4)
