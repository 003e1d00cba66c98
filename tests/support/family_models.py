"""Random-weight models of the families kvgen runs, from transformers' own config classes, small
enough for CI and shaped to exercise what each family changes: grouped-query attention, biases,
q/k norms, a head_dim apart from hidden / heads, multipliers, rotary-free layers, fused matrices,
partial rotary and LongRoPE. The vocabulary is SmolLM2's size, so that llama.cpp's converter
can write SmolLM2's tokenizer beside the weights (tests/support/llama_cpp_convert.py)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import torch
import transformers
from tokenizers import AddedToken

VOCAB = 49152  # SmolLM2's tokenizer
GEMMA_TOKENIZER_SIZE = 497  # save_gemma_tokenizer's on hf_models.TEXT_CORPUS
_BASE = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64, initializer_range=0.3, rms_norm_eps=1e-5,
             pad_token_id=None, bos_token_id=1, eos_token_id=2)

# family -> (config class, model class, settings over _BASE)
FAMILIES = {
    # q/k/v biases, tied head, large theta
    "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM,
              dict(rope_theta=1000000.0, tie_word_embeddings=True)),
    # q/k norms, head_dim 24 (not 64 / 4), separate head
    "qwen3": (transformers.Qwen3Config, transformers.Qwen3ForCausalLM,
              dict(head_dim=24, rope_theta=1000000.0, tie_word_embeddings=False)),
    # Granite 3.x's multipliers, linear rope scaling
    "granite": (transformers.GraniteConfig, transformers.GraniteForCausalLM,
                dict(embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.0078125,
                     logits_scaling=8.0, rope_scaling=dict(rope_type="linear", factor=2.0),
                     tie_word_embeddings=True)),
    # layer 3 without rotary embedding (transformers' default interval 4)
    "smollm3": (transformers.SmolLM3Config, transformers.SmolLM3ForCausalLM,
                dict(num_hidden_layers=4, rope_theta=2000000.0, tie_word_embeddings=True)),
    # softmax top-3 router over 8 experts in every layer, q/k norms (llama.cpp always
    # renormalises the chosen experts' weights: norm_topk_prob)
    "qwen3moe": (transformers.Qwen3MoeConfig, transformers.Qwen3MoeForCausalLM,
                 dict(head_dim=16, moe_intermediate_size=32, num_experts=8, num_experts_per_tok=3,
                      norm_topk_prob=True, rope_theta=1000000.0, tie_word_embeddings=False)),
    # sliding window of 7 on alternate layers, both soft-caps binding, head_dim 24 apart from
    # hidden / heads (llama.cpp's files take the query scale from head_dim: query_pre_attn_scalar 24)
    "gemma2": (transformers.Gemma2Config, transformers.Gemma2ForCausalLM,
               dict(num_hidden_layers=3, head_dim=24, query_pre_attn_scalar=24, sliding_window=7,
                    attn_logit_softcapping=3.0, final_logit_softcapping=4.0, tie_word_embeddings=True)),
    # 5 sliding layers to 1 global (7 layers), q/k norms, linear scaling on the global layers'
    # rotary embedding and a local base of its own
    "gemma3": (transformers.Gemma3TextConfig, transformers.Gemma3ForCausalLM,
               dict(num_hidden_layers=7, head_dim=16, query_pre_attn_scalar=16, sliding_window=7,
                    tie_word_embeddings=True,
                    rope_parameters={"full_attention": dict(rope_type="linear", factor=2.0, rope_theta=1000000.0),
                                     "sliding_attention": dict(rope_type="default", rope_theta=10000.0)})),
    # YaRN, and Llama 4's attention temperature past the original context of 48 positions
    # (kvgen's context ends there: the family checks stay within it)
    "ministral3": (transformers.Ministral3Config, transformers.Ministral3ForCausalLM,
                   dict(head_dim=24, tie_word_embeddings=False, sliding_window=None,
                        rope_parameters=dict(rope_type="yarn", rope_theta=1000000.0, factor=4.0,
                                             original_max_position_embeddings=48, beta_fast=8.0, beta_slow=2.0,
                                             mscale=1.0, mscale_all_dim=1.0, llama_4_scaling_beta=0.1))),
    # GPT-OSS: 4 experts (top 2, width 32: MXFP4's block) in every layer, sliding (window 8) and
    # full layers alternating, YaRN (GPT-OSS's original context of 4096, its ramp not truncated:
    # the ends of the ramp fall between dimensions), biases everywhere; weights
    # at half the others' scale (float32's own rounding, to a float64 run, stays near 1e-5)
    "gpt_oss": (transformers.GptOssConfig, transformers.GptOssForCausalLM,
                dict(initializer_range=0.15, num_hidden_layers=4, head_dim=16, intermediate_size=32,
                     num_local_experts=4, num_experts_per_tok=2, sliding_window=8, tie_word_embeddings=False,
                     rope_parameters=dict(rope_type="yarn", rope_theta=150000.0, factor=4.0, beta_fast=32.0,
                                          beta_slow=1.0, truncate=False, original_max_position_embeddings=4096))),
    # the rotary embedding over adjacent pairs, biases on every projection
    "ernie4_5": (transformers.Ernie4_5Config, transformers.Ernie4_5ForCausalLM,
                 dict(head_dim=24, use_bias=True, rope_theta=500000.0, tie_word_embeddings=True)),
    # ERNIE 4.5 with experts in layers 1 and 2 (start 1, end 2) and dense MLPs in layers 0 and 3:
    # 8 experts, top 2, a selection bias (random, as every bias here), 2 shared experts; llama.cpp's
    # converter would write its shared experts' width as intermediate_size // kv_heads = 48, not
    # 2 x 32
    "ernie4_5_moe": (transformers.Ernie4_5_MoeConfig, transformers.Ernie4_5_MoeForCausalLM,
                     dict(num_hidden_layers=4, head_dim=24, use_bias=True, rope_theta=500000.0,
                          tie_word_embeddings=True, moe_num_experts=8, moe_k=2, moe_intermediate_size=32,
                          moe_num_shared_experts=2, moe_layer_start_index=1, moe_layer_end_index=2,
                          moe_layer_interval=1)),
    # norms after each branch only, q/k norms over the whole projection (grouped-query: k's is
    # narrower), attention biases
    "olmo2": (transformers.Olmo2Config, transformers.Olmo2ForCausalLM,
              dict(attention_bias=True, rope_theta=500000.0, tie_word_embeddings=False)),
    # OLMo 2 with a window of 7 on three layers of four (transformers' default layer_types)
    "olmo3": (transformers.Olmo3Config, transformers.Olmo3ForCausalLM,
              dict(num_hidden_layers=4, sliding_window=7, rope_theta=500000.0, tie_word_embeddings=False)),
    # a window of 7 on three layers of four (sliding_window_pattern 4), the fourth global and
    # without the rotary embedding; norms after each branch, per-head q/k norms, head_dim 24
    "exaone4": (transformers.Exaone4Config, transformers.Exaone4ForCausalLM,
                dict(num_hidden_layers=4, head_dim=24, sliding_window=7, sliding_window_pattern=4,
                     rope_theta=1000000.0, tie_word_embeddings=False)),
    # norms before and after each branch, partial rotary 0.5 over adjacent pairs, q/k/v biases,
    # fused gate/up, head_dim 24 (12 rotary dimensions); 64 ids beyond SmolLM2's for <|user|>
    "glm4": (transformers.Glm4Config, transformers.Glm4ForCausalLM,
             dict(vocab_size=VOCAB + 64, head_dim=24, partial_rotary_factor=0.5, attention_bias=True,
                  rope_theta=10000.0, tie_word_embeddings=False)),
    # Gemma 4: sliding (window 7, head_dim 16, 2 kv heads) and full layers (head_dim 32, 1 kv head,
    # values from the key projection, proportional rotary over a quarter of each head), the last two
    # layers reading the first two's keys and values with MLPs twice as wide, per-layer embeddings of
    # 8 per layer, soft-capped logits; the vocabulary is the Gemma-style tokenizer's that llama.cpp's
    # converter takes (GEMMA_VOCABULARY)
    "gemma4": (transformers.Gemma4TextConfig, transformers.Gemma4ForCausalLM,
               dict(num_hidden_layers=4, head_dim=16, global_head_dim=32, sliding_window=7,
                    layer_types=["sliding_attention", "full_attention"] * 2, num_kv_shared_layers=2,
                    attention_k_eq_v=True, num_global_key_value_heads=1, use_double_wide_mlp=True,
                    hidden_size_per_layer_input=8, final_logit_softcapping=6.0, tie_word_embeddings=True,
                    vocab_size=GEMMA_TOKENIZER_SIZE, vocab_size_per_layer_input=GEMMA_TOKENIZER_SIZE,
                    pad_token_id=0, bos_token_id=2, eos_token_id=1)),
    # fused qkv and gate/up, Phi-4-mini's partial rotary 0.75, LongRoPE past 16 positions
    "phi3": (transformers.Phi3Config, transformers.Phi3ForCausalLM,
             dict(partial_rotary_factor=0.75, original_max_position_embeddings=16, tie_word_embeddings=False,
                  rope_scaling=dict(rope_type="longrope", short_factor=[1.0, 1.2, 1.5, 2.0, 1.1, 3.0],
                                    long_factor=[2.0, 3.0, 1.0, 4.0, 6.0, 8.0]))),
}


#: Families whose llama.cpp converter reads only a SentencePiece vocabulary (tokenizer.model).
SENTENCEPIECE_VOCABULARY = ("ernie4_5", "ernie4_5_moe")
#: Families whose llama.cpp converter reads only a Llama-style BPE tokenizer.json (byte fallback):
#: they get save_gemma_tokenizer's (GEMMA_TOKENIZER_SIZE tokens) instead of SmolLM2's.
GEMMA_VOCABULARY = ("gemma4",)


def save_converter_tokenizer(directory: Path, smollm2_file: Path, family: str) -> Path:
    """The tokenizer files llama.cpp's converter takes for ``family``: SmolLM2's
    (tests/support/llama_cpp_convert.py), and beside it a small SentencePiece tokenizer.model for
    the families of SENTENCEPIECE_VOCABULARY (the directory's tokenizer stays SmolLM2's); for those
    of GEMMA_VOCABULARY, save_gemma_tokenizer's alone."""
    from hf_models import TEXT_CORPUS
    from llama_cpp_convert import save_smollm2_tokenizer

    if family in GEMMA_VOCABULARY:  # the converter takes a Llama-style BPE with byte fallback only
        save_gemma_tokenizer(directory, TEXT_CORPUS)
        return directory
    save_smollm2_tokenizer(directory, smollm2_file)
    if family in SENTENCEPIECE_VOCABULARY:
        save_sentencepiece_model(directory, TEXT_CORPUS)
    if family in GLM_SPECIAL_TOKENS:
        add_special_tokens(directory, GLM_SPECIAL_TOKENS[family])
    return directory


