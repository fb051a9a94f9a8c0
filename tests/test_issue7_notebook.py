"""Issue 7, notebook side: how the notebooks are opened (item 18), the profiler telling failed
traces and redefined functions apart (item 21), the demo's fused-function timing (item 24)."""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)


# -- item 18: opening the notebooks -------------------------------------------------------------
def test_python_dash_m_jitkernel_is_the_command_line():
    done = _run("-m", "jitkernel", "--help")
    assert done.returncode == 0, done.stderr
    for command in ("demo", "install-kernel", "lab"):
        assert command in done.stdout
    assert _run("-m", "jitkernel", "install-kernel", "--help").returncode == 0


@pytest.mark.skipif(importlib.util.find_spec("jupyterlab") is not None,
                    reason="JupyterLab is installed here: `jitkernel lab` would open it")
def test_lab_without_jupyterlab_says_how_to_install_it():
    done = _run("-m", "jitkernel", "lab", timeout=60)
    assert done.returncode == 2
    assert "JupyterLab is not installed" in done.stderr
    assert "pip install -e '.[notebook]'" in done.stderr and "make lab" in done.stderr
    assert "jitkernel install-kernel --user" in done.stderr


def test_notebook_extra_is_optional_and_not_part_of_test():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(r.startswith("jupyterlab") for r in extras["notebook"])
    assert not any("jupyter" in r for r in extras["test"])


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_installs_the_extra_and_make_test_does_not():
    lab = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert lab.returncode == 0, lab.stderr
    assert "-e '.[notebook]'" in lab.stdout and re.search(r"\bjitkernel lab\b", lab.stdout)
    test = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert test.returncode == 0 and "notebook" not in test.stdout


def test_readme_says_how_to_open_the_notebooks():
    readme = (ROOT / "README.md").read_text()
    assert "make lab" in readme and "pip install -e '.[notebook]'" in readme
    assert ".venv/bin/jitkernel" in readme and "python -m jitkernel" in readme
    assert "jitkernel install-kernel --user" in readme


def test_nothing_advertises_a_gpu_backend_that_does_not_exist():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "cuda" not in project["description"].lower()
    assert "gpu" not in project.get("optional-dependencies", {})
    assert "accelerators" not in (ROOT / "README.md").read_text().lower()
