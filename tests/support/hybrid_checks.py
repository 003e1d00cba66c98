"""What the tests of the hybrid families share: for the Gated-DeltaNet ones (Qwen3.5, Qwen3.5-MoE,
Qwen3-Next) random models whose every parameter shows in the logits and their published
vision-language layout; for every hybrid (LFM2 and Granite 4 too), and for the families whose
layers keep unlike caches (GPT-OSS's sinks, Gemma 4's shared KV), the checks of what the layers
keep through the engine's features, each against transformers or a fresh run."""

from __future__ import annotations

import numpy as np
import torch
import transformers
from family_check import PAD, logits
from hf_models import assert_generate_equals_hf

import kvgen

#: a vision tower for the Qwen3.5 ConditionalGeneration checkpoints (its weights are never read)
VISION = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, patch_size=4,
              temporal_patch_size=2, spatial_merge_size=2, num_position_embeddings=16)


def randomize(model: transformers.PreTrainedModel) -> transformers.PreTrainedModel:
    """``model`` in eval mode with random norms (the DeltaNet's gated one around 1, the (1 + w)
    ones around 0), decays and time-step biases (transformers starts them fixed), so that each
    shows in the logits."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(0.3 * torch.randn_like(p) + (1.0 if "linear_attn" in name else 0.0))
            elif name.endswith(("dt_bias", "A_log")):
                p.copy_(0.5 * torch.randn_like(p))
    return model.eval()


def conditional_generation(text_model: transformers.PreTrainedModel, config_class: type,
                           model_class: type) -> transformers.PreTrainedModel:
    """The published layout of ``text_model``: a ``...ForConditionalGeneration`` with its weights
    (under model.language_model.) beside a random vision tower."""
    text = {k: v for k, v in text_model.config.to_dict().items() if k not in ("architectures", "transformers_version")}
    whole = model_class(config_class(text_config=text, vision_config=VISION,
                                     tie_word_embeddings=text_model.config.tie_word_embeddings)).eval()
    state = {("model.language_model." + k[len("model."):] if k.startswith("model.") else k): v
             for k, v in text_model.state_dict().items()}
    missing, unexpected = whole.load_state_dict(state, strict=False)
    assert not unexpected and all(k.startswith("model.visual.") for k in missing)
    return whole


def check_positions(model: kvgen.Model, reference: transformers.PreTrainedModel, lengths=(1, 11, 70),
                    what: str = "") -> None:
    """kvgen's logits equal transformers' at every position of two rows (70 positions: the
    chunked delta rule's second chunk)."""
    rng = np.random.default_rng(1)
    for length in lengths:
        ids = rng.integers(0, reference.config.get_text_config().vocab_size, (2, length))
        np.testing.assert_allclose(model.forward(ids), logits(reference, ids), atol=2e-4, rtol=1e-4,
                                   err_msg=f"{what}, {length} positions")


def check_beams(model: kvgen.Model, reference: transformers.PreTrainedModel) -> None:
    """4-beam search equals transformers' beams: each beam takes its parent's state."""
    assert_generate_equals_hf(model, reference, [[5, 9, 13, 4, 3], [7, 8, 11]], PAD, max_new_tokens=8, num_beams=4,
                              do_sample=False, early_stopping=True)


def check_beams_return_two(model: kvgen.Model, reference: transformers.PreTrainedModel) -> None:
    """4-beam search returning its 2 best sequences equals transformers'."""
    assert_generate_equals_hf(model, reference, [[5, 9, 13, 4, 3, 8, 21]], PAD, max_new_tokens=6, num_beams=4,
                              num_return_sequences=2, do_sample=False)


def check_prompt_over_chunks(model: kvgen.Model, reference: transformers.PreTrainedModel, vocab: int) -> None:
    """A prompt of two prefill chunks and a part (the state carried across pieces) equals transformers' greedy run."""
    from kvgen.generation.pass_plan import PREFILL_CHUNK

    prompt = np.random.default_rng(3).integers(3, vocab, 2 * PREFILL_CHUNK + 7).tolist()
    assert_generate_equals_hf(model, reference, [prompt], PAD, max_new_tokens=6, do_sample=False)


def check_rows_share_the_prompts_state(model: kvgen.Model) -> None:
    """n = 3 draws per prompt give the tokens of three separate requests with the same keys
    (row k of prompt 0 draws with key k): each row starts from a copy of the prompt's state."""
    prompt = [5, 9, 13, 4, 3, 17, 21]
    settings = dict(do_sample=True, seed=5, top_k=0, temperature=1.5, max_new_tokens=10, eos_token_id=[])
    config = kvgen.GenerationConfig(**settings)
    together = kvgen.Generator(model, kvgen.GenerationConfig(**settings, num_return_sequences=3)).generate([prompt])
    rows = [s.tolist() for s in together.sequences[0]]
    apart = [kvgen.Generator(model, config).generate([prompt], sequence_ids=[k]).sequences[0][0].tolist()
             for k in range(3)]
    assert rows == apart
    assert len({tuple(r) for r in rows}) > 1


def check_prefix_cache_equals_fresh_run(model: kvgen.Model, first: list[int], second: list[int]) -> None:
    """``second`` (sharing a prefix with ``first``) in a generator that ran ``first`` with the
    prefix cache: the tokens and log-probs of a fresh run."""
    config = kvgen.GenerationConfig(max_new_tokens=8, eos_token_id=[])
    cached = kvgen.Generator(model, config, prefix_cache=True)
    cached.generate([first])
    again = cached.generate([second])
    fresh = kvgen.Generator(model, config, prefix_cache=False).generate([second])
    assert again.sequences[0][0].tolist() == fresh.sequences[0][0].tolist()
    np.testing.assert_array_equal(again.token_logprobs[0][0], fresh.token_logprobs[0][0])


def check_prompt_lookup_equals_plain(model: kvgen.Model, prompt: list[int]) -> None:
    """Prompt-lookup drafts from a repetitive ``prompt``: the verified tokens are the plain run's."""
    repetitive = (prompt[:6] * 5)[:28]
    config = kvgen.GenerationConfig(max_new_tokens=8, eos_token_id=[])
    plain = kvgen.Generator(model, config).generate([repetitive]).sequences[0][0].tolist()
    spec = kvgen.GenerationConfig(max_new_tokens=8, eos_token_id=[], prompt_lookup_num_tokens=4)
    assert kvgen.Generator(model, spec).generate([repetitive]).sequences[0][0].tolist() == plain


def check_prefix_cache_resumes_from_snapshots(model: kvgen.Model, vocab: int) -> None:
    """With the prefix cache, a prompt sharing a cached prompt's whole chunks gives a fresh run's
    tokens: a later prompt sharing 61 positions, before the first's one snapshot (at its last
    whole chunk, 64), reuses nothing; the first prompt again resumes at 64."""
    from kvgen.generation.engine import Engine
    from kvgen.generation.pass_plan import PREFILL_CHUNK

    rng = np.random.default_rng(4)
    first = rng.integers(3, vocab, 2 * PREFILL_CHUNK + 5).tolist()
    # shares the first's whole chunks; its last chunk boundary falls inside its own suffix
    later = first[: 2 * PREFILL_CHUNK - 3] + rng.integers(3, vocab, PREFILL_CHUNK + 9).tolist()
    config = kvgen.GenerationConfig(max_new_tokens=6, pad_token_id=PAD)
    runs = {}
    for cached in (False, True):
        with Engine(model, slots=2, prefix_cache=cached) as engine:
            runs[cached] = [[s.tolist() for per in engine.submit(p, config).wait().sequences for s in per]
                            for p in (first, later, first)]
            hits = engine.prefix_cache_hits
    assert runs[True] == runs[False]
    assert hits == 2 * PREFILL_CHUNK


def check_batch_of_configs_equals_one_by_one(model: kvgen.Model) -> None:
    """generate_batch over prompts of different lengths, each with its own config, two slots at
    a time: each prompt's tokens are its own generate call's (each slot keeps its own state)."""
    def sequences(result) -> list[list[int]]:
        return [s.tolist() for per in result.sequences for s in per]

    generator = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=8, pad_token_id=PAD))
    prompts = [[5, 9, 13, 4, 3, 8, 21, 30, 2], [7, 8], [40, 41, 42, 43, 44]]
    configs = [kvgen.GenerationConfig(max_new_tokens=6 + i, pad_token_id=PAD) for i in range(3)]
    batch = generator.generate_batch(prompts, configs, max_batch=2)
    for prompt, config, result in zip(prompts, configs, batch):
        assert sequences(result) == sequences(generator.generate([prompt], **config.to_dict()))


