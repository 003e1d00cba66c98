"""Model.embed against transformers on tiny random models: a Qwen3-Embedding-style directory
(a base Qwen3Model checkpoint with sentence-transformers' modules.json declaring last-token
pooling), the same weights declaring mean pooling, a causal-LM directory that declares none
(last-token pooling by default, any pooling on request), and a GGUF file whose pooling_type
says mean. The reference pools transformers' last_hidden_state (after the final norm) over a
padded batch with its attention mask (tests/support/embedding_models.py)."""

from __future__ import annotations

import json
import shutil

import gguf
import numpy as np
import pytest
import transformers
from embedding_models import TEXTS, random_qwen3, reference_embeddings, save_embedding_directory
from llama_models import random_llama, write_llama_gguf

import kvgen


@pytest.fixture(scope="module")
def qwen3():
    return random_qwen3()


@pytest.fixture(scope="module")
def directories(qwen3, tmp_path_factory, smollm2_file):
    """pooling declared -> directory: "last" and "mean" (sentence-transformers' files), None (a
    Qwen3ForCausalLM directory without them)."""
    root = tmp_path_factory.mktemp("embedding")
    out = {pooling: save_embedding_directory(qwen3, root / str(pooling), smollm2_file, pooling)
           for pooling in ("last", "mean")}
    plain = root / "causal"
    qwen3.save_pretrained(plain)
    save_embedding_directory(qwen3, root / "tokenizer", smollm2_file, None)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (plain / name).write_bytes((root / "tokenizer" / name).read_bytes())
    out[None] = plain
    return out


@pytest.mark.parametrize("declared", ["last", "mean"])
def test_declared_pooling_equals_transformers(qwen3, directories, declared):
    model = kvgen.Model.load(directories[declared])
    assert model.pooling == declared
    tokenizer = transformers.AutoTokenizer.from_pretrained(directories[declared])
    assert [model.encode(t) for t in TEXTS] == tokenizer(TEXTS)["input_ids"]
    assert max(len(model.encode(t)) for t in TEXTS) > 2 * 32  # several prefill chunks
    expected = reference_embeddings(qwen3.model, tokenizer, TEXTS, declared)
    got = model.embed(TEXTS)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), qwen3.config.hidden_size)
    np.testing.assert_allclose(got, expected, atol=2e-6)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    raw = model.embed(TEXTS, normalize=False)
    np.testing.assert_allclose(raw, reference_embeddings(qwen3.model, tokenizer, TEXTS, declared, normalize=False),
                               atol=2e-5, rtol=1e-5)


def test_a_model_that_declares_none_pools_the_last_token_or_what_is_asked(qwen3, directories):
    model = kvgen.Model.load(directories[None])
    assert model.pooling is None
    tokenizer = transformers.AutoTokenizer.from_pretrained(directories[None])
    np.testing.assert_allclose(model.embed(TEXTS), reference_embeddings(qwen3.model, tokenizer, TEXTS, "last"),
                               atol=2e-6)
    for pooling in ("mean", "cls"):
        np.testing.assert_allclose(model.embed(TEXTS, pooling=pooling),
                                   reference_embeddings(qwen3.model, tokenizer, TEXTS, pooling), atol=2e-6)
    # one text, a token-id list, a list of those: the same vectors
    ids = [model.encode(t) for t in TEXTS]
    np.testing.assert_array_equal(model.embed(TEXTS[2]), model.embed([TEXTS[2]]))
    np.testing.assert_allclose(model.embed(ids[2]), model.embed(TEXTS[2]), atol=1e-7)
    np.testing.assert_allclose(model.embed(ids), model.embed(TEXTS), atol=1e-6)


def test_gguf_pooling_type_is_read(tmp_path):
    hf = random_llama(vocab_size=211, max_position_embeddings=128)
    path = write_llama_gguf(hf, tmp_path / "mean.gguf",
                            tokenizer_writer=lambda w: w.add_pooling_type(gguf.PoolingType.MEAN))
    model = kvgen.Model.load(path)
    assert model.pooling == "mean"
    rng = np.random.default_rng(0)
    texts = [rng.integers(0, 211, n).tolist() for n in (5, 40, 77)]
    np.testing.assert_allclose(model.embed(texts), reference_embeddings(hf.model, None, texts, "mean"), atol=2e-6)
    plain = kvgen.Model.load(write_llama_gguf(hf, tmp_path / "plain.gguf"))
    assert plain.pooling is None
    np.testing.assert_allclose(plain.embed(texts), reference_embeddings(hf.model, None, texts, "last"), atol=2e-6)