#: Families whose llama.cpp converter looks up special tokens by text in the added vocabulary
#: (GLM-4's: <|endoftext|>, which SmolLM2's has, and <|user|>, added after its 49,152 tokens).
GLM_SPECIAL_TOKENS = {"glm4": ["<|user|>"]}


def add_special_tokens(directory: Path, tokens: list[str]) -> None:
    """``tokens`` added as special tokens to the tokenizer.json in ``directory`` (new ids after
    the vocabulary: the model's vocab_size must hold them)."""
    import tokenizers

    tokenizer = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.add_special_tokens([tokenizers.AddedToken(t, special=True, normalized=False) for t in tokens])
    tokenizer.save(str(directory / "tokenizer.json"))


def random_family_model(family: str, seed: int = 0, **overrides) -> transformers.PreTrainedModel:
    """A model of ``family`` with random weights: norms and biases random too (transformers
    starts them at 1 and 0), so that every one of them shows in the logits. ``overrides`` replace
    config settings (a vocabulary of another size, other special ids)."""
    config_class, model_class, settings = FAMILIES[family]
    torch.manual_seed(seed)
    model = model_class(config_class(**{**_BASE, **settings, **overrides})).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.3 * torch.randn_like(p))
    return model


def vocabulary_gguf(directory: Path, tokenizer, family: str, name: str, outtype: str = "f32", **overrides) -> Path:
    """A tiny random ``family`` model with ``tokenizer``'s vocabulary (its EOS, no BOS) saved in
    ``directory`` beside the tokenizer, converted by llama.cpp's own converter to
    ``directory / name`` (``outtype``); returns that path. For the tests of real vocabularies."""
    from llama_cpp_convert import convert, converter

    model = random_family_model(family, vocab_size=len(tokenizer), bos_token_id=None,
                                eos_token_id=tokenizer.eos_token_id, **overrides)
    model.save_pretrained(directory)
    convert(converter(), [(directory, directory / name, outtype)])
    return directory / name


