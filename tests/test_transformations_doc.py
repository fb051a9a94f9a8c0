"""The runnable examples of docs/transformations.md's general sections (intro, overview,
composition, notebooks, performance) run and print what the page says. The sections that other
parts of the engine own are tested by their own files."""
from __future__ import annotations

import doctest
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent / "docs" / "transformations.md"
GENERAL_SECTIONS = ("Overview", "Composition and compilation", "In notebooks", "Performance")


def general_text() -> str:
    intro, *sections = PAGE.read_text().split("\n## ")
    mine = [s for s in sections if s.splitlines()[0].strip() in GENERAL_SECTIONS]
    assert len(mine) == len(GENERAL_SECTIONS), [s.splitlines()[0] for s in sections]
    return "\n## ".join([intro, *mine])


def test_general_sections_examples_run():
    test = doctest.DocTestParser().get_doctest(general_text(), {}, "transformations.md", str(PAGE), 0)
    assert len(test.examples) >= 15, "the overview lost its examples"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0, f"{runner.failures} of {len(test.examples)} examples failed (run doctest on the page)"
