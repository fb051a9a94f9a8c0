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


def _no_numpy(exc):
    from jitkernel.tracebacks import NUMPY_DIR
    files = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
    assert not [f for f in files if f.startswith(NUMPY_DIR)], files


def test_numpy_internal_frames_are_hidden_too():
    """np.sum(x, axis=1) on a 1-D argument fails inside NumPy's Python layer (numeric.py):
    the traceback ends at the user's line that called NumPy."""
    with pytest.raises(np.exceptions.AxisError) as info:
        jk.jit(lambda x: np.sum(x, axis=1))(np.ones(3))
    _no_engine(info.value)
    _no_numpy(info.value)
    assert _frames(info.value)[-1][1] == "jk.jit(lambda x: np.sum(x, axis=1))(np.ones(3))"


@pytest.mark.parametrize("call, error", [
    (lambda: jk.jit(lambda x: x.sum())([1, 2, 3]), AttributeError),
    (lambda: jk.jit(lambda x: np.sum(x))([1, 2, 3]), jk.TracerArrayConversionError),
    (lambda: jk.jit(lambda x: x.shape[0])((1.0, 2.0)), AttributeError),
    (lambda: jk.jit(lambda w, x: np.sum(x, axis=1) * w).lower(2.0, [[1, 2], [3, 4]]), jk.TracerArrayConversionError),
])
def test_a_list_argument_gets_a_first_line_saying_what_to_do(call, error):
    with pytest.raises(error) as info:
        call()
    first, *detail = str(info.value).splitlines()
    assert re.fullmatch(r"jitted functions take arrays, not Python (lists|tuples): pass np\.asarray\(x\)", first), first
    assert detail and "ArgumentList" not in detail[0]  # the original message follows, naming `list`
    _no_engine(info.value)
    _no_numpy(info.value)


def test_lists_of_arrays_and_unrelated_errors_get_no_list_hint():
    f = jk.jit(lambda xs: xs[0] + xs[1])
    np.testing.assert_array_equal(f([np.ones(2), np.ones(2)]), np.full(2, 2.0))  # a pytree, fine
    with pytest.raises(AttributeError) as info:
        jk.jit(lambda xs, n: xs.nope)(np.ones(2), [1, 2])
    assert "jitted functions take arrays" not in str(info.value)  # the list is not what failed...
    with pytest.raises(ValueError) as info:
        jk.jit(lambda x, shape: x.reshape(7))(np.ones(3), [1, 2])
    assert "jitted functions take arrays" not in str(info.value)  # ...nor a ValueError


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