def test_long_rope_texts_past_the_switch_equal_transformers_in_model_embed_and_the_engine(directories, tmp_path):
    """Phi-3's LongRoPE (switch at 16 positions): a text longer than that is computed with the long
    factors from its first position, by Model.embed and by the engine's embedding requests."""
    from family_models import random_family_model

    from kvgen._embedding import normalized
    from kvgen.generation.engine import Engine

    hf = random_family_model("phi3")
    hf.save_pretrained(tmp_path / "phi3")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(directories[None] / name, tmp_path / "phi3" / name)
    model = kvgen.Model.load(tmp_path / "phi3")
    assert model.capabilities.recompute_past == 16
    rng = np.random.default_rng(0)
    texts = [rng.integers(0, 49152, n).tolist() for n in (9, 40, 16, 61)]
    for pooling in ("last", "mean"):
        expected = np.concatenate([reference_embeddings(hf.model, None, [t], pooling) for t in texts])
        np.testing.assert_allclose(model.embed(texts, pooling=pooling), expected, atol=2e-6, err_msg=pooling)
        with Engine(model, slots=2) as engine:
            requests = [engine.submit_embedding(t, pooling) for t in texts]
            got = normalized(np.concatenate([r.wait_embeddings(60) for r in requests]))
        np.testing.assert_allclose(got, expected, atol=2e-6, err_msg=pooling)


def _pooling_files(directory, modules=None, pooling=None):
    if modules is not None:
        (directory / "modules.json").write_text(json.dumps(modules))
    if pooling is not None:
        (directory / "1_Pooling").mkdir(exist_ok=True)
        (directory / "1_Pooling" / "config.json").write_text(json.dumps(pooling))


TRANSFORMER = {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}
POOLING = {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}


@pytest.mark.parametrize("modules, pooling, message", [
    ([TRANSFORMER, POOLING, {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}],
     {"pooling_mode_lasttoken": True}, "Dense"),
    ([TRANSFORMER, POOLING], {"pooling_mode_lasttoken": True, "pooling_mode_mean_tokens": True}, "exactly one"),
    ([TRANSFORMER, POOLING], {"pooling_mode_lasttoken": False}, "exactly one"),
    ([TRANSFORMER, {**POOLING, "path": "../elsewhere"}], {"pooling_mode_lasttoken": True}, "not a folder"),
    ({"modules": []}, None, "list of module"),
])
def test_malformed_sentence_transformers_files_are_refused_naming_them(directories, tmp_path, modules, pooling,
                                                                      message):
    directory = shutil.copytree(directories[None], tmp_path / "model")
    _pooling_files(directory, modules, pooling)
    with pytest.raises(ValueError, match=message):
        kvgen.Model.load(directory)


def test_a_pooling_kvgen_does_not_compute_loads_but_is_refused_by_embed(directories, tmp_path):
    directory = shutil.copytree(directories[None], tmp_path / "model")
    _pooling_files(directory, [TRANSFORMER, POOLING], {"pooling_mode": "max"})
    model = kvgen.Model.load(directory)
    assert model.pooling == "max"
    with pytest.raises(ValueError, match="declares 'max' pooling"):
        model.embed("hi")
    assert model.embed("hi", pooling="mean").shape == (1, 64)


def test_bad_inputs_are_value_errors_naming_them(directories):
    model = kvgen.Model.load(directories[None])
    with pytest.raises(ValueError, match="pooling='max'"):
        model.embed("hi", pooling="max")
    with pytest.raises(ValueError, match="non-empty list"):
        model.embed([])
    with pytest.raises(ValueError, match=r"texts\[1\] encodes to no tokens"):
        model.embed(["hi", ""])
    with pytest.raises(ValueError, match=r"texts\[0\]: token id 49152 is outside"):
        model.embed([[1, 49152]])
    with pytest.raises(ValueError, match="more than the model's 256 positions"):
        model.embed([[5] * 257])
    with pytest.raises(TypeError, match="normalize"):
        model.embed("hi", normalize=1)
