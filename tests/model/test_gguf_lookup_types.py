"""GGUF files whose matrices are of the lookup-table types (IQ4_NL, IQ4_XS, MXFP4), alone and
mixed with K-quants in one file, as Unsloth's "UD" files and GPT-OSS's MXFP4 experts are.

Random Llamas 256 wide (IQ4_XS and the K-quants need rows of 256 weights): the IQ4 matrices
hold random blocks (gguf-py cannot quantize to them), MXFP4 ones gguf-py's quantization of
the model's weights. The reference is transformers loading the same file (it dequantizes
with the gguf package): exact mode must match it as float32 does; the default mode
(two-level int8 activations) must pick the same token almost everywhere.
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

LOOKUP_TYPES = ["IQ4_NL", "IQ4_XS", "MXFP4"]
# A mixed file: Q4_K with IQ4_NL attention, an IQ4_XS down projection, MXFP4 up projection
# and a Q6_K LM head.
MIXED = {"attn_q.weight": "IQ4_NL", "attn_k.weight": "IQ4_NL", "attn_v.weight": "IQ4_NL",
         "attn_output.weight": "IQ4_NL", "ffn_down.weight": "IQ4_XS", "ffn_up.weight": "MXFP4",
         "output.weight": "Q6_K"}


@pytest.fixture(scope="module")
def wide_model():
    return wide_llama()


@pytest.mark.parametrize("qtype", LOOKUP_TYPES)
def test_lookup_type_gguf_matches_transformers_loading_the_same_file(wide_model, tmp_path, qtype):
    check_one_type_file(wide_model, tmp_path, qtype)


def test_mixed_file_loads_runs_and_is_listed_by_type(wide_model, tmp_path, capsys):
    path = write_llama_gguf(wide_model, tmp_path / "mixed.gguf", "Q4_K", types=MIXED)
    check_every_tensor_dequantizes_as_gguf(path)
    ids = np.random.default_rng(6).integers(0, 64, (2, 24))
    model = check_against_transformers(path, ids)
    assert model.tensor_types == {"IQ4_NL": 8, "F32": 5, "Q4_K": 3, "MXFP4": 2, "IQ4_XS": 2, "Q6_K": 1}
    assert argmax_agreement(path, np.random.default_rng(7).integers(0, 64, (4, 48))) >= 0.97
    from kvgen.cli import main

    assert main(["info", str(path)]) == 0
    check_info_lists_types(path, model, capsys.readouterr().out)


def test_mxfp4_blocks_that_overflow_are_refused(wide_model, tmp_path):
    # e = 254: 2^126 * 12 is past float32's range; the loader names the tensor
    path = write_llama_gguf(wide_model, tmp_path / "big.gguf", "MXFP4")
    with open(path, "r+b") as f:
        t = next(t for t in read_gguf_file(path).tensors if t.name == "blk.0.ffn_up.weight")
        f.seek(t.offset)
        f.write(bytes([254, 0x77]))  # the first block's exponent, and a code of 12 (7)
    with pytest.raises(ValueError, match="'blk.0.ffn_up.weight' holds values that are not finite"):
        kvgen.Model.load(path)
