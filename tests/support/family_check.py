"""The check every family module passes (tests/families/test_<family>.py): a small random model of
the family's transformers class, saved as a Hugging Face directory in float32 and in bfloat16
and converted to GGUF by llama.cpp's own converter; kvgen loads each and computes transformers'
logits and greedy tokens. One function, so a new family's test is a model and a call."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import torch
import transformers
from family_models import reference, save_converter_tokenizer, save_family_model
from hf_models import assert_generate_equals_hf
from llama_cpp_convert import convert, converter

import kvgen
from kvgen.families import family_named

PAD = 0


def logits(model: transformers.PreTrainedModel, ids: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return model(torch.as_tensor(ids)).logits.numpy()


def check_family(name: str, hf: transformers.PreTrainedModel, tmp_path: Path, smollm2_file: Path, *,
                 gguf_family: Optional[str] = None,
                 gguf_reference: Optional[transformers.PreTrainedModel] = None,
                 also_convert: Sequence[tuple[Path, Path, str]] = (),
                 converter_config: Optional[dict] = None,
                 converter_options: Sequence[str] = ()) -> dict[str, kvgen.Model]:
    """Checks family ``name`` against ``hf`` (random weights, SmolLM2's vocabulary size, so that
    llama.cpp's converter can write SmolLM2's tokenizer beside them):

    - the family module names ``hf``'s class as its reference;
    - the float32 directory, and llama.cpp's f32 GGUF file of it, give transformers' logits
      (exact mode) at 1, 11 and 40 positions, and its greedy tokens;
    - the bfloat16 directory gives transformers' logits on the same 16-bit weights.

    ``gguf_family``, ``gguf_reference``: the family a GGUF file is read as and the model it
    equals, where llama.cpp's converter writes the family as another (Mistral as Llama, without
    its window). ``also_convert``: (directory, GGUF file, outtype) triples the same converter run
    writes, for the test's own checks. ``converter_config``: config.json keys that llama.cpp's
    converter needs in another spelling than transformers saves (Granite 4's layer_types); the
    converter then reads a copy of the float32 directory with them. ``converter_options``: the
    converter's own (``--no-mtp`` for the Qwen3.5 family, whose random models have no
    multi-token-prediction head). Returns the loaded models by variant
    ("f32", "bf16", "gguf")."""
    assert family_named(name).transformers_class == type(hf).__name__
    tokenizer = tmp_path / "tokenizer"
    save_converter_tokenizer(tokenizer, smollm2_file, name)
    paths = {"f32": save_family_model(hf, tmp_path / "f32", tokenizer),
             "bf16": save_family_model(hf, tmp_path / "bf16", tokenizer, torch.bfloat16),
             "gguf": tmp_path / "f32.gguf"}
    source = paths["f32"]
    if converter_config:
        source = tmp_path / "f32-for-converter"
        shutil.copytree(paths["f32"], source)
        config = json.loads((source / "config.json").read_text())
        (source / "config.json").write_text(json.dumps({**config, **converter_config}))
    convert(converter(), [(source, paths["gguf"], "f32"), *also_convert], converter_options)
    references = {"f32": hf, "bf16": reference(type(hf), paths["bf16"]), "gguf": gguf_reference or hf}
    models = {variant: kvgen.Model.load(path, exact=True) for variant, path in paths.items()}
    assert {v: m.family for v, m in models.items()} == {"f32": name, "bf16": name, "gguf": gguf_family or name}
    rng = np.random.default_rng(1)
    for length in (1, 11, 40):
        ids = rng.integers(0, hf.config.vocab_size, (2, length))
        for variant, model in models.items():
            np.testing.assert_allclose(model.forward(ids), logits(references[variant], ids), atol=2e-4, rtol=1e-4,
                                       err_msg=f"{variant}, {length} positions")
    prompts = [[5, 9, 13, 4, 3], [7, 8]]
    assert_generate_equals_hf(models["f32"], hf, prompts, PAD, max_new_tokens=12, do_sample=False)
    assert_generate_equals_hf(models["gguf"], references["gguf"], prompts, PAD, max_new_tokens=12, do_sample=False)
    return models


def check_beams(models: dict[str, kvgen.Model], hf: transformers.PreTrainedModel, *,
                gguf_reference: Optional[transformers.PreTrainedModel] = None) -> None:
    """4-beam search on the float32 directory and llama.cpp's file of it (check_family's models)
    gives transformers' sequences and scores."""
    prompts = [[5, 9, 13, 4, 3], [7, 8]]
    for variant, reference_model in (("f32", hf), ("gguf", gguf_reference or hf)):
        assert_generate_equals_hf(models[variant], reference_model, prompts, PAD, max_new_tokens=8, num_beams=4,
                                  num_return_sequences=2, do_sample=False)
