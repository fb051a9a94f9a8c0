"""`make lab` failed as root: JupyterLab refuses to start as root without
`--allow-root`. `jitkernel lab` now passes it when run as root, says so, and leaves an
allow-root setting the user gave alone. The command line is built by `cli.lab_command`, tested
here without JupyterLab; a real start runs where the notebook extra is installed."""
from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
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
