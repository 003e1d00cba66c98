"""Fuzzing the GGUF loader: mutated tiny GGUF files end in ValueError/TypeError or a normal load.

Three seed files (a llama with a SentencePiece tokenizer, a gpt2 with a byte-level BPE
tokenizer, a Q8_0 llama without one) are mutated: random byte changes, truncations, the
header's tensor and key-value counts, metadata value types, string lengths, array counts and
element types, tensor n_dims / dimensions / types / data offsets (gguf_fuzz.MUTATIONS), and
the config values (context_length, embedding_length, head counts, block_count,
feed_forward_length, ...) rewritten as 0, -1, 2^31, 1e8, 2^62 and 2^64-1, the norm epsilons
and rope base as nan, inf, -1, 0 and 1e38. Each case runs ``kvgen.Model.load(path)`` and,
when the file loads, a forward pass and a two-token generation, in ``sandbox.Sandbox`` (a
worker process under a 3 GiB address-space limit and a 10 s timeout): it must return or raise
ValueError/TypeError; a crash, a hang, a MemoryError or any other exception fails the test,
which lists each bad case with how to rebuild it.

The run is deterministic (seeded ``random.Random``). By default it runs
``DEFAULT_CASES`` random cases (about 30 s); for a longer local run set the number and,
optionally, another seed:

    KVGEN_FUZZ_CASES=5000 KVGEN_FUZZ_SEED=7 python -m pytest -q tests/loaders/test_fuzz_gguf.py
"""

from __future__ import annotations

import os
import random
import struct
from pathlib import Path

import gguf_fuzz
import pytest
from gguf_models import add_gguf_tokenizer, train_byte_level_bpe, train_sentencepiece_bpe
from sandbox import Sandbox, is_clean_refusal

DEFAULT_CASES = 10000  # about 15 s here
CASE_TIMEOUT_S = 10.0


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> dict[str, Path]:
    from hf_models import random_gpt2
    from llama_models import random_llama, write_gpt2_gguf, write_llama_gguf

    root = tmp_path_factory.mktemp("seeds")
    sp = train_sentencepiece_bpe(vocab_size=300)
    llama = random_llama(vocab_size=sp.get_vocab_size(), hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32)
    write_llama_gguf(llama, root / "llama.gguf", tokenizer_writer=lambda w: add_gguf_tokenizer(
        w, sp, model="llama", bos="<s>", eos="</s>", unk="<unk>", merges=False))
    q8 = random_llama(vocab_size=40, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=16)
    write_llama_gguf(q8, root / "q8.gguf", qtype="Q8_0")
    bl = train_byte_level_bpe(vocab_size=300)
    gpt2 = random_gpt2(vocab_size=bl.get_vocab_size(), n_embd=16, n_layer=1, n_head=2)
    write_gpt2_gguf(gpt2, root / "plain_gpt2.gguf")
    gguf_fuzz.rewrite(root / "plain_gpt2.gguf", root / "gpt2.gguf", {},
                      add=lambda w: add_gguf_tokenizer(w, bl, model="gpt2", eos="<|endoftext|>"))
    return {name: root / f"{name}.gguf" for name in ("llama", "gpt2", "q8")}


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(timeout_s=CASE_TIMEOUT_S) as box:
        yield box


def _bad(outcomes: list[tuple[str, object]]) -> list[str]:
    return [f"{what}: {outcome.describe()[:600]}" for what, outcome in outcomes if not is_clean_refusal(outcome)]


def test_seeds_load(seeds, sandbox):
    for name, path in seeds.items():
        outcome = sandbox.run(gguf_fuzz.load_and_run, str(path))
        assert outcome.status == "returned", f"{name}: {outcome.describe()}"


