"""A real in-process IPython shell with the jitkernel extension loaded, for the magics tests.

`extension_shell` restores what the extension changes (the default backend, the event
subscribers) so that one test's shell never leaks into the next; `run`/`ok` run a cell as the
user does and return its captured text without ANSI colours.
"""
from __future__ import annotations

import contextlib
import re
from typing import Iterator

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import jitkernel as jk
from jitkernel import profiler
from jitkernel import events

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@contextlib.contextmanager
def loaded_shell(setup: str = "import numpy as np") -> Iterator[InteractiveShell]:
    """The shell with the extension loaded, after running `setup`; the extension unloaded and
    the default backend and event subscribers restored afterwards."""
    backend = jk.config.default_backend
    subscribers = list(events.SUBSCRIBERS)
    shell = InteractiveShell.instance()
    assert shell.extension_manager.load_extension("jitkernel") is None
    shell.run_cell(setup)
    try:
        yield shell
    finally:
        shell.extension_manager.unload_extension("jitkernel")
        InteractiveShell.clear_instance()
        jk.config.update("default_backend", backend)
        events.SUBSCRIBERS[:] = subscribers


@contextlib.contextmanager
def extension_shell(tmp_path, monkeypatch, setup: str = "import numpy as np") -> Iterator[InteractiveShell]:
    """`loaded_shell` with a temporary compile cache and working directory and a fresh profiler."""
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    with loaded_shell(setup) as shell:
        profiler.reset()
        yield shell


def run(ip: InteractiveShell, cell: str):
    """Run a cell like the user does; returns (ExecutionResult, captured stdout without ANSI, outputs)."""
    with capture_output() as cap:
        result = ip.run_cell(cell)
    return result, _ANSI.sub("", cap.stdout + cap.stderr), cap.outputs


def ok(ip: InteractiveShell, cell: str):
    """`run`, asserting that the cell succeeded (the failure shows the cell's output)."""
    result, out, outputs = run(ip, cell)
    assert result.success, out
    return result, out, outputs