def save_family_model(model: transformers.PreTrainedModel, directory: Path, tokenizer: Path,
                      dtype: torch.dtype = torch.float32) -> Path:
    """``model`` saved in ``dtype`` with the tokenizer files of the ``tokenizer`` directory."""
    copy.deepcopy(model).to(dtype).save_pretrained(directory)
    for f in tokenizer.iterdir():
        shutil.copy(f, directory / f.name)
    return directory


def reference(model_class: type, directory: Path) -> transformers.PreTrainedModel:
    """transformers' reading of a saved directory, computed in float32 (a 16-bit checkpoint's
    weights upcast; the rotary tables computed afresh, not rounded to 16 bits)."""
    return model_class.from_pretrained(directory, dtype=torch.float32).eval()


# Gemma's chat template (Gemma 2 and Gemma 3 instruction-tuned models ship this one).
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
    "{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}"
    "{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}"
)


def save_sentencepiece_model(directory: Path, corpus: list[str], vocab_size: int = 600) -> None:
    """A Gemma-style SentencePiece BPE (see save_gemma_tokenizer) trained offline on ``corpus``,
    saved as ``directory / "tokenizer.model"``: what llama.cpp's converters that read only a
    SentencePiece vocabulary (Gemma's, ERNIE's) take."""
    import io

    import sentencepiece

    directory.mkdir(parents=True, exist_ok=True)
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=model, model_type="bpe", vocab_size=vocab_size,
        hard_vocab_limit=False, character_coverage=1.0, byte_fallback=True, add_dummy_prefix=False,
        remove_extra_whitespaces=False, normalization_rule_name="identity", split_digits=True,
        allow_whitespace_only_pieces=True, pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>",
        eos_piece="<eos>", bos_piece="<bos>", unk_piece="<unk>",
        user_defined_symbols=["<mask>", "<start_of_turn>", "<end_of_turn>", "\n", "\n\n", "\t",
                              "\u2581\u2581", "\u2581\u2581\u2581", "\u2581\u2581\u2581\u2581"],
        minloglevel=2)
    (directory / "tokenizer.model").write_bytes(model.getvalue())


