"""Importance matrices for llama.cpp's quantizer (``llama_model_quantize_params.imatrix``).

An importance matrix gives, per 2-D weight tensor, one float per input column: how much that
column matters, which the quantizer uses as the weights of its least-squares fit. llama.cpp's
``llama-imatrix`` tool takes the mean of the squared activations entering each matrix over a
calibration text; llama-cpp-python does not ship that tool, so:

* ``uniform(path)``: ones for every tensor (every column alike: the plain squared error the
  quantizer minimizes without a matrix). For random weights, where no text means anything.
* ``from_activations(path, text)``: the mean of the squared inputs of every linear layer of
  transformers' float32 model of the file (``from_pretrained(..., gguf_file=...)``, the file's
  weights dequantized), over the tokens of ``text``, collected with forward pre-hooks; the
  layers' names are mapped to the file's tensor names by the ``gguf`` package's own table
  (``gguf.get_tensor_name_map``); a tied output layer's statistics go to the token embeddings
  (the tensor its product reads, as ``llama-imatrix`` records it). Other tensors get ones.
  This is the statistic ``llama-imatrix`` collects, taken from the reference implementation.

``ImatrixArray`` turns either into the ctypes array the quantizer takes, kept alive with it.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np


class ImatrixArray:
    """llama.cpp's ``llama_model_imatrix_data`` array ended by a null name, from {tensor name:
    float per input column}; ``array`` is what ``llama_cpp_engine.quantize(imatrix=...)`` takes."""

    def __init__(self, columns: dict[str, np.ndarray]):
        import llama_cpp

        self.rows = [(name.encode(), np.ascontiguousarray(v, dtype=np.float32)) for name, v in columns.items()]
        self.array = (llama_cpp.llama_model_imatrix_data * (len(self.rows) + 1))()
        for entry, (name, values) in zip(self.array, self.rows):
            entry.name, entry.size = name, len(values)
            entry.data = values.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def matrix_widths(path: Path) -> dict[str, int]:
    """Every 2-D tensor of a GGUF file with its input width (the GGUF shape's first entry)."""
    import gguf

    return {t.name: int(t.shape[0]) for t in gguf.GGUFReader(str(path)).tensors if len(t.shape) == 2}


def uniform(path: Path) -> dict[str, np.ndarray]:
    """Ones for every 2-D tensor of the file."""
    return {name: np.ones(width, dtype=np.float32) for name, width in matrix_widths(path).items()}


def from_activations(path: Path, ids: list[int]) -> dict[str, np.ndarray]:
    """The mean squared input per column of every linear layer of transformers' model of the
    file, over one forward pass of ``ids``; ones for the file's other 2-D tensors."""
    import gguf
    import torch

    from engines import hf_engine

    model = hf_engine.load_gguf(path)
    reader = gguf.GGUFReader(str(path))
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    blocks = int(reader.fields[f"{arch}.block_count"].parts[-1][0])
    names = gguf.get_tensor_name_map(next(a for a, n in gguf.MODEL_ARCH_NAMES.items() if n == arch), blocks)
    sums: dict[str, torch.Tensor] = {}
    counts: dict[str, int] = {}

    def hook(name: str):
        def collect(_module, inputs):
            x = inputs[0].detach().reshape(-1, inputs[0].shape[-1]).double()
            sums[name] = sums.get(name, 0) + (x * x).sum(0)
            counts[name] = counts.get(name, 0) + x.shape[0]
        return collect

    handles = []
    for module_name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear):
            tensor = names.get_name(module_name + ".weight", try_suffixes=(".weight",))
            if tensor is not None:
                handles.append(module.register_forward_pre_hook(hook(tensor)))
    try:
        with torch.no_grad():
            model(torch.tensor([ids]))
    finally:
        for h in handles:
            h.remove()
    out = uniform(path)
    if "output.weight" in sums and "output.weight" not in out:  # tied: the output product reads the embeddings
        sums["token_embd.weight"], counts["token_embd.weight"] = sums.pop("output.weight"), counts["output.weight"]
    for name, total in sums.items():
        if name in out and out[name].shape[0] == total.shape[0]:
            out[name] = (total / counts[name]).float().numpy()
    return out
