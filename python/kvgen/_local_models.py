"""The models on this machine that kvgen can load, for ``kvgen models`` (as ``ollama list``):
the default model's package, GGUF files and Hugging Face snapshots in the usual cache folders.

Nothing is opened beyond a directory listing and a snapshot's ``config.json`` being present:
listing never reads a model file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

#: What marks a Hugging Face snapshot directory that kvgen can load (config plus weights).
_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


@dataclass(frozen=True)
class LocalModel:
    """One model found on disk: a display name, ``"gguf"``, ``"hf"`` or ``"default"``, its
    size in bytes (every file of a snapshot) and the path to pass to ``kvgen.Model.load``."""

    name: str
    kind: str
    size: int
    path: Path


def cache_folders() -> list[Path]:
    """Where models are looked for, in order: the folders in ``KVGEN_MODELS`` (``os.pathsep``
    separated), Hugging Face's hub cache (``HF_HUB_CACHE``, ``HF_HOME``/hub or
    ``~/.cache/huggingface/hub``) and llama.cpp's download cache (``LLAMA_CACHE`` or
    ``~/.cache/llama.cpp``)."""
    cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folders = [Path(p) for p in os.environ.get("KVGEN_MODELS", "").split(os.pathsep) if p]
    if os.environ.get("HF_HUB_CACHE"):
        folders.append(Path(os.environ["HF_HUB_CACHE"]))
    else:
        folders.append(Path(os.environ.get("HF_HOME") or cache_home / "huggingface") / "hub")
    folders.append(Path(os.environ.get("LLAMA_CACHE") or cache_home / "llama.cpp"))
    unique: list[Path] = []
    for folder in folders:
        if folder not in unique:
            unique.append(folder)
    return unique


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _hub_name(snapshot: Path) -> Optional[str]:
    """``owner/name`` of a hub cache snapshot (``models--owner--name/snapshots/<hash>``)."""
    repo = snapshot.parent.parent.name
    if snapshot.parent.name == "snapshots" and repo.startswith("models--"):
        return repo[len("models--"):].replace("--", "/")
    return None


def _in_folder(folder: Path) -> Iterator[LocalModel]:
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix.lower() == ".gguf":
            hub = _hub_name(path.parent)
            name = f"{hub}/{path.name}" if hub else path.name
            yield LocalModel(name, "gguf", path.stat().st_size, path)
        elif path.is_dir() and (path / "config.json").is_file() and any((path / w).exists() for w in _WEIGHTS):
            yield LocalModel(_hub_name(path) or path.name, "hf", _size(path), path)


def find_local_models() -> list[LocalModel]:
    """Every model found: the default model first (when its package is installed), then the
    cache folders' GGUF files and snapshots, each path once."""
    from kvgen._default_model import DEFAULT_FILE, default_model_path

    found: list[LocalModel] = []
    try:
        path = default_model_path()
        found.append(LocalModel(f"{DEFAULT_FILE} (default)", "default", path.stat().st_size, path))
    except FileNotFoundError:
        pass
    seen = {m.path.resolve() for m in found}
    for folder in cache_folders():
        for model in _in_folder(folder):
            if model.path.resolve() not in seen:
                seen.add(model.path.resolve())
                found.append(model)
    return found
