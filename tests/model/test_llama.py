"""The built-in Llama against transformers' LlamaForCausalLM on the same random weights,
loaded from a Hugging Face directory (safetensors) and from GGUF files."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import transformers
from hf_models import assert_cached_decode_matches_hf, assert_generate_equals_hf
from llama_models import hf_from_gguf, random_llama, write_gpt2_gguf, write_llama_gguf

import kvgen
from kvgen.generation.request_setup import set_up_request
from kvgen.loaders.rope import inv_freq, rope_parameters

PAD = 2
SHAPES = {
    # grouped-query attention, separate LM head
    "gqa-untied": dict(vocab_size=211, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                       num_hidden_layers=2, max_position_embeddings=64, rope_theta=10000.0),
    # one KV head, tied head, head_dim that is not hidden / heads, large theta
    "mqa-tied-hd24": dict(vocab_size=97, hidden_size=64, num_attention_heads=4, num_key_value_heads=1, head_dim=24,
                          num_hidden_layers=3, max_position_embeddings=48, rope_theta=500000.0,
                          tie_word_embeddings=True),
    # plain multi-head attention with biases and Llama 3.1 rope scaling
    "mha-bias-llama3": dict(vocab_size=300, hidden_size=32, num_attention_heads=2, num_key_value_heads=2,
                            num_hidden_layers=1, max_position_embeddings=64, attention_bias=True, mlp_bias=True,
                            rope_scaling=dict(rope_type="llama3", factor=4.0, low_freq_factor=1.0,
                                              high_freq_factor=4.0, original_max_position_embeddings=16)),
}


def hf_logits(model, ids):
    with torch.inference_mode():
        return model(torch.as_tensor(ids)).logits.numpy()


@pytest.fixture(scope="module", params=list(SHAPES))
def models(request, tmp_path_factory):
    """(transformers model, kvgen from its safetensors directory, kvgen from its GGUF file)."""
    hf = random_llama(**SHAPES[request.param])
    directory = tmp_path_factory.mktemp("llama")
    hf.save_pretrained(directory)
    # the GGUF file keeps llama3 rope scaling as a rope_freqs tensor, and q/k biases permuted
    loaded = [kvgen.Model.load(directory), kvgen.Model.load(write_llama_gguf(hf, directory / "model.gguf"))]
    return hf, loaded


def test_prefill_logits_match_up_to_the_full_context(models):
    hf, loaded = models
    rng = np.random.default_rng(0)
    for length in (1, 9, hf.config.max_position_embeddings):
        ids = rng.integers(0, hf.config.vocab_size, (2, length))
        ref = hf_logits(hf, ids)
        for kv in loaded:
            np.testing.assert_allclose(kv.forward(ids), ref, atol=1e-4, rtol=1e-4)


def test_cached_decode_logits_match_a_full_recomputation(models):
    hf, loaded = models
    for kv in loaded:
        assert_cached_decode_matches_hf(kv, hf, hf.config.max_position_embeddings, PAD)


@pytest.mark.parametrize(
    "settings",
    [
        dict(do_sample=False),
        dict(do_sample=False, repetition_penalty=1.3, no_repeat_ngram_size=2),
        dict(num_beams=3, num_return_sequences=2),
        dict(num_beams=4, num_return_sequences=4, length_penalty=2.0, early_stopping=True),
    ],
    ids=["greedy", "greedy_penalties", "beam3", "beam4_lp2_early"],
)
def test_generate_equals_hf_generate(models, settings):
    hf, loaded = models
    prompts = [[5, 9, 13, 4, 3], [7, 8], [11, 12, 13]]
    for kv in loaded:
        assert_generate_equals_hf(kv, hf, prompts, PAD, max_new_tokens=12, eos_token_id=[29, 45], **settings)


def test_kv_cache_holds_kv_heads_only(models):
    hf, loaded = models
    c = hf.config
    gen = kvgen.Generator(loaded[0], kvgen.GenerationConfig(max_new_tokens=5, num_beams=2))
    gen.generate([[1, 2, 3]])
    assert gen.kv_cache_bytes == 2 * c.num_hidden_layers * 2 * 8 * c.num_key_value_heads * c.head_dim * 4


@pytest.mark.parametrize("rope", [
    dict(rope_type="default"),
    dict(rope_type="linear", factor=4.0),
    dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
         original_max_position_embeddings=64),
])
def test_rope_frequencies_match_transformers(rope):
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = transformers.LlamaConfig(hidden_size=128, num_attention_heads=2, max_position_embeddings=512,
                                      rope_theta=50000.0, rope_scaling=None if rope["rope_type"] == "default" else rope)
    ref = LlamaRotaryEmbedding(config).inv_freq.numpy()
    # float32 powers round differently in NumPy and in torch's vector kernels (which differ between
    # its AVX2 and AVX-512 builds): both stay within 2 ulps of the float64 value, so 4 ulps apart
    np.testing.assert_allclose(inv_freq(64, rope_parameters(config.to_dict())), ref, rtol=4 * 2.0**-23, atol=0)


def test_unsupported_rope_scaling_is_refused():
    with pytest.raises(ValueError, match="rope scaling type 'proportional' is not supported"):
        inv_freq(64, {"rope_type": "proportional", "factor": 2.0})


# ---- GGUF tensor types ---------------------------------------------------------------

@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return random_llama(**SHAPES["gqa-untied"]), tmp_path_factory.mktemp("gguf")


@pytest.mark.parametrize("qtype", ["F16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"])
def test_quantized_gguf_matches_transformers_loading_the_same_file(small, qtype):
    hf, directory = small
    path = write_llama_gguf(hf, directory / f"{qtype}.gguf", qtype)
    reference = hf_from_gguf(path)  # transformers dequantizes with the same gguf package
    ids = np.random.default_rng(1).integers(0, hf.config.vocab_size, (2, 30))
    ref = hf_logits(reference, ids)
    # exact mode: float activations on the quantized weights, transformers' arithmetic
    np.testing.assert_allclose(kvgen.Model.load(path, exact=True).forward(ids), ref, atol=1e-4, rtol=1e-4)
    assert np.abs(ref - hf_logits(hf, ids)).max() > 1e-3  # the file really is quantized


@pytest.fixture(scope="module")
def k_quant_model():
    # K-quants work on rows of 256 values: a model 256 wide, with random blocks
    return random_llama(vocab_size=64, hidden_size=256, intermediate_size=512, num_attention_heads=4,
                        num_key_value_heads=2, num_hidden_layers=1, max_position_embeddings=32)


@pytest.mark.parametrize("qtype", ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"])
def test_k_quant_gguf_matches_transformers_loading_the_same_file(k_quant_model, tmp_path, qtype):
    path = write_llama_gguf(k_quant_model, tmp_path / f"{qtype}.gguf", qtype)
    ids = np.random.default_rng(4).integers(0, 64, (2, 20))
    ref = hf_logits(hf_from_gguf(path), ids)
    assert np.isfinite(ref).all() and ref.std() > 1e-2  # real values, not NaNs compared with NaNs
    model = kvgen.Model.load(path, exact=True)
    np.testing.assert_allclose(model.forward(ids), ref, atol=1e-4, rtol=1e-4)
    assert f"{qtype} x9" in model.description  # every matrix: embeddings, 7 projections, LM head


def test_bf16_gguf_matches_the_model_with_bf16_weights(small):
    # transformers misreads BF16 GGUF tensors (half their width), so the reference is the
    # same model with its matrices rounded to bfloat16, as the file stores them.
    hf, directory = small
    path = write_llama_gguf(hf, directory / "BF16.gguf", "BF16")
    rounded = copy.deepcopy(hf)
    with torch.no_grad():
        for p in rounded.parameters():
            if p.ndim > 1:
                p.copy_(p.to(torch.bfloat16).float())
    ids = np.random.default_rng(2).integers(0, hf.config.vocab_size, (1, 25))
    np.testing.assert_allclose(kvgen.Model.load(path).forward(ids), hf_logits(rounded, ids), atol=1e-4, rtol=1e-4)


def test_gguf_written_here_is_what_transformers_reads():
    # the test writer follows llama.cpp's converter (q/k permutation): transformers,
    # which undoes that permutation, must read back the original model
    hf = random_llama(**SHAPES["gqa-untied"])
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = write_llama_gguf(hf, Path(d) / "m.gguf")
        ids = np.arange(20)[None] % hf.config.vocab_size
        np.testing.assert_array_equal(hf_logits(hf_from_gguf(path), ids), hf_logits(hf, ids))


def test_linear_rope_scaling_from_gguf_metadata(tmp_path):
    hf = random_llama(**dict(SHAPES["gqa-untied"], rope_scaling=dict(rope_type="linear", factor=2.0)))
    path = write_llama_gguf(hf, tmp_path / "linear.gguf", rope_scaling=dict(type="linear", factor=2.0))
    ids = np.arange(60)[None] % hf.config.vocab_size
    np.testing.assert_allclose(kvgen.Model.load(path).forward(ids), hf_logits(hf, ids), atol=1e-4, rtol=1e-4)


def test_gpt2_gguf_matches_gpt2lmheadmodel(tmp_path):
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=101, n_positions=32, n_embd=32, n_layer=2,
                                                              n_head=4, initializer_range=0.3)).eval()
    kv = kvgen.Model.load(write_gpt2_gguf(hf, tmp_path / "gpt2.gguf"))
    assert kv.architecture == "gpt2"
    ids = np.random.default_rng(3).integers(0, 101, (2, 32))
    np.testing.assert_allclose(kv.forward(ids), hf_logits(hf, ids), atol=1e-4, rtol=1e-4)


def test_directory_with_tokenizer_and_chat_template(tmp_path):
    # a Llama directory as transformers saves it: tokenizer.json + chat template
    from hf_models import TEXT_CORPUS
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(TEXT_CORPUS, trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>", "<|user|>", "<|assistant|>", "<|end|>"]))
    template = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>\n{% endfor %}"
                "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>")
    fast.chat_template = template
    hf = random_llama(vocab_size=tok.get_vocab_size(), eos_token_id=0)
    hf.save_pretrained(tmp_path)
    fast.save_pretrained(tmp_path)
    model = kvgen.Model.load(tmp_path)
    messages = [{"role": "user", "content": "Once upon a time"}, {"role": "assistant", "content": "a robot"},
                {"role": "user", "content": "liked tea"}]
    prompt = model.apply_chat_template(messages)
    assert prompt == fast.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert model.encode(prompt, add_special_tokens=False) == fast(prompt, add_special_tokens=False)["input_ids"]
    assert model.end_of_turn_token_id == tok.token_to_id("<|end|>") and model.eos_token_id == 0
    generator = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=8))
    generator.chat(messages)
    eos = set_up_request(model, generator.config, end_of_turn=True).config.eos_token_id
    assert sorted(eos) == [0, tok.token_to_id("<|end|>")]


@pytest.mark.parametrize("length_penalty", [-10.0, -20.0, -50.0])
def test_beam_search_with_a_very_negative_length_penalty_is_hf_beam_search(length_penalty, tmp_path):
    """Finished scores len ** -lp times the log-probs fall below HF's -1e9 floor of running
    entries: HF then returns running candidates of the first step at score -1e9. Those tie,
    and torch.topk's order among ties is its own, so the tokens are compared as a set: each
    returned token is one of HF's first-step candidates."""
    hf = random_llama(vocab_size=32, hidden_size=16, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2,
                      num_key_value_heads=1, max_position_embeddings=64)
    hf.save_pretrained(tmp_path)
    model = kvgen.Model.load(tmp_path)
    for prompt, beams, returned in (([1, 5, 7], 3, 2), ([2, 9], 4, 4), ([2, 9], 2, 1)):
        settings = dict(num_beams=beams, num_return_sequences=returned, max_new_tokens=6, length_penalty=length_penalty,
                        eos_token_id=3, pad_token_id=0, early_stopping=False)
        with torch.inference_mode():
            out = hf.generate(torch.tensor([prompt]), do_sample=False, output_scores=True,
                              return_dict_in_generate=True, **settings)
            first = torch.log_softmax(hf(torch.tensor([prompt])).logits[0, -1], dim=-1)
        candidates = set(torch.topk(first, 2 * beams).indices.tolist())
        result = kvgen.Generator(model, kvgen.GenerationConfig(**settings)).generate([prompt])
        hf_lengths = [int((s[len(prompt):] != 0).sum()) for s in out.sequences]
        assert [len(s) for s in result.sequences[0]] == hf_lengths
        np.testing.assert_allclose(result.scores[0], out.sequences_scores.numpy(), rtol=1e-5)
        if hf_lengths == [1] * returned and out.sequences_scores.max() == -1e9:  # the first-step entries
            assert all(int(s[0]) in candidates for s in result.sequences[0])
            assert len({int(s[0]) for s in result.sequences[0]}) == returned
        else:
            assert [list(s) for s in result.sequences[0]] == [s[len(prompt):].tolist() for s in out.sequences]
        assert all(reason is not None for reason in result.finish_reasons[0])