def check_batch_equals_one_by_one(model: kvgen.Model, vocab: int) -> None:
    """Each prompt of a batch of different lengths gets the tokens and log-probabilities of its
    own generate call, bit for bit (a 70-token prompt is fed in one pass alone, a chunk per pass
    in the batch). ``model``: quantized (float32 weights go through BLAS, whose rows depend on
    the rows beside them in the last bits; see ``quantized_with_routers``)."""
    rng = np.random.default_rng(3)
    prompts = [rng.integers(0, vocab, n).tolist() for n in (3, 70, 12, 1)]
    config = kvgen.GenerationConfig(max_new_tokens=6, eos_token_id=[])
    batch = kvgen.Generator(model, config).generate_batch(prompts, max_batch=3)
    for prompt, result in zip(prompts, batch):
        alone = kvgen.Generator(model, config, prefix_cache=False).generate([prompt])
        assert result.sequences[0][0].tolist() == alone.sequences[0][0].tolist()
        np.testing.assert_array_equal(result.token_logprobs[0][0], alone.token_logprobs[0][0])


def quantized_with_routers(path, monkeypatch) -> kvgen.Model:
    """The directory ``path`` loaded with dtype="q8_0", its routers and shared-expert gates
    quantized too: Model.load keeps them float32 (as llama.cpp does), products whose rows BLAS
    computes depending on the rows beside them, so that a batch's log-probabilities would
    differ from one by one's in the last bits."""
    from kvgen.loaders import quantize

    monkeypatch.setattr(quantize, "_LLAMA_MATRICES",
                        quantize._LLAMA_MATRICES + ("mlp.gate.weight", "mlp.shared_expert_gate.weight"))
    return kvgen.Model.load(path, dtype="q8_0")
