"""The documentation's Python examples and links, for tests/package/test_readme.py and
test_docs.py: the ``python`` blocks of a Markdown file, run as written with each
``print(expr)  # -> text`` line checked (``str(expr)`` must equal ``text``), and its relative
links, which must name a file of the repository and, with ``#anchor``, one of its headings."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRINTED = re.compile(r"^(?P<indent>\s*)print\((?P<expr>.*)\)\s+# -> (?P<text>.*)$", re.M)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
#: the stand-in path the examples load a GPT-2 directory from
GPT2_PATH = '"path/to/gpt2"'


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


def _check_output(value, expected: str) -> None:
    assert str(value) == expected, f"the documentation says {expected!r}, the code prints {str(value)!r}"


def run_example(code: str, name: str, gpt2_dir: Path | None = None) -> None:
    """Runs ``code`` with its ``# ->`` outputs checked; transformers' deprecations fail it (the
    examples use transformers' current API)."""
    if gpt2_dir is not None:
        code = code.replace(GPT2_PATH, repr(str(gpt2_dir)))
    checked = PRINTED.sub(lambda m: f"{m['indent']}__doc_output({m['expr']}, {m['text']!r})", code)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*(deprecated|will be removed).*", category=FutureWarning)
        warnings.filterwarnings("error", message=".*(deprecated|will be removed).*", category=DeprecationWarning)
        exec(compile(checked, name, "exec"), {"__doc_output": _check_output})


def anchor(heading: str) -> str:
    """The anchor GitHub and Python-Markdown give a heading (they agree on these pages')."""
    text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
    return re.sub(r"\s+", "-", text)


def anchors(path: Path) -> set[str]:
    """The anchors of ``path``'s headings (outside code blocks)."""
    found, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            found.add(anchor(line.lstrip("#").strip()))
    return found


def broken_links(path: Path) -> list[str]:
    """The relative links of ``path`` that name no file of the repository, or no heading of it,
    or that lead outside the repository."""
    broken, fenced = [], False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in LINK.findall(line):
            if "://" in target or target.startswith("mailto:"):
                continue
            file, _, fragment = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            if not linked.is_relative_to(ROOT) or not linked.exists():
                broken.append(target)
            elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                broken.append(target)
    return broken
