"""`np.lib.stride_tricks.as_strided` of a traced array goes to jitkernel.numpy's.

NumPy does not dispatch `as_strided` (it converts its argument with `np.array` and builds a view
of the raw buffer), so a traced argument would fail there with a conversion error that does not
name it. While a thread traces, `numpy.lib.stride_tricks.as_strided` is replaced by a wrapper
that hands a traced array to the implementation jitkernel.numpy registered (numpy/_stride_tricks.py)
and calls NumPy for anything else; `from numpy.lib.stride_tricks import as_strided` in converted
code reaches it through autograph/callees.py (`traced_as_strided`). Installed and restored like
trace/creation.py (trace/patching.py).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy.lib.stride_tricks as _stride_tricks

from .context import current_context
from .numpy_api import NUMPY
from .patching import ModulePatches
from .tracer import Tracer

_ORIGINAL = _stride_tricks.as_strided


def _traced(x: Any) -> bool:
    return current_context() is not None and (isinstance(x, Tracer) or getattr(type(x), "_jk_datadep", False))


@functools.wraps(_ORIGINAL)
def _as_strided(x: Any, *args: Any, **kwargs: Any) -> Any:
    if _traced(x):
        return NUMPY.as_strided(x, *args, **kwargs)
    return _ORIGINAL(x, *args, **kwargs)


_as_strided.__jitkernel_original__ = _ORIGINAL  # type: ignore[attr-defined]


def traced_as_strided(f: Callable, args: tuple, kwargs: dict) -> Any:
    """`f(*args, **kwargs)` when `f` is NumPy's as_strided (under any name) of a traced array;
    NotImplemented otherwise."""
    if getattr(f, "__jitkernel_original__", f) is not _ORIGINAL:
        return NotImplemented
    x = args[0] if args else kwargs.get("x")
    if not _traced(x):
        return NotImplemented
    return NUMPY.as_strided(*args, **kwargs)


def _targets() -> list[tuple[Any, str, Any]]:
    return [(_stride_tricks, "as_strided", _as_strided)]


_patches = ModulePatches(_targets)
install, uninstall = _patches.install, _patches.uninstall