def save_gemma_tokenizer(directory: Path, corpus: list[str], vocab_size: int = 600):
    """A Gemma-style SentencePiece BPE trained offline with the ``sentencepiece`` package (Gemma's
    trainer settings: byte fallback, no dummy prefix, spaces kept, digits split, whitespace-only
    pieces, ids pad 0 / eos 1 / bos 2 / unk 3, ``<start_of_turn>``/``<end_of_turn>`` and runs of
    spaces and newlines as user-defined pieces), saved in ``directory`` as ``tokenizer.model``
    (what llama.cpp's converter reads) and as transformers' ``GemmaTokenizer`` converted from it
    (``tokenizer.json``, ``tokenizer_config.json`` with Gemma's chat template). Returns that
    ``GemmaTokenizer``, the reference."""
    save_sentencepiece_model(directory, corpus, vocab_size)
    tokenizer = transformers.GemmaTokenizer.from_pretrained(directory, add_bos_token=True)
    # Gemma's turn markers and <mask> are special tokens (skipped when decoding), as in its files
    tokenizer.add_tokens([transformers.AddedToken(t, special=True, normalized=False)
                          for t in ("<mask>", "<start_of_turn>", "<end_of_turn>")], special_tokens=True)
    tokenizer.chat_template = GEMMA_CHAT_TEMPLATE
    tokenizer.save_pretrained(directory)
    # Gemma's tokenizer_config.json lists its added tokens, runs of spaces spelled as real spaces;
    # llama.cpp's converter takes their types (control or user-defined) and that spelling from it
    config_path = directory / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["added_tokens_decoder"] = {
        str(i): {"content": t.content.replace("\u2581", " ") if not t.content.strip("\u2581") else t.content,
                 "lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": t.special}
        for i, t in tokenizer.added_tokens_decoder.items()
    }
    config_path.write_text(json.dumps(config))
    return tokenizer


#: The PyPI package whose wheel ships Qwen's BPE vocabulary (``dashscope/resources/qwen.tiktoken``:
#: the 151,643 byte-level BPE tokens, with their ranks, that Qwen2 and Qwen2.5 use as well).
QWEN_VOCABULARY_PACKAGE = "dashscope==2.0.2"
_QWEN_TIKTOKEN = "dashscope/resources/qwen.tiktoken"


