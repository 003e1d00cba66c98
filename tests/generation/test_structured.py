"""Constrained decoding (json_schema, regex, grammar, choices): every output of the real
SmolLM2 model, at several seeds and temperatures, validates with the reference checkers
(``jsonschema``, ``re.fullmatch``, ``lark``); the external-logits path holds under logits
that favour exactly the tokens the grammar forbids; bad input gives clear errors."""

from __future__ import annotations

import json
import re

import jsonschema
import lark
import llguidance
import llguidance.numpy as llg_numpy
import numpy as np
import pytest

import kvgen
from kvgen import _core

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 12},
                           "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
            "required": ["city", "zip"],
            "additionalProperties": False,
        },
    },
    "required": ["name", "age", "address"],
    "additionalProperties": False,
}
ORDER = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"enum": ["A1", "B2", "C3"]},
                    "qty": {"type": "integer", "minimum": 1, "maximum": 9},
                    # multipleOf bounds the fraction digits (a number could run on forever)
                    "price": {"type": "number", "minimum": 0, "maximum": 1000, "multipleOf": 0.25},
                },
                "required": ["sku", "qty", "price"],
                "additionalProperties": False,
            },
        },
        "status": {"enum": ["open", "paid", "shipped"]},
    },
    "required": ["items", "status"],
    "additionalProperties": False,
}
READING = {
    "type": "object",
    "properties": {
        "unit": {"enum": ["cm", "m", "km"]},
        "values": {"type": "array", "maxItems": 4, "items": {"type": "integer", "minimum": -10, "maximum": 10}},
        "valid": {"type": "boolean"},
        "score": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "multipleOf": 0.125},
    },
    "required": ["unit", "values", "valid"],
    "additionalProperties": False,
}
SCHEMAS = {"person": PERSON, "order": ORDER, "reading": READING}
# [0-9], not \d: llguidance's \d is Unicode's digits of a newer Unicode version than
# Python 3.11's `re` knows (random logits found U+1E5F4, a digit since Unicode 16)
PHONE = r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}"
DATE = r"(19|20)[0-9][0-9]-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
ASSIGNMENT = r"""
start: NAME " = " value
value: NUMBER | list
list: "[" NUMBER (", " NUMBER)~0..3 "]"
NAME: /[a-z]{1,8}/
NUMBER: /[0-9]{1,4}/
"""
# sampling settings: (temperature, seed), each with num_return_sequences rows
SAMPLING = [(0.7, 0), (1.0, 1), (1.3, 2)]
ROWS = 3


def constrained_texts(model, prompt: str, **config) -> list[tuple[str, str]]:
    """(text, finish_reason) of every returned sequence, special tokens left out."""
    generator = kvgen.Generator(model, kvgen.GenerationConfig(**config), skip_special_tokens=True)
    generator.generate([prompt])
    result = generator.last_result
    return list(zip(result.texts[0], result.finish_reasons[0]))


def sampled_texts(model, prompt: str, max_new_tokens: int, **constraint) -> list[tuple[str, str]]:
    out = constrained_texts(model, prompt, max_new_tokens=max_new_tokens, **constraint)  # greedy
    for temperature, seed in SAMPLING:
        out += constrained_texts(model, prompt, max_new_tokens=max_new_tokens, do_sample=True, top_k=0,
                                 temperature=temperature, seed=seed, num_return_sequences=ROWS, **constraint)
    return out


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_json_schema_outputs_validate(smollm2_model, name):
    schema = SCHEMAS[name]
    outputs = sampled_texts(smollm2_model, f"Write one {name} record as JSON.", 120, json_schema=schema)
    assert len(outputs) == 1 + ROWS * len(SAMPLING)
    for text, reason in outputs:
        assert reason in ("stop", "eos"), (text, reason)
        jsonschema.validate(json.loads(text), schema)


def test_json_schema_as_a_string(smollm2_model):
    for text, _ in constrained_texts(smollm2_model, "A person as JSON:", max_new_tokens=120,
                                     json_schema=json.dumps(PERSON)):
        jsonschema.validate(json.loads(text), PERSON)


