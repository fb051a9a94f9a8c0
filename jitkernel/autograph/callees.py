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

import ast
import inspect
import os
import sysconfig
import textwrap
import types
import weakref
from typing import Any, Callable

import numpy as np

from ..entry import converter
from ..trace.context import is_tracing
from ..trace.creation import traced_creation
from ..trace.strided import traced_as_strided
from ..trace.unsupported import refuse_unsupported
from .analysis import written_bases

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
        if filename.startswith("<"):
            # notebook cells, doctests, exec'd code: convert.py converts those whose source
            # linecache knows and leaves the others as they are
            verdict = not filename.startswith("<frozen")
        else:
            path = os.path.realpath(filename)
            verdict = not path.startswith(_library_dirs())
        _user_files[filename] = verdict
    return verdict


def call(f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`f(*args, **kwargs)` as converted code calls it (see the module docstring)."""
    if is_tracing():
        made = traced_creation(f, args, kwargs)
        if made is NotImplemented:
            made = traced_as_strided(f, args, kwargs)
        if made is not NotImplemented:
            return made
        refuse_unsupported(f)
        if is_user_function(f):
            # convert.py's `convert`, registered by jitkernel.autograph (convert.py imports this
            # module, so it is looked up, not imported); converted code exists only once it is
            converted = converter()(f)
            if converted is not None:
                return converted(*args, **kwargs)
    return f(*args, **kwargs)


# function -> the parameters it writes in place (positions and names), from its source
_written_params: "weakref.WeakKeyDictionary[Callable, frozenset]" = weakref.WeakKeyDictionary()
_in_progress: set[int] = set()


def written_parameters(f: Any) -> frozenset:
    """The parameters (positions and names) that user function `f` writes in place, directly
    (`p[1:-1] = ...`, `p += 1`, `out=p`) or by passing them to another such function; empty for
    anything else. Read from the source once; a name rebound before the write (`p = p.copy()`)
    still counts (a carry more, never a write missed)."""
    if not is_user_function(f):
        return frozenset()
    try:
        return _written_params[f]
    except KeyError:
        pass
    if id(f) in _in_progress:  # recursion: what is known so far
        return frozenset()
    _in_progress.add(id(f))
    try:
        result = _find_written_parameters(f)
    finally:
        _in_progress.discard(id(f))
    _written_params[f] = result
    return result


def _find_written_parameters(f: types.FunctionType) -> frozenset:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return frozenset()
    fndef = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fndef is None:
        return frozenset()
    params = [a.arg for a in fndef.args.posonlyargs + fndef.args.args]
    kwonly = [a.arg for a in fndef.args.kwonlyargs]
    written = set(written_bases(fndef.body, callee_writes=callee_writes_of(f)))
    return frozenset([k for k, p in enumerate(params) if p in written]
                     + [p for p in params + kwonly if p in written])


def callee_writes_of(fn: Any) -> Callable[[str], frozenset]:
    """For the code of `fn`: name -> the parameters the function that name refers to (in fn's
    closure or globals, looked up now) writes."""
    cells = dict(zip(getattr(fn.__code__, "co_freevars", ()), getattr(fn, "__closure__", None) or ()))
    namespace = getattr(fn, "__globals__", {})

    def writes(name: str) -> frozenset:
        try:
            target = cells[name].cell_contents if name in cells else namespace.get(name)
        except ValueError:  # an empty cell
            return frozenset()
        return written_parameters(target)
    return writes


__all__ = ["call", "callee_writes_of", "is_user_function", "written_parameters"]
