"""The pooling a model's files declare for embeddings: a sentence-transformers directory's
``modules.json`` and the config of its Pooling module (``1_Pooling/config.json``), or a GGUF
file's ``<architecture>.pooling_type`` (llama.cpp's key). None when the files declare none, as
for any chat model: the caller then chooses (kvgen's default is last-token pooling, that of
decoder embedding models such as Qwen3-Embedding).

Names: ``"mean"`` (the mean over the text's tokens), ``"last"`` (the last token's hidden state),
``"cls"`` (the first token's). A mode kvgen does not compute (sentence-transformers' max,
mean-sqrt-len or weighted mean, llama.cpp's rank) is kept under its own name, so that embedding
with it is refused naming it while the model still loads for generation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from kvgen.loaders.checkpoint import model_file

#: The poolings kvgen computes.
POOLINGS = ("mean", "last", "cls")
#: llama.cpp's enum llama_pooling_type (0 NONE: token embeddings, no pooling declared).
GGUF_POOLING = {1: "mean", 2: "cls", 3: "last", 4: "rank"}
#: sentence-transformers' Pooling flags (config.json) and the names kvgen gives them.
_SENTENCE_TRANSFORMERS_FLAGS = (("pooling_mode_cls_token", "cls"), ("pooling_mode_mean_tokens", "mean"),
                                ("pooling_mode_max_tokens", "max"), ("pooling_mode_mean_sqrt_len_tokens",
                                                                     "mean_sqrt_len"),
                                ("pooling_mode_weightedmean_tokens", "weightedmean"),
                                ("pooling_mode_lasttoken", "last"))
#: sentence-transformers' ``pooling_mode`` strings (newer configs) and kvgen's names.
_SENTENCE_TRANSFORMERS_MODES = {"cls": "cls", "mean": "mean", "max": "max", "mean_sqrt_len_tokens": "mean_sqrt_len",
                                "weightedmean": "weightedmean", "lasttoken": "last"}
#: The modules of a sentence-transformers pipeline that kvgen computes: the transformer, the
#: pooling, and the normalisation (Model.embed normalises by default).
_MODULES = ("Transformer", "Pooling", "Normalize")
#: The largest modules.json or pooling config.json read (they hold a few lines).
MAX_POOLING_FILE_BYTES = 1 << 16


def _read_small_json(path: Path) -> Any:
    """The JSON value in ``path``, at most MAX_POOLING_FILE_BYTES; ValueError naming the file."""
    size = path.stat().st_size
    if size > MAX_POOLING_FILE_BYTES:
        raise ValueError(f"{path}: {size} bytes, more than the {MAX_POOLING_FILE_BYTES} a pooling file may hold")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"{path}: not valid JSON ({type(e).__name__})") from None


def directory_pooling(directory: Path) -> Optional[str]:
    """The pooling a sentence-transformers directory declares (``modules.json`` lists a Pooling
    module whose ``config.json`` sets one mode); None without modules.json or a Pooling module.
    ValueError naming the file for a malformed one, a module kvgen does not compute (a Dense
    projection would change the vectors), or a Pooling config that sets no mode or several."""
    modules_file = model_file(directory, "modules.json")
    if not modules_file.is_file():
        return None
    modules = _read_small_json(modules_file)
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise ValueError(f"{modules_file}: expected a list of module objects")
    pooling_path = None
    for m in modules:
        kind, path = m.get("type"), m.get("path", "")
        if not isinstance(kind, str) or not isinstance(path, str):
            raise ValueError(f"{modules_file}: a module's 'type' and 'path' must be strings")
        name = kind.rsplit(".", 1)[-1]
        if name not in _MODULES:
            raise ValueError(f"{modules_file}: module {kind!r:.80} is not one kvgen computes (it computes "
                             f"{', '.join(_MODULES)}): the embeddings would differ from sentence-transformers'")
        if name == "Pooling":
            pooling_path = path
    if pooling_path is None:
        return None
    if not pooling_path or Path(pooling_path).is_absolute() or ".." in Path(pooling_path).parts:
        raise ValueError(f"{modules_file}: the Pooling module's path {pooling_path!r:.80} is not a folder of the "
                         "model directory")
    config_file = model_file(directory, f"{pooling_path}/config.json")
    if not config_file.is_file():
        raise ValueError(f"{directory}: modules.json lists a Pooling module in {pooling_path!r:.80} without its "
                         "config.json")
    config = _read_small_json(config_file)
    if not isinstance(config, dict):
        raise ValueError(f"{config_file}: expected a JSON object")
    mode = config.get("pooling_mode")
    if isinstance(mode, str) and mode in _SENTENCE_TRANSFORMERS_MODES:
        return _SENTENCE_TRANSFORMERS_MODES[mode]
    chosen = [name for flag, name in _SENTENCE_TRANSFORMERS_FLAGS if config.get(flag) is True]
    if len(chosen) != 1:
        raise ValueError(f"{config_file}: expected exactly one pooling mode set, got "
                         f"{', '.join(chosen) if chosen else 'none'}")
    return chosen[0]


def gguf_pooling(value: Optional[int], where: object) -> Optional[str]:
    """The pooling of a GGUF ``<architecture>.pooling_type`` value (None when absent or 0:
    none declared); ValueError naming ``where`` for a value llama.cpp does not define."""
    if value is None or value == 0:
        return None
    if value not in GGUF_POOLING:
        raise ValueError(f"{where}: GGUF pooling_type = {value} is not one of llama.cpp's (0 none, 1 mean, 2 cls, "
                         "3 last, 4 rank)")
    return GGUF_POOLING[value]
