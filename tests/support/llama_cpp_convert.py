"""GGUF files written by llama.cpp's own converter, so that the family tests read tensor names,
permutations and metadata as llama.cpp writes them, not as a writer of kvgen's would.

``convert_hf_to_gguf.py``, its ``conversion/`` package and the ``gguf-py`` it imports ship in
the llama-cpp-python source distribution (``vendor/llama.cpp/``). ``converter(cache)`` fetches
that sdist once with pip (PyPI only) and keeps the three under ``cache`` (the checkout's build/, so a
CI run fetches it once and a local checkout keeps it); ``convert(...)`` runs the converter on
Hugging Face directories, several in one subprocess (it imports torch and transformers once).

The converter needs a tokenizer it recognises: SmolLM2's, written beside each random model by
``save_smollm2_tokenizer`` (rebuilt from the default model's GGUF by kvgen's own GGUF tokenizer,
whose equality with transformers' is tested in tests/loaders). transformers 5 picks the
tokenizer class from config.json's model_type (Qwen2Tokenizer for qwen2 / qwen3, which rebuilds
the pre-tokenizer for Qwen's regex), so the converter's process loads the directory's
tokenizer.json as it is stored (TokenizersBackend), which hashes to llama.cpp's "smollm". Gemma
2's converter reads only SentencePiece vocabularies; it takes Gemma 3's vocabulary step, which
reads tokenizer.json when there is no tokenizer.model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Sequence

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
_VENDOR = "vendor/llama.cpp/"
_NEEDED = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/")

# Runs in the subprocess: argv = converter directory, then (model dir, out file, outtype) triples.
_DRIVER = r"""
import sys
root = sys.argv[1]
sys.path.insert(0, root)
import transformers
from transformers import TokenizersBackend

def stored_tokenizer(path, *args, **kwargs):  # tokenizer.json as stored, whatever model_type says
    return TokenizersBackend.from_pretrained(path, **{k: v for k, v in kwargs.items() if k != "trust_remote_code"})

transformers.AutoTokenizer.from_pretrained = stored_tokenizer
import convert_hf_to_gguf
from conversion.base import TextModel
from conversion.gemma import Gemma2Model, Gemma3Model

_sentencepiece_vocab = TextModel._set_vocab_sentencepiece

def sentencepiece_vocab(self, *args, **kwargs):  # no tokenizer.model: the FileNotFoundError that
    if not (self.dir_model / "tokenizer.model").is_file():  # set_vocab falls back on, before
        raise FileNotFoundError(self.dir_model / "tokenizer.model")  # sentencepiece is imported
    return _sentencepiece_vocab(self, *args, **kwargs)

TextModel._set_vocab_sentencepiece = sentencepiece_vocab
# Gemma 2's set_vocab reads only a SentencePiece tokenizer.model; Gemma 3's falls back to the
# tokenizer.json the random models carry (the tensors and keys are written as before)
Gemma2Model.set_vocab = Gemma3Model.set_vocab
jobs = sys.argv[2:]
options = []  # the converter's own options (--no-mtp), before the jobs
while jobs and jobs[0].startswith("--"):
    options.append(jobs.pop(0))
for model, out, outtype in zip(jobs[0::3], jobs[1::3], jobs[2::3]):
    sys.argv = ["convert_hf_to_gguf.py", model, "--outfile", out, "--outtype", outtype] + options
    convert_hf_to_gguf.main()
"""


#: Where the converter is kept between runs: the checkout's build/ (ignored by git), so that the two
#: pytest runs of CI (the plain and the sanitizer stage, which runs without pytest's cache) fetch it once.
DEFAULT_CACHE = Path(__file__).resolve().parents[2] / "build" / "test-cache" / "llama-cpp-converter"


def converter(cache: Path = DEFAULT_CACHE) -> Path:
    """The directory holding llama.cpp's convert_hf_to_gguf.py (fetched into ``cache`` once)."""
    root = cache / "llama.cpp-0.3.36"
    if (root / "convert_hf_to_gguf.py").is_file():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        fetched = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "llama-cpp-python",
             LLAMA_CPP_PYTHON, "-d", tmp], capture_output=True, text=True)
        if fetched.returncode:
            raise RuntimeError(f"pip download {LLAMA_CPP_PYTHON} failed:\n{fetched.stderr[-2000:]}")
        sdist = next(Path(tmp).glob("llama_cpp_python-*.tar.gz"))
        with tarfile.open(sdist) as tar:
            members = []
            for m in tar.getmembers():
                inner = m.name.partition("/")[2]
                if inner.startswith(_VENDOR) and inner[len(_VENDOR):].startswith(_NEEDED):
                    m.name = inner[len(_VENDOR):]
                    members.append(m)
            tar.extractall(Path(tmp) / "out", members=members, filter="data")
        os.replace(Path(tmp) / "out", root)  # whole or not at all
    return root


def convert(root: Path, jobs: Sequence[tuple[Path, Path, str]], options: Sequence[str] = ()) -> None:
    """Runs llama.cpp's converter on each (Hugging Face directory, output .gguf, outtype),
    outtype one of f32, f16, bf16, q8_0, with the converter's ``options`` (``--no-mtp``);
    RuntimeError with the converter's output otherwise."""
    args = [*options, *(str(x) for job in jobs for x in job)]
    done = subprocess.run([sys.executable, "-c", _DRIVER, str(root), *args], capture_output=True, text=True,
                          env={**os.environ, "TRANSFORMERS_VERBOSITY": "error"})
    if done.returncode:
        raise RuntimeError(f"convert_hf_to_gguf.py failed:\n{done.stderr[-4000:]}")


def save_smollm2_tokenizer(directory: Path, smollm2_gguf: Path) -> None:
    """SmolLM2's tokenizer.json, tokenizer_config.json and chat template in ``directory``,
    from the default model's GGUF file (tokenizer_class GPT2Tokenizer, as SmolLM2 and Phi-4 name it; the
    converter reads Phi-3 vocabularies from tokenizer.model otherwise)."""
    from kvgen.loaders.gguf.file import read_gguf_file
    from kvgen.loaders.gguf.tokenizer import tokenizer_from_gguf

    info = tokenizer_from_gguf(read_gguf_file(smollm2_gguf))
    directory.mkdir(parents=True, exist_ok=True)
    info.tokenizer.save(str(directory / "tokenizer.json"))
    config = {"tokenizer_class": "GPT2Tokenizer", "bos_token": info.bos_token, "eos_token": info.eos_token,
              "add_bos_token": info.add_bos_token, "chat_template": info.chat_template}
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
