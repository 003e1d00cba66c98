"""Fuzzing kvgen.Model.load over Hugging Face directories.

A tiny GPT-2 and a tiny Llama are saved as Hugging Face directories, then mutated:
every size key of config.json set to hostile values (0, -1, 2**31, 2**62, 1e9, 1.5,
"3", True, None, [], {}), keys deleted, float keys set to inf/NaN/0/strings,
rope_scaling / rope_parameters variants, safetensors headers (length prefix; dtype,
shape and data_offsets of a tensor), truncated or garbage weight files, shard index
files, config.json / tokenizer.json / tokenizer_config.json of the wrong shape. Each case
loads the directory in tests/support/sandbox.py's Sandbox (a worker under a memory limit and a
timeout) and, when it loads, runs a forward pass and a two-token generation. A case must
end in ValueError or TypeError (FileNotFoundError only where the case removed a file or
names one that does not exist), or load and run normally: never a crash, a hang, a
MemoryError or another exception.

The fixed cases (every key x every value, ~300) always run, plus KVGEN_FUZZ_CASES random
mutations (default 1000, seed 0; about 15 s in all). For a longer local run:
``KVGEN_FUZZ_CASES=5000 python -m pytest -q tests/loaders/test_fuzz_checkpoint.py``; set
KVGEN_FUZZ_SEED to vary the random cases.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
from pathlib import Path
from typing import Callable

import pytest
from hf_models import random_gpt2
from llama_models import random_llama
from sandbox import Sandbox, is_clean_refusal

RANDOM_CASES = int(os.environ.get("KVGEN_FUZZ_CASES", "1000"))  # about 10 s here
SEED = int(os.environ.get("KVGEN_FUZZ_SEED", "0"))

HOSTILE_VALUES = [0, -1, 2**31, 2**62, 2**64, 1e9, 1.5, "3", True, None, [], {}]
FLOAT_VALUES = [0.0, -1.0, float("inf"), float("nan"), 1e300, 1e-300, "1e-5", True, None, [], 2**70]
INT_KEYS = {
    "gpt2": ["vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "n_inner", "bos_token_id",
             "eos_token_id"],
    "llama": ["vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_hidden_layers",
              "num_attention_heads", "num_key_value_heads", "head_dim", "bos_token_id", "eos_token_id"],
}
FLOAT_KEYS = {"gpt2": ["layer_norm_epsilon"], "llama": ["rms_norm_eps", "rope_theta"]}
ROPE_VARIANTS = [
    None, [], "linear", 3, {"type": "linear"}, {"rope_type": "linear", "factor": 0},
    {"rope_type": "linear", "factor": float("inf")}, {"rope_type": "linear", "factor": "2"},
    {"rope_type": "linear", "factor": 1e-40}, {"rope_type": ["linear"]}, {"rope_type": "yarn", "factor": 2.0},
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 8},
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": float("nan")},
    {"rope_type": "llama3", "factor": 1e38, "low_freq_factor": 1e-38, "high_freq_factor": 1e38,
     "original_max_position_embeddings": 2**62},
    {"rope_type": "default", "rope_theta": -5},
]


# ---- the case the worker runs ---------------------------------------------------------

def load_and_run(directory: str) -> str:
    """Loads the directory; when it loads, a forward pass and a short generation."""
    import kvgen

    model = kvgen.Model.load(directory)
    model.forward([[1, 2, 3]])
    kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=2, pad_token_id=0)).generate([[1, 2]])
    return "loaded"


# ---- base directories -----------------------------------------------------------------

@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict[str, Path]:
    """The two unmutated directories, smallest shapes."""
    gpt2 = tmp_path_factory.mktemp("gpt2")
    random_gpt2(vocab_size=16, n_embd=8, n_layer=1, n_head=2).save_pretrained(gpt2)
    llama = tmp_path_factory.mktemp("llama")
    random_llama(vocab_size=16, hidden_size=8, intermediate_size=12, num_hidden_layers=1, num_attention_heads=2,
                 num_key_value_heads=1, max_position_embeddings=16).save_pretrained(llama)
    return {"gpt2": gpt2, "llama": llama}


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(timeout_s=60) as box:
        yield box


# ---- mutations: each edits a copy of a base directory ---------------------------------

def edit_config(change: Callable[[dict], object]) -> Callable[[Path], None]:
    def mutate(d: Path) -> None:
        config = json.loads((d / "config.json").read_text())
        change(config)
        (d / "config.json").write_text(json.dumps(config))
    return mutate


def set_key(key: str, value) -> Callable[[Path], None]:
    return edit_config(lambda c: c.__setitem__(key, value))


def delete_key(key: str) -> Callable[[Path], None]:
    return edit_config(lambda c: c.pop(key, None))


def write_file(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda d: (d / name).write_bytes(data)


def read_header(path: Path) -> tuple[dict, bytes]:
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n]), data[8 + n:]


def write_header(path: Path, header: dict, payload: bytes) -> None:
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + payload)


def edit_tensor_field(field: str, value, which: int = 0) -> Callable[[Path], None]:
    """Sets one field (dtype, shape, data_offsets) of the which-th tensor's header entry."""
    def mutate(d: Path) -> None:
        path = d / "model.safetensors"
        header, payload = read_header(path)
        names = sorted(k for k in header if k != "__metadata__")
        header[names[which % len(names)]][field] = value
        write_header(path, header, payload)
    return mutate


