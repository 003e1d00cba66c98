"""Constrained decoding: GenerationConfig's json_schema, regex, grammar or choices become
per-row allowed-token bitmasks, computed by llguidance (the grammar engine behind
llama.cpp's, vLLM's and SGLang's structured output) and applied by the C++ chain.

kvgen writes no grammar code: llguidance compiles the constraint against the tokenizer's
vocabulary (``Constraint``), keeps one matcher per row, and fills each row's mask of 32-bit
words (bit t % 32 of word t // 32: token t allowed). ``RowMatchers`` follows the rows:
it feeds each row's new token to its matcher, carries matchers along beam reorders, says
which rows' grammars are complete, and computes the next masks in a worker thread (llguidance
releases the GIL) while the caller runs the model's forward pass. The token selector
(kvgen.generation.step) applies them: kvgen.Generator and the engine's requests build on it.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Optional, Sequence

import llguidance
import llguidance.numpy as llg_numpy
import numpy as np
from llguidance.gbnf_to_lark import GbnfToLarkError, any_to_lark

from kvgen._core import GenerationConfig

# JSON schemas compile to compact JSON (no free whitespace between tokens), as llama.cpp's
# converter does: a small model otherwise spends its tokens on newlines and never closes
# the object. A schema may override this in its "x-guidance" object.
_JSON_OPTIONS = {"whitespace_flexible": False}

# Tokenizer conversions cost a fraction of a second (llguidance reads the whole vocabulary):
# the latest ones are kept, keyed by the tokenizer object and the EOS ids.
_TOKENIZER_CACHE: "OrderedDict[tuple, tuple[Any, llguidance.LLTokenizer]]" = OrderedDict()
_TOKENIZER_CACHE_SIZE = 8

# One worker computes masks in the background for every generation of the process.
_MASK_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvgen-mask")


# Keywords whose value is one subschema, a list of them, or a map of names to them.
_ONE_SUBSCHEMA = ("additionalProperties", "items", "not", "if", "then", "else", "contains",
                  "unevaluatedItems", "propertyNames")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def closed_objects(schema: Any, *, close: bool = True) -> Any:
    """A copy of a JSON schema in which every object schema that declares ``properties`` allows
    only those (and its ``patternProperties``) unless it says otherwise: a missing
    ``additionalProperties`` becomes false, as OpenAI's strict mode and vLLM's structured
    output read a schema. A small model otherwise fills an open object with keys it invents
    (often the schema's own words). An explicit ``additionalProperties`` (true or a schema) or
    ``unevaluatedProperties`` is kept; an object without ``properties`` (a free mapping) stays
    open. ``allOf`` branches are not closed themselves (each would forbid the others'
    properties), only the schemas inside them."""
    if isinstance(schema, list):
        return [closed_objects(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _ONE_SUBSCHEMA:
        if isinstance(out.get(key), (dict, list)):
            out[key] = closed_objects(out[key])
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [closed_objects(s) for s in out[key]]
    if isinstance(out.get("allOf"), list):
        out["allOf"] = [closed_objects(s, close=False) for s in out["allOf"]]
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: closed_objects(s) for name, s in out[key].items()}
    if (close and isinstance(out.get("properties"), dict) and "additionalProperties" not in out
            and "unevaluatedProperties" not in out and "allOf" not in out):
        out["additionalProperties"] = False
    return out


def constraint_field(config: GenerationConfig) -> Optional[str]:
    """The name of the config's constraint field, or None when the output is free."""
    for name in ("json_schema", "regex", "grammar", "choices"):
        if getattr(config, name) is not None:
            return name
    return None


def _grammar(config: GenerationConfig, field: str) -> str:
    """llguidance's grammar text for the config's constraint; ValueError naming the field
    when the text cannot even be read (invalid JSON, GBNF that does not convert)."""
    if field == "json_schema":
        try:
            schema = json.loads(config.json_schema)
        except json.JSONDecodeError as e:
            raise ValueError(f"GenerationConfig.json_schema is not valid JSON: {e}") from None
        if not isinstance(schema, dict):
            raise ValueError(f"GenerationConfig.json_schema must be a JSON object (a schema), got {config.json_schema}")
        return llguidance.LLMatcher.grammar_from_json_schema(closed_objects(schema), defaults=_JSON_OPTIONS)
    if field == "regex":
        return llguidance.LLMatcher.grammar_from_regex(config.regex)
    if field == "grammar":
        try:
            return llguidance.LLMatcher.grammar_from_lark(any_to_lark(config.grammar))
        except GbnfToLarkError as e:
            raise ValueError(f"GenerationConfig.grammar is neither Lark nor valid GBNF: {e}") from None
    # choices: one regex of the literal strings (a lexer DFA: a Lark rule of thousands of
    # alternatives would exceed the parser's items per row), every character but letters and
    # digits written as \x{...}
    return llguidance.LLMatcher.grammar_from_regex("|".join(_literal(c) for c in config.choices))


def _literal(text: str) -> str:
    """``text`` as a regex matching exactly it."""
    return "".join(c if c.isalnum() else f"\\x{{{ord(c):x}}}" for c in text)


def _backend(tokenizer) -> tuple[str, Any]:
    """('tokenizers', Tokenizer) or ('transformers', fast tokenizer) for what the caller passed."""
    from kvgen._model import Model

    if isinstance(tokenizer, Model):
        if tokenizer.tokenizer is None:
            raise ValueError(f"{tokenizer.path}: the model has no tokenizer, which constrained decoding needs")
        tokenizer = tokenizer.tokenizer
    if type(tokenizer).__module__.startswith("tokenizers") and hasattr(tokenizer, "to_str"):
        return "tokenizers", tokenizer
    if hasattr(tokenizer, "backend_tokenizer"):
        return "transformers", tokenizer
    raise TypeError("tokenizer must be a tokenizers.Tokenizer, a transformers fast tokenizer or a kvgen.Model, got "
                    f"{type(tokenizer).__name__}")


def _eos_ids(config: GenerationConfig) -> Optional[list[int]]:
    eos = config.eos_token_id
    if eos is None:
        return None
    return [eos] if isinstance(eos, int) else list(eos)


def llg_tokenizer(tokenizer, eos_ids: Optional[Sequence[int]]) -> llguidance.LLTokenizer:
    """llguidance's view of ``tokenizer`` (cached); EOS is ``eos_ids`` (the config's), else
    the tokenizer's own. The grammar allows EOS exactly where it may end."""
    kind, backend = _backend(tokenizer)
    eos = list(eos_ids) if eos_ids else None
    key = (id(backend), tuple(eos) if eos else None)
    hit = _TOKENIZER_CACHE.get(key)
    if hit is not None and hit[0] is backend:
        _TOKENIZER_CACHE.move_to_end(key)
        return hit[1]
    if kind == "tokenizers":
        converted = llguidance.LLTokenizer(backend.to_str(), eos_token=eos)
    else:
        from llguidance.hf import from_tokenizer  # imports transformers: only when one is given

        converted = from_tokenizer(backend, eos_token=eos)
    _TOKENIZER_CACHE[key] = (backend, converted)
    while len(_TOKENIZER_CACHE) > _TOKENIZER_CACHE_SIZE:
        _TOKENIZER_CACHE.popitem(last=False)
    return converted


def _short(error: Any, limit: int = 500) -> str:
    """The first ``limit`` characters of an error (llguidance's carry the whole grammar)."""
    text = str(error).strip() or type(error).__name__
    return text if len(text) <= limit else text[:limit] + " ..."


_MISSING_BYTES: "dict[int, tuple[Any, bytes]]" = {}


def _missing_bytes(tokenizer: llguidance.LLTokenizer) -> bytes:
    """The byte values that no token of ``tokenizer`` holds (cached per tokenizer).

    A byte-level BPE vocabulary may lack some bytes (SmolLM2's has no token with 0xF1 or
    0xF2, the UTF-8 lead bytes of U+40000..U+BFFFF). No text holding them can be generated,
    but llguidance's tokenizer of forced bytes drops such a byte silently, so a grammar that
    forces one gets a mask allowing the tokens of the bytes after it, which the matcher then
    refuses. RowMatchers.fill checks the few tokens of such a forced mask."""
    hit = _MISSING_BYTES.get(id(tokenizer))
    if hit is not None and hit[0] is tokenizer:
        return hit[1]
    seen = np.zeros(256, dtype=bool)
    for t in range(tokenizer.vocab_size):
        if not tokenizer.is_special_token(t):
            seen[np.frombuffer(tokenizer.decode_bytes([t]), dtype=np.uint8)] = True
    missing = bytes(np.flatnonzero(~seen).tolist())
    _MISSING_BYTES[id(tokenizer)] = (tokenizer, missing)
    while len(_MISSING_BYTES) > _TOKENIZER_CACHE_SIZE:  # as many as the tokenizer cache holds
        del _MISSING_BYTES[next(iter(_MISSING_BYTES))]
    return missing


#: llguidance's messages for a limit reached while matching (a grammar too large or complex).
_LIMIT_ERRORS = ("too many", "too complex", "TooComplex", "max is", "limit")

#: A mask allowing at most this many tokens is checked token by token when the vocabulary lacks bytes.
_FORCED_MASK_CHECK = 8


class Constraint:
    """A config's constraint compiled against a tokenizer: raises ValueError naming the
    problem (invalid schema, regex or grammar) here, before any generation."""

    def __init__(self, config: GenerationConfig, tokenizer):
        field = constraint_field(config)
        if field is None:
            raise ValueError("the GenerationConfig has no constraint (json_schema, regex, grammar or choices)")
        self.field = field
        self.tokenizer = llg_tokenizer(tokenizer, _eos_ids(config))
        self.vocab_size = self.tokenizer.vocab_size
        self.missing_bytes = _missing_bytes(self.tokenizer)
        try:
            self.matcher = llguidance.LLMatcher(self.tokenizer, _grammar(config, field), log_level=0)
        except ValueError:
            raise
        except (Exception, RecursionError) as e:  # llguidance raises a bare Exception for e.g. a grammar without start
            raise ValueError(f"GenerationConfig.{field} is invalid: {_short(e)}") from None
        if self.matcher.is_error():
            raise ValueError(f"GenerationConfig.{field} is invalid: {_short(self.matcher.get_error())}")

    def check_vocab(self, vocab: int) -> None:
        """ValueError unless the logits have the tokenizer's vocabulary size."""
        if vocab != self.vocab_size:
            raise ValueError(f"the tokenizer has {self.vocab_size} tokens but the logits have {vocab} columns: "
                             f"GenerationConfig.{self.field} needs the tokenizer of the model that computes the logits")

    def rows(self, count: int) -> "RowMatchers":
        """Fresh matchers for ``count`` rows."""
        return RowMatchers(self, count)


class RowMatchers:
    """One matcher per row and the rows' masks ``allowed`` (rows, ceil(vocab / 32)) int32,
    the array the C++ step reads in place."""

    def __init__(self, constraint: Constraint, rows: int):
        self.constraint = constraint
        self.matchers = [constraint.matcher.deep_copy() for _ in range(rows)]
        self.dead = [False] * rows  # beam rows whose token the grammar refused (score -inf)
        self.allowed = llg_numpy.allocate_token_bitmask(rows, constraint.vocab_size)
        self._executor = llguidance.LLExecutor()
        self._pending: Optional[Future] = None

    def fill(self) -> None:
        """Computes every live row's mask now; dead rows allow every token (their beams
        carry score -inf and can never be returned, so their tokens do not matter)."""
        live = [(m, r) for r, m in enumerate(self.matchers) if not self.dead[r]]
        if live:
            llg_numpy.fill_next_token_bitmask_par(self._executor, live, self.allowed)
        for matcher, r in live:
            if matcher.is_error():  # e.g. a parser limit reached: say so rather than an empty mask
                raise ValueError(f"constrained decoding, row {r}: {_short(matcher.get_error())}")
            if self.constraint.missing_bytes:
                self._check_forced(matcher, r, self.allowed[r])
        for r, is_dead in enumerate(self.dead):
            if is_dead:
                self.allowed[r] = -1

    def _check_forced(self, matcher: Any, r: int, words: np.ndarray) -> None:
        """Clears from row r's mask ``words`` the tokens its matcher refuses, when the mask
        allows only a few (the forced tokens of the grammar's next bytes, see _missing_bytes);
        ValueError when none is left: the grammar needs a byte that no token holds."""
        if matcher.is_accepting() or int(np.unpackbits(words.view(np.uint8)).sum()) > _FORCED_MASK_CHECK:
            return  # (a complete grammar's mask allows EOS)
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")
        unsigned = words.view(np.uint32)
        for t in np.flatnonzero(bits).tolist():
            if t < self.constraint.vocab_size and matcher.validate_tokens([t]) == 0:
                unsigned[t // 32] &= np.uint32(~(1 << (t % 32)) & 0xFFFFFFFF)
        if not words.any():
            missing = ", ".join(f"0x{b:02X}" for b in self.constraint.missing_bytes)
            raise ValueError(f"GenerationConfig.{self.constraint.field} cannot be satisfied with this vocabulary: "
                             f"the text it requires holds a byte that no token has (missing bytes: {missing})")

    def fill_in_background(self) -> None:
        """Starts fill() in the mask worker; ``wait()`` before reading ``allowed``."""
        self._pending = _MASK_WORKER.submit(self.fill)

    def wait(self) -> np.ndarray:
        """The masks, once a background fill (if any) has finished."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()
        return self.allowed

    def advance(self, tokens: np.ndarray, running: Sequence[bool], beam_indices: Optional[np.ndarray]) -> list[int]:
        """Feeds each running row's new token to its matcher, after moving the matchers
        along ``beam_indices`` (a row continues row beam_indices[r]). Returns the rows whose
        grammar is now complete (their matcher is stopped); none under beam search, where
        such a row's mask allows only EOS, which finishes its hypothesis at no cost."""
        if beam_indices is not None:
            self._reorder([int(p) for p in beam_indices])
        stopped = []
        for r, (matcher, token) in enumerate(zip(self.matchers, tokens)):
            if not running[r] or self.dead[r]:
                continue
            if not matcher.consume_token(int(token)):
                if beam_indices is None:
                    error = matcher.get_error()
                    if any(limit in error for limit in _LIMIT_ERRORS):
                        raise ValueError(f"GenerationConfig.{self.constraint.field} is too complex: llguidance's "
                                         f"limits were reached at row {r} ({_short(error, 300)})")
                    raise RuntimeError(f"constrained decoding: row {r} picked token {int(token)}, which its grammar "
                                       f"refuses ({matcher.get_error()})")
                self.dead[r] = True  # a beam continued with a -inf candidate
            elif beam_indices is None and matcher.is_stopped():
                stopped.append(r)
        return stopped

    def masks_along_drafts(self, drafts: np.ndarray, lengths: np.ndarray,
                           running: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
        """Speculative verification's masks: (rows, k + 1, words) int32, position j of row r
        the mask after its first j drafts (position 0: ``allowed``, which must be filled). A
        row's drafts are cut before the first one its grammar refuses (the verifier rejects
        it anyway: the mask forbids it) or after which the grammar stops (the verifier then
        picks that position's token itself, as a plain step would, and the row stops after
        it). Returns (masks, the cut draft lengths); the matchers are left as they were
        (rolled back). Positions past a row's cut allow every token (never read)."""
        rows, k = drafts.shape
        words = self.allowed.shape[1]
        masks = np.full((rows * (k + 1), words), -1, dtype=np.int32)
        cut = np.zeros(rows, dtype=np.int64)
        for r in range(rows):
            masks[r * (k + 1)] = self.allowed[r]
            if not running[r]:
                continue
            matcher, consumed = self.matchers[r], 0
            try:
                for j in range(int(lengths[r])):
                    t = int(drafts[r, j])
                    if matcher.validate_tokens([t]) != 1 or not matcher.consume_token(t):
                        break
                    consumed += 1
                    if matcher.is_stopped() or matcher.is_error():
                        break  # the grammar ends with draft j: the verifier picks position j itself
                    index = r * (k + 1) + j + 1
                    llg_numpy.fill_next_token_bitmask(matcher, masks, index)
                    if matcher.is_error():
                        raise ValueError(f"constrained decoding, row {r}: {_short(matcher.get_error())}")
                    if self.constraint.missing_bytes:
                        self._check_forced(matcher, r, masks[index])
                    cut[r] = j + 1
            finally:
                if consumed and not matcher.rollback(consumed):
                    raise RuntimeError(f"constrained decoding: row {r}'s matcher could not roll back {consumed} "
                                       f"draft tokens ({matcher.get_error()})")
        return masks.reshape(rows, k + 1, words), cut

    def follow_emitted(self, generator: Any, emitted: Sequence[np.ndarray], running: Sequence[bool]) -> None:
        """After a verify() of ``generator``: feeds each running row's emitted tokens to its
        matcher and finishes with 'stop' the rows whose grammar is complete."""
        for r, tokens in enumerate(emitted):
            if not running[r] or not len(tokens):
                continue
            matcher = self.matchers[r]
            for token in tokens.tolist():
                if not matcher.consume_token(int(token)):
                    raise RuntimeError(f"constrained decoding: row {r} emitted token {int(token)}, which its grammar "
                                       f"refuses ({matcher.get_error()})")
            if matcher.is_stopped():
                generator._stop_row(r)

    @staticmethod
    def running(generator: Any) -> list[bool]:
        """The rows of ``generator`` (a token selector) that take a token
        in its next step: every beam row under beam search, else the unfinished rows."""
        if generator.num_beams > 1:
            return [True] * generator.rows
        return [reason is None for reason in generator.finish_reasons]

    def follow(self, generator: Any, tokens: np.ndarray, beam_indices: Optional[np.ndarray],
               running: Sequence[bool]) -> None:
        """After a step of ``generator``: feeds its tokens to the matchers (``advance``) and
        finishes with 'stop' the rows whose grammar is complete."""
        for r in self.advance(tokens, running, beam_indices):
            generator._stop_row(r)

    def _reorder(self, parents: list[int]) -> None:
        """Row r takes row parents[r]'s matcher: the first child of a parent takes it, the
        others take copies."""
        taken = set()
        matchers, dead = [], []
        for p in parents:
            matchers.append(self.matchers[p] if p not in taken else self.matchers[p].deep_copy())
            taken.add(p)
            dead.append(self.dead[p])
        self.matchers, self.dead = matchers, dead
