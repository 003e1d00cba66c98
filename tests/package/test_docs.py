"""The documentation site's own pages (docs/): their Python examples run as written.

Most guide pages are the README's sections, inserted at build time (docs/_hooks/readme.py),
whose examples tests/package/test_readme.py runs; the blocks written in docs/ itself are
run here, with the same ``print(expr)  # -> text`` check."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md"))
BLOCKS = [(page, code) for page in PAGES for code in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)]
PRINTED = re.compile(r"^(?P<indent>\s*)print\((?P<expr>.*)\)\s+# -> (?P<text>.*)$", re.M)
DIRECTIVE = re.compile(r"^<!-- (readme|file): *(.*?) *(?:\| *(intro|preamble) *)?-->$", re.M)


def _output(value, expected: str) -> None:
    assert str(value) == expected, f"the page says {expected!r}, the code prints {str(value)!r}"


def test_the_docs_have_examples():
    assert BLOCKS


@pytest.mark.parametrize("page, code", BLOCKS, ids=[f"{p.relative_to(ROOT)}:{i}" for i, (p, _) in enumerate(BLOCKS)])
def test_docs_example_runs(page, code):
    checked = PRINTED.sub(lambda m: f"{m['indent']}__docs_output({m['expr']}, {m['text']!r})", code)
    exec(compile(checked, str(page.relative_to(ROOT)), "exec"), {"__docs_output": _output})


def test_every_readme_section_a_page_names_exists():
    """A page's ``<!-- readme: TITLE -->`` names a README heading (mkdocs fails the build otherwise;
    this says so without mkdocs)."""
    lines = (ROOT / "README.md").read_text().splitlines()
    headings = {line.lstrip("#").strip() for line in lines if line.startswith("#")}
    for page in PAGES:
        for kind, title, part in DIRECTIVE.findall(page.read_text()):
            if kind == "readme" and part != "preamble":
                assert title in headings, f"{page.relative_to(ROOT)} names README section {title!r}"
            if kind == "file":
                assert (ROOT / title).is_file(), f"{page.relative_to(ROOT)} names {title}"
