"""The linter passes: `ruff check .` from the repository root, with the rules in pyproject.toml's
`[tool.ruff]` (pyflakes, and pycodestyle's import, statement and syntax errors)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_check_passes():
    # ruff is in the `test` extra; run through this Python so the venv's ruff is the one used.
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"ruff check . failed (exit {done.returncode}):\n{done.stdout}{done.stderr}"
