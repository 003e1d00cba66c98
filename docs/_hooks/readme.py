"""MkDocs hook: the site's guide pages are made of the README's own sections, not copies.

A page line ``<!-- readme: TITLE -->`` is replaced by the body of the README section whose
heading is TITLE (up to the next heading of the same or a higher level), its subsection
headings raised so that the section's own level becomes the page's ``#``; ``<!-- readme:
TITLE | intro -->`` takes only the text before its first subsection, and ``<!-- readme: |
preamble -->`` the README's text between its title and its first section. ``<!-- file: PATH
-->`` inserts a repository file whole (benchmarks/PROTOCOL.md).

Links are rewritten for the site: a README anchor (``#structured-output``) goes to the page
that holds that section, a repository file that is a page to that page, any other
repository file becomes its path in code (the site has no copy of it). Every README
section must be on some page; one left out fails the build (``mkdocs build --strict``), so a
new README section cannot go missing from the site.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from mkdocs.exceptions import PluginError

DIRECTIVE = re.compile(r"^<!-- (readme|file): *(.*?) *(?:\| *(intro|preamble) *)?-->$", re.M)
HEADING = re.compile(r"^(#{1,6}) +(.+?) *$")
LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
# repository files that are pages of the site
FILE_PAGES = {"benchmarks/PROTOCOL.md": "benchmarks-protocol.md", "benchmarks/README.md": "benchmarks-scripts.md"}


@dataclass
class Section:
    title: str
    level: int
    start: int  # line index of the heading
    end: int  # line index after the section (subsections included)
    intro_end: int  # line index of the first subsection heading, or end
    children: list[str] = field(default_factory=list)


def slug(title: str) -> str:
    """GitHub's and Python-Markdown's anchor for a heading (they agree on the README's)."""
    text = re.sub(r"[^\w\s-]", "", title.replace("`", "")).strip().lower()
    return re.sub(r"[\s]+", "-", text)


def _sections(lines: list[str]) -> dict[str, Section]:
    headings, fenced = [], False
    for index, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match:
            headings.append((index, len(match[1]), match[2]))
    sections: dict[str, Section] = {}
    for position, (index, level, title) in enumerate(headings):
        later = headings[position + 1 :]
        end = next((i for i, lvl, _ in later if lvl <= level), len(lines))
        intro_end = later[0][0] if later and later[0][0] < end else end
        section = Section(title, level, index, end, intro_end)
        section.children = [t for i, lvl, t in later if i < end and lvl == level + 1]
        sections[title] = section
    return sections


class _Readme:
    def __init__(self, root: Path):
        self.root = root
        self.lines = (root / "README.md").read_text(encoding="utf-8").splitlines()
        self.sections = _sections(self.lines)
        first = min((s.start for s in self.sections.values() if s.level >= 2), default=len(self.lines))
        self.preamble = (1, first)  # after the "# kvgen" title
        self.page_of_slug: dict[str, str] = {}  # README anchor -> page (with its anchor if kept)
        self.placed: set[str] = set()

    def body(self, title: str, part: str | None) -> list[str]:
        if part == "preamble":
            return self.lines[self.preamble[0] : self.preamble[1]]
        if title not in self.sections:
            raise PluginError(f"README.md has no section titled {title!r} (a <!-- readme: --> line names it)")
        section = self.sections[title]
        stop = section.intro_end if part == "intro" else section.end
        shift = section.level - 1
        out = []
        fenced = False
        for line in self.lines[section.start + 1 : stop]:
            if line.startswith("```"):
                fenced = not fenced
            match = None if fenced else HEADING.match(line)
            out.append("#" * (len(match[1]) - shift) + " " + match[2] if match else line)
        return out

    def place(self, page: str, title: str, part: str | None) -> None:
        """Record which README sections (and their anchors) ``page`` holds."""
        if part == "preamble":
            self.placed.add("")
            return
        section = self.sections.get(title)
        if section is None:
            return
        self.placed.add(title)
        self.page_of_slug[slug(title)] = page
        if part == "intro":
            return
        for other in self.sections.values():
            if section.start < other.start < section.end:
                self.placed.add(other.title)
                self.page_of_slug[slug(other.title)] = f"{page}#{slug(other.title)}"


_readme: _Readme | None = None


def on_files(files, config):
    """Read the README once and map every section a page includes to that page."""
    global _readme
    root = Path(config["config_file_path"]).parent
    _readme = _Readme(root)
    for file in files.documentation_pages():
        text = Path(file.abs_src_path).read_text(encoding="utf-8")
        for kind, title, part in DIRECTIVE.findall(text):
            if kind == "readme":
                _readme.place(file.src_uri, title, part or None)
    missing = [
        s.title
        for s in _readme.sections.values()
        if s.level >= 2 and s.title not in _readme.placed and s.title != "Contents"
    ]
    if missing:
        raise PluginError(
            "README sections on no page of the site (add a <!-- readme: TITLE --> line to a page in docs/): "
            + ", ".join(missing)
        )
    return files


def _from_repository_root(text: str, folder: Path) -> str:
    """``text``'s relative links (relative to ``folder``) made relative to the repository root."""

    def fix(match: re.Match) -> str:
        label, target = match[1], match[2]
        if "://" in target or target.startswith(("#", "mailto:", "/")):
            return match[0]
        return f"[{label}]({os.path.normpath(folder / target)})"

    return LINK.sub(fix, text)


def _relative(target_page: str, from_page: str) -> str:
    depth = from_page.count("/")
    return "../" * depth + target_page


def _rewrite_links(text: str, page: str) -> str:
    assert _readme is not None

    def fix(match: re.Match) -> str:
        label, target = match[1], match[2]
        if "://" in target or target.startswith("mailto:"):
            return match[0]
        if target.startswith("#"):
            where = _readme.page_of_slug.get(target[1:])
            if where is None:
                return match[0]
            where_page, _, anchor = where.partition("#")
            if where_page == page:
                return f"[{label}](#{anchor})" if anchor else label
            return f"[{label}]({_relative(where, page)})"
        path, _, anchor = target.partition("#")
        if path in FILE_PAGES:
            return f"[{label}]({_relative(FILE_PAGES[path], page)}{'#' + anchor if anchor else ''})"
        if (_readme.root / path).exists():
            if label.strip("`") == path:
                return f"`{path}`"
            return label if label.startswith("`") else f"{label} (`{path}`)"
        return match[0]

    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        out.append(line if fenced else LINK.sub(fix, line))
    return "\n".join(out) + "\n"


def on_page_markdown(markdown, page, config, files):
    """Replace the directives with the README's sections (or files), then fix the links."""
    assert _readme is not None

    def insert(match: re.Match) -> str:
        kind, title, part = match[1], match[2], match[3]
        if kind == "file":
            path = _readme.root / title
            if not path.is_file():
                raise PluginError(f"{page.file.src_uri}: no file {title}")
            lines = path.read_text(encoding="utf-8").splitlines()
            if lines and lines[0].startswith("# "):
                lines = lines[1:]  # the page has its own title
            text = _from_repository_root("\n".join(lines), path.parent.relative_to(_readme.root))
        else:
            text = "\n".join(_readme.body(title, part or None))
        return _rewrite_links(text, page.file.src_uri)  # the page's own text keeps its links

    return DIRECTIVE.sub(insert, markdown)
