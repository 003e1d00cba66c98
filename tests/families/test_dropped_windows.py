"""Windows that a file drops: llama.cpp's converter writes Mistral (as a llama file) and a windowed
Qwen2 without their sliding window. kvgen then runs full attention, as llama.cpp does, and says
so for a family that windows its layers (a warning, Model.notes, kvgen info); the window comes
back from Model.load(..., sliding_window=N) or from the file's own key."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import transformers
from family_check import logits
from family_models import VOCAB, save_family_model
from llama_cpp_convert import convert, converter, save_smollm2_tokenizer

import kvgen

WINDOW = 7
CONFIG = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5, initializer_range=0.3,
              pad_token_id=None, bos_token_id=1, eos_token_id=2, rope_theta=1000000.0, tie_word_embeddings=False)
IDS = np.arange(3, 43)[None]  # 40 positions: the window binds


def pair(config_class, model_class, **window) -> tuple[transformers.PreTrainedModel, transformers.PreTrainedModel]:
    """The same random weights with the window and without it."""
    transformers.set_seed(0)
    windowed = model_class(config_class(**CONFIG, **window)).eval()
    full = model_class(config_class(**CONFIG)).eval()
    full.load_state_dict(windowed.state_dict())
    assert not np.allclose(logits(windowed, IDS), logits(full, IDS), atol=1e-3)  # the window binds
    return windowed, full


@pytest.fixture(scope="module")
def files(tmp_path_factory, smollm2_file):
    """name -> (windowed model, the same without the window, llama.cpp's GGUF of the windowed one)."""
    root = tmp_path_factory.mktemp("windows")
    tokenizer = root / "tokenizer"
    save_smollm2_tokenizer(tokenizer, smollm2_file)
    models = {"mistral": pair(transformers.MistralConfig, transformers.MistralForCausalLM, sliding_window=WINDOW),
              "qwen2": pair(transformers.Qwen2Config, transformers.Qwen2ForCausalLM, sliding_window=WINDOW,
                            use_sliding_window=True, max_window_layers=0)}
    out, jobs = {}, []
    for name, (windowed, full) in models.items():
        directory = save_family_model(windowed, root / name, tokenizer, torch.float32)
        jobs.append((directory, root / f"{name}.gguf", "f32"))
        out[name] = (windowed, full, root / f"{name}.gguf")
    convert(converter(), jobs)
    return out


def test_a_qwen2_file_without_its_window_warns_and_takes_it_at_load(files):
    windowed, full, path = files["qwen2"]
    with pytest.warns(kvgen.WindowNotStoredWarning, match="stores no sliding window"):
        model = kvgen.Model.load(path, exact=True)
    assert model.notes and "sliding_window=N" in model.notes[0]
    np.testing.assert_allclose(model.forward(IDS), logits(full, IDS), atol=2e-4, rtol=1e-4)  # as llama.cpp runs it
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a file given its window is what its checkpoint computes: no warning
        given = kvgen.Model.load(path, exact=True, sliding_window=WINDOW)
    assert given.notes == [] and given.family == "qwen2"
    np.testing.assert_allclose(given.forward(IDS), logits(windowed, IDS), atol=2e-4, rtol=1e-4)
    assert model.capabilities.partial_prefix_reuse and not given.capabilities.partial_prefix_reuse


def test_a_mistral_file_given_its_window_is_read_as_mistral(files):
    windowed, full, path = files["mistral"]
    plain = kvgen.Model.load(path, exact=True)  # a llama file: nothing says it had a window
    assert plain.family == "llama" and plain.notes == []
    given = kvgen.Model.load(path, exact=True, sliding_window=WINDOW)
    assert given.family == "mistral"
    np.testing.assert_allclose(given.forward(IDS), logits(windowed, IDS), atol=2e-4, rtol=1e-4)


def test_the_window_stored_in_a_file_is_used_and_a_different_one_refused(tmp_path):
    from llama_models import write_llama_gguf

    windowed, _ = pair(transformers.MistralConfig, transformers.MistralForCausalLM, sliding_window=WINDOW)
    # a llama file with the key llama.cpp's converter leaves out (written by gguf-py's writer)
    path = write_llama_gguf(windowed, tmp_path / "keyed.gguf", tokenizer_writer=lambda w: w.add_sliding_window(WINDOW))
    model = kvgen.Model.load(path, exact=True)
    assert model.family == "mistral"
    np.testing.assert_allclose(model.forward(IDS), logits(windowed, IDS), atol=2e-4, rtol=1e-4)
    assert kvgen.Model.load(path, sliding_window=WINDOW).family == "mistral"
    with pytest.raises(ValueError, match="stores llama.attention.sliding_window = 7; sliding_window=5 differs"):
        kvgen.Model.load(path, sliding_window=5)


@pytest.mark.parametrize("window, error", [(0, ValueError), (-3, ValueError), (True, ValueError), ("7", ValueError)])
def test_a_bad_window_is_an_error_naming_it(files, window, error):
    with pytest.raises(error, match="sliding_window"):
        kvgen.Model.load(files["qwen2"][2], sliding_window=window)


def test_a_directory_states_its_own_window(files):
    with pytest.raises(ValueError, match="applies to GGUF files"):
        kvgen.Model.load(files["qwen2"][2].parent / "qwen2", sliding_window=WINDOW)


def test_kvgen_info_shows_the_window_and_the_note(files, capsys):
    from kvgen.cli import main

    path = files["qwen2"][2]
    assert main(["info", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "attention: full (no sliding window)" in out and "note: the file stores no sliding window" in out
    assert err.startswith(f"kvgen: warning: {path}: the file stores no sliding window") and err.count("\n") == 1
    assert main(["info", str(path), "--sliding-window", str(WINDOW)]) == 0
    out, err = capsys.readouterr()
    assert f"attention: a sliding window of {WINDOW} positions on 2 of 2 layers" in out and "note:" not in out
    assert not err