def set_length_prefix(value: int) -> Callable[[Path], None]:
    def mutate(d: Path) -> None:
        path = d / "model.safetensors"
        data = path.read_bytes()
        path.write_bytes(struct.pack("<Q", value % 2**64) + data[8:])
    return mutate


def truncate(fraction: float) -> Callable[[Path], None]:
    def mutate(d: Path) -> None:
        path = d / "model.safetensors"
        data = path.read_bytes()
        path.write_bytes(data[:int(len(data) * fraction)])
    return mutate


def flip_bytes(seed: int, count: int, header_only: bool) -> Callable[[Path], None]:
    def mutate(d: Path) -> None:
        path = d / "model.safetensors"
        data = bytearray(path.read_bytes())
        (n,) = struct.unpack("<Q", data[:8])
        rng = random.Random(seed)
        end = 8 + n if header_only else len(data)
        for _ in range(count):
            data[rng.randrange(end)] = rng.randrange(256)
        path.write_bytes(bytes(data))
    return mutate


def shard_index(weight_map, rename_to: str | None = "model-00001.safetensors") -> Callable[[Path], None]:
    """Moves the weights to a shard and writes an index with this weight_map (a callable
    gets the tensor names)."""
    def mutate(d: Path) -> None:
        header, _ = read_header(d / "model.safetensors")
        names = [k for k in header if k != "__metadata__"]
        if rename_to:
            (d / "model.safetensors").rename(d / rename_to)
        wm = weight_map(names) if callable(weight_map) else weight_map
        (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wm}))
    return mutate


def fixed_cases(arch: str) -> list[tuple[str, Callable[[Path], None], bool]]:
    """(name, mutation, may it end in FileNotFoundError) for one architecture."""
    cases = [(f"{k}={v!r}", set_key(k, v), False) for k in INT_KEYS[arch] for v in HOSTILE_VALUES]
    cases += [(f"{k}={v!r}", set_key(k, v), False) for k in FLOAT_KEYS[arch] for v in FLOAT_VALUES]
    cases += [(f"del {k}", delete_key(k), False) for k in INT_KEYS[arch] + FLOAT_KEYS[arch] + ["model_type"]]
    if arch == "llama":
        cases += [(f"{k}={v!r}", set_key(k, v), False) for k in ("rope_scaling", "rope_parameters")
                  for v in ROPE_VARIANTS]
    cases += [
        ("config.json is a list", write_file("config.json", b"[1, 2]"), False),
        ("config.json is not JSON", write_file("config.json", b"{\"model_type\": "), False),
        ("config.json nested deeply", write_file("config.json", b"[" * 100000 + b"]" * 100000), False),
        ("config.json not UTF-8", write_file("config.json", b"\xff\xfe{}"), False),
        ("tokenizer.json garbage", write_file("tokenizer.json", b"\x00garbage{"), False),
        ("tokenizer.json wrong JSON", write_file("tokenizer.json", b'{"model": 5}'), False),
        ("chat_template is a number", write_file("tokenizer_config.json", b'{"chat_template": 5}'), False),
        ("chat_template list of junk", write_file("tokenizer_config.json", b'{"chat_template": [1, {}]}'), False),
        ("tokenizer_config is a list", write_file("tokenizer_config.json", b"[]"), False),
        ("chat_template.jinja not UTF-8", write_file("chat_template.jinja", b"\xff\xff"), False),
        ("weights empty", write_file("model.safetensors", b""), False),
        ("weights garbage", write_file("model.safetensors", b"\x07" * 100), False),
        ("weights removed", lambda d: (d / "model.safetensors").unlink(), True),
        ("config removed", lambda d: (d / "config.json").unlink(), True),
    ]
    cases += [(f"truncated to {f}", truncate(f), False) for f in (0.001, 0.01, 0.5, 0.99)]
    cases += [(f"length prefix {v}", set_length_prefix(v), False)
              for v in (0, 1, 7, 2**31, 2**63, 2**64 - 1, 100_000_000, 100_000_001)]
    for field, values in {"dtype": ["F16", "BF16", "I64", "F64", "U8", "XX", 5, None],
                          "shape": [[-1], [2**62, 2**62], [0], [], [2**31], [1, 1, 1, 1, 1, 1, 1, 1], "8", None],
                          "data_offsets": [[0, 2**63], [10, 5], [-1, 4], ["a", 1], [0], [0, 0], None]}.items():
        cases += [(f"tensor {field}={v!r}", edit_tensor_field(field, v), False) for v in values]
    cases += [
        ("__metadata__ garbage", lambda d: (lambda h, p: write_header(d / "model.safetensors",
                                                                        {**h, "__metadata__": {"a": 1}}, p))(
            *read_header(d / "model.safetensors")), False),
        ("index: weight_map list", shard_index([1, 2]), True),
        ("index: weight_map values not str", shard_index(lambda names: {n: 1 for n in names}), True),
        ("index: keys ok, shard traversal", shard_index(lambda names: {n: "../model.safetensors" for n in names},
                                                        rename_to=None), False),
        ("index: absolute shard", shard_index(lambda names: {n: "/etc/passwd" for n in names}), True),
        ("index: empty shard name", shard_index(lambda names: {n: "" for n in names}), True),
        ("index: shard is the directory", shard_index(lambda names: {n: "." for n in names}), True),
        ("index: missing shard", shard_index(lambda names: {n: "nope.safetensors" for n in names}), True),
        ("index: good", shard_index(lambda names: {n: "model-00001.safetensors" for n in names}), False),
        ("index: empty weight_map", shard_index({}), False),
        ("index: not JSON", lambda d: (d / "model.safetensors.index.json").write_text("{"), False),
    ]
    return cases