@pytest.mark.parametrize("pattern", [PHONE, DATE])
def test_regex_outputs_full_match(smollm2_model, pattern):
    for text, reason in sampled_texts(smollm2_model, "Give an example:", 40, regex=pattern):
        assert reason in ("stop", "eos"), (text, reason)
        assert re.fullmatch(pattern, text), text


def test_lark_grammar_outputs_parse(smollm2_model):
    parser = lark.Lark(ASSIGNMENT, start="start")
    for text, reason in sampled_texts(smollm2_model, "An assignment in a small language:", 40, grammar=ASSIGNMENT):
        assert reason in ("stop", "eos"), (text, reason)
        parser.parse(text)


def test_gbnf_grammar_is_converted(smollm2_model):
    gbnf = 'root ::= "x" [0-9] [0-9]?'
    for text, _ in sampled_texts(smollm2_model, "A code:", 10, grammar=gbnf):
        assert re.fullmatch(r"x[0-9][0-9]?", text), text


def test_choices_return_one_of_them(smollm2_model):
    choices = ["yes", "no", "it depends"]
    for text, reason in sampled_texts(smollm2_model, "Is the sky blue?", 10, choices=choices):
        assert text in choices and reason in ("stop", "eos"), (text, reason)


def test_beam_search_with_a_schema_gives_valid_json_in_every_sequence(smollm2_model):
    outputs = constrained_texts(smollm2_model, "Write one person record as JSON.", max_new_tokens=80,
                                json_schema=PERSON, num_beams=4, num_return_sequences=4)
    assert len(outputs) == 4
    for text, _ in outputs:
        jsonschema.validate(json.loads(text), PERSON)


def test_several_prompts_each_row_follows_its_own_grammar(smollm2_model):
    generator = kvgen.Generator(smollm2_model, kvgen.GenerationConfig(
        regex=DATE, max_new_tokens=30, do_sample=True, seed=3, num_return_sequences=2), skip_special_tokens=True)
    generator.generate(["A date:", "When did it happen?", "Year-month-day:"])
    texts = [t for per in generator.last_result.texts for t in per]
    assert len(texts) == 6 and all(re.fullmatch(DATE, t) for t in texts), texts


# ---- the external-logits path, under adversarial logits ----------------------------------

class ReferenceMasks:
    """llguidance's own masks (the reference), from matchers that follow each row's tokens."""

    def __init__(self, tokenizer, grammar: str, rows: int):
        self.matchers = [llguidance.LLMatcher(tokenizer, grammar, log_level=0) for _ in range(rows)]
        self.fed = [0] * rows
        self.mask = llg_numpy.allocate_token_bitmask(rows, tokenizer.vocab_size)

    def next(self, generated: list[list[int]]) -> np.ndarray:
        for r, (matcher, tokens) in enumerate(zip(self.matchers, generated)):
            assert matcher.consume_tokens(tokens[self.fed[r]:]), matcher.get_error()
            self.fed[r] = len(tokens)
            llg_numpy.fill_next_token_bitmask(matcher, self.mask, r)
        return self.mask


def allowed_of(mask: np.ndarray, vocab: int) -> np.ndarray:
    """(rows, vocab) bool: the tokens each row's mask allows."""
    return np.unpackbits(mask.view(np.uint8), axis=1, bitorder="little")[:, :vocab].astype(bool)


