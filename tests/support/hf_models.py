"""Small random GPT-2 models built offline, and a step-by-step driver of their HF forward
pass with ``past_key_values``, to feed a kvgen Generator real logits."""

from __future__ import annotations

import functools

import numpy as np
import torch
import transformers


@functools.lru_cache(maxsize=None)
def random_gpt2(vocab_size: int = 211, n_embd: int = 32, n_layer: int = 2, n_head: int = 4, seed: int = 0):
    """A GPT-2 with random weights, large enough (initializer_range 0.3) that its logits are peaked."""
    torch.manual_seed(seed)
    config = transformers.GPT2Config(
        vocab_size=vocab_size, n_positions=128, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
        initializer_range=0.3, bos_token_id=0, eos_token_id=1,
    )
    return transformers.GPT2LMHeadModel(config).eval()


def left_pad(prompts: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids and attention_mask for a batch of prompts, left-padded as HF expects."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):] = torch.tensor(p)
        mask[i, width - len(p):] = 1
    return ids, mask


class HFStepper:
    """kvgen's model_fn protocol over an HF causal LM: prefill with left padding, then one
    token per row per step with the model's own KV cache, reordered by beam_indices."""

    def __init__(self, model, pad: int = 0):
        self.model, self.pad = model, pad
        self.past = self.mask = self.positions = None
        self.calls = 0

    @torch.inference_mode()
    def __call__(self, inputs: list[np.ndarray], beam_indices: np.ndarray | None) -> np.ndarray:
        self.calls += 1
        if self.past is None:
            ids, self.mask = left_pad([list(map(int, x)) for x in inputs], self.pad)
            positions = (self.mask.cumsum(-1) - 1).clamp(min=0)
        else:
            if beam_indices is not None:
                order = torch.as_tensor(beam_indices)
                self.past.reorder_cache(order)
                self.mask, self.positions = self.mask[order], self.positions[order]
            ids = torch.tensor(np.stack(inputs))
            self.mask = torch.cat([self.mask, torch.ones((len(inputs), 1), dtype=torch.long)], dim=1)
            positions = self.positions[:, -1:] + 1
        out = self.model(input_ids=ids, attention_mask=self.mask, position_ids=positions, past_key_values=self.past,
                         use_cache=True)
        self.past, self.positions = out.past_key_values, positions
        return out.logits[:, -1, :].float().contiguous().numpy()


def hf_generate(model, prompts: list[list[int]], pad: int, **settings):
    """model.generate on left-padded prompts; returns (generated part per row, outputs)."""
    ids, mask = left_pad(prompts, pad)
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=mask, pad_token_id=pad, return_dict_in_generate=True,
                             output_scores=True, **settings)
    return out.sequences[:, ids.shape[1]:], out


def assert_generate_equals_hf(kv_model, hf_model, prompts: list[list[int]], pad: int, **settings) -> None:
    """kvgen's generate() on a built-in model (or on each of a list of them: transformers
    generates once) gives transformers' sequences (and beam scores within 1e-4) for the same
    prompts and settings."""
    import kvgen

    hf_gen, hf_out = hf_generate(hf_model, prompts, pad, **settings)
    per = settings.get("num_return_sequences", 1)
    eos = settings.get("eos_token_id")
    eos = [eos] if isinstance(eos, int) else eos
    # transformers' beam search fills a finished row with `pad_token_id or eos_token_id[0]`: EOS for a pad of 0
    fill = eos[0] if settings.get("num_beams", 1) > 1 and not pad and eos else pad
    for model in kv_model if isinstance(kv_model, (list, tuple)) else [kv_model]:
        result = kvgen.Generator(model, kvgen.GenerationConfig(pad_token_id=pad, **settings)).generate(prompts)
        for i, seqs in enumerate(result.sequences):
            for k, seq in enumerate(seqs):
                hf_seq = hf_gen[i * per + k].tolist()
                assert hf_seq[: len(seq)] == seq.tolist()
                assert all(t == fill for t in hf_seq[len(seq):])
        if settings.get("num_beams", 1) > 1:
            np.testing.assert_allclose(np.array(result.scores).ravel(), hf_out.sequences_scores.numpy(), atol=1e-4)


def assert_cached_decode_matches_hf(kv_model, hf_model, context: int, pad: int) -> None:
    """Every cached decode step of kvgen (two prompts of different lengths, no padding, up
    to the full context) gives the logits of a full transformers recomputation."""
    import kvgen
    from kvgen.generation.engine import one_request
    from kvgen.generation.request_setup import RequestSetup

    config = kvgen.GenerationConfig(max_new_tokens=context - 6, pad_token_id=pad)
    engine, request = one_request(kv_model, [[5, 9, 13, 4, 3, 6], [7, 8]], RequestSetup(config))
    while request.next_tokens is None:  # prefill and the first step
        engine.step()
    session = request.selector
    steps = 0
    while True:
        # greedy with no processors: the processed logits are the raw logits of the last step
        for r, seq in enumerate(session.sequences):
            with torch.inference_mode():
                full = hf_model(torch.as_tensor(seq[None, :-1])).logits[0, -1].numpy()
            np.testing.assert_allclose(session.last_logits[r], full, atol=1e-4, rtol=1e-4)
        if request.done():
            break
        engine.step()
        steps += 1
    assert steps == context - 7  # the longest prompt reaches the full context


TEXT_CORPUS = [
    "Once upon a time there was a small robot.",
    "The robot liked tea, café au lait and crème brûlée.",
    "Über allen Gipfeln ist Ruh. 你好，世界！ Γειά σου κόσμε.",
] * 20


def save_text_gpt2(directory, vocab_size: int = 300, seed: int = 0):
    """A random GPT-2 with a byte-level BPE tokenizer trained offline on TEXT_CORPUS,
    saved as a Hugging Face directory; returns (hf_model, tokenizer)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"])
    tokenizer.train_from_iterator(TEXT_CORPUS, trainer)
    torch.manual_seed(seed)
    config = transformers.GPT2Config(vocab_size=tokenizer.get_vocab_size(), n_positions=128, n_embd=32, n_layer=2,
                                     n_head=4, initializer_range=0.3)
    hf = transformers.GPT2LMHeadModel(config).eval()
    hf.save_pretrained(directory)
    tokenizer.save(str(directory / "tokenizer.json"))
    return hf, tokenizer
