"""Loaded by pytest for every test and doctest in the repository, before any of them runs.

The suite never touches the user's real compile cache: every test process (and every
subprocess or Jupyter kernel it starts, which inherit the environment) caches machine code in
a temporary directory made for this run and removed after it."""
from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest

_CACHE_ROOT = tempfile.mkdtemp(prefix="jitkernel-test-cache-")
os.environ["JITKERNEL_CACHE_DIR"] = _CACHE_ROOT


def pytest_sessionfinish(session, exitstatus) -> None:
    shutil.rmtree(_CACHE_ROOT, ignore_errors=True)


# magics/ and profiler/ install as jitkernel.magics and jitkernel.profiler (pyproject.toml's package-dir).
# Left to itself, pytest names their doctest modules after the folder (`magics.cell`) and imports a
# second copy of each under that top-level name; these hooks make it use the installed modules.
_ROOT = Path(__file__).resolve().parent
_INSTALLED_AS = {"magics": "jitkernel.magics", "profiler": "jitkernel.profiler"}  # folder -> package name


def _installed_module_name(path: Path) -> str | None:
    """`jitkernel.magics.cell` for magics/cell.py; None for a file outside the two folders."""
    try:
        parts = path.resolve().relative_to(_ROOT).with_suffix("").parts
    except ValueError:
        return None
    if len(parts) < 2 or parts[0] not in _INSTALLED_AS or path.suffix != ".py":
        return None
    names = [_INSTALLED_AS[parts[0]], *parts[1:]]
    return ".".join(names[:-1] if names[-1] == "__init__" else names)


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A plain directory for the two folders: as a Package, pytest would import their
    `__init__.py` as the top-level `magics`/`profiler`."""
    if path.resolve().parent == _ROOT and path.name in _INSTALLED_AS:
        return pytest.Dir.from_parent(parent, path=path)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    """The doctest modules of the two folders get the module imported under its installed name."""
    collectors = yield
    name = _installed_module_name(file_path)
    if name is not None:
        for collector in collectors:
            if isinstance(collector, pytest.Module):
                collector.obj = importlib.import_module(name)
    return collectors
