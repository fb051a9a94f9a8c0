"""Every relative link of the README and docs/ resolves: the file exists and a `#anchor` names
one of its headings (scripts/check_doc_links.py; a broken link prints its file and target)."""
from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_links_of_the_readme_and_docs_resolve():
    files = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
    out = subprocess.run([sys.executable, "scripts/check_doc_links.py", *files], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_broken_link_is_reported(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[gone](missing.md) and [anchor](#no-such-heading)\n")
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_doc_links.py"), str(page)],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "missing.md" in out.stdout and "no-such-heading" in out.stdout, out.stdout
