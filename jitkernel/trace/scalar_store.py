"""How ndarray.__setitem__, `fill`, np.put, np.place and np.putmask store ONE scalar into an
array: NumPy 2's rule, decided here once for every store path (trace/inplace.py,
numpy/_advanced.py, numpy/_datadep.py call `stored_scalar`).

NumPy does not cast a scalar the way `astype` casts an array. It converts the scalar through
Python first (numpy/_core/src/multiarray/arraytypes.c.src, `@TYPE@_setitem`):

- a Python float into an integer array goes through `int(v)`: NaN raises ValueError, infinity
  OverflowError, a value beyond a C long (or unsigned long for uint64) OverflowError, and a
  truncated value outside the dtype's range OverflowError ("Python integer 300 out of bounds
  for uint8"); otherwise it stores the truncated value (300.7 -> int64 300, -1.5 -> int8 -1);
- a Python int outside the dtype's range raises OverflowError (the same message);
- a Python complex into a real (non-bool) array raises TypeError, whatever its value;
- a NumPy scalar (np.float64, np.int32, the 0-d result of a reduction or an integer index)
  stored by basic indexing (`x[0] = s`, `x[1:3] = s`, `x[...] = s`) or `fill` goes through
  `int(v)` too when the target is a SIGNED integer dtype (np.float64(300.7) into int8 raises
  OverflowError), and through NumPy's C cast when it is unsigned (-> uint8 44); the paths that
  make an array of the value first (`x[mask] = s`, `x[idx] = s`, np.put, np.place, np.putmask)
  cast it as an array (-> int8 44): `numpy_scalars_by_value` tells which;
- everything else is the C cast every backend already does (`convert`; a float into uint32
  goes through int64 there, as NumPy's C cast of one value: ir/semantics.float_to_int_plan).

The value-dependent cases are checked where the store runs, on every call: one `raise_if` step
(the run-time check every backend implements, ir/arrayfn_prims.py) whose failure replays
NumPy's own store of the value, so the exception and message are NumPy's. Concrete
(trace-time) scalars are stored by NumPy itself (`numpy_stored`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.arrayfn_prims import NUMPY_STORE
from .numpy_api import NUMPY
from .operands import lift
from .tracer import Tracer

_FLOAT64 = np.dtype(np.float64)
_BOOL = np.dtype(np.bool_)


def numpy_stored(value: Any, dtype: np.dtype) -> np.ndarray:
    """A concrete scalar as NumPy's setitem stores it into an array of `dtype` (0-d), raising
    NumPy's own exception where NumPy raises one."""
    out = np.empty((), dtype)
    out[()] = value
    return out


def store_operand(value: Any, dtype: np.dtype) -> Any:
    """The value operand of a store into an array of `dtype` (np.put, np.place, np.putmask,
    `x[idx] = v`): a traced scalar converted by `stored_scalar`, a concrete NumPy scalar by
    NumPy itself; anything else unchanged (a concrete Python scalar is stored by NumPy in the
    library step, arrays are cast by the step)."""
    if isinstance(value, np.generic):
        return np.asarray(value).astype(dtype)  # cast as an array (module docstring)
    return stored_scalar(value, dtype, numpy_scalars_by_value=False)


def is_stored_scalar(value: Any) -> bool:
    """A traced value that NumPy's setitem converts as a scalar: a Python scalar (weak) or a
    NumPy scalar (a 0-d value NumPy would hold as np.float64 & co.); 0-d arrays are cast."""
    return isinstance(value, Tracer) and value.ndim == 0 and (value.weak is not None or value.scalar)


