"""A tiny random Qwen3 that can think: SmolLM2's tokenizer plus ``<think>`` / ``</think>`` and a
Qwen3-style chat template (tests/data), for the reasoning tests of kvgen serve and kvgen batch."""

from __future__ import annotations

import json
from pathlib import Path

from family_models import random_family_model
from llama_cpp_convert import save_smollm2_tokenizer

import kvgen

TEMPLATE = (Path(__file__).parents[1] / "data" / "qwen3_style_chat_template.jinja").read_text()


def thinking_model(directory: Path, smollm2_file: Path, markers_are_tokens: bool) -> kvgen.Model:
    """The tiny random Qwen3 in ``directory``: SmolLM2's tokenizer, with <think> and </think>
    added (plain added tokens, as Qwen3's are) when ``markers_are_tokens``, else spelled over
    several tokens; the vocabulary sized to it; the Qwen3-style template."""
    from tokenizers import AddedToken, Tokenizer

    save_smollm2_tokenizer(directory, smollm2_file)
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    if markers_are_tokens:
        tokenizer.add_tokens([AddedToken("<think>", normalized=False), AddedToken("</think>", normalized=False)])
        tokenizer.save(str(directory / "tokenizer.json"))
    config = json.loads((directory / "tokenizer_config.json").read_text())
    config["chat_template"] = TEMPLATE
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    random_family_model("qwen3", vocab_size=tokenizer.get_vocab_size(), max_position_embeddings=512,
                        tie_word_embeddings=True).save_pretrained(directory)
    return kvgen.Model.load(directory)
