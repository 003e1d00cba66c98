"""ERNIE 4.5 dense (Ernie4_5ForCausalLM, e.g. ERNIE-4.5-0.3B): Llama whose rotary embedding turns
adjacent pairs of each head's dimensions (transformers' GLM-style rotate_half, llama.cpp's "norm"
layout) rather than (i, i + head_dim / 2), with biases on every projection where ``use_bias`` is
set (used where their tensors exist).

kvgen reorders the q and k rows (and biases) of each head at load, from the checkpoint's adjacent
pairs into its own halves: the scores q . k are the same sums (the reordering moves the same
dimensions of q and of k), so the logits are transformers'. llama.cpp's converter stores the rows
as the checkpoint does (``ernie4_5`` files), and they are reordered the same way.
"""

from __future__ import annotations

from kvgen.families.llama import LlamaFamily

FAMILY = LlamaFamily("ernie4_5", ("ernie4_5",), "ernie4_5", "Ernie4_5ForCausalLM",
                     "rotary embedding over adjacent pairs of dimensions (reordered at load); biases where use_bias",
                     gguf_permuted_qk=True, interleaved_rotary=True)
