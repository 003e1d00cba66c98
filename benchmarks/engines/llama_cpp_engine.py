"""llama-cpp-python as a benchmark engine: the main peer for GGUF files.

Every benchmark reaches llama.cpp through this module, in one of four ways:

* in process: ``LlamaCppEngine`` (``Llama(...)``, then the low-level loop ``reset(); eval(prompt);
  sample; (eval([t]); sample)*`` with a llama.cpp sampler chain in C: EOS banned by a logit
  bias, then greedy, or penalties over the last 64 ids (prompt accepted first) -> temperature ->
  top-k -> top-p -> draw; or a JSON-schema grammar then greedy); its logits of every position
  (``logits_all=True``); ``quantize`` (llama.cpp's quantizer); ``Vocab`` and ``apply_sampler``
  (one llama.cpp sampler on one logits row);
* in a fresh process, for its peak RSS: this file run as a script, ``generate`` mode (it
  imports nothing but llama_cpp, so the figure is llama.cpp's);
* in another interpreter, driven over a pipe: ``Worker`` (this file, ``worker`` mode);
* as a server: ``server_command`` (``python -m llama_cpp.server``, the ``[server]`` extra).

Install: ``pip install -r benchmarks/requirements-peers.txt`` (llama-cpp-python builds
llama.cpp from source, several minutes). This module imports only the standard library at
the top; llama_cpp is imported where it is used.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

NAME = "llama.cpp"
INSTALL = "pip install llama-cpp-python"
N_CTX = 1024
N_BATCH = 512
PENALTY_LAST_N = 64  # llama.cpp's penalty window (kvgen and HF penalize every id of the sequence)
SCRIPT = Path(__file__).resolve()


# ---- the peer: import, versions -------------------------------------------------------


def import_peer(engines: str = NAME):
    """The llama_cpp module, or None after saying which engines are skipped."""
    import harness

    return harness.optional_peer("llama_cpp", engines, INSTALL)


def versions(llama_cpp) -> dict:
    return {"llama_cpp_python": llama_cpp.__version__}


def system_info(llama_cpp) -> str:
    """llama.cpp's build: the CPU features it was compiled for."""
    return llama_cpp.llama_print_system_info().decode().strip()


def version_in(python: str, module: str = "llama_cpp", engines: str = NAME) -> str | None:
    """llama-cpp-python's version under the interpreter ``python`` when ``module`` imports there
    (``llama_cpp.server.app`` for the server, which needs the ``[server]`` extra); else None,
    after saying which engines are skipped."""
    if not Path(python).exists():
        print(f"skipped: {engines} ({python} does not exist; pass --llama-python)")
        return None
    out = subprocess.run([python, "-c", f"import {module}, llama_cpp; print(llama_cpp.__version__)"],
                         capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        extra = "[server]" if module.startswith("llama_cpp.server") else ""
        print(f"skipped: {engines} ({module} does not import in {python}: pip install llama-cpp-python{extra})")
        return None
    return out.stdout.split()[-1]  # the version: the last line


# ---- in process ----------------------------------------------------------------------


def load(path: Path | str, threads: int, n_ctx: int = N_CTX, logits_all: bool = False, **extra):
    """``llama_cpp.Llama`` on a GGUF file, ``threads`` for decode and for prompt batches;
    ``extra``: more ``Llama`` arguments (e.g. ``type_k``/``type_v``, ``flash_attn``)."""
    import llama_cpp

    return llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                           n_batch=N_BATCH, verbose=False, logits_all=logits_all, **extra)


def sampler(llm, sampling: dict | None = None, history=(), json_schema: dict | None = None):
    """A llama.cpp sampler chain (in C): a grammar of ``json_schema`` (EOS then ends the output)
    or EOS banned by a logit bias; then greedy (``sampling`` None) or penalties (last
    PENALTY_LAST_N ids, ``history`` accepted first) -> temperature -> top-k -> top-p -> draw."""
    from llama_cpp import LlamaGrammar
    from llama_cpp._internals import LlamaSampler

    s = LlamaSampler()
    if json_schema is not None:
        s.add_grammar(llm._model, LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False))
    else:
        s.add_logit_bias(llm.n_vocab(), {llm.token_eos(): float("-inf")})
    if sampling is None:
        s.add_greedy()
        return s
    s.add_penalties(n_vocab=llm.n_vocab(), penalty_last_n=PENALTY_LAST_N, penalty_repeat=sampling["repetition_penalty"],
                    penalty_freq=0.0, penalty_present=0.0)
    s.add_temp(sampling["temperature"])
    s.add_top_k(sampling["top_k"])
    s.add_top_p(sampling["top_p"], 1)
    s.add_dist(sampling["seed"])
    for token in history:
        s.accept(token)
    return s