def wheel_files(cache: Path, requirement: str, members: dict[str, str]) -> Path:
    """Files of a PyPI wheel (``pip download --no-deps --only-binary``, once) extracted into the
    directory ``cache``: ``members`` maps a path inside the wheel to its file name there. Returns
    ``cache``, whole or not at all."""
    import os
    import subprocess
    import sys
    import tempfile
    import zipfile

    if all((cache / name).is_file() for name in members.values()):
        return cache
    cache.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache.parent) as tmp:
        fetched = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                                  requirement, "-d", tmp], capture_output=True, text=True)
        if fetched.returncode:
            raise RuntimeError(f"pip download {requirement} failed:\n{fetched.stderr[-2000:]}")
        out = Path(tmp) / "files"
        out.mkdir()
        with zipfile.ZipFile(next(Path(tmp).glob("*.whl"))) as z:
            for member, name in members.items():
                (out / name).write_bytes(z.read(member))
        shutil.rmtree(cache, ignore_errors=True)
        os.replace(out, cache)
    return cache


def qwen_tiktoken(cache: Path) -> Path:
    """Qwen's qwen.tiktoken, from the dashscope wheel (pip download from PyPI, once, into ``cache``)."""
    return wheel_files(cache, QWEN_VOCABULARY_PACKAGE, {_QWEN_TIKTOKEN: "qwen.tiktoken"}) / "qwen.tiktoken"


#: The PyPI package whose wheel ships OpenAI's o200k_base vocabulary (GPT-4o's, and GPT-OSS's
#: before its harmony special tokens): ``bpe_openai/data/o200k_base.tiktoken.gz`` (the 199,998
#: byte-level BPE tokens with their ranks, tiktoken's format) beside ``bpe_openai/registry.py``,
#: whose ``o200k_base()`` names the encoding's split regex and special tokens with their ids.
O200K_PACKAGE = "bpe-openai==0.1.4"
_O200K_FILES = {"bpe_openai/data/o200k_base.tiktoken.gz": "o200k_base.tiktoken.gz",
                "bpe_openai/registry.py": "registry.py"}


def o200k_encoding(cache: Path) -> dict:
    """The bpe-openai wheel's own description of o200k_base: its registry's ``o200k_base()``
    (``mergeable_ranks``, ``pat_str``, ``special_tokens``), the module loaded from the wheel's
    file and pointed at the wheel's data (the package itself, a compiled module, is not imported)."""
    import importlib.util

    files = wheel_files(cache, O200K_PACKAGE, _O200K_FILES)
    spec = importlib.util.spec_from_file_location("bpe_openai_registry", files / "registry.py")
    registry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(registry)
    registry._open_tokenizer_data = lambda stem: open(files / f"{stem}.tiktoken.gz", "rb")
    return registry.o200k_base()


def save_o200k_tokenizer(directory: Path, encoding: dict) -> transformers.PreTrainedTokenizerFast:
    """o200k_base rebuilt as transformers rebuilds a tiktoken vocabulary (``TikTokenConverter``:
    the ranks in GPT-2's byte alphabet, merges from the ranks, the encoding's split regex, merges
    ignored for whole tokens) with the encoding's special tokens at their ids (the ids between
    its last rank and them, unnamed in o200k_base, as ``<|reserved_ID|>``, as GPT-OSS's harmony
    vocabulary reserves them); saved in ``directory`` (tokenizer.json) and returned. llama.cpp's
    converter recognises it by the hash of its output (``tokenizer.ggml.pre = "gpt-4o"``)."""
    from transformers.convert_slow_tokenizer import TikTokenConverter

    class Converter(TikTokenConverter):
        @staticmethod
        def load_tiktoken_bpe(_path):
            return encoding["mergeable_ranks"]

    tokenizer = Converter(pattern=encoding["pat_str"]).converted()
    named = {i: t for t, i in encoding["special_tokens"].items()}
    first = len(encoding["mergeable_ranks"])
    assert tokenizer.get_vocab_size() == first and first <= min(named)
    specials = [named.get(i, f"<|reserved_{i}|>") for i in range(first, max(named) + 1)]
    tokenizer.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in specials])
    hf_tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>")
    hf_tok.save_pretrained(directory)
    return hf_tok


