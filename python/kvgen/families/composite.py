"""Checkpoints as published: a vision-language model's directory (``...ForConditionalGeneration``)
holds a text model, which kvgen runs, beside a vision tower and a projector, which it leaves unread.

config.json's ``model_type`` names the composite (``gemma3``, ``gemma4``, ``mistral3``, ``qwen3_5``); its
``text_config`` is the text model's config (its own ``model_type`` names the family: ``gemma3_text``,
``mistral``, ``ministral3``), with the composite's token ids and tying where it sets them, as
transformers reads them. The text model's tensors are stored under ``language_model.model.`` and
``language_model.lm_head.`` (the layout Gemma 3 and Mistral Small 3.x are published in, and
transformers still saves) or ``model.language_model.`` and ``lm_head.``; every other tensor (the
vision tower, the projector) is never read: not copied, not mapped (``text_tensor_name``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

#: stored prefix -> the name the text model's tensors have in kvgen (a text-only checkpoint's)
TEXT_PREFIXES = (("language_model.model.", "model."), ("language_model.lm_head.", "lm_head."),
                 ("model.language_model.", "model."), ("lm_head.", "lm_head."), ("mtp.", "mtp."))
#: the composite's own keys that transformers reads for the text model
_SHARED_KEYS = ("bos_token_id", "eos_token_id", "pad_token_id", "tie_word_embeddings")


@dataclass(frozen=True)
class Composite:
    """A vision-language checkpoint whose text model kvgen runs."""

    model_type: str            # config.json's model_type
    transformers_class: str    # the class the checkpoint is saved from
    text_model_type: str       # text_config's model_type when it names none (transformers' default)
    # transformers' text config class defaults for the keys kvgen reads: checkpoints saved by
    # transformers 4.x list in text_config only what differs from them (google/gemma-3-4b-it's
    # names 6 keys)
    text_defaults: dict[str, Any] = field(default_factory=dict)
    # text config keys the composite's forward does not apply
    text_unused: tuple[str, ...] = ()


COMPOSITES = {c.model_type: c for c in (
    # transformers' Gemma3TextConfig defaults; Gemma3ForConditionalGeneration soft-caps no logits
    Composite("gemma3", "Gemma3ForConditionalGeneration", "gemma3_text", dict(
        vocab_size=262208, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26, num_attention_heads=8,
        num_key_value_heads=4, head_dim=256, hidden_activation="gelu_pytorch_tanh", max_position_embeddings=131072,
        rms_norm_eps=1e-6, query_pre_attn_scalar=256, sliding_window=4096, rope_theta=1_000_000.0,
        rope_local_base_freq=10_000.0), text_unused=("final_logit_softcapping",)),
    Composite("mistral3", "Mistral3ForConditionalGeneration", "mistral"),
    # its vision and audio towers (model.vision_tower., model.audio_tower., model.embed_*) are left unread
    Composite("gemma4", "Gemma4ForConditionalGeneration", "gemma4_text"),
    # its vision tower (model.visual.) is left unread; its multi-token-prediction head (mtp.) is the text
    # model's (kvgen.families.qwen3_5: build_mtp)
    Composite("qwen3_5", "Qwen3_5ForConditionalGeneration", "qwen3_5_text"),
    Composite("qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe_text"),
)}


def text_tensor_name(name: str) -> Optional[str]:
    """The text model's name of a composite checkpoint's tensor (``language_model.model.norm.weight``
    -> ``model.norm.weight``); None for a tensor of another tower."""
    for stored, ours in TEXT_PREFIXES:
        if name.startswith(stored):
            return ours + name[len(stored):]
    return None


def text_checkpoint(config: dict, where: object) -> tuple[dict, Optional[Callable[[str], Optional[str]]]]:
    """The config of the model kvgen runs from a directory's config.json, and how its stored tensor
    names map to that model's (None: as stored). For a composite (``COMPOSITES``), its text model:
    ``text_config`` over the text config class's defaults, with the composite's token ids and
    tying; ValueError naming ``where`` (the directory) when ``text_config`` is not an object."""
    composite = COMPOSITES.get(config.get("model_type")) if isinstance(config.get("model_type"), str) else None
    if composite is None:
        return config, None
    text = config.get("text_config")
    if text is None:
        text = {}
    if not isinstance(text, dict):
        raise ValueError(f"{where}: a {composite.transformers_class} config's text_config must be an object, got "
                         f"{text!r:.60}")
    text = {**composite.text_defaults, **text}
    text.setdefault("model_type", composite.text_model_type)
    for key in composite.text_unused:
        text.pop(key, None)
    text.update({k: config[k] for k in _SHARED_KEYS if k in config})
    return text, text_tensor_name