def decode_loop(llm, s, prompt: list[int], max_tokens: int, eos: int | None = None) -> tuple[list[int], float, float]:
    """``eval(prompt)``, then sample / ``eval([token])`` until max_tokens new tokens (or, eos
    given, that token). Returns (new tokens, EOS included; seconds to the first; seconds from
    the first to the last)."""
    llm.reset()
    start = time.perf_counter()
    llm.eval(prompt)
    tokens = [s.sample(llm._ctx, -1)]
    first = time.perf_counter()
    while len(tokens) < max_tokens and tokens[-1] != eos:
        llm.eval(tokens[-1:])
        tokens.append(s.sample(llm._ctx, -1))
    return tokens, first - start, time.perf_counter() - first


class LlamaCppEngine:
    """llama-cpp-python's ``Llama`` on a GGUF file and its low-level loop (see the module)."""

    def __init__(self, path: Path | str, threads: int, n_ctx: int = N_CTX, logits_all: bool = False, **extra):
        self.llm = load(path, threads, n_ctx, logits_all, **extra)

    def set_threads(self, threads: int) -> None:
        """Threads of decode and of prompt batches (the context keeps them for later evals)."""
        import llama_cpp

        llama_cpp.llama_set_n_threads(self.llm._ctx.ctx, threads, threads)

    def run(self, prompt: list[int], new_tokens: int, sampling: dict | None = None) -> dict:
        s = sampler(self.llm, sampling, history=prompt if sampling else ())
        tokens, ttft, decode = decode_loop(self.llm, s, prompt, new_tokens)
        return {"tokens": tokens, "ttft": ttft, "decode": decode, "steps": new_tokens - 1}

    def logits(self, ids: np.ndarray) -> np.ndarray:
        """[len(ids), vocab] float32: the logits of every position (needs logits_all=True)."""
        import numpy as np

        self.llm.reset()
        self.llm.eval(ids.tolist())
        return np.array(self.llm.scores[:len(ids)], dtype=np.float32)

    def tokenize(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)


def tensor_bytes(path: Path | str) -> int:
    """Bytes of a GGUF file's tensors: what llama.cpp computes on, read once per decoded token."""
    import gguf

    return sum(int(t.n_bytes) for t in gguf.GGUFReader(str(path)).tensors)


@contextlib.contextmanager
def stderr_to(file):
    """Sends file descriptor 2 (where C code writes) to file for the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(file.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def quantize(src: Path, dst: Path, ftype: str, threads: int, imatrix=None) -> None:
    """llama.cpp's quantizer (``llama_model_quantize``, ``allow_requantize``) from src to dst,
    ftype a LLAMA_FTYPE_MOSTLY_* suffix; its line per tensor goes to ``dst.log``. imatrix: an
    importance matrix, a ctypes array of ``llama_model_imatrix_data`` ended by a null name."""
    import ctypes

    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype}")
    params.allow_requantize = True
    params.nthread = threads
    if imatrix is not None:
        params.imatrix = ctypes.cast(imatrix, ctypes.POINTER(llama_cpp.llama_model_imatrix_data))
    with open(dst.with_name(dst.name + ".log"), "w") as log, stderr_to(log):
        failed = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(params))
    if failed:
        raise RuntimeError(f"llama_model_quantize({src.name} -> {ftype}) failed; see {dst.name}.log")


class Vocab:
    """A GGUF file's vocabulary as llama.cpp loads it (``vocab_only``): token texts and the tokenizer."""

    def __init__(self, llama_cpp, path: str):
        self.lib = llama_cpp
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        self.model = llama_cpp.llama_model_load_from_file(path.encode(), params)
        if not self.model:
            raise RuntimeError(f"llama.cpp could not load {path}")
        self.vocab = llama_cpp.llama_model_get_vocab(self.model)
        self.size = llama_cpp.llama_vocab_n_tokens(self.vocab)
        self.texts = [self.piece(t) for t in range(self.size)]

    def piece(self, token: int) -> bytes:
        import ctypes

        buf = ctypes.create_string_buffer(256)
        n = self.lib.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, True)
        return buf.raw[:max(n, 0)]

    def tokenize(self, text: str) -> list[int]:
        data = text.encode()
        out = (self.lib.llama_token * (len(data) + 8))()
        n = self.lib.llama_tokenize(self.vocab, data, len(data), out, len(out), False, False)
        return list(out[:n])

    def free(self) -> None:
        self.lib.llama_model_free(self.model)