def test_random_mutations(seeds, sandbox, tmp_path):
    cases = int(os.environ.get("KVGEN_FUZZ_CASES", DEFAULT_CASES))
    seed = int(os.environ.get("KVGEN_FUZZ_SEED", 0))
    rng = random.Random(seed)
    originals = {name: (path.read_bytes(), gguf_fuzz.layout_of(path)) for name, path in seeds.items()}
    outcomes, loaded = [], 0
    for case in range(cases):
        name = rng.choice(sorted(originals))
        data, layout = originals[name]
        mutated, what = gguf_fuzz.mutate(rng, data, layout)
        path = tmp_path / "case.gguf"
        path.write_bytes(mutated)
        outcome = sandbox.run(gguf_fuzz.load_and_run, str(path))
        loaded += outcome.status == "returned"
        outcomes.append((f"seed {seed} case {case} ({name}: {what})", outcome))
    bad = _bad(outcomes)
    assert not bad, f"{len(bad)} of {cases} mutated files were not refused cleanly:\n" + "\n".join(bad[:20])
    assert loaded < cases  # the mutations reach the checks (most cases are refused)


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_config_values(seeds, sandbox, tmp_path, arch):
    outcomes = []
    for key in gguf_fuzz.CONFIG_KEYS:
        for kind, value in gguf_fuzz.CONFIG_VALUES:
            path = gguf_fuzz.rewrite(seeds[arch], tmp_path / "case.gguf", {f"{arch}.{key}": (kind, value)})
            outcomes.append((f"{arch}.{key} = {value} ({kind})", sandbox.run(gguf_fuzz.load_and_run, str(path))))
    for key in gguf_fuzz.FLOAT_KEYS:
        for value in gguf_fuzz.FLOAT_VALUES:
            path = gguf_fuzz.rewrite(seeds[arch], tmp_path / "case.gguf", {f"{arch}.{key}": ("FLOAT32", value)})
            outcomes.append((f"{arch}.{key} = {value}", sandbox.run(gguf_fuzz.load_and_run, str(path))))
    bad = _bad(outcomes)
    assert not bad, f"{len(bad)} config values were not refused cleanly:\n" + "\n".join(bad)


# --- the reported cases ----------------------------------------------------------------------------

def _refused(sandbox, path: Path, match: str) -> None:
    outcome = sandbox.run(gguf_fuzz.load_and_run, str(path))
    assert outcome.status == "raised" and outcome.error_type == "ValueError", outcome.describe()
    assert match in outcome.message and path.name in outcome.message, outcome.message


def test_string_value_type_changed_to_array(seeds, sandbox, tmp_path):
    """One byte, STRING (8) -> ARRAY (9), sent gguf-py's reader past the end of the file,
    looping and allocating gigabytes."""
    import gguf

    reader = gguf.GGUFReader(str(seeds["llama"]))
    f = reader.fields["general.name"]
    type_at = f.offset + f.parts[0].nbytes + f.parts[1].nbytes
    data = bytearray(seeds["llama"].read_bytes())
    assert data[type_at] == gguf.GGUFValueType.STRING
    data[type_at] = gguf.GGUFValueType.ARRAY
    path = tmp_path / "string_to_array.gguf"
    path.write_bytes(bytes(data))
    _refused(sandbox, path, "'general.name'")


@pytest.mark.parametrize("value", [2**62, 10**8])
def test_huge_context_length(seeds, sandbox, tmp_path, value):
    """llama.context_length = 2^62 overflowed the rope table and crashed; 1e8 took
    10 s and 3 GB for a 100 KB file."""
    path = gguf_fuzz.rewrite(seeds["llama"], tmp_path / "context.gguf", {"llama.context_length": ("UINT64", value)})
    outcome = sandbox.run(gguf_fuzz.load_and_run, str(path))
    assert outcome.status == "raised" and outcome.error_type == "ValueError", outcome.describe()
    assert "context" in outcome.message or "max_position_embeddings" in outcome.message, outcome.message


def test_tensor_table_pointing_past_the_end(seeds, sandbox, tmp_path):
    layout = gguf_fuzz.layout_of(seeds["llama"])
    data = bytearray(seeds["llama"].read_bytes())
    past_the_end = -(-(len(data) - layout.data_offset) // 32) * 32  # aligned, so only the range is wrong
    struct.pack_into("<Q", data, layout.tensor_offsets[-1], past_the_end)
    path = tmp_path / "past_the_end.gguf"
    path.write_bytes(bytes(data))
    _refused(sandbox, path, "past the end of the file")