def random_case(rng: random.Random, arch: str) -> tuple[str, Callable[[Path], None], bool]:
    """One random mutation: several config keys at once, header fields, or bytes."""
    kind = rng.randrange(4)
    if kind == 0:
        keys = rng.sample(INT_KEYS[arch] + FLOAT_KEYS[arch], 3)
        values = [rng.choice(HOSTILE_VALUES + FLOAT_VALUES + [rng.randrange(-5, 70), 2 ** rng.randrange(64)])
                  for _ in keys]
        return (f"config {dict(zip(keys, values))!r}",
                edit_config(lambda c: c.update(zip(keys, values))), False)
    if kind == 1:
        field = rng.choice(["dtype", "shape", "data_offsets"])
        value = {"dtype": lambda: rng.choice(["F32", "F16", "I32", "BOOL", ""]),
                 "shape": lambda: [rng.choice([0, 1, 2, 8, 12, 16, 2**rng.randrange(64)])
                                   for _ in range(rng.randrange(4))],
                 "data_offsets": lambda: sorted(rng.randrange(0, 4000) for _ in range(2))}[field]()
        which = rng.randrange(1000)
        return f"tensor #{which} {field}={value!r}", edit_tensor_field(field, value, which), False
    seed, count = rng.randrange(2**32), rng.choice([1, 2, 8])
    return f"flip {count} bytes (seed {seed}, header={kind == 2})", flip_bytes(seed, count, kind == 2), False


def all_cases() -> list[tuple[str, str, Callable[[Path], None], bool]]:
    cases = [(arch, *c) for arch in ("gpt2", "llama") for c in fixed_cases(arch)]
    rng = random.Random(SEED)
    cases += [(arch, *random_case(rng, arch)) for arch in rng.choices(["gpt2", "llama"], k=RANDOM_CASES)]
    return cases


def test_every_mutated_directory_loads_or_is_refused_cleanly(bases, sandbox, tmp_path):
    failures, loaded = [], set()
    for i, (arch, name, mutate, may_be_missing) in enumerate(all_cases()):
        d = tmp_path / f"case{i}"
        shutil.copytree(bases[arch], d)
        mutate(d)
        outcome = sandbox.run(load_and_run, str(d))
        allowed = ("ValueError", "TypeError") + (("FileNotFoundError",) if may_be_missing else ())
        if not is_clean_refusal(outcome, allowed):
            failures.append(f"{arch} {name}: {outcome.describe()[:600]}")
        if outcome.status == "returned":
            loaded.add(f"{arch} {name}")
        shutil.rmtree(d)
    assert not failures, f"{len(failures)} cases:\n" + "\n".join(failures)
    # the harness does load and run what is valid (a sharded copy of each base)
    assert {"gpt2 index: good", "llama index: good"} <= loaded
