"""Reading Hugging Face checkpoint directories: config.json, safetensors weights (one
file or shards listed in model.safetensors.index.json, read with the ``safetensors``
library into NumPy arrays), tokenizer.json (a ``tokenizers.Tokenizer``) and the chat
template (tokenizer_config.json or chat_template.jinja)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

#: Maps a stored tensor name to the name the model reads, or to None for a tensor left unread
#: (a vision tower beside the text model: kvgen.families.composite).
Rename = Callable[[str], Optional[str]]

# Buffers some GPT-2 checkpoints carry that are not weights (the causal mask).
_NOT_WEIGHTS = (".attn.bias", ".attn.masked_bias", ".rotary_emb.inv_freq")


def model_file(directory: Path, name: str) -> Path:
    """``directory / name``, refused (ValueError) when a symlink leads it out of the model
    directory: a checkpoint is untrusted, and a link to /etc/passwd or ~/.ssh must not become a
    chat template or a tokenizer. The one exception is the Hugging Face cache's layout,
    ``models--org--name/snapshots/<rev>/`` whose files link to ``../../blobs/<hash>``: there the
    link may lead anywhere inside that repository's cache folder ``models--org--name``."""
    path = directory / name
    if not path.exists() and not path.is_symlink():
        return path  # the callers say what is missing
    real = path.resolve()
    root = directory.resolve()
    if real != root and real.is_relative_to(root):
        return path
    snapshots = directory.absolute().parent
    repo = snapshots.parent
    if snapshots.name == "snapshots" and repo.name.startswith(("models--", "datasets--", "spaces--")):
        repo_root = repo.resolve()
        if real.is_relative_to(repo_root) and real != repo_root:
            return path
    raise ValueError(f"{path}: a link to {real}, outside the model directory {directory}; kvgen reads model files "
                     "from inside it only (or from a Hugging Face cache repository's blobs)")


