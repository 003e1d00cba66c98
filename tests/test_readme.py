"""The README's Python examples run as written."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_has_examples():
    assert len(BLOCKS) >= 2


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A small GPT-2 with a tokenizer, standing in for the README's path/to/gpt2."""
    from hf_models import save_text_gpt2

    directory = tmp_path_factory.mktemp("readme_gpt2")
    save_text_gpt2(directory)
    return directory


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, model_dir):
    code = BLOCKS[index].replace('"path/to/gpt2"', repr(str(model_dir)))
    exec(compile(code, f"README.md python block {index}", "exec"), {})
