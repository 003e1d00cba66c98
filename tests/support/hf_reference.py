"""Hugging Face transformers as the oracle: its own processor factory, on a tiny model.

`hf_processors()` builds the processor list exactly as ``model.generate()`` does
(``GenerationMixin._get_logits_processor`` after ``_prepare_special_tokens``), so the
tests compare kvgen against HF's choice and order of processors, not against a copy.
The benchmarks import this module too (by path, from tests/), so that what they time on the
HF side is built by the same factories the tests check against.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import transformers
from transformers.generation.stopping_criteria import StoppingCriteriaList

# kvgen fields with no Hugging Face counterpart.
KVGEN_ONLY = {"presence_penalty", "frequency_penalty", "logit_bias", "seed"}


@functools.lru_cache(maxsize=1)
def tiny_model() -> transformers.PreTrainedModel:
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=64, n_positions=1024, n_embd=8, n_layer=1, n_head=2)
    return transformers.GPT2LMHeadModel(config).eval()


def hf_generation_config(**kwargs) -> transformers.GenerationConfig:
    """A transformers.GenerationConfig with generate()'s defaults filled in."""
    config = transformers.GenerationConfig(**kwargs)
    for name, value in transformers.GenerationConfig._get_default_generation_params().items():
        if getattr(config, name, None) is None:
            setattr(config, name, value)
    return config


def hf_generation_setup(prompt_length: int, **kwargs) -> tuple[
        transformers.GenerationConfig, transformers.LogitsProcessorList, StoppingCriteriaList]:
    """(generation config, processor list, stopping criteria) for these generation settings
    and prompt length, prepared as generate() prepares them (the benchmarks time HF's loop
    body with these)."""
    model = tiny_model()
    config = hf_generation_config(**kwargs)
    model._prepare_special_tokens(config, device="cpu")
    model._prepare_generated_length(
        config,
        has_default_max_length="max_length" not in kwargs,
        has_default_min_length="min_length" not in kwargs,
        model_input_name="input_ids",
        input_ids_length=prompt_length,
        inputs_tensor=None,
    )
    processors = model._get_logits_processor(
        generation_config=config, input_ids_seq_length=prompt_length, device="cpu", model_kwargs={}
    )
    criteria = model._get_stopping_criteria(config, stopping_criteria=StoppingCriteriaList())
    return config, processors, criteria


def hf_processors(prompt_length: int, **kwargs) -> transformers.LogitsProcessorList:
    """HF's processor list for these generation settings and prompt length."""
    return hf_generation_setup(prompt_length, **kwargs)[1]


def hf_process(input_ids: np.ndarray, logits: np.ndarray, prompt_length: int, **kwargs) -> np.ndarray:
    """Logits after HF's processors (input arrays are not modified)."""
    processors = hf_processors(prompt_length, **kwargs)
    with torch.inference_mode():
        out = processors(torch.from_numpy(np.array(input_ids, dtype=np.int64)), torch.from_numpy(logits.copy()))
    return out.numpy()
