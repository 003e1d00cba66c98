"""GenerationConfig: HF names and defaults, validation messages, conversions."""

from __future__ import annotations

import copy
import json
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
import transformers
from hf_reference import hf_generation_config

import kvgen


def test_defaults_are_hf_generate_defaults():
    config = kvgen.GenerationConfig()
    hf = hf_generation_config()
    for name in ["min_length", "do_sample", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty",
                 "no_repeat_ngram_size", "num_beams", "length_penalty", "early_stopping", "num_return_sequences",
                 "epsilon_cutoff", "eta_cutoff", "remove_invalid_values", "bad_words_ids", "suppress_tokens",
                 "forced_bos_token_id", "forced_eos_token_id", "min_p", "max_new_tokens", "eos_token_id"]:
        assert getattr(config, name) == getattr(hf, name), name
    assert config.max_length is None  # HF: unset max_length means 20 new tokens


def test_every_supported_hf_field_exists():
    hf_names = set(transformers.GenerationConfig().to_dict())
    kvgen_only = {"presence_penalty", "frequency_penalty", "logit_bias", "seed", "stop_sequences", "top_logprobs",
                  "json_schema", "regex", "grammar", "choices"}
    llama_cpp = {"dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers",
                 "xtc_probability", "xtc_threshold", "top_n_sigma", "mirostat", "mirostat_tau", "mirostat_eta"}
    kvgen_only |= llama_cpp
    for name in kvgen.GenerationConfig.fields():
        assert name in hf_names or name in kvgen_only, name


def test_schema_matches_the_runtime_fields():
    """_schema() (generation_config_fields.def) gives the defaults, docstrings and None-ability the fields have."""
    config = kvgen.GenerationConfig()
    schema = kvgen.GenerationConfig._schema()
    assert [row[0] for row in schema] == kvgen.GenerationConfig.fields() == list(config.to_dict())
    for name, annotation, nullable, default, doc in schema:
        assert getattr(config, name) == default, name
        assert getattr(kvgen.GenerationConfig, name).__doc__ == doc, name
        assert nullable == annotation.endswith("| None"), name
        if nullable:
            assert getattr(kvgen.GenerationConfig(**{name: None}), name) is None, name


def test_the_sampling_guide_names_every_field():
    page = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "sampling.md").read_text()
    missing = [name for name in kvgen.GenerationConfig.fields() if f"`{name}`" not in page]
    assert not missing, f"docs/guide/sampling.md does not name {missing}"


def test_fields_round_trip_and_hf_shapes():
    config = kvgen.GenerationConfig(
        max_new_tokens=5, eos_token_id=[1, 2], bad_words_ids=[[3], [4, 5]], sequence_bias={(1, 2): -1.0},
        logit_bias={7: 2.0}, early_stopping="never", seed=9, do_sample=True, min_p=0.1, pad_token_id=0,
    )
    assert config.eos_token_id == [1, 2]
    assert kvgen.GenerationConfig(eos_token_id=4).eos_token_id == 4
    assert config.sequence_bias == {(1, 2): -1.0}
    assert config.early_stopping == "never"
    assert kvgen.GenerationConfig.from_dict(config.to_dict()) == config
    assert pickle.loads(pickle.dumps(config)) == config
    assert copy.deepcopy(config) == config
    assert kvgen.GenerationConfig(sequence_bias=[[[1, 2], -1.0]]).sequence_bias == {(1, 2): -1.0}


def test_repr_shows_non_default_fields_only():
    assert repr(kvgen.GenerationConfig()) == "GenerationConfig()"
    assert (repr(kvgen.GenerationConfig(top_k=40, temperature=0.8, do_sample=True))
            == "GenerationConfig(do_sample=True, temperature=0.8, top_k=40)")


@pytest.mark.parametrize(
    "field, value",
    [
        ("top_p", 0.0), ("top_p", 1.5), ("top_k", -1), ("temperature", -0.1), ("temperature", float("nan")),
        ("min_p", 1.5), ("typical_p", 0.0), ("epsilon_cutoff", 1.0), ("eta_cutoff", -0.1),
        ("repetition_penalty", 0.0), ("presence_penalty", 3.0), ("frequency_penalty", -2.5), ("num_beams", 0),
        ("max_new_tokens", 0), ("max_length", 0), ("min_length", -1), ("min_new_tokens", -2),
        ("no_repeat_ngram_size", -1), ("eos_token_id", -1), ("pad_token_id", -3), ("suppress_tokens", [1, -1]),
        ("early_stopping", "sometimes"), ("seed", -1), ("bad_words_ids", [[]]), ("length_penalty", float("inf")),
        ("num_return_sequences", 0),
    ],
)
def test_out_of_range_raises_value_error_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        kvgen.GenerationConfig(**{field: value})


def test_num_return_sequences_bounded_by_beams():
    with pytest.raises(ValueError, match="num_return_sequences.*num_beams"):
        kvgen.GenerationConfig(num_beams=2, num_return_sequences=3)
    with pytest.raises(ValueError, match="num_return_sequences"):
        kvgen.GenerationConfig(num_return_sequences=2)  # greedy returns one sequence per beam
    assert kvgen.GenerationConfig(num_return_sequences=4, do_sample=True).num_return_sequences == 4


