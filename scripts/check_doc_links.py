#!/usr/bin/env python3
"""Check that the relative links of Markdown files resolve: the file exists and, for a link with
`#anchor`, the target has a heading with that GitHub-style anchor.

    python scripts/check_doc_links.py README.md docs/*.md

Prints one line per broken link and exits with status 1 when there is any. Links with a scheme
(`https:`, `mailto:`) are not checked: nothing outside the repository is reachable from CI.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

_FENCE = re.compile(r"```.*?```", re.S)
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"#{1,6} ")


def heading_anchors(markdown: Path) -> set[str]:
    """The anchors GitHub gives the headings of `markdown`: lower case, punctuation other than
    `-` and `_` dropped, spaces as `-`, and `-1`, `-2`, ... for repeated headings."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for line in _FENCE.sub("", markdown.read_text()).splitlines():
        if not _HEADING.match(line):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def broken_links(markdown: Path) -> list[str]:
    """The relative link targets of `markdown` (outside code fences) that do not resolve."""
    broken = []
    for target in _LINK.findall(_FENCE.sub("", markdown.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # a URL: not checked (no network in CI)
            continue
        path, _, anchor = target.partition("#")
        destination = (markdown.parent / path) if path else markdown
        if not destination.exists() or (anchor and anchor not in heading_anchors(destination)):
            broken.append(target)
    return broken


def main(paths: list[str]) -> int:
    failures = [f"{path}: {target}" for path in paths for target in broken_links(Path(path))]
    for failure in failures:
        print(f"broken link: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
