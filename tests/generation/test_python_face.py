"""The Python face: per-call settings, config conversion, returned text (special tokens, stop
strings), interrupted generations, errors that name the fix, and reprs."""

from __future__ import annotations

import _thread
import threading
import time
import warnings

import numpy as np
import pytest
import torch
import transformers
from hf_models import save_text_gpt2

import kvgen
from kvgen.generation.detokenize import StopStringFilter


@pytest.fixture(scope="module")
def text_model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("face_gpt2")
    _, tokenizer = save_text_gpt2(directory)
    return kvgen.Model.load(directory), tokenizer


# --- per-call settings ---------------------------------------------------------------------

def test_per_call_fields_equal_a_generator_built_with_them(text_model):
    model, _ = text_model
    base = kvgen.GenerationConfig(max_new_tokens=20, do_sample=True, top_k=20)
    generator = kvgen.Generator(model, base)
    merged = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=5, do_sample=True, top_k=20, seed=1))
    assert generator.generate("Once upon", max_new_tokens=5, seed=1) == merged.generate("Once upon")
    assert generator.last_result.sequences[0][0].size == 5
    assert generator.config == base  # the call changed nothing
    assert list(generator.stream("Once upon", max_new_tokens=5, seed=1)) == list(merged.stream("Once upon"))
    chat_messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(ValueError, match="chat template"):  # the random GPT-2 has none; the override checks first
        generator.chat(chat_messages, max_new_tokens=5)


def test_per_call_names_are_checked_with_hints(text_model):
    generator = kvgen.Generator(text_model[0], kvgen.GenerationConfig())
    with pytest.raises(TypeError, match="'max_tokens': kvgen calls it 'max_new_tokens'"):
        generator.generate("Hi", max_tokens=5)
    with pytest.raises(TypeError, match="did you mean 'skip_special_tokens'"):
        generator.generate("Hi", skip_special_token=False)
    with pytest.raises(ValueError, match="top_p"):  # per-call values are validated as the config's
        generator.generate("Hi", top_p=2.0)


def test_generator_takes_a_transformers_config_or_a_dict(text_model):
    model, _ = text_model
    hf = transformers.GenerationConfig(max_new_tokens=7, do_sample=True, top_k=3, temperature=0.5)
    assert kvgen.Generator(model, hf).config == kvgen.GenerationConfig.from_hf(hf)
    as_dict = {"max_new_tokens": 7, "num_beams": 2, "transformers_version": "5.0"}
    assert kvgen.Generator(model, as_dict).config == kvgen.GenerationConfig(max_new_tokens=7, num_beams=2)
    assert kvgen.Generator(model).config == kvgen.GenerationConfig()


# --- returned text -------------------------------------------------------------------------

def test_special_tokens_are_left_out_of_the_text_unless_kept(text_model):
    model, tokenizer = text_model
    eot = tokenizer.token_to_id("<|endoftext|>")
    config = kvgen.GenerationConfig(max_new_tokens=6, logit_bias={eot: 30.0})  # the model writes <|endoftext|>
    generator = kvgen.Generator(model, config)
    text = generator.generate("Once upon")
    ids = generator.last_result.sequences[0][0].tolist()
    assert eot in ids
    assert text == tokenizer.decode(ids, skip_special_tokens=True)
    kept = generator.generate("Once upon", skip_special_tokens=False)
    assert kept == tokenizer.decode(ids, skip_special_tokens=False) and "<|endoftext|>" in kept
    keeping = kvgen.Generator(model, config, skip_special_tokens=False)
    assert "".join(keeping.stream("Once upon")) == kept


def test_stop_string_kept_by_default_and_cut_on_request(text_model):
    model, _ = text_model
    free = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=30)).generate("The robot")
    stop = free[6:9]
    generator = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=30, stop_strings=[stop]))
    kept = generator.generate("The robot")
    assert generator.last_result.finish_reasons[0][0] == "stop" and stop in kept
    cut = generator.generate("The robot", include_stop_str_in_output=False)
    assert cut == kept[:kept.index(stop)]  # vLLM / OpenAI: the text before the stop string
    assert generator.last_result.texts[0][0] == cut
    assert "".join(generator.stream("The robot", include_stop_str_in_output=False)) == cut
    assert "".join(generator.stream("The robot")) == kept


@pytest.mark.parametrize("pieces, stops, expected", [
    (["ab", "c<", "/s", "> tail"], ["</s>"], ["ab", "c", ""]),   # held back "<", "</s" until decided
    (["a<", "b"], ["</s>"], ["a", "<b"]),                         # "<" turned out not to start it
    (["x", "STOP"], ["STOP", "ST"], ["x"]),                        # the earliest stop string wins
])
def test_stop_string_filter_holds_back_only_what_may_start_a_stop(pieces, stops, expected):
    stop_filter = StopStringFilter(stops)
    out = [stop_filter.feed(p) for p in pieces]
    out.append(stop_filter.flush())
    text = "".join(pieces)
    cut = min((text.find(s) for s in stops if s in text), default=len(text))
    assert "".join(out) == text[:cut]
    assert [o for o in out if o] == [e for e in expected if e]


