"""GGUF files whose matrices are of the types the loader decodes into the core's index blocks
(Q2_K, Q3_K, the IQ3 / IQ2 / IQ1 grids, TQ1_0, TQ2_0), alone and mixed per tensor with other
types, as the "UD" dynamic quants are.

Random Llamas 256 wide (every type here has 256-weight blocks) written with the gguf package's
GGUFWriter; the matrices hold random valid blocks (every grid index, sign and sub-block scale
random, fp16 scales d set to a few hundredths' worth: gguf-py cannot quantize to these types,
and llama.cpp's quantizer is not used). The reference is transformers loading the same file (it
dequantizes with the gguf package): exact mode must match it as float32 does; the default
mode (two-level int8 activations) must pick the same token almost everywhere.
"""

from __future__ import annotations

import numpy as np
import pytest
from gguf_type_checks import (
    argmax_agreement,
    check_against_transformers,
    check_every_tensor_dequantizes_as_gguf,
    check_info_lists_types,
    check_one_type_file,
    wide_llama,
)
from llama_models import write_llama_gguf

import kvgen
from kvgen.loaders.gguf.file import read_gguf_file

DECODED = ["Q2_K", "Q3_K", "IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0"]
# A mixed file: Q2_K with IQ3_S attention (IQ3_XXS values), an IQ2_XS down projection, a TQ2_0
# up projection, IQ1_M embeddings and an IQ4_NL LM head.
MIXED = {"attn_q.weight": "IQ3_S", "attn_k.weight": "IQ3_S", "attn_v.weight": "IQ3_XXS",
         "attn_output.weight": "IQ3_S", "ffn_down.weight": "IQ2_XS", "ffn_up.weight": "TQ2_0",
         "token_embd.weight": "IQ1_M", "output.weight": "IQ4_NL"}


@pytest.fixture(scope="module")
def wide_model():
    return wide_llama()


@pytest.mark.parametrize("qtype", DECODED)
def test_decoded_type_gguf_matches_transformers_loading_the_same_file(wide_model, tmp_path, qtype):
    check_one_type_file(wide_model, tmp_path, qtype)


def test_mixed_file_loads_runs_and_is_listed_by_type(wide_model, tmp_path, capsys):
    path = write_llama_gguf(wide_model, tmp_path / "mixed.gguf", "Q2_K", types=MIXED)
    check_every_tensor_dequantizes_as_gguf(path)
    model = check_against_transformers(path, np.random.default_rng(6).integers(0, 64, (2, 24)))
    assert model.tensor_types == {"IQ3_S": 6, "F32": 5, "Q2_K": 2, "IQ3_XXS": 2, "IQ2_XS": 2, "TQ2_0": 2,
                                  "IQ1_M": 1, "IQ4_NL": 1}
    assert argmax_agreement(path, np.random.default_rng(7).integers(0, 64, (4, 48))) >= 0.97
    from kvgen.cli import main

    assert main(["info", str(path)]) == 0
    said = check_info_lists_types(path, model, capsys.readouterr().out)
    assert {q for q, what in said.items() if "bit for bit" in what} == {"IQ3_S", "Q2_K", "IQ3_XXS", "IQ2_XS", "TQ2_0",
                                                                        "IQ1_M"}


@pytest.mark.parametrize("qtype", ["IQ2_XXS", "Q3_K"])
def test_a_scale_that_is_not_finite_is_refused_by_tensor(wide_model, tmp_path, qtype):
    path = write_llama_gguf(wide_model, tmp_path / "nan.gguf", qtype)
    t = next(t for t in read_gguf_file(path).tensors if t.name == "blk.1.attn_v.weight")
    with open(path, "r+b") as f:
        f.seek(t.offset + (108 if qtype == "Q3_K" else 0))  # the first block's fp16 d
        f.write(np.float16(np.inf).tobytes())
    with pytest.raises(ValueError, match="'blk.1.attn_v.weight' holds values that are not finite"):
        kvgen.Model.load(path)
