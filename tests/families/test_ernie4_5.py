"""ERNIE 4.5 dense (kvgen.families.ernie4_5) against Ernie4_5ForCausalLM: its rotary embedding
over adjacent pairs of dimensions (q/k rows reordered at load) and biases on every projection,
from a directory and from llama.cpp's ernie4_5 file (its converter reads only a SentencePiece
vocabulary: one is trained beside SmolLM2's tokenizer)."""

from __future__ import annotations

import numpy as np
import torch
from family_check import check_family
from family_models import random_family_model

from kvgen.families import ernie4_5
from kvgen.families.llama import halves_from_pairs


def test_ernie4_5_equals_transformers(tmp_path, smollm2_file):
    check_family("ernie4_5", random_family_model("ernie4_5"), tmp_path, smollm2_file)


def test_the_reordered_rows_rotate_as_transformers_pairs():
    # transformers' GLM-style rotation of adjacent pairs equals kvgen's rotation of halves on the
    # reordered dimensions: q . k is the same sum over the same products
    from transformers.models.ernie4_5.modeling_ernie4_5 import apply_rotary_pos_emb
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb as halves_rotation

    hf = random_family_model("ernie4_5")
    sizes = ernie4_5.FAMILY.sizes(hf.config.to_dict())
    d = sizes.head_dim
    q = torch.randn(1, sizes.heads, 5, d)
    angles = torch.arange(5.0)[:, None] * (1.0 / 500000.0 ** (torch.arange(0, d, 2) / d))
    emb = torch.cat((angles, angles), dim=-1)[None]
    pairs, _ = apply_rotary_pos_emb(q, q, emb.cos(), emb.sin())
    rows = q.permute(0, 2, 1, 3).reshape(5, -1).T.numpy()  # (heads x head_dim, positions)
    reordered = halves_from_pairs({"self_attn.q_proj.weight": rows}, sizes.heads, sizes.kv_heads)
    reordered = reordered["self_attn.q_proj.weight"]
    q_halves = torch.as_tensor(reordered.T.reshape(1, 5, sizes.heads, d)).permute(0, 2, 1, 3)
    halves, _ = halves_rotation(q_halves, q_halves, emb.cos(), emb.sin())
    np.testing.assert_allclose((halves @ halves.transpose(2, 3)).numpy(), (pairs @ pairs.transpose(2, 3)).numpy(),
                               rtol=1e-5, atol=1e-4)
