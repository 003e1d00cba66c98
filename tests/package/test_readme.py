"""The README's Python examples run as written, and print what their ``# ->`` comments say.

A line ``print(expr)  # -> text`` in a README block is checked: ``str(expr)`` must equal
``text``. Other comments describe; they are not outputs."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
PRINTED = re.compile(r"^(?P<indent>\s*)print\((?P<expr>.*)\)\s+# -> (?P<text>.*)$", re.M)


def _checked(code: str) -> str:
    """``code`` with each ``print(expr)  # -> text`` turned into a check of ``str(expr)``."""
    return PRINTED.sub(lambda m: f"{m['indent']}__readme_output({m['expr']}, {m['text']!r})", code)


def _readme_output(value, expected: str) -> None:
    assert str(value) == expected, f"README says {expected!r}, the code prints {str(value)!r}"


def test_readme_has_examples():
    assert len(BLOCKS) >= 2
    assert any(PRINTED.search(block) for block in BLOCKS), "no `# ->` output comment to check"


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
    exec(compile(_checked(code), f"README.md python block {index}", "exec"), {"__readme_output": _readme_output})
