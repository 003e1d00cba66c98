"""Checks of a GGUF file of quantized types against the gguf package and transformers: each
matrix, as the core holds it, reads back as gguf's dequantization bit for bit; exact mode
matches transformers loading the same file; the default mode picks exact mode's token."""

from __future__ import annotations

import re

import numpy as np
import torch
from gguf.quants import dequantize
from llama_models import hf_from_gguf, random_llama, write_llama_gguf

import kvgen
from kvgen import _core
from kvgen.loaders.gguf.file import read_gguf_file
from kvgen.loaders.quantize import DECODED_TYPES, to_core


def hf_logits(model, ids: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return model(torch.from_numpy(ids)).logits.numpy()


def check_every_tensor_dequantizes_as_gguf(path) -> None:
    """Each quantized matrix of the file, as the loader hands it to the core (the file's blocks,
    or for the decoded types the core blocks they become) and repacked by the core, reads back
    as gguf's values."""
    for t in read_gguf_file(path).tensors:
        if len(t.shape) < 2 or t.tensor_type.name == "F32":
            continue
        rows, cols = int(np.prod(t.shape[1:])), t.shape[0]
        raw, qtype = np.ascontiguousarray(t.data).reshape(rows, -1), t.tensor_type.name
        w = to_core(qtype, raw, (rows, cols)) if qtype in DECODED_TYPES else None
        packed = _core._quant_pack(*((w.data, w.type) if w else (raw.reshape(-1), qtype)), rows, cols)
        expected = dequantize(raw, t.tensor_type)
        got = packed.dequantize_rows(np.arange(rows))
        np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32), err_msg=t.name)


def check_against_transformers(path, ids: np.ndarray) -> kvgen.Model:
    ref = hf_logits(hf_from_gguf(path), ids)
    assert np.isfinite(ref).all() and ref.std() > 1e-2  # real values, not NaNs compared with NaNs
    model = kvgen.Model.load(path, exact=True)
    # float32 summation order only: its noise grows with the logits' size (MXFP4's reach 17)
    np.testing.assert_allclose(model.forward(ids), ref, atol=1e-4 + 2e-5 * np.abs(ref).max(), rtol=1e-4)
    return model


def argmax_agreement(path, ids: np.ndarray) -> float:
    """Share of teacher-forced positions where the default mode picks exact mode's token."""
    exact = kvgen.Model.load(path, exact=True).forward(ids)
    default = kvgen.Model.load(path)
    assert default.activations == "int8x2"
    out = default.forward(ids)
    assert np.abs(out - exact).max() > 0  # a different computation
    return float((out.argmax(-1) == exact.argmax(-1)).mean())


def check_one_type_file(wide_model, tmp_path, qtype: str) -> None:
    """A wide Llama with every matrix in ``qtype``: each tensor dequantizes as gguf's, exact mode
    gives transformers' logits on the same file, and the default mode picks transformers'
    token at 97% of positions or more."""
    path = write_llama_gguf(wide_model, tmp_path / f"{qtype}.gguf", qtype)
    check_every_tensor_dequantizes_as_gguf(path)
    ids = np.random.default_rng(4).integers(0, 64, (2, 24))
    model = check_against_transformers(path, ids)
    assert f"{qtype} x16" in model.description  # embeddings, 2 x 7 projections, LM head
    assert argmax_agreement(path, np.random.default_rng(5).integers(0, 64, (4, 48))) >= 0.97


def wide_llama():
    """A random Llama 256 wide (the 256-weight block types need rows of 256), untied LM head."""
    return random_llama(vocab_size=64, hidden_size=256, intermediate_size=512, num_attention_heads=4,
                        num_key_value_heads=2, num_hidden_layers=2, max_position_embeddings=64,
                        tie_word_embeddings=False)


def check_info_lists_types(path, model: kvgen.Model, listing: str) -> dict:
    """``kvgen info``'s ``listing`` of ``path`` gives each of the model's tensor types with its
    count and the file's bytes, and says that every non-F32 type is kept quantized; returns
    {type: what the listing says kvgen does with it}."""
    sizes, said = {}, {}
    for t in read_gguf_file(path).tensors:
        sizes[t.tensor_type.name] = sizes.get(t.tensor_type.name, 0) + t.nbytes
    for qtype, count in model.tensor_types.items():
        line = re.search(rf"^  {qtype} x{count}, ([\d,]+) bytes: (.*)$", listing, re.M)
        assert line, listing
        assert int(line.group(1).replace(",", "")) == sizes[qtype]
        assert ("kept quantized" in line.group(2)) == (qtype != "F32")
        said[qtype] = line.group(2)
    return said
