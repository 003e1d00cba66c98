"""The families kvgen runs, registered in one place, and how a file names its family: a Hugging
Face directory's ``config.json`` ``model_type``, a GGUF file's ``general.architecture``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from kvgen.families import (
    ernie4_5,
    ernie4_5_moe,
    exaone4,
    gemma2,
    gemma3,
    gemma4,
    glm4,
    gpt2,
    gpt_oss,
    granite,
    granite4,
    lfm2,
    llama,
    ministral3,
    mistral,
    olmo2,
    olmo3,
    phi3,
    qwen2,
    qwen3,
    qwen3_5,
    qwen3_5_moe,
    qwen3_next,
    qwen3moe,
    smollm3,
)
from kvgen.families.capabilities import Capabilities, capabilities_of, windowed
from kvgen.families.family import Family, GGUFModel

if TYPE_CHECKING:
    from kvgen import _core
    from kvgen.loaders.gguf.model import GGUFContents

#: Every family kvgen runs, in the order error messages list them.
FAMILIES: tuple[Family, ...] = (
    gpt2.FAMILY, llama.FAMILY, mistral.FAMILY, qwen2.FAMILY, qwen3.FAMILY, granite.FAMILY, smollm3.FAMILY,
    qwen3moe.FAMILY, gemma2.FAMILY, gemma3.FAMILY, phi3.FAMILY,
    lfm2.FAMILY,
    qwen3_5.FAMILY,
    qwen3_5_moe.FAMILY,
    qwen3_next.FAMILY,
    granite4.FAMILY,
    ministral3.FAMILY, ernie4_5.FAMILY,
    olmo2.FAMILY, olmo3.FAMILY, exaone4.FAMILY, glm4.FAMILY,
    gpt_oss.FAMILY,
    ernie4_5_moe.FAMILY,
    gemma4.FAMILY,
)

_BY_NAME = {f.name: f for f in FAMILIES}
_BY_MODEL_TYPE = {t: f for f in FAMILIES for t in f.model_types}
_BY_GGUF = {f.gguf_architecture: f for f in FAMILIES if f.gguf_architecture is not None}
assert len(_BY_NAME) == len(FAMILIES) and len(_BY_GGUF) == sum(f.gguf_architecture is not None for f in FAMILIES), \
    "two families share a name or a GGUF architecture"


def supported() -> str:
    """The families kvgen runs, for error messages."""
    return ", ".join(f.name for f in FAMILIES)


def family_named(name: str) -> Optional[Family]:
    """The family kvgen names ``name`` (Model.family), None when there is none."""
    return _BY_NAME.get(name)


def family_of_config(config: dict, where: object) -> Family:
    """The family of a Hugging Face config dict (its model_type); ValueError naming the
    value and ``where`` (the directory) and listing the supported families otherwise."""
    model_type = config.get("model_type")
    family = _BY_MODEL_TYPE.get(model_type) if isinstance(model_type, str) else None
    if family is None:
        raise ValueError(f"{where}: model_type={model_type!r:.60} is not supported (kvgen runs: "
                         f"{', '.join(_BY_MODEL_TYPE)})")
    return family


def family_of_gguf(architecture: str, where: object) -> Family:
    """The family of a GGUF ``general.architecture``; ValueError naming it otherwise."""
    family = _BY_GGUF.get(architecture)
    if family is None:
        raise ValueError(f"{where}: GGUF architecture {architecture!r:.60} is not supported (kvgen runs: "
                         f"{', '.join(_BY_GGUF)})")
    return family


def read_gguf(path: Path, sliding_window: Optional[int] = None) -> GGUFModel:
    """Reads a GGUF file (kvgen.loaders.gguf.model) and translates it with its family's module;
    ValueError naming the problem for malformed or unsupported files. ``sliding_window``: the
    window a file does not store (Model.load's), read as its ``attention.sliding_window`` key."""
    from kvgen.loaders.gguf.model import open_gguf
    from kvgen.loaders.pooling import gguf_pooling

    contents = open_gguf(path)
    if sliding_window is not None:
        given_window(contents, sliding_window)
    model = family_of_gguf(contents.architecture, path).from_gguf(contents)
    if model.config.get("model_type") not in model.family.model_types:  # another family's checkpoint (a
        model.family = family_of_config(model.config, path)  # Mistral's llama file given its window)
    model.tokenizer = contents.tokenizer()
    model.metadata = contents.description()
    model.pooling = gguf_pooling(contents.get(f"{contents.architecture}.pooling_type", int, None), path)
    return model


def given_window(contents: "GGUFContents", window: int) -> None:
    """Makes ``contents`` read ``window`` as its ``<arch>.attention.sliding_window``: a window
    llama.cpp's converter did not write (Mistral's, a windowed Qwen2's). ValueError when it is not
    a positive integer, or when the file stores another (llama.cpp writes 0 for none)."""
    from kvgen.families.config_values import checked_window

    window = checked_window(window)
    key = f"{contents.architecture}.attention.sliding_window"
    stored = contents.get(key, int, 0)
    if stored and stored != window:
        raise ValueError(f"{contents.path}: the file stores {key} = {stored}; sliding_window={window} differs")
    contents.overrides[key] = window


def capabilities_for(family: str, config: dict, core: "_core._Model") -> Capabilities:
    """The capabilities of a model of the family named ``family`` (a core architecture such
    as "gemma" when none is registered under it: the defaults of a KV-only transformer)."""
    known = family_named(family)
    if known is not None:
        return known.capabilities(config, core)
    return capabilities_of(sliding_window=windowed(config),
                           long_rope_context=0)
