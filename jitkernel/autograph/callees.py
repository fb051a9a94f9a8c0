"""Calls in converted code: `f(...)` of a bare name becomes `ag__.call(f, ...)`.

While a trace runs, `call`
- converts a function the user defined (in the user's own files or notebook cells, not NumPy,
  jitkernel, the standard library or installed packages) with the same conversion, once per
  function (convert.py's cache), so a loop in a helper the jitted function calls is a loop too,
  as AutoGraph's converted_call does;
- makes a traced array for NumPy's creation functions called under another name
  (`from numpy import zeros`; `np.ndarray(shape)`), which the module patch of
  trace/creation.py cannot see (trace/creation.py, `traced_creation`).
Anything else, and everything outside a trace, is called as written.

>>> import numpy as np, jitkernel as jk
>>> def step(a):
...     for i in range(1, a.shape[0]):
...         a[i] += a[i - 1]
>>> def f(a):
...     step(a)
...     return a
>>> jk.make_ir(f)(np.ones(100)).eqns[0].prim   # one loop, not 99 unrolled iterations
'fori_loop'
"""
from __future__ import annotations

import os
import sysconfig
import types
from typing import Any, Callable

import numpy as np

from ..trace.context import is_tracing

_LIBRARY_DIRS: tuple[str, ...] | None = None


def _library_dirs() -> tuple[str, ...]:
    """Directories whose functions are not the user's: NumPy's, jitkernel's, the standard
    library and installed packages."""
    global _LIBRARY_DIRS
    if _LIBRARY_DIRS is None:
        dirs = {os.path.dirname(np.__file__), os.path.dirname(os.path.dirname(__file__))}
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            path = sysconfig.get_paths().get(key)
            if path:
                dirs.add(path)
        _LIBRARY_DIRS = tuple(os.path.realpath(d) + os.sep for d in dirs)
    return _LIBRARY_DIRS


_user_files: dict[str, bool] = {}


def is_user_function(f: Any) -> bool:
    """Whether `f` is a plain Python function defined in the user's code."""
    if not isinstance(f, types.FunctionType):
        return False
    filename = f.__code__.co_filename
    verdict = _user_files.get(filename)
    if verdict is None:
        if filename.startswith("<") and not filename.startswith("<ipython-input"):
            verdict = filename.startswith("<cell") or "ipykernel" in filename  # notebook cells only
        else:
            path = os.path.realpath(filename)
            verdict = not path.startswith(_library_dirs())
        _user_files[filename] = verdict
    return verdict


def call(f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`f(*args, **kwargs)` as converted code calls it (see the module docstring)."""
    if is_tracing():
        from ..trace.creation import traced_creation
        made = traced_creation(f, args, kwargs)
        if made is not NotImplemented:
            return made
        if is_user_function(f):
            from .convert import convert
            converted = convert(f)
            if converted is not None:
                return converted(*args, **kwargs)
    return f(*args, **kwargs)


__all__ = ["call", "is_user_function"]
