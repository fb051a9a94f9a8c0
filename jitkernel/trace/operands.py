"""Helpers shared by the NumPy-mirroring functions: operand kinds, NEP 50 dtype keys, lifting
concrete values into the trace, casting and broadcasting Tracers."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import check_dtype
from .complex_cast import warn_complex_cast
from .context import TraceContext, current_context
from .tracer import Tracer
from ..ir.symdim import SymDim, symbolic_broadcast_shapes

PY_SCALARS = (bool, int, float, complex)
WEAK_DEFAULT = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64),
                complex: np.dtype(np.complex128)}
WEAK_SAMPLE = {bool: False, int: 0, float: 0.0, complex: 0j}


def context_of(*args: Any) -> TraceContext | None:
    """The trace that any Tracer among `args` (searched one level into lists) belongs to."""
    for a in args:
        if isinstance(a, Tracer):
            return a._ctx
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, Tracer):
                    return b._ctx
    return current_context()


def weak_type(x: Any) -> type | None:
    """Python scalar type if `x` is weakly typed under NEP 50 (a Python scalar or a Tracer of one)."""
    if isinstance(x, Tracer):
        return x.weak
    if isinstance(x, PY_SCALARS) and not isinstance(x, np.generic):
        return bool if isinstance(x, bool) else int if isinstance(x, int) else float if isinstance(x, float) else complex
    return None


def dtype_key(x: Any) -> Any:
    """What NumPy's dtype resolution sees for an operand: a dtype, or int/float/bool when weak."""
    w = weak_type(x)
    if w is not None:
        return w
    if isinstance(x, Tracer):
        return x.dtype
    if isinstance(x, (np.ndarray, np.generic)):
        return check_dtype(x.dtype, "an operand")
    if isinstance(x, (list, tuple)):
        return check_dtype(np.asarray(x).dtype, "an operand")
    raise UnsupportedOperationError(f"jitkernel cannot use an operand of type {type(x).__name__} in a traced computation")


def result_type(*args: Any) -> np.dtype:
    """np.result_type with NEP 50 weak scalars (used by where, clip, concatenate, ...)."""
    keys = [dtype_key(a) for a in args]
    if all(isinstance(k, type) for k in keys):
        return np.result_type(*[WEAK_DEFAULT[k] for k in keys])
    return np.result_type(*[WEAK_SAMPLE[k] if isinstance(k, type) else k for k in keys])


def shape_of(x: Any) -> tuple[int, ...]:
    if isinstance(x, Tracer):
        return x.shape
    return np.shape(np.asarray(x)) if isinstance(x, (list, tuple)) else np.shape(x)


def lift(ctx: TraceContext, x: Any, dtype: np.dtype | None = None) -> Tracer:
    """A Tracer for `x` with dtype `dtype` (casting as NumPy's ufunc machinery would).

    Python ints that do not fit `dtype` raise NumPy's own OverflowError."""
    if isinstance(x, Tracer):
        if dtype is None or (x.dtype == dtype and x.weak is None):
            return x
        if x.dtype == dtype:
            return Tracer(ctx, x.ir_var)  # same data, now strongly typed
        if x.dtype.kind == "c" and np.dtype(dtype).kind not in "cb":
            warn_complex_cast(x, dtype)  # NumPy's ComplexWarning, once, at trace time
        if x.weak is int and np.dtype(dtype).kind in "iu":
            # NumPy raises OverflowError when a Python int does not fit the dtype it meets:
            # checked when the call's value is known (Compiled.check_inputs).
            ctx.weak_int_cast(x.ir_var, np.dtype(dtype))
        return ctx.bind1("convert", x, dtype=np.dtype(dtype))
    if weak_type(x) is not None:
        return ctx.const(np.asarray(x, dtype=dtype if dtype is not None else WEAK_DEFAULT[weak_type(x)]))
    arr = np.asarray(x)
    check_dtype(arr.dtype, "a constant")
    return ctx.const(x if isinstance(x, np.ndarray) and (dtype is None or arr.dtype == dtype) else arr,
                     None if dtype is None or arr.dtype == dtype else dtype)


def broadcast_to_shape(ctx: TraceContext, t: Tracer, shape: tuple[int, ...]) -> Tracer:
    """Broadcast with NumPy's rules (trailing alignment), as an explicit broadcast_in_dim."""
    shape = tuple(shape)
    if t.shape == shape:
        return t
    if len(t.shape) > len(shape) or any(
            s not in (1, d) for s, d in zip(t.shape[::-1], shape[::-1])):
        raise ValueError(f"operands could not be broadcast together with remapped shapes [original->remapped]: {t.shape} and requested shape {shape}")
    offset = len(shape) - len(t.shape)
    return ctx.bind1("broadcast_in_dim", t, shape=shape,
                     broadcast_dimensions=tuple(range(offset, len(shape))))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    shapes = [tuple(s) for s in shapes]
    if any(isinstance(d, SymDim) for s in shapes for d in s):
        return symbolic_broadcast_shapes(*shapes)
    return tuple(np.broadcast_shapes(*shapes))


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """Axis argument of a reduction -> sorted tuple of non-negative axes (NumPy's errors)."""
    if axis is None:
        return tuple(range(ndim))
    from numpy.lib.array_utils import normalize_axis_tuple
    return tuple(sorted(normalize_axis_tuple(axis, ndim)))


def normalize_axes_legacy_0d(axis: Any, ndim: int) -> tuple[int, ...]:
    """normalize_axes for ufunc.reduce (sum, prod, max, min, any, all) and squeeze: NumPy lets
    a 0-d array take an int axis 0 or -1 as no axis at all (`np.array(3.).sum(axis=0)` is 3.0);
    a tuple (0,), another axis, or mean/var/std raise AxisError."""
    if ndim == 0 and isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) and int(axis) in (0, -1):
        return ()
    return normalize_axes(axis, ndim)


def normalize_axis(axis: int, ndim: int) -> int:
    from numpy.lib.array_utils import normalize_axis_index
    return normalize_axis_index(axis, ndim)


def unsupported_kwargs(fname: str, kwargs: dict[str, Any], **defaults: Any) -> None:
    """Raise UnsupportedOperationError for any keyword whose value differs from its default."""
    for k, v in kwargs.items():
        if k not in defaults or not (v is defaults[k] or (isinstance(v, (bool, int, str)) and v == defaults[k])):
            raise UnsupportedOperationError(f"numpy.{fname}: argument {k}={v!r} is not supported inside jit")


def expand_index(index: tuple, ndim: int) -> list[Any]:
    """`index` with its Ellipsis (or the implicit trailing one) replaced by full slices, so
    there is one entry per axis plus the None entries; NumPy's IndexErrors for two ellipses
    and for more indices than axes."""
    n_real = sum(1 for ix in index if ix is not None and ix is not Ellipsis)
    if sum(1 for ix in index if ix is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {n_real} were indexed")
    expanded: list[Any] = []
    for ix in index:
        expanded.extend([slice(None)] * (ndim - n_real) if ix is Ellipsis else [ix])
    if Ellipsis not in index:
        expanded.extend([slice(None)] * (ndim - n_real))
    return expanded
