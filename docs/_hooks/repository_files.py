"""MkDocs hook: a page line ``<!-- file: PATH -->`` is replaced by the repository file PATH
(relative to the repository root), so that a text kept beside the code it describes
(benchmarks/PROTOCOL.md beside the benchmark scripts) is on the site without a copy.

The file's own ``# title`` is dropped (the page has its own). Its relative links are made
relative to the repository root, then rewritten for the site: a file that is itself a page
(``FILE_PAGES``) links to that page; any other repository file becomes its path in code, since
the site has no copy of it. A PATH that does not exist fails the build.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mkdocs.exceptions import PluginError

DIRECTIVE = re.compile(r"^<!-- file: *(.*?) *-->$", re.M)
LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
#: repository files that are pages of the site (the page that includes each)
FILE_PAGES = {"benchmarks/PROTOCOL.md": "benchmarks/protocol.md", "benchmarks/README.md": "benchmarks/scripts.md"}


def _relative(target_page: str, from_page: str) -> str:
    return os.path.relpath(target_page, os.path.dirname(from_page) or ".").replace(os.sep, "/")


def _link_for_site(label: str, target: str, folder: Path, root: Path, page: str) -> str:
    """The markdown of a link of a file in ``folder`` (relative to ``root``), seen from ``page``."""
    if "://" in target or target.startswith(("#", "mailto:", "/")):
        return f"[{label}]({target})"
    path, _, anchor = target.partition("#")
    path = os.path.normpath(folder / path).replace(os.sep, "/")
    if path in FILE_PAGES:
        return f"[{label}]({_relative(FILE_PAGES[path], page)}{'#' + anchor if anchor else ''})"
    if not (root / path).exists():
        raise PluginError(f"{page}: the included file links to {target}, which does not exist")
    if label.strip("`") == path:
        return f"`{path}`"
    return label if label.startswith("`") else f"{label} (`{path}`)"


def _included(path: Path, root: Path, page: str) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    folder = path.parent.relative_to(root)
    out, fenced = [], False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        if not fenced:
            line = LINK.sub(lambda m: _link_for_site(m[1], m[2], folder, root, page), line)
        out.append(line)
    return "\n".join(out) + "\n"


def on_page_markdown(markdown, page, config, files):
    """Replace each ``<!-- file: PATH -->`` line with the file's text, its links fixed."""
    root = Path(config["config_file_path"]).parent

    def insert(match: re.Match) -> str:
        path = root / match[1]
        if not path.is_file():
            raise PluginError(f"{page.file.src_uri}: no file {match[1]} (a <!-- file: --> line names it)")
        return _included(path, root, page.file.src_uri)

    return DIRECTIVE.sub(insert, markdown)