def test_interrupted_generate_keeps_the_partial_result(smollm2_model):
    generator = kvgen.Generator(smollm2_model, kvgen.GenerationConfig(max_new_tokens=400))

    def interrupt_after_a_few_steps():
        while generator.last_stats.decode_steps < 3:
            time.sleep(0.001)
        _thread.interrupt_main()

    watcher = threading.Thread(target=interrupt_after_a_few_steps)
    watcher.start()
    with pytest.raises(KeyboardInterrupt):
        generator.generate("Tell me a long story about a dragon.", eos_token_id=[], min_new_tokens=400)
    watcher.join()
    result = generator.last_result
    assert result is not None and result.finish_reasons == [["interrupted"]]
    assert 3 <= result.sequences[0][0].size < 400
    assert result.texts[0][0] == smollm2_model.decode(result.sequences[0][0], skip_special_tokens=True)


def test_ctrl_c_during_a_long_prefill_stops_between_chunks(smollm2_model):
    """The prompt is fed in chunks, one engine step each: Ctrl-C lands between two, and
    last_result says the generation was interrupted before its first token."""
    generator = kvgen.Generator(smollm2_model, kvgen.GenerationConfig(max_new_tokens=1))
    prompt = [int(t) for t in np.random.default_rng(0).integers(100, 1000, 1500)]
    previous = generator.generate([[1, 2, 3]])
    timer = threading.Timer(0.2, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        generator.generate([prompt])
    timer.join()
    result = generator.last_result
    assert result is not previous and result.finish_reasons == [["interrupted"]]
    assert result.sequences[0][0].size == 0


# --- errors that teach ---------------------------------------------------------------------

@pytest.mark.parametrize("name, hint", [
    ("max_tokens", "max_new_tokens"), ("num_predict", "max_new_tokens"), ("repeat_penalty", "repetition_penalty"),
    ("stop", "stop_strings"), ("n", "num_return_sequences"),
])
def test_other_tools_names_say_what_kvgen_calls_them(name, hint):
    with pytest.raises(TypeError, match=f"'{name}': kvgen calls it '{hint}'"):
        kvgen.GenerationConfig(**{name: 1})
    with pytest.raises(TypeError, match=f"kvgen calls it '{hint}'"):
        kvgen.GenerationConfig.from_dict({name: 1})


def test_misspelled_fields_get_close_spellings():
    with pytest.raises(TypeError, match="'temprature': did you mean 'temperature'"):
        kvgen.GenerationConfig(temprature=0.5)
    with pytest.raises(TypeError, match="GenerationConfig.fields()"):
        kvgen.GenerationConfig(zzzz=1)


def test_from_hf_strict_refuses_without_saying_ignored():
    with pytest.raises(ValueError, match="diversity_penalty") as error:
        kvgen.GenerationConfig.from_hf({"diversity_penalty": 0.5}, strict=True)
    assert "are ignored" not in str(error.value) and "strict=True" in str(error.value)
    with pytest.warns(UserWarning, match="they are ignored"):
        kvgen.GenerationConfig.from_hf({"diversity_penalty": 0.5})


def test_a_hub_id_says_kvgen_loads_local_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="kvgen loads local files") as error:
        kvgen.Model.load("HuggingFaceTB/SmolLM2-135M-Instruct")
    assert "huggingface-cli download HuggingFaceTB/SmolLM2-135M-Instruct --local-dir" in str(error.value)
    assert "snapshot_download" in str(error.value)
    with pytest.raises(FileNotFoundError) as error:
        kvgen.Model.load(tmp_path / "missing.gguf")
    assert "Hub" not in str(error.value)


def test_torch_tensors_that_cannot_be_read_in_place_name_the_fix():
    config = kvgen.GenerationConfig()
    grad = torch.zeros(2, 8, requires_grad=True)
    with pytest.raises(TypeError, match=r"requires grad.*logits\.detach\(\)") as error:
        kvgen.sample(grad, config)
    assert "At:" not in str(error.value) and "CPU tensor" not in str(error.value)
    assert kvgen.sample(grad.detach(), config).shape == (2,)
    strided = torch.zeros(8, 2).T
    with pytest.raises(ValueError, match=r"logits\.contiguous\(\)"):
        kvgen.sample(strided, config)
    with pytest.raises(ValueError, match=r"numpy\.ascontiguousarray\(logits\)"):
        kvgen.sample(np.zeros((8, 2), np.float32).T, config)


# --- reprs ---------------------------------------------------------------------------------

def test_result_repr_shows_shortened_text_and_stats_round(text_model):
    model, _ = text_model
    generator = kvgen.Generator(model, kvgen.GenerationConfig(max_new_tokens=40))
    text = generator.generate("Once upon a time")
    shown = repr(generator.last_result)
    assert shown.startswith("GenerationResult(") and "finish_reasons" in shown
    assert repr(text if len(text) <= 40 else text[:37] + "...") in shown
    assert len(shown) < 200
    stats = kvgen.GenerationStats(prompt_tokens=3, new_tokens=4, prefill_seconds=0.123456789, decode_seconds=1 / 3,
                                  decode_steps=4)
    assert repr(stats) == ("GenerationStats(prompt_tokens=3, new_tokens=4, prefill_seconds=0.1235, "
                           "decode_seconds=0.3333, decode_steps=4, prefill_tokens_per_second=24.3, "
                           "decode_tokens_per_second=12.0)")


def test_generation_config_warns_nothing_on_the_happy_path():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kvgen.GenerationConfig(max_new_tokens=3, top_k=4)
