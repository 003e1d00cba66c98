"""The README (the first-visit page; the guide is docs/): its Python examples run as written and
print what their ``# ->`` comments say, its table of contents names every section, and its
links lead to files and headings that exist."""

import pytest
from doc_examples import ROOT, anchor, broken_links, python_blocks, run_example

README = ROOT / "README.md"
BLOCKS = python_blocks(README)


def test_readme_has_examples():
    assert len(BLOCKS) >= 2
    assert any("# -> " in block for block in BLOCKS), "no `# ->` output comment to check"


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index):
    run_example(BLOCKS[index], f"README.md python block {index}")


def test_readme_has_a_table_of_contents_naming_every_section():
    text = README.read_text()
    sections = [line[3:].strip() for line in text.splitlines() if line.startswith("## ") and line != "## Contents"]
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    assert sections
    for section in sections:
        assert f"[{section}](#{anchor(section)})" in contents, section


def test_readme_links_lead_to_files_and_headings_that_exist():
    assert not broken_links(README)


def test_readme_points_to_the_guide():
    """The README is short: the guide's pages are linked from it, not copied into it."""
    lines = README.read_text().splitlines()
    assert len(lines) <= 400, len(lines)
    for page in ["docs/installation.md", "docs/guide/sampling.md", "docs/guide/external-logits.md",
                 "docs/guide/generation.md", "docs/guide/server.md", "docs/architecture.md",
                 "docs/benchmarks/index.md"]:
        assert f"]({page}" in README.read_text(), page