def stored_scalar(value: Any, dtype: np.dtype, numpy_scalars_by_value: bool = True) -> Any:
    """`value` (a Tracer) converted to `dtype` as NumPy's setitem stores it (module docstring;
    `numpy_scalars_by_value`: a basic-index store or fill); a value that is not a scalar
    (is_stored_scalar) is returned unchanged for the caller's cast."""
    if not is_stored_scalar(value):
        return value
    dtype = np.dtype(dtype)
    ctx = value._ctx
    source = value.dtype
    if value.weak is complex and dtype.kind in "iuf":
        raise TypeError(_COMPLEX_MESSAGE[dtype.kind])
    if dtype.kind in "iu" and _converted_through_python_int(value, dtype, numpy_scalars_by_value):
        if source.kind in "fc":  # (a NumPy complex: its real part, with NumPy's ComplexWarning)
            value = _checked_float_to_int(lift(ctx, value, _FLOAT64), dtype)
        elif source.kind in "iu":
            value = _checked_int_bounds(value, dtype)
    value = lift(ctx, value, dtype)
    value.scalar = False  # the stored value: an element of the array, no longer a scalar
    return value


_COMPLEX_MESSAGE = {
    "i": "int() argument must be a string, a bytes-like object or a real number, not 'complex'",
    "u": "int() argument must be a string, a bytes-like object or a real number, not 'complex'",
    "f": "float() argument must be a string or a real number, not 'complex'",
}


def _converted_through_python_int(value: Any, dtype: np.dtype, numpy_scalars_by_value: bool) -> bool:
    """Whether NumPy stores `value` into an integer `dtype` by value (through `int(v)`): always
    for a Python float or int; for a NumPy scalar only into a signed dtype by a basic store."""
    if value.weak in (float, int):
        return True
    return numpy_scalars_by_value and value.weak is None and dtype.kind == "i" and value.dtype.kind in "iufc"


def _check(value: Any, bad: Any, dtype: np.dtype, kind: str) -> Any:
    """`value`, after one run-time check (a `raise_if` step): where `bad`, the call raises what
    NumPy raises when it stores the value as a Python `kind` ("float" or "int") into `dtype`,
    NumPy's own exception and message (ir/arrayfn_prims.check_error replays NumPy)."""
    raise_if = NUMPY.raise_if
    return raise_if(value, lift(value._ctx, bad, _BOOL), NUMPY_STORE, f"{dtype}:{kind}")


def _checked_float_to_int(f: Any, dtype: np.dtype) -> Any:
    """`int(f)` as NumPy's setitem takes it for an integer `dtype`: the truncated float64, after
    one check for what NumPy refuses (NaN, infinity, beyond a C long or unsigned long for uint64,
    outside the dtype)."""
    apply_ufunc = NUMPY.apply_ufunc
    t = apply_ufunc(np.trunc, f)
    info = np.iinfo(dtype)
    # Every bound is a float64 exactly; NaN fails both comparisons, so it is caught by `not`.
    top = 2.0 ** 64 if dtype == np.uint64 else 2.0 ** 63 if dtype == np.int64 else float(info.max) + 1.0
    inside = apply_ufunc(np.logical_and, apply_ufunc(np.greater_equal, t, float(info.min)),
                         apply_ufunc(np.less, t, top))
    f = _check(f, apply_ufunc(np.logical_not, inside), dtype, "float")
    return apply_ufunc(np.trunc, f)


def _checked_int_bounds(value: Any, dtype: np.dtype) -> Any:
    """An integer scalar that must fit `dtype` (NumPy's OverflowError naming the value)."""
    apply_ufunc = NUMPY.apply_ufunc
    ctx = value._ctx
    source = np.dtype(np.int64) if value.weak is not None else value.dtype
    info, have = np.iinfo(dtype), np.iinfo(source)
    checks = []
    if have.min < info.min:
        checks.append(apply_ufunc(np.less, value, ctx.const(np.asarray(info.min, source))))
    if have.max > info.max:
        checks.append(apply_ufunc(np.greater, value, ctx.const(np.asarray(info.max, source))))
    if not checks:
        return value
    if value.weak is not None and value.ir_var in getattr(ctx, "_input_index", {}):
        return value  # a Python int argument: checked before the call runs (lift, weak_int_cast)
    bad = checks[0] if len(checks) == 1 else apply_ufunc(np.logical_or, *checks)
    return _check(lift(ctx, value, source), bad, dtype, "int")