def apply_sampler(llama_cpp, s, logits, history: list[int]) -> dict[int, float]:
    """The candidates (id -> logit, -inf left out) that one llama.cpp sampler leaves of a logits
    row (NumPy float32) after accepting ``history``; frees the sampler."""
    import ctypes

    import numpy as np

    for t in history:
        llama_cpp.llama_sampler_accept(s, t)
    n = len(logits)
    data = (llama_cpp.llama_token_data * n)()
    view = np.ctypeslib.as_array(data)
    view["id"] = np.arange(n)
    view["logit"] = logits
    cur = llama_cpp.llama_token_data_array(data=data, size=n, selected=-1, sorted=False)
    llama_cpp.llama_sampler_apply(s, ctypes.byref(cur))
    kept = {cur.data[i].id: cur.data[i].logit for i in range(cur.size)}
    llama_cpp.llama_sampler_free(s)
    return {t: v for t, v in kept.items() if v != -np.inf}


# ---- in a fresh process: peak RSS of one greedy generation ---------------------------


def rss_command(python: str = sys.executable) -> list[str]:
    """The command whose peak RSS is llama.cpp's: this file in ``generate`` mode; its stdin is
    ``rss_job``'s JSON."""
    return [python, str(SCRIPT), "generate"]


def rss_job(path: Path | str, ids: list[int], new_tokens: int, threads: int, n_ctx: int = N_CTX) -> str:
    return json.dumps([str(path), ids, new_tokens, threads, n_ctx])


def child_generate() -> None:
    """``generate`` mode: one greedy generation (EOS banned) of the job on stdin."""
    path, ids, new_tokens, threads, n_ctx = json.loads(sys.stdin.read())
    llm = load(path, threads, n_ctx)
    decode_loop(llm, sampler(llm), ids, new_tokens)


# ---- in another interpreter: a worker driven over a pipe -----------------------------


class Worker:
    """llama-cpp-python in the interpreter ``python`` (this file in ``worker`` mode), driven one
    generation at a time, so that it interleaves with engines of this process. Set-up: the
    file, the prompt ids, the threads, a JSON schema and how many times to time its grammar's
    compilation (``ready["compile_s"]``)."""

    def __init__(self, python: str, path: Path | str, prompt: list[int], threads: int, schema: dict,
                 compile_rounds: int):
        self.proc = subprocess.Popen([python, str(SCRIPT), "worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.ready = self._ask({"path": str(path), "prompt": prompt, "threads": threads, "schema": schema,
                                "compile_rounds": compile_rounds})

    def _ask(self, message: dict) -> dict:
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the llama-cpp-python worker exited ({self.proc.wait()})")
        return json.loads(line)

    def generate(self, constrained: bool, tokens: int) -> dict:
        """Greedy, up to ``tokens`` new tokens: under the schema's grammar until EOS (constrained),
        or with EOS banned. Returns {"tokens" (EOS left out), "decode_s", "steps"}."""
        return self._ask({"constrained": constrained, "tokens": tokens})

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def worker_main() -> None:
    """``worker`` mode: the set-up on the first line, then one request per line."""
    import llama_cpp

    setup = json.loads(sys.stdin.readline())
    llm = load(setup["path"], setup["threads"])
    eos = llm.token_eos()
    compile_s = []
    for _ in range(setup["compile_rounds"]):
        start = time.perf_counter()
        sampler(llm, json_schema=setup["schema"])
        compile_s.append(time.perf_counter() - start)
    print(json.dumps({"version": llama_cpp.__version__, "compile_s": compile_s}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        s = sampler(llm, json_schema=setup["schema"] if req["constrained"] else None)
        tokens, _, decode_s = decode_loop(llm, s, setup["prompt"], req["tokens"], eos=eos)
        print(json.dumps({"tokens": [t for t in tokens if t != eos], "decode_s": decode_s, "steps": len(tokens) - 1}),
              flush=True)


# ---- as a server ---------------------------------------------------------------------


def server_command(python: str, path: str, threads: int, port: int) -> list[str]:
    """llama-cpp-python's OpenAI server (one request at a time, the others queue)."""
    return [python, "-m", "llama_cpp.server", "--model", path, "--n_threads", str(threads), "--n_threads_batch",
            str(threads), "--n_ctx", "2048", "--interrupt_requests", "False", "--host", "127.0.0.1", "--port",
            str(port)]


if __name__ == "__main__":
    {"generate": child_generate, "worker": worker_main}[sys.argv[1]]()
