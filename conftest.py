"""Loaded by pytest for every test and doctest in the repository, before any of them runs.

The suite never touches the user's real compile cache: every test process (and every
subprocess or Jupyter kernel it starts, which inherit the environment) caches machine code in
a temporary directory made for this run and removed after it."""
from __future__ import annotations

import os
import shutil
import tempfile

_CACHE_ROOT = tempfile.mkdtemp(prefix="jitkernel-test-cache-")
os.environ["JITKERNEL_CACHE_DIR"] = _CACHE_ROOT


def pytest_sessionfinish(session, exitstatus) -> None:
    shutil.rmtree(_CACHE_ROOT, ignore_errors=True)
