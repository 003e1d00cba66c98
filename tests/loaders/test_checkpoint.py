"""Loading Hugging Face checkpoint directories: model config sizes, the directory's files, and
token ids. Cases that crashed, hung or took gigabytes run in the Sandbox."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from llama_models import random_llama
from safetensors.numpy import load_file
from sandbox import Sandbox

import kvgen


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory) -> Path:
    """A tiny Llama (head_dim 4) with a tokenizer-less directory."""
    d = tmp_path_factory.mktemp("llama")
    random_llama(vocab_size=16, hidden_size=8, intermediate_size=12, num_hidden_layers=1, num_attention_heads=2,
                 num_key_value_heads=1, max_position_embeddings=16).save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(timeout_s=60) as box:
        yield box


def variant(llama_dir: Path, tmp_path: Path, **changes) -> Path:
    """A copy of llama_dir with config.json keys changed (a value of ... deletes the key)."""
    d = tmp_path / "model"
    shutil.copytree(llama_dir, d)
    config = json.loads((d / "config.json").read_text())
    for key, value in changes.items():
        if value is ...:
            config.pop(key)
        else:
            config[key] = value
    (d / "config.json").write_text(json.dumps(config))
    return d


def load(directory: str) -> str:
    """Sandbox case: load, then generate three tokens."""
    model = kvgen.Model.load(directory)
    result = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=3, pad_token_id=0)).generate([[1, 2]])
    return f"context={model.context_length} tokens={result.sequences[0][0].tolist()}"


def assert_refused(sandbox, directory, error: str, match: str) -> None:
    outcome = sandbox.run(load, str(directory))
    assert (outcome.status, outcome.error_type) == ("raised", error), outcome.describe()
    assert match in outcome.message, outcome.message


# ---- sizes drive no allocation --------------------------------------------------

def test_max_position_embeddings_beyond_the_limit_is_refused_by_name(sandbox, llama_dir, tmp_path):
    # was: 8 GB of RSS for the rope table of 1e9 positions
    assert_refused(sandbox, variant(llama_dir, tmp_path, max_position_embeddings=10**9), "ValueError",
                   "max_position_embeddings = 1000000000 is above kvgen's limit")


def test_context_length_of_2_62_is_refused_not_overflowed(sandbox, llama_dir, tmp_path):
    # was (through GGUF llama.context_length, the same config key): the rope-table size wrapped, a segfault
    assert_refused(sandbox, variant(llama_dir, tmp_path, max_position_embeddings=2**62), "ValueError",
                   "max_position_embeddings = 4611686018427387904 is above kvgen's limit")


def test_head_dim_of_2_31_is_refused_before_the_rotary_frequencies(sandbox, llama_dir, tmp_path):
    # was: 8 GB of RSS (head_dim / 2 frequencies, then the table)
    assert_refused(sandbox, variant(llama_dir, tmp_path, head_dim=2**31), "ValueError", "head_dim = 2147483648")


def test_a_large_declared_context_costs_nothing_until_used(sandbox, tmp_path):
    # 2**24 positions x 32 rotary pairs x cos/sin would be 4 GiB, above the worker's 3 GiB:
    # the table now covers only the positions a generation reaches
    d = tmp_path / "big-context"
    random_llama(vocab_size=16, hidden_size=64, intermediate_size=12, num_hidden_layers=1, num_attention_heads=1,
                 num_key_value_heads=1, max_position_embeddings=2**24).save_pretrained(d)
    outcome = sandbox.run(load, str(d))
    assert outcome.status == "returned", outcome.describe()
    small = variant(d, tmp_path, max_position_embeddings=16)  # same weights: same tokens
    assert outcome.message.replace("context=16777216", "context=16") == sandbox.run(load, str(small)).message


@pytest.mark.parametrize("key, value, match", [
    ("num_attention_heads", 0, "num_attention_heads = 0 must be positive"),
    ("num_key_value_heads", 3, "num_attention_heads = 2 is not a multiple of num_key_value_heads = 3"),
    ("head_dim", 5, "head_dim = 5 must be even"),
    ("num_hidden_layers", 10**6, "num_hidden_layers = 1000000 is above kvgen's limit of 4096"),
    ("vocab_size", 2**40, "vocab_size = 1099511627776 is above kvgen's limit"),
    ("intermediate_size", 2**62, "intermediate_size = 4611686018427387904 is above kvgen's limit"),
])
def test_sizes_are_checked_against_limits_and_each_other(sandbox, llama_dir, tmp_path, key, value, match):
    assert_refused(sandbox, variant(llama_dir, tmp_path, **{key: value}), "ValueError", match)


def test_heads_times_head_dim_is_checked_for_overflow(sandbox, llama_dir, tmp_path):
    d = variant(llama_dir, tmp_path, num_attention_heads=4096, num_key_value_heads=1, head_dim=2**20)
    assert_refused(sandbox, d, "ValueError", "num_attention_heads x head_dim = 4294967296 is above kvgen's limit")


# ---- config values of the wrong type ------------------------------------------

@pytest.mark.parametrize("key, value, error, match", [
    ("hidden_size", 8.0, "TypeError", "hidden_size must be an integer, got 8.0 (float)"),
    ("vocab_size", "16", "TypeError", "vocab_size must be an integer, got '16' (str)"),
    ("num_hidden_layers", True, "TypeError", "num_hidden_layers must be an integer, got True (bool)"),
    ("intermediate_size", 2**70, "ValueError", "intermediate_size = 1180591620717411303424 does not fit in 64 bits"),
    ("head_dim", float("inf"), "TypeError", "head_dim must be an integer, got inf (float)"),  # was int(inf)
    ("num_key_value_heads", [1], "TypeError", "num_key_value_heads must be an integer"),
    ("hidden_size", ..., "ValueError", "model config has no 'hidden_size'"),  # was a KeyError
    ("hidden_size", None, "ValueError", "model config has no 'hidden_size'"),
    ("rope_scaling", "linear", "ValueError", "rope_scaling must be an object"),  # was an AttributeError
    ("rope_parameters", [], "ValueError", "rope_parameters must be an object"),
    ("rope_parameters", {"rope_type": "linear", "factor": float("inf")}, "ValueError",
     "'factor' must be a positive, finite"),
    ("rope_parameters", {"rope_type": "linear", "factor": 1e-50}, "ValueError", "'factor' must be a positive, finite"),
    ("rope_parameters", {"rope_theta": float("nan")}, "ValueError", "rope_theta must be a positive, finite number"),
    ("rms_norm_eps", float("inf"), "ValueError", "rms_norm_eps = inf must be a finite"),
    ("rms_norm_eps", "1e-5", "TypeError", "rms_norm_eps must be a number"),
    ("hidden_act", ["silu"], "ValueError", "hidden_act=['silu'] is not supported"),
    ("eos_token_id", 1.5, "ValueError", "eos_token_id must hold non-negative integer token ids"),
    ("bos_token_id", float("inf"), "ValueError", "bos_token_id must hold non-negative integer token ids"),
])
def test_config_values_of_the_wrong_type_name_the_key(sandbox, llama_dir, tmp_path, key, value, error, match):
    # was: a pybind11 cast RuntimeError from c[key].cast<int64_t>() and friends
    assert_refused(sandbox, variant(llama_dir, tmp_path, **{key: value}), error, match)


def test_the_config_reader_refuses_wrong_types(llama_dir):
    from kvgen.families import gpt2, llama

    config = json.loads((llama_dir / "config.json").read_text())
    with pytest.raises(TypeError, match="n_positions must be an integer, got 1.5"):
        gpt2.FAMILY.sizes({"vocab_size": 5, "n_positions": 1.5, "n_embd": 4, "n_layer": 1, "n_head": 1})
    with pytest.raises(TypeError, match="scale_attn_weights must be true or false"):
        gpt2.options({"scale_attn_weights": "yes"})
    with pytest.raises(ValueError, match=r"layer_norm_epsilon = 1e\+300 must be a finite, non-negative float32"):
        gpt2.options({"layer_norm_epsilon": 1e300})  # finite as a float64, not as the float32 kvgen computes in
    assert llama.FAMILY.sizes(config).head_dim == 4  # hidden_size / num_attention_heads


def test_the_binding_takes_typed_structs_not_config_dicts():
    gpt2 = {"vocab_size": 5, "n_positions": 4, "n_embd": 4, "n_layer": 1, "n_head": 1}
    with pytest.raises(TypeError):
        kvgen._core._Model.gpt2(gpt2, kvgen._core._GPT2Options(), {})
    sizes = kvgen._core._ModelConfig(architecture="llama", vocab_size=5, context_length=4, hidden=4, layers=1,
                                     heads=1, kv_heads=1, head_dim=4, intermediate=4)
    with pytest.raises(ValueError, match="a llama ModelConfig passed to _Model.gpt2"):
        kvgen._core._Model.gpt2(sizes, kvgen._core._GPT2Options(), {})
    # the defaults of the options are the C++ structs' (the facade passes only what a config sets)
    options = kvgen._core._GPT2Options()
    assert (options.layer_norm_epsilon, options.scale_attn_weights, options.exact_gelu) == (
        pytest.approx(1e-5), True, False)


# ---- files of a directory -------------------------------------------------------

def test_shard_index_must_stay_inside_the_directory(llama_dir, tmp_path):
    d = variant(llama_dir, tmp_path)
    names = list(load_file(str(d / "model.safetensors")))
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {n: "../model.safetensors"
                                                                             for n in names}}))
    shutil.copy(d / "model.safetensors", tmp_path / "model.safetensors")
    with pytest.raises(ValueError, match="shard '../model.safetensors' is not a file inside"):
        kvgen.Model.load(d)
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {n: 3 for n in names}}))
    with pytest.raises(ValueError, match="'weight_map' must be an object of tensor name -> shard file name"):
        kvgen.Model.load(d)
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {n: "model.safetensors"
                                                                             for n in names}}))
    assert kvgen.Model.load(d).vocab_size == 16


def test_weights_of_another_dtype_are_a_type_error_naming_the_tensor(llama_dir, tmp_path):
    import torch
    from safetensors.torch import load_file as load_torch
    from safetensors.torch import save_file as save_torch

    d = variant(llama_dir, tmp_path)
    tensors = load_torch(str(d / "model.safetensors"))
    tensors["model.norm.weight"] = tensors["model.norm.weight"].to(torch.float64)
    save_torch(tensors, str(d / "model.safetensors"))
    with pytest.raises(TypeError, match="tensor 'model.norm.weight' has dtype float64 in .*model.safetensors"):
        kvgen.Model.load(d)


def test_malformed_safetensors_header_is_a_value_error(llama_dir, tmp_path):
    d = variant(llama_dir, tmp_path)
    path = d / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes((2**63).to_bytes(8, "little") + data[8:])
    with pytest.raises(ValueError, match="cannot read the safetensors file"):
        kvgen.Model.load(d)
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    name = sorted(k for k in header if k != "__metadata__")[0]
    header[name]["shape"] = [2**62, 2**62]
    raw = json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + data[8 + n:])
    with pytest.raises(ValueError, match="cannot read the safetensors file"):
        kvgen.Model.load(d)


def test_config_tokenizer_and_chat_template_of_the_wrong_shape(llama_dir, tmp_path):
    d = variant(llama_dir, tmp_path)
    (d / "config.json").write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(ValueError, match="config.json: JSON nested too deeply"):
        kvgen.Model.load(d)
    (d / "config.json").write_text("[]")
    with pytest.raises(ValueError, match="config.json: expected a JSON object"):
        kvgen.Model.load(d)
    shutil.copy(llama_dir / "config.json", d / "config.json")
    (d / "tokenizer.json").write_bytes(b"\x00 not a tokenizer")
    with pytest.raises(ValueError, match="cannot read the tokenizer"):
        kvgen.Model.load(d)
    (d / "tokenizer.json").unlink()
    (d / "tokenizer_config.json").write_text(json.dumps({"chat_template": 5}))
    with pytest.raises(ValueError, match="chat_template must be a string or a list"):
        kvgen.Model.load(d)
    named = [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]
    (d / "tokenizer_config.json").write_text(json.dumps({"chat_template": named}))
    assert kvgen.Model.load(d).chat_template == "D"  # transformers' named templates: the default one


# ---- decode ------------------------------------------------------------------------------

def test_decode_refuses_ids_outside_the_vocabulary(tmp_path):
    from hf_models import save_text_gpt2

    save_text_gpt2(tmp_path)
    model = kvgen.Model.load(tmp_path)
    assert model.decode(np.array(model.encode("robot"))) == "robot"
    for bad in (-1, model.vocab_size, 2**70):  # -1 was an OverflowError from tokenizers
        with pytest.raises(ValueError, match=f"token id {bad} is outside the vocabulary"):
            model.decode([bad])
    with pytest.raises(TypeError, match="token id 1.5 is not an integer"):
        model.decode([1.5])


def test_no_file_is_read_through_a_symlink_out_of_the_directory(llama_dir, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    d = variant(llama_dir, tmp_path)
    (d / "chat_template.jinja").symlink_to(secret)
    with pytest.raises(ValueError, match="chat_template.jinja: a link to .*secret.txt, outside the model directory"):
        kvgen.Model.load(d)
    (d / "chat_template.jinja").unlink()
    (d / "tokenizer.json").symlink_to(secret)
    with pytest.raises(ValueError, match="tokenizer.json: a link to .*outside the model directory"):
        kvgen.Model.load(d)
    (d / "tokenizer.json").unlink()
    weights = d / "model.safetensors"
    shutil.move(weights, tmp_path / "elsewhere.safetensors")
    weights.symlink_to(tmp_path / "elsewhere.safetensors")
    with pytest.raises(ValueError, match="model.safetensors: a link to .*outside the model directory"):
        kvgen.Model.load(d)
    weights.unlink()
    shutil.copy(tmp_path / "elsewhere.safetensors", weights)
    (d / "inside.jinja").write_text("{{ messages[0]['content'] }}")
    (d / "chat_template.jinja").symlink_to("inside.jinja")  # a link inside the directory is fine
    assert kvgen.Model.load(d).chat_template == "{{ messages[0]['content'] }}"


def _hf_cache(llama_dir: Path, cache: Path, repo: str = "models--org--tiny") -> Path:
    """llama_dir as ``huggingface-cli download`` (without --local-dir) lays it out: a sharded
    checkpoint whose snapshot files are links to ../../blobs/<hash>."""
    blobs, snapshot = cache / repo / "blobs", cache / repo / "snapshots" / "0123abcd"
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    names = list(load_file(str(llama_dir / "model.safetensors")))
    files = {"config.json": (llama_dir / "config.json").read_bytes(),
             "model-00001-of-00001.safetensors": (llama_dir / "model.safetensors").read_bytes(),
             "model.safetensors.index.json": json.dumps(
                 {"weight_map": {n: "model-00001-of-00001.safetensors" for n in names}}).encode()}
    for i, (name, data) in enumerate(files.items()):
        (blobs / f"blob{i}").write_bytes(data)
        (snapshot / name).symlink_to(Path("../../blobs") / f"blob{i}")
    return snapshot


def test_a_hugging_face_cache_snapshot_loads_and_its_links_stay_in_its_repository(llama_dir, tmp_path):
    snapshot = _hf_cache(llama_dir, tmp_path / "hub")
    plain = kvgen.Model.load(llama_dir)
    cached = kvgen.Model.load(snapshot)
    prompt = [1, 2, 3]
    config = kvgen.GenerationConfig(max_new_tokens=4)
    np.testing.assert_array_equal(kvgen.Generator(cached, config).generate([prompt]).sequences[0][0],
                                  kvgen.Generator(plain, config).generate([prompt]).sequences[0][0])
    other = _hf_cache(llama_dir, tmp_path / "hub", repo="models--org--other")
    (snapshot / "config.json").unlink()
    (snapshot / "config.json").symlink_to(other.parent.parent / "blobs" / "blob0")  # another repository's blob
    with pytest.raises(ValueError, match="config.json: a link to .*outside the model directory"):
        kvgen.Model.load(snapshot)