def read_json(path: Path, what: str) -> dict:
    """The JSON object in ``path``; FileNotFoundError / ValueError naming the file."""
    if not path.is_file():
        raise FileNotFoundError(f"{path.parent}: no {path.name} ({what})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    except RecursionError:  # arrays nested thousands deep
        raise ValueError(f"{path}: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def read_config(directory: Path) -> dict:
    """config.json of a Hugging Face model directory."""
    return read_json(model_file(directory, "config.json"),
                     "kvgen.Model.load expects a Hugging Face model directory")


def read_weights(directory: Path, rename: Optional[Rename] = None) -> dict[str, Any]:
    """Every tensor of model.safetensors, or of the shards model.safetensors.index.json lists.
    ``rename``: the tensors it names, under those names; the others are never read (nor a shard
    that holds none of them)."""
    arrays: dict[str, Any] = {}
    for path in _weight_files(directory, rename):
        for stored, array in _read_safetensors(path, rename).items():
            name = stored if rename is None else rename(stored)
            if name in arrays:
                raise ValueError(f"{directory}: two tensors are read as {name!r} ({stored!r} is the second)")
            arrays[name] = array
    return _with_model_prefix(arrays)


def _with_model_prefix(arrays: dict[str, Any]) -> dict[str, Any]:
    """A base model's tensors (transformers' ``AutoModel`` class, Qwen3Model: how embedding models
    such as Qwen3-Embedding are saved) are named without the ``model.`` prefix of the
    ``...ForCausalLM`` class, and have no LM head: they get the prefix, so that the family reads
    them as its own (its LM head is then the embedding matrix)."""
    if "embed_tokens.weight" not in arrays or any(name.startswith("model.") for name in arrays):
        return arrays
    return {f"model.{name}": array for name, array in arrays.items()}


def read_weight_types(directory: Path, rename: Optional[Rename] = None) -> dict[str, int]:
    """How many tensors of each safetensors dtype ("F32", "BF16", ...) the directory holds (headers
    only); ``rename``: of the tensors it names (see read_weights)."""
    from collections import Counter

    from safetensors import safe_open

    counts: Counter = Counter()
    for path in _weight_files(directory, rename):
        with safe_open(str(path), framework="np") as f:
            counts.update(f.get_slice(name).get_dtype() for name in f.keys() if _kept(name, rename))
    return dict(counts.most_common())


def _kept(name: str, rename: Optional[Rename]) -> bool:
    return not name.endswith(_NOT_WEIGHTS) and (rename is None or rename(name) is not None)


def _weight_files(directory: Path, rename: Optional[Rename]) -> list[Path]:
    """model.safetensors, or the shards the index lists that hold a tensor ``rename`` keeps."""
    index = model_file(directory, "model.safetensors.index.json")
    if index.is_file():
        return _shards(directory, index, rename)
    return [model_file(directory, "model.safetensors")]


def _shards(directory: Path, index: Path, rename: Optional[Rename] = None) -> list[Path]:
    """The shard files the index's weight_map (tensor name -> file name) lists, each
    inside the directory (ValueError for another shape or a path leading out of it);
    ``rename``: those that hold a tensor it keeps."""
    weight_map = read_json(index, "the shard index").get("weight_map")
    if not isinstance(weight_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()):
        raise ValueError(f"{index}: 'weight_map' must be an object of tensor name -> shard file name")
    shards = []
    for name in sorted({file for tensor, file in weight_map.items() if rename is None or rename(tensor) is not None}):
        # the name itself may not climb out (../x); a symlink may, into a Hugging Face cache's blobs
        lexical = Path(os.path.normpath(directory.absolute() / name)) if name else directory
        if not name or lexical == directory.absolute() or not lexical.is_relative_to(directory.absolute()):
            raise ValueError(f"{index}: shard {name!r:.80} is not a file inside {directory}")
        try:
            shards.append(model_file(directory, name))
        except ValueError:
            raise ValueError(f"{index}: shard {name!r:.80} is not a file inside {directory}") from None
    return shards


# safetensors dtype codes, named as NumPy names them.
_DTYPE_NAMES = {"F16": "float16", "BF16": "bfloat16", "F64": "float64", "F8_E4M3": "float8_e4m3",
                "F8_E5M2": "float8_e5m2", "I8": "int8", "U8": "uint8", "I16": "int16", "U16": "uint16",
                "I32": "int32", "U32": "uint32", "I64": "int64", "U64": "uint64", "BOOL": "bool"}
_HALF_TYPES = ("F16", "BF16")
# The uint8 tensors of an MXFP4 checkpoint (quantization_config.quant_method "mxfp4", GPT-OSS): the
# E2M1 codes of 32-value blocks, two a byte, and each block's E8M0 exponent; read as they are
# stored (memory-mapped), repacked by the family into the core's MXFP4 blocks.
_MXFP4_PARTS = ("_blocks", "_scales")


def _read_safetensors(path: Path, rename: Optional[Rename] = None) -> dict[str, Any]:
    """The tensors of one safetensors file by their stored names (``rename``: those it keeps;
    the others are not read): float32 ones as NumPy arrays; float16 and bfloat16
    matrices as F16 / BF16 ``QuantizedTensor``s over the file's pages (memory-mapped, computed
    on by the core's 16-bit kernels or quantized at load, never expanded to float32 as a
    whole); 16-bit vectors (norms, biases) as float32 copies; an MXFP4 checkpoint's uint8 ``_blocks``
    and ``_scales`` as uint8 arrays over the file's pages. ValueError for a file the
    safetensors library cannot read; TypeError naming the first tensor of another dtype
    (checked from the header, before it is read)."""
    from safetensors import safe_open

    if not path.is_file():
        raise FileNotFoundError(f"{path.parent}: no {path.name} (kvgen reads safetensors weights)")
    arrays: dict[str, Any] = {}
    halves: dict[str, tuple[str, list[int]]] = {}
    other: Optional[tuple[str, str]] = None
    try:
        with safe_open(str(path), framework="np") as f:
            for name in f.keys():
                if not _kept(name, rename):
                    continue
                tensor = f.get_slice(name)
                dtype = tensor.get_dtype()
                if dtype in _HALF_TYPES or (dtype == "U8" and name.endswith(_MXFP4_PARTS)):
                    halves[name] = (dtype, list(tensor.get_shape()))
                    continue
                if dtype != "F32":
                    other = (name, _DTYPE_NAMES.get(dtype, dtype))
                    break
                arrays[name] = f.get_tensor(name)
    except BaseException as e:  # noqa: BLE001  safetensors raises its own types, and Rust panics
        if isinstance(e, (KeyboardInterrupt, SystemExit, MemoryError)):
            raise
        raise ValueError(f"{path}: cannot read the safetensors file ({e}); is it truncated or corrupt?") from None
    if other is not None:
        raise TypeError(f"tensor '{other[0]}' has dtype {other[1]} in {path}; kvgen reads float32, float16 and "
                        "bfloat16 weights")
    if halves:
        arrays.update(_half_tensors(path, halves))
    return arrays


def _half_tensors(path: Path, halves: dict[str, tuple[str, list[int]]]) -> dict[str, Any]:
    """The 16-bit tensors (and MXFP4 parts) of a safetensors file (see _read_safetensors), at the byte offsets
    its header gives (the safetensors library has checked the header and the offsets)."""
    from kvgen.loaders.quantize import QuantizedTensor, check_finite_scales, to_float32

    with open(path, "rb") as f:
        header_size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(header_size))
    pages = np.memmap(path, dtype=np.uint8, mode="r")
    out: dict[str, Any] = {}
    for name, (dtype, shape) in halves.items():
        begin, end = (8 + header_size + int(o) for o in header[name]["data_offsets"])
        raw = pages[begin:end]
        if dtype == "U8":  # an MXFP4 checkpoint's codes or exponents (_MXFP4_PARTS), as stored
            out[name] = raw.reshape(shape)
            continue
        if not check_finite_scales(dtype, raw):
            raise ValueError(f"{path}: tensor {name!r} holds values that are not finite (nan or inf)")
        t = QuantizedTensor(dtype, raw, tuple(shape), mapped=True)
        out[name] = t if len(shape) == 2 and min(shape) > 0 else np.ascontiguousarray(to_float32(t))
    return out


def read_tokenizer(directory: Path) -> Any:
    """The directory's tokenizer.json as a ``tokenizers.Tokenizer``, or None."""
    path = model_file(directory, "tokenizer.json")
    if not path.is_file():
        return None
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(str(path))
    except BaseException as e:  # noqa: BLE001  tokenizers raises its own Exception type, and Rust panics
        if isinstance(e, (KeyboardInterrupt, SystemExit, MemoryError)):
            raise
        raise ValueError(f"{path}: cannot read the tokenizer ({e})") from None


def read_chat_template(directory: Path) -> Optional[str]:
    """The chat template: chat_template.jinja, or tokenizer_config.json's "chat_template"
    (a string, or transformers' list of {"name", "template"} from which the one named
    "default" is taken). ValueError for a template of another shape."""
    jinja = model_file(directory, "chat_template.jinja")
    if jinja.is_file():
        try:
            return jinja.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{jinja}: not UTF-8 text ({e})") from None
    config = model_file(directory, "tokenizer_config.json")
    if not config.is_file():
        return None
    template = read_json(config, "tokenizer settings").get("chat_template")
    if template is None or isinstance(template, str):
        return template
    named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)} \
        if isinstance(template, list) else {}
    if not isinstance(template, list) or len(named) != len(template) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in named.items()):
        raise ValueError(f"{config}: chat_template must be a string or a list of "
                         f'{{"name": ..., "template": ...}} objects, got {template!r:.80}')
    return named.get("default")
