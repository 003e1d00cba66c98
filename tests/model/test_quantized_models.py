"""Models computing on quantized weights: checkpoints quantized at load (``Model.load(dir,
dtype=...)``), quantized GPT-2 GGUF files, exact mode, and the compute pool's threads.

References are transformers models whose matrices hold the same quantized values, made
with gguf-py's quantizers (the arithmetic kvgen's loader uses): exact mode must match
them as float32 does (summation order only). The int8-activation mode is held to the
real model's perplexity and argmax agreement (test_quantized_fidelity.py), and its
products to a derived bound (test_quant_kernels.py): random models like these amplify
any rounding through their layers, so they say little about it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from activation_modes import BF16, BF16_MISSING
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize
from hf_models import random_gpt2
from llama_models import random_llama, write_gpt2_gguf

import kvgen


def quantized_copy(w: np.ndarray, qtype: str) -> np.ndarray:
    t = GGMLQuantizationType[qtype]
    return dequantize(quantize(np.ascontiguousarray(w), t), t).reshape(w.shape)


def hf_logits(model, ids: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return model(torch.from_numpy(ids)).logits.numpy()


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    hf = random_gpt2(vocab_size=211, n_embd=64, n_layer=2, n_head=4, seed=3)
    directory = tmp_path_factory.mktemp("gpt2")
    hf.save_pretrained(directory)
    return hf, directory


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    hf = random_llama(vocab_size=96, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                      num_key_value_heads=2, num_hidden_layers=2, max_position_embeddings=64, tie_word_embeddings=False)
    directory = tmp_path_factory.mktemp("llama")
    hf.save_pretrained(directory)
    return hf, directory


def quantized_reference(hf, qtype: str, conv1d: bool, position_embeddings: bool = False):
    """A copy of ``hf`` whose matrices (projections, embeddings, LM head; GPT-2's position
    embeddings too if ``position_embeddings``, as a GGUF file may store them) hold their
    ``qtype`` values; GPT-2's Conv1D matrices are quantized along their input dimension."""
    import copy

    ref = copy.deepcopy(hf)
    with torch.no_grad():
        for name, p in ref.named_parameters():
            if p.ndim != 2 or (name.endswith("wpe.weight") and not position_embeddings):
                continue
            w = p.numpy()
            transposed = conv1d and name.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight"))
            q = quantized_copy(w.T, qtype).T if transposed else quantized_copy(w, qtype)
            p.copy_(torch.from_numpy(np.ascontiguousarray(q)))
    return ref


@pytest.mark.parametrize("dtype", ["q8_0", "q4_0"])
def test_gpt2_quantized_at_load_matches_transformers_on_the_quantized_weights(gpt2_dir, dtype):
    hf, directory = gpt2_dir
    ids = np.random.default_rng(0).integers(0, 211, (2, 24))
    ref = hf_logits(quantized_reference(hf, dtype.upper(), conv1d=True), ids)
    model = kvgen.Model.load(directory, dtype=dtype, exact=True)
    np.testing.assert_allclose(model.forward(ids), ref, atol=1e-4, rtol=1e-4)
    assert np.abs(ref - hf_logits(hf, ids)).max() > 1e-3  # the weights really are quantized
    assert model.weight_bytes < kvgen.Model.load(directory).weight_bytes / 3


