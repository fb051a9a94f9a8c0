"""Tracebacks that show the user's code only.

An error in a jitted function passes through the engine (the call plumbing in `api.py` and `jitted/`,
tracing, the NumPy implementations under `jitkernel/numpy/`, the backends) before it reaches
the user. Those frames say nothing about the user's mistake, so the public entry points remove
them from the exception's traceback before it propagates: what is left is the caller's line and
the lines of the traced function. NumPy's Python layer (`fromnumeric.py`, `numeric.py`: the
user's `np.sum(x, axis=1)` on a traced array goes through it) is removed too; the user's line
that called NumPy stays. The exception's type and message are untouched.
`jk.config.update("traceback", "full")` keeps every frame (for debugging jitkernel itself).

>>> import numpy as np, jitkernel as jk, traceback
>>> f = jk.jit(lambda x: x.reshape(7))
>>> try:
...     f(np.ones(3))
... except ValueError as e:
...     files = [fr.filename for fr in traceback.extract_tb(e.__traceback__)]
>>> [is_engine_file(name) for name in files]  # this doctest's line, then the lambda's
[False, False]
"""
from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import Iterable

import numpy as np

from .config import config

ENGINE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
# Example programs shipped with the package are user code as far as a traceback is concerned.
_USER_DIRS = (os.path.join(ENGINE_DIR, "examples") + os.sep,)
# Code the engine generates at run time (the CPU runtime's per-program call functions) is
# compiled under file names like "<jitkernel executable f>".
GENERATED_PREFIX = "<jitkernel"


def is_engine_file(filename: str, extra_dirs: Iterable[str] = ()) -> bool:
    """Whether a frame's file belongs to jitkernel's engine (or to one of `extra_dirs`)."""
    if filename.startswith(ENGINE_DIR) and not filename.startswith(_USER_DIRS):
        return True
    if filename.startswith(GENERATED_PREFIX):
        return True
    return any(filename.startswith(d) for d in extra_dirs)


def user_entries(tb: TracebackType | None, extra_dirs: Iterable[str] = ()) -> list[TracebackType]:
    """The traceback entries of `tb` whose frames are neither the engine's nor NumPy's, in order."""
    extra = (NUMPY_DIR, *extra_dirs)
    kept = []
    while tb is not None:
        if not is_engine_file(tb.tb_frame.f_code.co_filename, extra):
            kept.append(tb)
        tb = tb.tb_next
    return kept


def relink(entries: list[TracebackType]) -> TracebackType | None:
    """Chain `entries` (traceback objects) into one traceback; returns its head or None."""
    for a, b in zip(entries, entries[1:]):
        a.tb_next = b
    if not entries:
        return None
    entries[-1].tb_next = None
    return entries[0]


def hide_engine_frames(exc: BaseException, extra_dirs: Iterable[str] = ()) -> BaseException:
    """Remove the engine's frames from `exc`'s traceback and from those of the exceptions it
    chains (`__cause__`, `__context__`), unless `jk.config.traceback` is "full". Re-raise `exc`
    with a bare `raise` afterwards: that does not add the raising frame again."""
    if config.traceback == "full":
        return exc
    extra = tuple(extra_dirs)
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        e.__traceback__ = relink(user_entries(e.__traceback__, extra))
        todo += [e.__cause__, e.__context__]
    return exc


def cell_name(filename: str) -> str | None:
    """`Cell In[2]` when `filename` is the code of a notebook or IPython cell (ipykernel compiles
    cells into temporary files, `<tempdir>/ipykernel_<pid>/<hash>.py`; a terminal IPython names
    them `<ipython-input-2-...>`), else None. IPython keeps that mapping in its compiler
    (`shell.compile.format_code_name`, what its own tracebacks use). IPython is asked only when
    it is already imported: the engine never imports it."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
        label = shell.compile.format_code_name(filename) if shell is not None else None
    except Exception:  # an IPython without the compiler cache, or a shell being torn down
        return None
    return f"{label[0]} {label[1]}" if label else None


def describe_location(filename: str, lineno: int) -> str:
    """Where a user's line is, for messages: `file.py:3`, or `Cell In[2], line 3` for a cell's
    code (as IPython's tracebacks name it).

    >>> describe_location("/home/me/model.py", 3)
    '/home/me/model.py:3'
    """
    cell = cell_name(filename)
    return f"{cell}, line {lineno}" if cell is not None else f"{filename}:{lineno}"


def user_stacklevel() -> int:
    """The `stacklevel` that makes a warning issued by the caller of this function point at the
    first frame outside the engine (the user's line)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and is_engine_file(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level
