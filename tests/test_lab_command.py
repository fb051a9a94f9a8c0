"""`make lab` failed as root: JupyterLab refuses to start as root without
`--allow-root`. `jitkernel lab` now passes it when run as root, says so, and leaves an
allow-root setting the user gave alone. The command line is built by `cli.lab_command`, tested
here without JupyterLab; a real start runs where the notebook extra is installed."""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from jitkernel import cli

ROOT = Path(__file__).resolve().parent.parent


def test_root_gets_allow_root_and_is_told() -> None:
    command, note = cli.lab_command(Path("/nb"), ["--no-browser"], euid=0)
    assert command == [sys.executable, "-m", "jupyterlab", "--ServerApp.root_dir=/nb", "--allow-root", "--no-browser"]
    assert note is not None and "--allow-root" in note and "root" in note and "\n" not in note


def test_other_users_get_the_command_unchanged() -> None:
    command, note = cli.lab_command(Path("/nb"), ["--port", "8899"], euid=1000)
    assert command == [sys.executable, "-m", "jupyterlab", "--ServerApp.root_dir=/nb", "--port", "8899"]
    assert note is None


@pytest.mark.parametrize("given", ["--allow-root", "--ServerApp.allow_root=True", "--ServerApp.allow_root=False"])
def test_an_allow_root_setting_of_the_user_is_theirs(given: str) -> None:
    command, note = cli.lab_command(Path("/nb"), [given], euid=0)
    assert command[3:] == ["--ServerApp.root_dir=/nb", given] and note is None


def test_the_effective_user_decides_by_default(monkeypatch) -> None:
    monkeypatch.setattr(cli, "_effective_uid", lambda: 0)
    assert "--allow-root" in cli.lab_command(Path("/nb"), [])[0]
    monkeypatch.setattr(cli, "_effective_uid", lambda: 501)
    assert "--allow-root" not in cli.lab_command(Path("/nb"), [])[0]


@pytest.mark.skipif(importlib.util.find_spec("jupyterlab") is None,
                    reason="the notebook extra (JupyterLab) is not installed here")
def test_jitkernel_lab_really_starts_jupyterlab(tmp_path: Path) -> None:
    """As whoever runs the tests (root in a container): the server starts and serves."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTER_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path))
    with socket.socket() as probe:  # a free port (JupyterLab's own choice is not printed the same way everywhere)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "lab.log"
    with open(log, "w") as out:
        server = subprocess.Popen([sys.executable, "-m", "jitkernel", "lab", "--dir", str(tmp_path),
                                   "--no-browser", f"--port={port}", "--ServerApp.token=jk"],
                                  stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + 300  # bounds a hang only
        while f":{port}/" not in log.read_text() and server.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        text = log.read_text()
        assert server.poll() is None, f"JupyterLab exited ({server.returncode}):\n{text}"
        if os.geteuid() == 0:
            assert "started with --allow-root" in text
    finally:
        server.terminate()
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _run(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)


def test_python_dash_m_jitkernel_is_the_command_line():
    done = _run("-m", "jitkernel", "--help")
    assert done.returncode == 0, done.stderr
    for command in ("demo", "install-kernel", "lab"):
        assert command in done.stdout
    assert _run("-m", "jitkernel", "install-kernel", "--help").returncode == 0


# `jitkernel lab` in an environment without JupyterLab (the test extra installs it, so the test hides it).
_WITHOUT_JUPYTERLAB = """
import importlib.util, sys
find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, *args: None if name == "jupyterlab" else find_spec(name, *args)
from jitkernel.cli import main
sys.exit(main(["lab"]))
"""


def test_lab_without_jupyterlab_says_how_to_install_it():
    done = _run("-c", _WITHOUT_JUPYTERLAB, timeout=60)
    assert done.returncode == 2
    assert "JupyterLab is not installed" in done.stderr
    assert "pip install -e '.[notebook]'" in done.stderr and "make lab" in done.stderr
    assert "jitkernel install-kernel --user" in done.stderr


def test_lab_starts_jupyterlab_on_the_notebooks_with_the_arguments_given(tmp_path):
    # A stand-in `jupyterlab` package that prints the command line it got shows what `jitkernel lab`
    # starts (the real one starts in test_jitkernel_lab_really_starts_jupyterlab and tests/test_browser.py).
    stub = tmp_path / "jupyterlab"
    stub.mkdir()
    (stub / "__init__.py").write_text("")
    (stub / "__main__.py").write_text("import json, sys\nprint('JUPYTERLAB', json.dumps(sys.argv[1:]))\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    done = subprocess.run([sys.executable, "-m", "jitkernel", "lab", "--no-browser", "--port", "8899"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    argv = __import__("json").loads(done.stdout.split("JUPYTERLAB", 1)[1])
    as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []  # tests/test_lab_command.py
    assert argv == [f"--ServerApp.root_dir={ROOT / 'notebooks'}", *as_root, "--no-browser", "--port", "8899"]
    assert "kernel: jitkernel" in done.stdout
    wrong = _run("-m", "jitkernel", "demo", "--no-browser")
    assert wrong.returncode == 2 and "unrecognized arguments: --no-browser" in wrong.stderr


def test_notebook_extra_is_optional_and_the_test_extra_brings_it():
    """JupyterLab is not a dependency of the package; the tests need it (and Playwright) for the
    notebook UI test, so the test extra includes the notebook extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert any(r.startswith("jupyterlab") for r in extras["notebook"])
    assert not any("jupyter" in r for r in project["dependencies"])
    assert "jitkernel[notebook]" in extras["test"] and any(r.startswith("playwright") for r in extras["test"])


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_installs_the_notebook_extra_and_make_test_the_test_extra(tmp_path):
    # The recipes as a fresh clone runs them: a virtual environment that does not exist yet (in
    # .venv, `make -n lab` printed no install once `make lab` had run there).
    fresh = [f"VENV={tmp_path / 'venv'}"]
    lab = subprocess.run(["make", "-n", "lab", *fresh], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert lab.returncode == 0, lab.stderr
    assert "-e '.[notebook]'" in lab.stdout and re.search(r"\bjitkernel lab\b", lab.stdout)
    test = subprocess.run(["make", "-n", "test", *fresh], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert test.returncode == 0 and "-e '.[test]'" in test.stdout and "notebook" not in test.stdout


def test_readme_says_how_to_open_the_notebooks():
    readme = (ROOT / "README.md").read_text()
    assert "make lab" in readme and "pip install -e '.[notebook]'" in readme
    assert ".venv/bin/jitkernel" in readme and "python -m jitkernel" in readme
    assert "jitkernel install-kernel --user" in readme


def test_nothing_advertises_a_gpu_backend_that_does_not_exist():
    """The GPU backend the description and the `gpu` extra name exists (backend "cuda", through
    PyCUDA), and the README says it has not run on a real GPU until a GPU run is recorded."""
    from jitkernel.backends import backend_names
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    if "cuda" in project["description"].lower():
        assert "cuda" in backend_names()  # known; needs PyCUDA + a GPU
    assert project.get("optional-dependencies", {}).get("gpu", ["pycuda"])[0].startswith("pycuda")
    readme = (ROOT / "README.md").read_text()
    assert "accelerators" not in readme.lower()
    if "not yet measured on a GPU" in (ROOT / "docs" / "gpu.md").read_text():
        assert "has not yet run on a real GPU" in readme