BOUNDED = {  # every part bounded, so that random tokens finish within the token budget
    "type": "object",
    "properties": {"kind": {"enum": ["a", "b"]}, "n": {"type": "integer", "minimum": 0, "maximum": 99},
                   "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 3}}},
    "required": ["kind", "n", "tags"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("constraint", [{"json_schema": BOUNDED}, {"regex": DATE}], ids=["json", "regex"])
@pytest.mark.parametrize("sampling", [{}, {"do_sample": True, "top_k": 0, "temperature": 1.0}],
                         ids=["greedy", "sample"])
def test_external_logits_never_escape_the_grammar(smollm2_model, constraint, sampling):
    """Random logits where every token the grammar forbids outscores every allowed one:
    a mask that leaked anywhere would pick a forbidden token."""
    tokenizer = llguidance.LLTokenizer(smollm2_model.tokenizer.to_str(), eos_token=smollm2_model.eos_token_id)
    grammar = (llguidance.LLMatcher.grammar_from_json_schema(BOUNDED, defaults={"whitespace_flexible": False})
               if "json_schema" in constraint else llguidance.LLMatcher.grammar_from_regex(DATE))
    vocab = smollm2_model.vocab_size
    prompts = [[1, 2, 3], [5, 6], [7], [9, 10, 11, 12]]
    for seed in range(3):
        config = kvgen.GenerationConfig(max_new_tokens=120, eos_token_id=smollm2_model.eos_token_id, seed=seed,
                                        num_return_sequences=2 if sampling else 1, **sampling, **constraint)
        generator = kvgen.Generator(config, tokenizer=smollm2_model)
        generator.append_tokens(prompts)
        per_prompt = generator.rows // len(prompts)
        reference = ReferenceMasks(tokenizer, grammar, generator.rows)
        rng = np.random.default_rng(seed)
        while not generator.is_done():
            generated = [s[len(prompts[r // per_prompt]):].tolist() for r, s in enumerate(generator.sequences)]
            allowed = allowed_of(reference.next(generated), vocab)
            logits = rng.standard_normal((generator.rows, vocab)).astype(np.float32)
            logits[~allowed] += 100.0
            generator.step(logits)
        result = generator.result()
        for b in range(len(prompts)):
            for tokens, reason in zip(result.sequences[b], result.finish_reasons[b]):
                assert reason in ("stop", "eos"), reason
                text = smollm2_model.decode([t for t in tokens if t != smollm2_model.eos_token_id])
                if "json_schema" in constraint:
                    jsonschema.validate(json.loads(text), BOUNDED)
                else:
                    assert re.fullmatch(DATE, text), text


def test_external_logits_beam_search_carries_each_matcher_with_its_beam(smollm2_model):
    config = kvgen.GenerationConfig(regex=DATE, num_beams=3, num_return_sequences=3, max_new_tokens=20,
                                    eos_token_id=smollm2_model.eos_token_id)
    def random_logits(rng):
        return lambda ids, _: (rng.standard_normal((len(ids), smollm2_model.vocab_size)) * 4).astype(np.float32)

    for seed in range(3):
        result = kvgen.generate(random_logits(np.random.default_rng(seed)), [[1, 2], [3]], config,
                                tokenizer=smollm2_model)
        for per_prompt in result.sequences:
            assert len(per_prompt) == 3
            for tokens in per_prompt:
                text = smollm2_model.decode([t for t in tokens if t != smollm2_model.eos_token_id])
                assert re.fullmatch(DATE, text), text


def test_external_logits_accept_a_transformers_tokenizer(smollm2_model, smollm2_hf_tokenizer):
    config = kvgen.GenerationConfig(choices=["alpha", "beta"], max_new_tokens=8, eos_token_id=2)
    result = kvgen.generate(lambda ids, _: np.random.default_rng(0).standard_normal(
        (len(ids), smollm2_model.vocab_size)).astype(np.float32), [[1, 2]], config, tokenizer=smollm2_hf_tokenizer)
    assert smollm2_model.decode([t for t in result.sequences[0][0] if t != 2]) in ("alpha", "beta")


# ---- the C++ mask itself, on hand-made bitmasks ------------------------------------------

def bitmask(rows: int, vocab: int, allowed: list[int]) -> np.ndarray:
    mask = np.zeros((rows, (vocab + 31) // 32), dtype=np.uint32)
    for t in allowed:
        mask[:, t // 32] |= np.uint32(1 << (t % 32))
    return mask


def test_mask_applies_before_top_k_and_top_p():
    # token 0 has the highest logit but is forbidden; top_k=1 must then keep token 40,
    # the best allowed one (top-k after the mask), whatever the draw
    vocab = 70
    logits = np.zeros((1, vocab), dtype=np.float32)
    logits[0, 0], logits[0, 40], logits[0, 65] = 10.0, 5.0, 4.0
    for seed in range(5):
        g = _core._TokenSelector(kvgen.GenerationConfig(regex="x", do_sample=True, top_k=1, top_p=0.5, seed=seed,
                                                    max_new_tokens=1))
        g.append_tokens([[1]])
        assert g.step(logits, allowed_tokens=bitmask(1, vocab, [40, 65])).tokens.tolist() == [40]


def test_mask_applies_under_beam_search_before_the_log_softmax():
    vocab = 40
    logits = np.random.default_rng(0).standard_normal((2, vocab)).astype(np.float32)
    g = _core._TokenSelector(kvgen.GenerationConfig(regex="x", num_beams=2, max_new_tokens=1))
    g.append_tokens([[1]])
    g.step(logits, allowed_tokens=bitmask(2, vocab, [3, 33]))
    lp = g.last_logits
    # the log-softmax over the two allowed tokens: they sum to probability 1
    assert np.isneginf(np.delete(lp, [3, 33], axis=1)).all()
    np.testing.assert_allclose(np.exp(lp[:, [3, 33]]).sum(axis=1), 1.0, rtol=1e-6)
    assert {h["tokens"][-1] for h in g._hypotheses()[0]} <= {3, 33}


def test_an_empty_mask_is_a_clear_error():
    g = _core._TokenSelector(kvgen.GenerationConfig(regex="x", max_new_tokens=2))
    g.append_tokens([[1]])
    with pytest.raises(ValueError, match="allows no token for row 0"):
        g.step(np.zeros((1, 40), dtype=np.float32), allowed_tokens=bitmask(1, 40, []))
    with pytest.raises(ValueError, match="needs the allowed-token mask"):
        g.step(np.zeros((1, 40), dtype=np.float32))
    with pytest.raises(ValueError, match="shape"):
        g.step(np.zeros((1, 40), dtype=np.float32), allowed_tokens=np.zeros((1, 1), dtype=np.uint32))


# ---- bad input ---------------------------------------------------------------------------

@pytest.mark.parametrize("constraint, match", [
    ({"json_schema": {"type": "objec"}}, "(?s)json_schema is invalid.*objec"),
    ({"json_schema": "{not json"}, "json_schema is not valid JSON"),
    ({"regex": "a(b"}, "(?s)regex is invalid.*unclosed group"),
    ({"grammar": "start: foo"}, "(?s)grammar is invalid.*foo"),
])
def test_invalid_constraints_raise_before_generation(smollm2_model, constraint, match):
    config = kvgen.GenerationConfig(max_new_tokens=4, **constraint)
    with pytest.raises(ValueError, match=match):
        kvgen.Generator(smollm2_model, config)
    with pytest.raises(ValueError, match=match):
        kvgen.Generator(config, tokenizer=smollm2_model.tokenizer)


def test_two_constraints_at_once_are_refused():
    with pytest.raises(ValueError, match="regex and choices are set together"):
        kvgen.GenerationConfig(regex="a+", choices=["a"])
    config = kvgen.GenerationConfig(json_schema={"type": "object"})
    with pytest.raises(ValueError, match="json_schema and grammar"):
        config.grammar = "start: /a/"
        config.validate()


def test_a_constraint_needs_a_tokenizer():
    with pytest.raises(ValueError, match="needs the vocabulary: pass tokenizer="):
        kvgen.Generator(kvgen.GenerationConfig(regex="a+"))
    with pytest.raises(TypeError, match="tokenizer must be"):
        kvgen.Generator(kvgen.GenerationConfig(regex="a+"), tokenizer="gpt2")


def test_choices_with_quotes_and_non_ascii_text(smollm2_model):
    choices = ['say "hi"', "café", "a\\b"]
    for text, _ in sampled_texts(smollm2_model, "Pick one:", 12, choices=choices):
        assert text in choices, text


def test_beam_search_over_external_logits_needs_an_eos(smollm2_model):
    with pytest.raises(ValueError, match="needs eos_token_id"):
        kvgen.Generator(kvgen.GenerationConfig(regex="a+", num_beams=2), tokenizer=smollm2_model)


def test_a_tokenizer_whose_vocabulary_disagrees_with_the_logits(smollm2_model):
    generator = kvgen.Generator(kvgen.GenerationConfig(regex="a+", max_new_tokens=3), tokenizer=smollm2_model)
    generator.append_tokens([[1]])
    with pytest.raises(ValueError, match="tokenizer has 49152 tokens but the logits have 32000 columns"):
        generator.step(np.zeros((1, 32000), dtype=np.float32))


@pytest.mark.parametrize("grammar, match", [
    ("", "grammar is invalid"),
    ("item: \"a\"", "grammar is"),  # Lark without start
    ("item ::= \"a\"", "grammar is"),  # GBNF without root
    ("root ::= " + "(" * 3000 + "\"a\"" + ")" * 3000, "grammar is"),  # nested deeper than any parser allows
])
def test_grammars_llguidance_refuses_with_a_bare_exception_are_value_errors(smollm2_model, grammar, match):
    with pytest.raises(ValueError, match=match):
        kvgen.Generator(smollm2_model, kvgen.GenerationConfig(max_new_tokens=4, grammar=grammar))


def test_large_constraints_compile_or_are_refused_without_hanging(smollm2_model):
    labels = [f"label{i}" for i in range(2000)]
    for text, _ in constrained_texts(smollm2_model, "Pick one:", max_new_tokens=8, choices=labels):
        assert text in labels
    try:
        out = constrained_texts(smollm2_model, "a", max_new_tokens=4, regex="(a{1000}){1000}")
    except ValueError as e:
        assert "regex" in str(e)
    else:
        assert all(set(text) <= {"a"} for text, _ in out)


def _vocabulary_bytes(model) -> set[int]:
    """The bytes the model's byte-level BPE vocabulary holds, read from its token strings
    through GPT-2's byte-to-character map (transformers' own), not from llguidance."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    char_to_byte = {c: b for b, c in bytes_to_unicode().items()}
    held = set()
    for token in model.tokenizer.get_vocab():
        if all(c in char_to_byte for c in token):
            held.update(char_to_byte[c] for c in token)
    return held


# One character of every Unicode plane (its code point 0x41 past the plane start, and one
# far inside), through a regex constraint: the text is that character, or the vocabulary
# lacks one of its UTF-8 bytes and the Generator raises ValueError saying so.
PLANE_CHARACTERS = [chr(plane * 0x10000 + offset) for plane in range(17) for offset in (0x41, 0x8F21)
                    if not 0xD800 <= plane * 0x10000 + offset < 0xE000]


def test_every_unicode_plane_through_a_regex_constraint(smollm2_model):
    held = _vocabulary_bytes(smollm2_model)
    for ch in PLANE_CHARACTERS:
        producible = set(ch.encode()) <= held
        config = kvgen.GenerationConfig(max_new_tokens=8, regex=re.escape(ch))
        generator = kvgen.Generator(smollm2_model, config)
        if producible:
            generator.generate(["Write the character:"])
            result = generator.last_result
            assert smollm2_model.decode(result.sequences[0][0], skip_special_tokens=True) == ch, hex(ord(ch))
            assert result.finish_reasons[0][0] in ("stop", "eos")
        else:
            with pytest.raises(ValueError, match="no token has"):
                generator.generate(["Write the character:"])
    assert any(not set(ch.encode()) <= held for ch in PLANE_CHARACTERS)  # SmolLM2 lacks 0xF1, 0xF2
