"""Qwen3.5's multi-token-prediction head (kvgen.generation.mtp) against the head wired from
transformers' pieces (tests/support/mtp_reference.py: transformers loads no mtp.* tensors), from
a directory and from llama.cpp's converter run without --no-mtp; and the head as speculative
decoding's drafter: its drafts are the reference head's through accepted and rejected drafts,
a reused prefix and rows that share a prompt, and the tokens are plain decoding's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from family_models import VOCAB, save_family_model
from llama_cpp_convert import _DRIVER, converter, save_smollm2_tokenizer
from mtp_reference import MtpReference
from test_qwen3_5 import random_qwen3_5

import kvgen
from kvgen import _core
from kvgen.generation import mtp


@pytest.fixture(scope="module")
def hf():
    return random_qwen3_5()


@pytest.fixture(scope="module")
def head(hf):
    return MtpReference(hf)


@pytest.fixture(scope="module")
def directory(hf, head, tmp_path_factory, smollm2_file):
    root = tmp_path_factory.mktemp("qwen3_5_mtp")
    tokenizer = root / "tokenizer"
    save_smollm2_tokenizer(tokenizer, smollm2_file)
    return head.add_to(save_family_model(hf, root / "f32", tokenizer))


@pytest.fixture(scope="module")
def plain(hf, directory):
    """The same model saved without its head."""
    return save_family_model(hf, directory.parent / "plain", directory.parent / "tokenizer")


@pytest.fixture(scope="module")
def model(directory):
    return kvgen.Model.load(directory, exact=True)


def head_logits(model: kvgen.Model, tokens: list[int], states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """kvgen's head over (tokens[i], states[i]) pairs from position 0: (logits, its own states)."""
    n = len(tokens)
    slots = _core._ModelSlots(model.mtp_head._core, 1, 64, verify_positions=n)
    own = np.empty((n, states.shape[1]), np.float32)
    slots.forward([(0, np.asarray(tokens, np.int64))], verify=[0], input_hidden=[(0, np.ascontiguousarray(states))],
                  hidden_and_logits=[(0, own)])
    return slots.verify_logits[0, :n].copy(), own