@pytest.mark.parametrize("dtype", ["q8_0", "q4_0"])
def test_llama_quantized_at_load_matches_transformers_on_the_quantized_weights(llama_dir, dtype):
    hf, directory = llama_dir
    ids = np.random.default_rng(1).integers(0, 96, (2, 24))
    ref = hf_logits(quantized_reference(hf, dtype.upper(), conv1d=False), ids)
    model = kvgen.Model.load(directory, dtype=dtype, exact=True)
    np.testing.assert_allclose(model.forward(ids), ref, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_1"])
def test_quantized_gpt2_gguf_matches_transformers_loading_the_same_file(gpt2_dir, tmp_path, qtype):
    hf, _ = gpt2_dir
    path = write_gpt2_gguf(hf, tmp_path / f"{qtype}.gguf", qtype)  # every matrix quantized
    ids = np.random.default_rng(5).integers(0, 211, (2, 24))
    # transformers cannot read this small GPT-2 from GGUF: the reference holds the values instead
    ref = hf_logits(quantized_reference(hf, qtype, conv1d=True, position_embeddings=True), ids)
    np.testing.assert_allclose(kvgen.Model.load(path, exact=True).forward(ids), ref, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("activations", ["int8x2", BF16])
def test_results_do_not_depend_on_the_thread_count(llama_dir, activations):
    # every output row is computed by one thread with the same code, whatever the split
    _, directory = llama_dir
    model = kvgen.Model.load(directory, dtype="q4_0", activations=activations)
    ids = np.random.default_rng(3).integers(0, 96, (3, 40))
    before = kvgen.get_num_threads()
    try:
        outs = []
        for n in (1, 2, 3):
            kvgen.set_num_threads(n)
            assert kvgen.get_num_threads() == n
            outs.append(model.forward(ids))
    finally:
        kvgen.set_num_threads(before)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


def test_activation_modes(llama_dir):
    _, directory = llama_dir
    model = kvgen.Model.load(directory, dtype="q8_0")
    assert (model.activations, model.exact) == ("int8x2", False)  # the default
    ids = np.random.default_rng(6).integers(0, 96, (1, 16))
    outs = {}
    for mode in ("int8x2", "int8", "float") + (() if BF16_MISSING else ("bf16",)):
        model.activations = mode
        assert model.exact == (mode == "float")
        outs[mode] = model.forward(ids)
    # three different computations; the second level brings int8 much closer to float
    assert np.abs(outs["int8"] - outs["float"]).max() > 0 and np.abs(outs["int8x2"] - outs["float"]).max() > 0
    assert np.linalg.norm(outs["int8x2"] - outs["float"]) < 0.1 * np.linalg.norm(outs["int8"] - outs["float"])
    if "bf16" in outs:  # 8 significant bits for weights and activations: between one int8 level and two
        error = {mode: np.linalg.norm(out - outs["float"]) for mode, out in outs.items()}
        assert error["int8x2"] < error["bf16"] < error["int8"]
    model.exact = True
    assert model.activations == "float"
    np.testing.assert_array_equal(kvgen.Model.load(directory, dtype="q8_0", activations="int8").forward(ids),
                                  outs["int8"])


def test_bad_arguments_are_refused(llama_dir, tmp_path):
    _, directory = llama_dir
    with pytest.raises(ValueError, match="dtype='q3_k' is not supported"):
        kvgen.Model.load(directory, dtype="q3_k")
    with pytest.raises(TypeError, match="exact must be a bool"):
        kvgen.Model.load(directory, exact=1)
    model = kvgen.Model.load(directory)
    with pytest.raises(TypeError, match="exact must be a bool"):
        model.exact = "yes"
    with pytest.raises(ValueError, match="activations='fp8' is not one of"):
        model.activations = "fp8"
    if BF16_MISSING:  # a clear refusal naming what the CPU lacks
        with pytest.raises(ValueError, match="activations='bf16': bf16 activations need"):
            model.activations = "bf16"
    with pytest.raises(ValueError, match="exact=True asks for float activations"):
        kvgen.Model.load(directory, exact=True, activations="int8")
    with pytest.raises(ValueError, match=r"must be in \[1, 1024\]"):
        kvgen.set_num_threads(0)
    path = write_gpt2_gguf(random_gpt2(), tmp_path / "g.gguf")
    with pytest.raises(ValueError, match="applies to Hugging Face directories"):
        kvgen.Model.load(path, dtype="q8_0")


def test_bf16_activations_are_refused_by_name_on_a_path_without_them(llama_dir):
    """The portable path (forced here; also what a CPU without AVX-512 runs) has no bf16 kernels:
    loading in that mode, or switching to it, raises a ValueError that says why."""
    _, directory = llama_dir
    code = ("import kvgen\n"
            "for attempt in ('load', 'set'):\n"
            "    try:\n"
            f"        m = kvgen.Model.load({str(directory)!r}, dtype='q4_0', **({{'activations': 'bf16'}} "
            "if attempt == 'load' else {}))\n"
            "        m.activations = 'bf16'\n"
            "    except ValueError as e:\n"
            "        print(attempt, e)\n")
    run = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, KVGEN_CPU_PATH="portable"),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    why = "activations='bf16': bf16 activations need the avx512 CPU path (this process runs portable)"
    assert run.stdout.splitlines() == [f"load {directory}: {why}", f"set {why}"]


def _forward_in_child(directory, ids, queue):
    model = kvgen.Model.load(directory, dtype="q4_0")
    for _ in range(50):  # hundreds of sections: past any stretch the caller runs alone
        out = model.forward(ids)
    queue.put(out)


def test_a_forked_child_computes_with_its_own_threads(llama_dir):
    # fork() keeps only the forking thread: the child must not wait for the parent's workers
    import multiprocessing

    _, directory = llama_dir
    model = kvgen.Model.load(directory, dtype="q4_0")
    ids = np.random.default_rng(7).integers(0, 96, (1, 12))
    expected = model.forward(ids)  # the parent's pool is running
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_forward_in_child, args=(directory, ids, queue))
    child.start()
    try:
        out = queue.get(timeout=60)  # queue.Empty (a failure) if the child hangs
        child.join(timeout=60)
    finally:
        child.kill()
    assert child.exitcode == 0
    np.testing.assert_array_equal(out, expected)
