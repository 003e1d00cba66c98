"""The documentation site's pages (docs/, built by mkdocs.yml): their Python examples run as
written (with the same ``print(expr)  # -> text`` check as the README's), their links lead to
files and headings that exist, and every benchmark result is a dated page with its command and
machine, listed newest first on the benchmarks page and in the site's navigation."""

import re

import pytest
from doc_examples import ROOT, broken_links, python_blocks, run_example

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
BLOCKS = [(page, code) for page in PAGES for code in python_blocks(page)]
RESULTS = sorted((DOCS / "benchmarks").glob("20*.md"))
DATED = re.compile(r"^(\d{4}-\d{2}-\d{2})-[a-z0-9_-]+\.md$")


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    """A small GPT-2 with a tokenizer, standing in for the examples' path/to/gpt2."""
    from hf_models import save_text_gpt2

    directory = tmp_path_factory.mktemp("docs_gpt2")
    save_text_gpt2(directory)
    return directory


def test_the_docs_have_examples():
    assert len(BLOCKS) >= 10
    assert sum("# -> " in code for _, code in BLOCKS) >= 5


@pytest.mark.parametrize("page, code", BLOCKS, ids=[f"{p.relative_to(ROOT)}:{i}" for i, (p, _) in enumerate(BLOCKS)])
def test_docs_example_runs(page, code, gpt2_dir):
    run_example(code, str(page.relative_to(ROOT)), gpt2_dir)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_docs_links_lead_to_files_and_headings_that_exist(page):
    assert not broken_links(page)


def test_every_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:", 1)[1]
    for page in PAGES:
        assert f" {page.relative_to(DOCS)}\n" in nav + "\n", page


@pytest.mark.parametrize("result", RESULTS, ids=[p.name for p in RESULTS])
def test_a_benchmark_result_is_dated_with_its_command_and_machine(result):
    date = DATED.match(result.name)
    assert date, f"{result.name}: a result page is named YYYY-MM-DD-what.md"
    text = result.read_text()
    assert text.startswith(f"# {date[1]}: "), f"{result.name}: its title starts with its date"
    assert "- **Command:** " in text and "- **Machine:** " in text, f"{result.name} says its command and machine"


def test_benchmark_results_are_listed_newest_first():
    """On the benchmarks page and in the navigation: every result, by date, newest first."""
    index = (DOCS / "benchmarks" / "index.md").read_text()
    nav = (ROOT / "mkdocs.yml").read_text()
    for text in [index, nav]:
        listed = re.findall(r"(20\d\d-\d\d-\d\d-[a-z0-9_-]+)\.md", text)
        assert sorted(listed) == sorted(p.stem for p in RESULTS)
        dates = [name[:10] for name in listed]
        assert dates == sorted(dates, reverse=True), dates


def test_results_are_stated_not_narrated():
    """A figure measured again replaces its page: no page compares with a "previous build"."""
    for page in [ROOT / "README.md", *PAGES]:
        assert "previous build" not in page.read_text(), page