def test_the_head_gives_the_reference_logits_and_states(head, model):
    tokens = np.random.default_rng(0).integers(0, VOCAB, 20).tolist()
    states = head.target_states(tokens)
    pairs = [(tokens[i + 1], states[i]) for i in range(19)]
    expected, expected_own = head.run(pairs)
    logits, own = head_logits(model, tokens[1:], states[:19].numpy())
    np.testing.assert_allclose(logits, expected.numpy(), atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(own, expected_own.numpy(), atol=1e-4, rtol=1e-4)
    assert repr(model.mtp_head) == "MtpHead(layers=1, hidden_size=64, vocab_size=%d)" % VOCAB


@pytest.fixture
def recorded(monkeypatch):
    """Records what the head drafts (slot tokens, its drafts) and hands the engine other drafts:
    the plain greedy continuation (``truth``, set by the test) for the first ``right`` of them,
    then a wrong token, so that verdicts accept some drafts and reject others."""
    calls: list[tuple[list[int], list[int]]] = []
    state = {"truth": [], "right": [2, 0, 1, 3]}
    propose = mtp.MtpDrafter.propose

    def recording(self, rows):
        drafts = propose(self, rows)
        out = {}
        for slot, d in drafts.items():
            tokens = rows[slot][0]
            calls.append((list(tokens), list(d)))
            if not d:
                out[slot] = d
                continue
            right = state["right"][len(calls) % len(state["right"])]
            true = state["truth"][len(tokens):len(tokens) + len(d)]
            out[slot] = [t if i < right else (t + 1) % VOCAB for i, t in enumerate(true)][:len(d)]
        return out

    monkeypatch.setattr(mtp.MtpDrafter, "propose", recording)
    return calls, state


def check_drafts(head: MtpReference, calls, start: int = 0) -> None:
    assert calls
    for tokens, drafts in calls:
        assert drafts == head.drafts(tokens, len(drafts), start), len(tokens)


def test_drafts_follow_the_reference_head_and_the_tokens_are_plain_greedy(head, model, recorded):
    calls, state = recorded
    prompt = np.random.default_rng(5).integers(3, VOCAB, 21).tolist()
    config = kvgen.GenerationConfig(max_new_tokens=24, eos_token_id=[])
    plain = kvgen.Generator(model, config).generate([prompt]).sequences[0][0].tolist()
    state["truth"] = prompt + plain
    generator = kvgen.Generator(model, config, assistant_model=model.mtp_head)
    assert generator.generate([prompt]).sequences[0][0].tolist() == plain
    stats = generator.last_stats
    assert stats.drafted_tokens > stats.accepted_tokens > 0  # verdicts accepted drafts and rejected some
    check_drafts(head, calls)


def test_rows_that_share_a_prompt_draft_from_its_states(head, model, recorded):
    """Two rows of one prompt (top_k=1 sampling: each row is greedy): the second row's head
    starts from the first's prefill states (the engine's copy_row)."""
    calls, state = recorded
    prompt = np.random.default_rng(6).integers(3, VOCAB, 9).tolist()
    config = kvgen.GenerationConfig(max_new_tokens=12, eos_token_id=[])
    plain = kvgen.Generator(model, config).generate([prompt]).sequences[0][0].tolist()
    state["truth"] = prompt + plain
    out = kvgen.Generator(model, config, assistant_model=model.mtp_head).generate(
        [prompt], do_sample=True, top_k=1, num_return_sequences=2, seed=3)
    assert [row.tolist() for row in out.sequences[0]] == [plain, plain]
    check_drafts(head, calls)


def test_a_reused_prefix_starts_the_head_at_the_first_computed_position(head, model, recorded):
    """An engine with the prefix cache: the second prompt shares 36 tokens with the first and
    resumes from the first's state snapshot at 32; the head starts there."""
    from kvgen.generation.engine import Engine
    from kvgen.generation.request_setup import RequestSetup

    calls, state = recorded
    rng = np.random.default_rng(9)
    first = rng.integers(3, VOCAB, 40).tolist()
    second = first[:36] + rng.integers(3, VOCAB, 6).tolist()
    config = kvgen.GenerationConfig(max_new_tokens=10, eos_token_id=[])
    plain = kvgen.Generator(model, config).generate([second]).sequences[0][0].tolist()
    setup = RequestSetup(config, assistant_model=model.mtp_head)
    with Engine(model, slots=2, prefix_cache=True) as engine:
        state["truth"] = first + kvgen.Generator(model, config).generate([first]).sequences[0][0].tolist()
        engine.submit(first, setup).wait()
        check_drafts(head, calls)
        calls.clear()
        state["truth"] = second + plain
        assert engine.submit(second, setup).wait().sequences[0][0].tolist() == plain
        assert engine.prefix_cache_hits == 32
    check_drafts(head, calls, start=32)


def test_llama_cpps_file_keeps_the_head(head, model, directory):
    """llama.cpp's converter without --no-mtp writes the head as a block after the model's
    (nextn_predict_layers, nextn.eh_proj / enorm / hnorm / shared_head_norm): kvgen reads it
    back to the reference head's logits."""
    out = directory.parent / "mtp.gguf"
    done = subprocess.run([sys.executable, "-c", _DRIVER, str(converter()), str(directory), str(out), "f32"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    gguf = kvgen.Model.load(out, exact=True)
    assert gguf.mtp_head is not None and gguf.config["num_hidden_layers"] == 4
    tokens = np.random.default_rng(1).integers(0, VOCAB, 12).tolist()
    states = head.target_states(tokens)
    expected, _ = head.run([(tokens[i + 1], states[i]) for i in range(11)])
    logits, _ = head_logits(gguf, tokens[1:], states[:11].numpy())
    np.testing.assert_allclose(logits, expected.numpy(), atol=1e-4, rtol=1e-4)


def test_a_head_of_another_model_or_a_malformed_head_is_refused(model, directory, tmp_path):
    other = kvgen.Model.load(directory, exact=True)
    with pytest.raises(ValueError, match="belongs to another model"):
        kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=2), assistant_model=other.mtp_head).generate(
            [[5, 6, 7]])
    path = tmp_path / "gap"
    shutil.copytree(directory, path)
    config = json.loads((path / "config.json").read_text())
    config["mtp_num_hidden_layers"] = 2
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="mtp_num_hidden_layers = 2 but the checkpoint's MTP head has 1 layers"):
        kvgen.Model.load(path)
    from safetensors.numpy import load_file, save_file

    tensors = load_file(path / "model.safetensors")
    del tensors["mtp.fc.weight"]
    save_file(tensors, path / "model.safetensors", metadata={"format": "pt"})
    config["mtp_num_hidden_layers"] = 1
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="mtp.fc.weight"):
        kvgen.Model.load(path)