def save_qwen2_tokenizer(directory: Path, tiktoken_file: Path):
    """Qwen2's tokenizer, rebuilt as transformers rebuilds a tiktoken vocabulary
    (``TikTokenConverter``: the vocabulary in GPT-2's byte alphabet, merges from the ranks) and
    handed to transformers' ``Qwen2Tokenizer`` (Qwen2's split regex, NFC, byte-level), with
    Qwen2's special tokens at their ids (<|endoftext|> 151643, <|im_start|> 151644, <|im_end|>
    151645); saved in ``directory`` (tokenizer.json) and returned. llama.cpp's converter
    recognises it as Qwen2's by the hash of its output (``tokenizer.ggml.pre = "qwen2"``)."""
    import base64

    from transformers.convert_slow_tokenizer import TikTokenConverter

    class Converter(TikTokenConverter):
        @staticmethod
        def load_tiktoken_bpe(path):  # tiktoken's format: a base64 token and its rank per line
            ranks = {}
            for line in Path(path).read_bytes().splitlines():
                if line:
                    token, rank = line.split()
                    ranks[base64.b64decode(token)] = int(rank)
            return ranks

    vocab, merges = Converter(str(tiktoken_file)).extract_vocab_merges_from_model(str(tiktoken_file))
    tokenizer = transformers.Qwen2Tokenizer(vocab=vocab, merges=merges)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tokenizer.save_pretrained(directory)
    return tokenizer


#: Mistral's tekken vocabularies ship in the mistral_common wheel (``mistral_common/data/``:
#: tekken_240718.json is Mistral-Nemo's, which llama.cpp's converter names "tekken").
#: transformers' converter (``transformers.integrations.mistral.convert_tekken_tokenizer``)
#: needs mistral_common itself for these files' special tokens, and Mistral's own ``Tekkenizer``
#: is the second reference. mistral_common is not a test extra: it requires numpy<2.4 on Python
#: <= 3.12, which would replace the test environment's numpy. So its wheel and the three it
#: imports that the test extra lacks are installed apart (``pip install --target``, from PyPI, once)
#: and imported only by a subprocess.
TEKKEN_PACKAGES = ("mistral_common==1.13.1", "tiktoken==0.12.0", "pydantic-extra-types==2.11.1",
                   "pycountry==26.2.16")
TEKKEN_FILE = "mistral_common/data/tekken_240718.json"

# Runs with the mistral_common target first on sys.path: argv = target, out directory, texts (JSON).
_TEKKEN_DRIVER = r"""
import json, sys
target, out, texts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path.insert(0, target)
from mistral_common.tokens.tokenizers.tekken import Tekkenizer
from transformers.integrations.mistral.tokenizer import convert_tekken_tokenizer
path = f"{target}/%s"
tokenizer = convert_tekken_tokenizer(path)
tokenizer.add_bos_token = True  # as Mistral-Nemo's tokenizer_config.json says (and Tekkenizer encodes)
tokenizer.save_pretrained(out)
tekken = Tekkenizer.from_file(path)
ids = [tekken.encode(t, bos=True, eos=False) for t in texts]
json.dump({"ids": ids, "texts": [tekken.decode(i) for i in ids]}, open(f"{out}/tekkenizer.json", "w"))
""" % TEKKEN_FILE


def tekken_packages(cache: Path) -> Path:
    """The directory holding mistral_common and the packages it imports beyond the test extra
    (``pip install --no-deps --target``, from PyPI, once into ``cache``)."""
    import os
    import subprocess
    import sys
    import tempfile

    out = cache / "mistral-common-1.13.1"
    if (out / TEKKEN_FILE).is_file():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        fetched = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--only-binary", ":all:",
                                  "--target", tmp, *TEKKEN_PACKAGES], capture_output=True, text=True)
        if fetched.returncode:
            raise RuntimeError(f"pip install --target of {TEKKEN_PACKAGES} failed:\n{fetched.stderr[-2000:]}")
        os.replace(tmp, out)  # whole or not at all
        Path(tmp).mkdir()  # for TemporaryDirectory's clean-up
    return out


def save_tekken_tokenizer(directory: Path, packages: Path, texts: list[str]) -> dict:
    """Mistral-Nemo's tekken vocabulary converted by transformers' own converter
    (``convert_tekken_tokenizer``: byte-level BPE over the tekken ranks, the 1,000 special ids
    first, the tekken split regex), with BOS added as Mistral-Nemo's files say, saved in
    ``directory``. Returns mistral_common's ``Tekkenizer`` on ``texts``: ``{"ids": [...] (with
    BOS), "texts": [...] (their decoding)}``."""
    import os
    import subprocess
    import sys

    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-c", _TEKKEN_DRIVER, str(packages), str(directory), json.dumps(texts)],
                          capture_output=True, text=True, env={**os.environ, "TRANSFORMERS_VERBOSITY": "error"})
    if done.returncode:
        raise RuntimeError(f"converting the tekken vocabulary failed:\n{done.stderr[-4000:]}")
    return json.loads((directory / "tekkenizer.json").read_text())
