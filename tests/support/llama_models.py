"""Random-weight Llama and GPT-2 models for the tests, saved as Hugging Face checkpoints
and written to GGUF files the way llama.cpp's converter writes them (gguf package)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import gguf
import numpy as np
import torch
import transformers


def random_llama(seed: int = 0, **config) -> transformers.LlamaForCausalLM:
    """A LlamaForCausalLM with random weights (initializer_range 0.3 so that logits spread)."""
    torch.manual_seed(seed)
    settings = dict(vocab_size=211, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                    initializer_range=0.3, rms_norm_eps=1e-5)
    settings.update(config)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**settings)).eval()
    with torch.no_grad():  # RMSNorm weights start at 1: make them random too
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
    return model


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's convert_hf_to_gguf permutation of q/k rows (rotary pairs adjacent)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


# K-quant blocks of 256 values: (bytes, byte offsets of their float16 scales d / dmin).
# gguf-py cannot quantize to these types, so their tensors hold random blocks with small
# scales: the reference is transformers reading the same file.
K_QUANT_BLOCKS = {"Q2_K": (84, (80, 82)), "Q3_K": (110, (108,)), "Q4_K": (144, (0, 2)),
                  "Q5_K": (176, (0, 2)), "Q6_K": (210, (208,))}


def random_k_quant(shape: tuple, qtype: str, seed: int) -> np.ndarray:
    """Random blocks of a K-quant type for a (rows, cols) tensor, scales set to 1e-3."""
    size, scale_offsets = K_QUANT_BLOCKS[qtype]
    rows, cols = shape
    blocks = np.random.default_rng(seed).integers(0, 256, (rows, cols // 256, size), dtype=np.uint8)
    for offset in scale_offsets:
        blocks[:, :, offset:offset + 2] = np.frombuffer(np.float16(1e-3).tobytes(), dtype=np.uint8)
    return blocks.reshape(rows, -1)


# The i-quant and ternary types: (weights, bytes) of a block, and the byte offset of its fp16
# scale d (None: IQ1_M, whose d is the top nibbles of its four uint16 scale words at 48).
# gguf-py cannot quantize them either: random blocks (every grid index, sign and sub-block
# scale random) with fp16 scales d of about ``magnitude``, either sign (IQ4_XS: its 6-bit
# sub-block scales random too, so each weight is up to 32 * 127 d).
IQ_BLOCKS = {"IQ4_NL": (32, 18), "IQ4_XS": (256, 136), "IQ3_XXS": (256, 98), "IQ3_S": (256, 110),
             "IQ2_XXS": (256, 66), "IQ2_XS": (256, 74), "IQ2_S": (256, 82), "IQ1_S": (256, 50), "IQ1_M": (256, 56),
             "TQ1_0": (256, 54), "TQ2_0": (256, 66)}
_D_AT = {"TQ1_0": 52, "TQ2_0": 64, "IQ1_M": None}


def random_iq_blocks(shape: tuple, qtype: str, seed: int, magnitude: float) -> np.ndarray:
    """Random blocks of an i-quant or ternary type for a (rows, cols) tensor, one row of blocks
    per row."""
    weights, size = IQ_BLOCKS[qtype]
    rows, cols = shape
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, (rows, cols // weights, size), dtype=np.uint8)
    d = magnitude * rng.uniform(0.5, 1.5, blocks.shape[:2]) * rng.choice([-1, 1], blocks.shape[:2])
    halves = d.astype(np.float16)[..., None].view(np.uint8)
    at = _D_AT.get(qtype, 0)
    if at is not None:
        blocks[:, :, at:at + 2] = halves
    else:  # IQ1_M: nibble i of d in bits 12..15 of word i
        words = blocks[:, :, 48:56].copy().view(np.uint16)
        bits = halves.view(np.uint16)
        for i in range(4):
            words[..., i] = (words[..., i] & 0x0FFF) | (((bits[..., 0] >> (4 * i)) & 0xF) << 12)
        blocks[:, :, 48:56] = words.view(np.uint8)
    return blocks.reshape(rows, -1)


# Scale of the random blocks a model's matrices get: weights of a few hundredths, as the
# K-quants' 1e-3 scales give (the largest |w| is about 50 d for IQ4_NL ... 470 d for IQ3_S).
_IQ_MAGNITUDE = {"IQ4_NL": 3e-4, "IQ4_XS": 2e-5, "IQ3_XXS": 1e-4, "IQ3_S": 1e-4, "IQ2_XXS": 3e-4, "IQ2_XS": 3e-4,
                 "IQ2_S": 3e-4, "IQ1_S": 3e-3, "IQ1_M": 3e-3, "TQ1_0": 0.03, "TQ2_0": 0.03}


def _add(writer: gguf.GGUFWriter, name: str, array: np.ndarray, qtype: str) -> None:
    """Adds a tensor stored as ``qtype`` (F32 for 1-D tensors, as llama.cpp keeps norms;
    random blocks for K-quants and IQ4 types)."""
    array = np.ascontiguousarray(array, dtype=np.float32)
    t = gguf.GGMLQuantizationType[qtype if array.ndim > 1 else "F32"]
    seed = len(name) * 7919 + array.size
    if qtype in K_QUANT_BLOCKS and array.ndim > 1:
        writer.add_tensor(name, random_k_quant(array.shape, qtype, seed), raw_dtype=t)
    elif qtype in IQ_BLOCKS and array.ndim > 1:
        writer.add_tensor(name, random_iq_blocks(array.shape, qtype, seed, _IQ_MAGNITUDE[qtype]), raw_dtype=t)
    elif t == gguf.GGMLQuantizationType.F32:
        writer.add_tensor(name, array)
    else:
        writer.add_tensor(name, gguf.quants.quantize(array, t), raw_dtype=t)  # shape from the byte shape


def _finish(writer: gguf.GGUFWriter) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write_llama_gguf(model: transformers.LlamaForCausalLM, path: Path, qtype: str = "F32",
                     tokenizer_writer=None, rope_scaling: Optional[dict] = None, *, arch: str = "llama",
                     heads: Optional[int] = None, skip: Sequence[str] = (),
                     extra: Optional[dict[str, np.ndarray]] = None,
                     types: Optional[dict[str, str]] = None) -> Path:
    """Writes ``model`` as a llama GGUF file with 2-D tensors stored as ``qtype``, or as
    ``types[suffix]`` for the tensors whose GGUF name ends with that suffix (a mixed file:
    ``{"attn_q.weight": "IQ4_NL", "output.weight": "Q6_K"}``).

    For malformed files: ``arch`` and ``heads`` override the metadata, ``skip`` leaves
    tensors out, ``extra`` adds tensors (a uint8 array is written as raw NVFP4 blocks, a type kvgen does not read)."""
    c = model.config
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    w = gguf.GGUFWriter(str(path), arch)
    skip = set(skip)

    def add(name: str, array: np.ndarray) -> None:
        if name not in skip:
            _add(w, name, array, next((t for suffix, t in (types or {}).items() if name.endswith(suffix)), qtype))

    w.add_name("random llama")
    w.add_vocab_size(c.vocab_size)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(heads or c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_rope_freq_base(float(c.rope_parameters["rope_theta"]))
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_rope_dimension_count(c.head_dim)
    if c.head_dim != c.hidden_size // c.num_attention_heads:
        w.add_key_length(c.head_dim)
        w.add_value_length(c.head_dim)
    if rope_scaling:
        w.add_rope_scaling_type(gguf.RopeScalingType(rope_scaling["type"]))
        w.add_rope_scaling_factor(rope_scaling["factor"])
    if tokenizer_writer is not None:
        tokenizer_writer(w)
    if c.rope_parameters.get("rope_type") == "llama3":
        # as llama.cpp's converter: the scaling as per-frequency divisors of the base inv_freq
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

        scaled = LlamaRotaryEmbedding(c).inv_freq.double().numpy()
        base = 1.0 / (c.rope_parameters["rope_theta"] ** (np.arange(0, c.head_dim, 2) / c.head_dim))
        add("rope_freqs.weight", (base / scaled).astype(np.float32))
    add("token_embd.weight", sd["model.embed_tokens.weight"])
    add("output_norm.weight", sd["model.norm.weight"])
    if not c.tie_word_embeddings:
        add("output.weight", sd["lm_head.weight"])
    names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
             "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for layer in range(c.num_hidden_layers):
        for hf, gg in names.items():
            for kind in ("weight", "bias"):
                t = sd.get(f"model.layers.{layer}.{hf}.{kind}")
                if t is None:
                    continue
                if gg == "attn_q":
                    t = _permute(t, c.num_attention_heads)
                elif gg == "attn_k":
                    t = _permute(t, c.num_key_value_heads)
                add(f"blk.{layer}.{gg}.{kind}", t)
    for name, array in (extra or {}).items():
        if array.dtype == np.uint8:
            w.add_tensor(name, array, raw_dtype=gguf.GGMLQuantizationType.NVFP4)
        else:
            _add(w, name, array, qtype)
    _finish(w)
    return path


def write_gpt2_gguf(model: transformers.GPT2LMHeadModel, path: Path, qtype: str = "F32") -> Path:
    """Writes ``model`` as a gpt2 GGUF file (Conv1D weights transposed to [out, in])."""
    c = model.config
    sd = {k.removeprefix("transformer."): v.detach().float().numpy() for k, v in model.state_dict().items()}
    w = gguf.GGUFWriter(str(path), "gpt2")
    w.add_vocab_size(c.vocab_size)
    w.add_context_length(c.n_positions)
    w.add_embedding_length(c.n_embd)
    w.add_feed_forward_length(c.n_inner or 4 * c.n_embd)
    w.add_block_count(c.n_layer)
    w.add_head_count(c.n_head)
    w.add_layer_norm_eps(c.layer_norm_epsilon)
    _add(w, "token_embd.weight", sd["wte.weight"], qtype)
    _add(w, "position_embd.weight", sd["wpe.weight"], qtype)
    _add(w, "output_norm.weight", sd["ln_f.weight"], qtype)
    _add(w, "output_norm.bias", sd["ln_f.bias"], qtype)
    names = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output", "ln_2": "ffn_norm",
             "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
    for layer in range(c.n_layer):
        for hf, gg in names.items():
            weight = sd[f"h.{layer}.{hf}.weight"]
            _add(w, f"blk.{layer}.{gg}.weight", weight if weight.ndim == 1 else weight.T, qtype)
            _add(w, f"blk.{layer}.{gg}.bias", sd[f"h.{layer}.{hf}.bias"], qtype)
    _finish(w)
    return path


def hf_from_gguf(path: Path) -> torch.nn.Module:
    """transformers' own loading of a GGUF file (dequantized to float32): the reference."""
    return transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                             dtype=torch.float32).eval()