def test_kvgen_info_names_the_head_and_a_model_without_one_has_none(directory, plain, capsys):
    from kvgen.cli import main

    assert main(["info", str(directory)]) == 0
    assert "a multi-token-prediction head of 1 layer(s)" in capsys.readouterr().out
    assert kvgen.Model.load(plain).mtp_head is None
    assert main(["info", str(plain)]) == 0
    assert "multi-token-prediction" not in capsys.readouterr().out


def test_a_quantized_model_drafts_with_its_head(directory):
    """The default int8 activations on Q8_0 weights: the head computes as its model does, and
    the tokens are plain decoding's."""
    model = kvgen.Model.load(directory, dtype="q8_0")
    prompt = np.random.default_rng(11).integers(3, VOCAB, 30).tolist()
    config = kvgen.GenerationConfig(max_new_tokens=16, eos_token_id=[])
    plain = kvgen.Generator(model, config).generate([prompt]).sequences[0][0].tolist()
    generator = kvgen.Generator(model, config, assistant_model=model.mtp_head)
    assert generator.generate([prompt]).sequences[0][0].tolist() == plain
    assert generator.last_stats.drafted_tokens > 0


def moe_target(family: str):
    """A random Qwen3.5-MoE or Qwen3-Next model (their tests' settings)."""
    import torch
    import transformers
    from hybrid_checks import randomize

    torch.manual_seed(0)
    if family == "qwen3_next":
        from test_qwen3_next import random_qwen3_next

        return random_qwen3_next()
    from test_qwen3_5_moe import TEXT as MOE

    return randomize(transformers.Qwen3_5MoeForCausalLM(transformers.Qwen3_5MoeTextConfig(**MOE)))


@pytest.mark.parametrize("family", ["qwen3_5_moe", "qwen3_next"])
def test_the_mixture_of_experts_heads_layer_has_experts(family, tmp_path, smollm2_file):
    """Qwen3.5-MoE's and Qwen3-Next's heads: the layer routes to experts and a gated shared
    expert as the model's layers do."""
    hf = moe_target(family)
    head = MtpReference(hf)
    assert any(".mlp.experts." in name for name in head.tensors())
    tokenizer = tmp_path / "tokenizer"
    save_smollm2_tokenizer(tokenizer, smollm2_file)
    model = kvgen.Model.load(head.add_to(save_family_model(hf, tmp_path / family, tokenizer)), exact=True)
    assert model.family == family and model.mtp_head is not None
    tokens = np.random.default_rng(2).integers(0, VOCAB, 14).tolist()
    states = head.target_states(tokens)
    expected, _ = head.run([(tokens[i + 1], states[i]) for i in range(13)])
    logits, _ = head_logits(model, tokens[1:], states[:13].numpy())
    np.testing.assert_allclose(logits, expected.numpy(), atol=1e-4, rtol=1e-4)


def test_kvgen_serve_drafts_with_the_head(model, plain):
    """kvgen serve --speculative-mtp: requests draft with the head, the text is the plain
    server's, and the usage reports the drafts; a model without a head is refused by name."""
    from starlette.testclient import TestClient

    from kvgen.server.app import create_app

    def complete(app) -> dict:
        with TestClient(app) as client:
            response = client.post("/v1/completions", json={"prompt": "Once upon a time", "max_tokens": 16,
                                                             "temperature": 0})
            assert response.status_code == 200, response.text
            return response.json()

    undrafted = complete(create_app(model, max_batch=2, allowed_hosts=("*",)))
    drafted = complete(create_app(model, max_batch=2, allowed_hosts=("*",), speculative_mtp=True))
    assert drafted["choices"][0]["text"] == undrafted["choices"][0]["text"]
    assert drafted["usage"]["speculative"]["drafted_tokens"] > 0
    with pytest.raises(ValueError, match="choose one drafter"):
        create_app(model, speculative_mtp=True, speculative_ngram=4)
    headless = kvgen.Model.load(plain)
    with pytest.raises(ValueError, match="--speculative-mtp: the model file has no multi-token-prediction head"):
        create_app(headless, speculative_mtp=True)