def test_unknown_field_and_wrong_type_raise_type_error():
    with pytest.raises(TypeError, match="tempreature"):
        kvgen.GenerationConfig(tempreature=0.5)
    with pytest.raises(TypeError, match="top_k"):
        kvgen.GenerationConfig(top_k="forty")
    with pytest.raises(TypeError, match="eos_token_id"):
        kvgen.GenerationConfig(eos_token_id=[1.5])
    with pytest.raises(TypeError, match="unknown"):
        kvgen.GenerationConfig.from_dict({"top_k": 3, "beam_groups": 2})


def test_temperature_zero_means_greedy():
    import numpy as np

    logits = np.random.default_rng(0).standard_normal((16, 300)).astype(np.float32)
    tokens = kvgen.sample(logits, kvgen.GenerationConfig(do_sample=True, temperature=0.0, seed=1))
    np.testing.assert_array_equal(tokens, logits.argmax(-1))


def test_from_hf_object_dict_and_file(tmp_path):
    hf = transformers.GenerationConfig(do_sample=True, top_k=7, top_p=0.8, eos_token_id=[2, 3], max_new_tokens=9)
    expected = kvgen.GenerationConfig(do_sample=True, top_k=7, top_p=0.8, eos_token_id=[2, 3], max_new_tokens=9)
    assert kvgen.GenerationConfig.from_hf(hf) == expected
    assert kvgen.GenerationConfig.from_hf(hf.to_dict()) == expected
    hf.save_pretrained(tmp_path)
    assert kvgen.GenerationConfig.from_hf(tmp_path) == expected
    assert kvgen.GenerationConfig.from_hf(tmp_path / "generation_config.json") == expected


def test_from_hf_reports_unsupported_fields(tmp_path):
    values = {"do_sample": True, "top_k": 5, "diversity_penalty": 0.5, "num_beam_groups": 2, "use_cache": True,
              "output_scores": False}
    with pytest.warns(UserWarning, match="diversity_penalty=0.5.*num_beam_groups=2"):
        config = kvgen.GenerationConfig.from_hf(values)
    assert config.top_k == 5
    with pytest.raises(ValueError, match="diversity_penalty"):
        kvgen.GenerationConfig.from_hf(values, strict=True)
    path = tmp_path / "generation_config.json"
    path.write_text(json.dumps({"do_sample": True, "temperature": 0.6, "guidance_scale": 3.0}))
    with pytest.warns(UserWarning, match="guidance_scale"):
        assert kvgen.GenerationConfig.from_hf(path).temperature == 0.6


# transformers' sampling-only fields, each at a value that is not "off".
HF_SAMPLING_ONLY = {"temperature": 0.9, "top_p": 0.9, "min_p": 0.1, "typical_p": 0.9, "top_k": 3,
                    "epsilon_cutoff": 3e-4, "eta_cutoff": 3e-4}


def _hf_issues(**fields) -> str:
    """transformers' own list of problems for these fields (validate(strict=True) raises it)."""
    hf = transformers.GenerationConfig()
    for name, value in fields.items():
        setattr(hf, name, value)
    try:
        hf.validate(strict=True)
    except ValueError as error:
        return str(error)
    return ""


@pytest.mark.parametrize("name", sorted(HF_SAMPLING_ONLY))
def test_a_sampling_field_without_do_sample_warns_as_transformers_does(name):
    value = HF_SAMPLING_ONLY[name]
    with pytest.warns(UserWarning) as caught:
        kvgen.GenerationConfig(**{name: value})
    assert len(caught) == 1
    message = str(caught[0].message)
    hf = _hf_issues(**{name: value})
    assert f"- `{name}`: " in hf
    line = next(line for line in hf.splitlines() if line.startswith(f"- `{name}`: "))
    assert line in message.splitlines()
    assert caught[0].filename == __file__  # points at the caller, not at kvgen


def test_several_sampling_fields_give_one_warning_naming_each():
    with pytest.warns(UserWarning) as caught:
        config = kvgen.GenerationConfig(temperature=0.9, top_p=0.9, top_k=3)
    assert len(caught) == 1
    message = str(caught[0].message)
    hf = _hf_issues(temperature=0.9, top_p=0.9, top_k=3)
    for line in hf.splitlines():
        if line.startswith("- `"):
            assert line in message
    assert "['temperature', 'top_p', 'top_k']" in message
    # once per config: reading or copying it warns no more
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy.copy(config)
        pickle.loads(pickle.dumps(config))
        config.to_dict()


@pytest.mark.parametrize("fields", [
    {}, {"do_sample": True, "temperature": 0.9, "top_p": 0.9, "top_k": 3, "min_p": 0.1},
    {"top_k": 50, "temperature": 1.0, "top_p": 1.0, "typical_p": 1.0},  # the "off" values
    {"temperature": 0.0},  # kvgen's spelling of greedy
    {"max_new_tokens": 3, "repetition_penalty": 1.2, "num_beams": 2},
])
def test_no_warning_when_every_sampling_field_is_used_or_off(fields):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kvgen.GenerationConfig(**fields)


@pytest.mark.parametrize("fields", [{"top_n_sigma": 1.0}, {"mirostat": 2}, {"xtc_probability": 0.5}])
def test_kvgen_sampling_only_fields_warn_too(fields):
    with pytest.warns(UserWarning, match=list(fields)[0]):
        kvgen.GenerationConfig(**fields)
    # and they change nothing under greedy decoding
    logits = np.random.default_rng(0).normal(size=(1, 64)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        picked = kvgen.sample(logits, kvgen.GenerationConfig(**fields))
    assert picked[0] == int(np.argmax(logits))
