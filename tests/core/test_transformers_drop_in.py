"""kvgen.LogitsProcessor inside transformers' generate(): with transformers_generate_kwargs the
tokens transformers samples from are exactly the ones kvgen's chain keeps (transformers' own
warpers, its default top_k=50 first, are switched off)."""

import numpy as np
import pytest
import torch
import transformers

import kvgen

VOCAB = 500


@pytest.fixture(scope="module")
def hf_model():
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=VOCAB, bos_token_id=0,
                                     eos_token_id=0, n_positions=64)
    return transformers.GPT2LMHeadModel(config).eval()


def _generate(model, **kwargs):
    prompt = torch.tensor([[5, 6, 7], [8, 9, 10]])
    with torch.inference_mode():
        return prompt, model.generate(prompt, max_new_tokens=4, output_scores=True,
                                      return_dict_in_generate=True, pad_token_id=0, **kwargs)


@pytest.mark.parametrize("fields", [
    {"top_k": 200, "temperature": 0.7},
    {"top_p": 0.99, "repetition_penalty": 1.3},
    {"min_p": 0.001, "top_k": 0},
])
def test_the_kept_set_is_kvgens(hf_model, fields):
    config = kvgen.GenerationConfig(do_sample=True, seed=0, **fields)
    prompt, out = _generate(hf_model, **kvgen.transformers_generate_kwargs(config))
    processor = kvgen.LogitsProcessor(config)
    for t, processed in enumerate(out.scores):
        history = out.sequences[:, :prompt.shape[1] + t]
        with torch.inference_mode():  # the raw logits (kvgen's processor changed out.logits in place)
            ours = hf_model(history).logits[:, -1, :].float().numpy().copy()
        history = history.numpy()
        processor(history, ours)
        theirs = processed.float().numpy()
        np.testing.assert_array_equal(np.isfinite(theirs), np.isfinite(ours), err_msg=f"step {t}")
        np.testing.assert_allclose(theirs[np.isfinite(theirs)], ours[np.isfinite(ours)], rtol=1e-5, atol=1e-5)
    # the surprise this guards against: transformers' top_k=50 after kvgen's chain
    if config.top_k == 0 or config.top_k > 50:
        _, plain = _generate(hf_model, logits_processor=[kvgen.LogitsProcessor(config)], do_sample=True)
        assert max(int(torch.isfinite(s[0]).sum()) for s in plain.scores) <= 50
        assert max(int(np.isfinite(s[0].numpy()).sum()) for s in out.scores) > 50


def test_greedy_configs_ask_transformers_for_greedy():
    kwargs = kvgen.transformers_generate_kwargs(kvgen.GenerationConfig(repetition_penalty=1.2))
    assert kwargs["do_sample"] is False and "top_k" not in kwargs
    assert isinstance(kwargs["logits_processor"][0], kvgen.LogitsProcessor)
    assert kvgen.transformers_generate_kwargs(kvgen.GenerationConfig(do_sample=True, temperature=0.0))["do_sample"] \
        is False
