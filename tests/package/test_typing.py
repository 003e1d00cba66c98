"""kvgen's public API type-checks as users write it: the Python blocks of the README and of the
documentation pages (docs/) and a script over the API (tests/package/typecheck/public_api.py)
pass mypy, and its deliberate mistakes are caught."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
DOC_BLOCKS = [(page, block) for page in DOC_PAGES
              for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)]
# kvgen and what the API names are checked; torch and transformers (used by the documentation's
# examples) are read as Any: analysing them would take minutes and check nothing of kvgen's.
MYPY_CONFIG = """\
[mypy]
follow_imports = silent
warn_unused_ignores = True
[mypy-torch.*,transformers.*,matplotlib.*]
follow_imports = skip
ignore_missing_imports = True
# the test helpers that the adding-a-family page's test example imports (tests/support/)
[mypy-family_check,family_models]
ignore_missing_imports = True
"""


def mypy(targets: list[str], tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    config = tmp_path / "mypy.ini"
    config.write_text(MYPY_CONFIG)
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--config-file", str(config), *flags,
                           *targets], capture_output=True, text=True, cwd=tmp_path)


def test_documentation_blocks_and_the_api_script_type_check(tmp_path):
    files = [ROOT / "tests" / "package" / "typecheck" / "public_api.py"]
    for index, (page, block) in enumerate(DOC_BLOCKS):
        files.append(tmp_path / f"{page.stem.replace('-', '_')}_block_{index}.py")
        files[-1].write_text(block)
    out = mypy([str(f) for f in files], tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_generation_layer_is_fully_annotated(tmp_path):
    """Generator, ModelGenerator, the config's keyword face and the results: every function
    annotated, and mypy finds nothing wrong in them."""
    modules = ["kvgen._generator", "kvgen.generation.model_generator", "kvgen._config", "kvgen.generation.results"]
    out = mypy([arg for m in modules for arg in ("-m", m)], tmp_path, "--disallow-untyped-defs",
               "--disallow-incomplete-defs")
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("line, error", [
    ("kvgen.GenerationConfig(temprature=0.5)", 'did you mean "temperature"'),
    ("kvgen.Generator(kvgen.GenerationConfig()).chat([])", '"Generator" has no attribute "chat"'),
])
def test_mistakes_fail_type_checking(tmp_path, line, error):
    script = tmp_path / "mistake.py"
    script.write_text(f"import kvgen\n{line}\n")
    out = mypy([str(script)], tmp_path)
    assert out.returncode == 1 and error in out.stdout, out.stdout + out.stderr
