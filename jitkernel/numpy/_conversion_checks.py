"""Conversions with requirements: require and asarray_chkfinite.

NumPy does not dispatch either on its argument (they take `like=`), so a call on a traced array
reaches these through trace/creation.py's conversion wrappers. asarray_chkfinite checks the
values at run time (`raise_if`): a NaN or an infinity raises NumPy's ValueError where the call
runs; its result is a new array (NumPy's may be the argument itself). require's layout flags
are the trace's view of the array (numpy/_creation.py's ascontiguousarray/asfortranarray);
'OWNDATA' copies a view made inside the function, and arguments count as owning their data.

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda a: np.asarray_chkfinite(a * 2))(np.ones(2)).tolist()
[2.0, 2.0]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..trace.tracer import Tracer
from ..trace.operands import context_of
from ..trace.views import fresh
from ._creation import asanyarray, ascontiguousarray, asfortranarray
from ._reductions import all as _all
from ._statistics import raise_if
from ._ufuncs import apply_ufunc

__all__ = ["require", "asarray_chkfinite"]

_POSSIBLE_FLAGS = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F", "F_CONTIGUOUS": "F", "FORTRAN": "F",
                   "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W", "O": "O", "OWNDATA": "O", "E": "E",
                   "ENSUREARRAY": "E"}


def require(a: Any, dtype: Any = None, requirements: Any = None, *, like: Any = None) -> Any:
    """numpy.require: an array of `dtype` with the requested layout flags (a copy if needed)."""
    if context_of(a) is None or like is not None:
        return np.require(a, dtype, requirements, like=like)
    if not requirements:
        return asanyarray(a, dtype=dtype)
    flags = {_POSSIBLE_FLAGS[x.upper()] for x in requirements}
    flags.discard("E")  # traced arrays are base ndarrays
    if flags >= {"C", "F"}:
        raise ValueError('Cannot specify both "C" and "F" order')
    # NumPy's array(a, order=...): a 0-d array stays 0-d (ascontiguousarray would make it 1-d)
    if "F" in flags and len(_shape(a)):
        out = asfortranarray(a, dtype=dtype)
    elif "C" in flags and len(_shape(a)):
        out = ascontiguousarray(a, dtype=dtype)
    else:
        out = asanyarray(a, dtype=dtype)
    if "O" in flags and isinstance(out, Tracer) and out._view is not None:
        out = fresh(out)  # a view does not own its data: NumPy copies
    return out


def _shape(a: Any) -> tuple:
    return a.shape if isinstance(a, Tracer) else np.shape(a)


def asarray_chkfinite(a: Any, dtype: Any = None, order: Any = None) -> Any:
    """numpy.asarray_chkfinite: asarray, then ValueError at run time if a value is NaN or infinite."""
    if context_of(a) is None:
        return np.asarray_chkfinite(a, dtype, order)
    t = asanyarray(a, dtype=dtype)
    if t.dtype.char not in np.typecodes["AllFloat"]:
        return t
    bad = apply_ufunc(np.logical_not, _all(apply_ufunc(np.isfinite, t)))
    out = raise_if(t, bad, "ValueError", "array must not contain infs or NaNs")
    out.scalar = False
    if isinstance(a, Tracer) and out.dtype == a.dtype:
        out._ctx.keep_byteorder(out, a)  # NumPy returns the array itself: '>f8' stays '>f8'
    return out


asarray_chkfinite.__jk_support__ = ("partly: the check runs at run time (removed when nothing reads the result); "
                                    "the result is a new array")
