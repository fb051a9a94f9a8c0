"""Tracebacks show the user's frames, not the engine's (in scripts and in %%jit cells), with the
full traceback on request."""
from __future__ import annotations

import os
import re
import traceback

import numpy as np
import pytest

import jitkernel as jk
from helpers import run_cell
from jitkernel.tracebacks import is_engine_file


class MyError(Exception):
    pass


def _frames(exc):
    return [(f.name, f.line) for f in traceback.extract_tb(exc.__traceback__)]


def _no_engine(exc):
    files = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
    assert not [f for f in files if is_engine_file(f)], files


def user_branch(x):
    if x.sum() > 0:
        return x
    return -x


def user_reshape(x):
    return x.reshape(7) + 1


def user_raises(x):
    y = x + 1  # noqa: F841 (a line before the raise)
    raise MyError("my own message")


@pytest.mark.parametrize("fn,error,line", [
    (user_branch, jk.TracerBoolConversionError, "if x.sum() > 0:"),
    (user_reshape, ValueError, "return x.reshape(7) + 1"),
    (user_raises, MyError, 'raise MyError("my own message")'),
])
def test_errors_show_the_user_frames_only(fn, error, line):
    f = jk.jit(fn, autograph=False)  # as written: user_branch's `if` is converted (and compiles) by default
    for call in (lambda: f(np.ones(3)), lambda: f.lower(np.ones(3)), lambda: jk.make_ir(f)(np.ones(3))):
        with pytest.raises(error) as info:
            call()
        assert type(info.value) is error
        _no_engine(info.value)
        frames = _frames(info.value)
        assert frames[-1] == (fn.__name__, line), frames
        assert len(frames) == 3  # this test's call, the lambda, the traced function
    with pytest.raises(MyError, match="^my own message$"):
        jk.jit(user_raises)(np.ones(3))


def test_run_time_errors_on_the_fast_path_show_the_caller_only():
    f = jk.jit(lambda x, y: x ** y)
    f(np.arange(3), 2)
    for _ in range(2):  # the first failing call, then the registered fast path
        with pytest.raises(ValueError, match="negative") as info:
            f(np.arange(3), -1)
        _no_engine(info.value)
        assert len(_frames(info.value)) == 1


def test_full_tracebacks_on_request():
    f = jk.jit(user_reshape)
    jk.config.update("traceback", "full")
    try:
        with pytest.raises(ValueError) as info:
            f(np.ones(3))
    finally:
        jk.config.update("traceback", "user")
    files = [fr.filename for fr in traceback.extract_tb(info.value.__traceback__)]
    assert any(name.endswith(os.path.join("jitkernel", "jitted", "dispatch.py")) for name in files)
    with pytest.raises(ValueError, match="'user', 'full'"):
        jk.config.update("traceback", "short")


@pytest.mark.parametrize("cell,error,line", [
    ("%%jit\ny = np.sin(x)\nz = y.reshape(7)\n", ValueError, "----> 3 z = y.reshape(7)"),
    # (an `if` on a traced value compiles (jitkernel/autograph); a `raise` inside one cannot)
    ("%%jit\ndef g(v):\n    if v.sum() > 0:\n        raise ValueError('no')\n    return -v\ng(x)",
     jk.UnsupportedOperationError, "----> 3     if v.sum() > 0:"),
    ("%%jit\nclass E(Exception): pass\ndef h(v):\n    raise E('mine')\nh(x)", None, "----> 4     raise E('mine')"),
    ("%%jit -b cuda\ndef k(v):\n    return v\n", None, "UsageError: %%jit: cuda: backend 'cuda' is not available"),
])
def test_jit_cell_errors_show_the_cell_lines_only(jit_shell, cell, error, line):
    jit_shell.user_ns["x"] = np.ones(3)
    result, out = run_cell(jit_shell, cell)
    assert not result.success and line in out, out
    if error is not None:
        assert type(result.error_in_exec) is error
    for engine in ("run_cell_magic", "interactiveshell.py", "skipping hidden", os.sep + "jitkernel" + os.sep,
                   os.sep + "magics" + os.sep):
        assert engine not in out, out
    if "UsageError" not in line:
        assert re.search(r"^Cell In\[\d+\], line \d", out, re.M), out


def test_jit_cell_full_traceback_on_request(jit_shell):
    jit_shell.user_ns["x"] = np.ones(3)
    jk.config.update("traceback", "full")
    try:
        _, out = run_cell(jit_shell, "%%jit\ny = np.sin(x)\nz = y.reshape(7)\n")
    finally:
        jk.config.update("traceback", "user")
    assert "run_cell_magic" in out and os.path.join("jitkernel", "jitted", "dispatch.py") in out


def test_jit_backend_magic_reports_the_engine_message(jit_shell):
    _, out = run_cell(jit_shell, "%jit_backend cuda")
    assert "UsageError: %jit_backend: cuda: backend 'cuda' is not available: it runs on an NVIDIA GPU through PyCUDA" in out
