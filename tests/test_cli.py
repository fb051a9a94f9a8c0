"""The `jitkernel` command line's own options (its subcommands have their own test modules:
test_notebooks.py for `demo`, test_kernelspec.py for `install-kernel`, test_lab_command.py for `lab`)."""
from __future__ import annotations

import subprocess
import sys

import pytest

import jitkernel as jk
from jitkernel.cli import main


def test_version_option_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"jitkernel {jk.__version__}"


def test_version_through_python_dash_m():
    done = subprocess.run([sys.executable, "-m", "jitkernel", "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"jitkernel {jk.__version__}"
