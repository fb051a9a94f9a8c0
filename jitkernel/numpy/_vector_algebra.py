"""Products built from elementwise multiplication: kron, cross, and numpy.linalg's cross, outer
and vecdot (array-API spellings with their own checks).

They follow NumPy's Python implementations (numpy/lib/_shape_base_impl.py, numpy/_core/numeric.py,
numpy/linalg/_linalg.py) over broadcasts, moveaxis, reshape and ufuncs, so they fuse into one
kernel and are differentiable. Operands are made arrays first as NumPy does (a Python scalar is a
strong array there, so `np.kron(2, x32)` is float64 as in NumPy); cross computes in the promoted
dtype with NumPy's formulas (integers wrap, bools refuse subtraction as in NumPy).

>>> import numpy as np, jitkernel as jk
>>> jk.jit(np.cross)(np.array([1.0, 0, 0]), np.array([0.0, 1, 0])).tolist()
[0.0, 0.0, 1.0]
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..trace.tracer import Tracer
from ..trace.operands import broadcast_shapes, context_of, lift
from ._dispatch import register_function
from ._linalg import outer as _outer
from ._shape import expand_dims, moveaxis, reshape, stack, broadcast_to
from ._ufuncs import apply_ufunc
from ._vector_products import vecdot as _vecdot

__all__ = ["kron", "cross"]


def _as_array(ctx: Any, a: Any) -> Tracer:
    """np.asarray(a) as a Tracer: a Python scalar is a strong array (not NEP 50's weak one)."""
    t = lift(ctx, a if isinstance(a, Tracer) else np.asarray(a))
    return Tracer(ctx, t.ir_var) if t.weak is not None else t


def kron(a: Any, b: Any) -> Any:
    """numpy.kron: a with a new axis after each of its axes times b with one before each,
    reshaped to the product of the shapes."""
    ctx = context_of(a, b)
    if ctx is None:
        return np.kron(a, b)
    b = _as_array(ctx, b)
    a = _as_array(ctx, a)
    if a.ndim < b.ndim:  # NumPy: array(a, ndmin=b.ndim)
        a = reshape(a, (1,) * (b.ndim - a.ndim) + a.shape)
    nda, ndb = a.ndim, b.ndim
    if nda == 0 or ndb == 0:
        return apply_ufunc(np.multiply, a, b)
    nd = max(nda, ndb)
    as_ = (1,) * max(0, ndb - nda) + a.shape
    bs = (1,) * max(0, nda - ndb) + b.shape
    a_arr = expand_dims(reshape(a, as_), tuple(range(1, nd * 2, 2)))
    b_arr = expand_dims(reshape(b, bs), tuple(range(0, nd * 2, 2)))
    return reshape(apply_ufunc(np.multiply, a_arr, b_arr), tuple(x * y for x, y in zip(as_, bs)))


def _components(t: Tracer) -> list[Tracer]:
    return [t[..., i] for i in range(t.shape[-1])]


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Any = None) -> Any:
    """numpy.cross of 3- (or deprecated 2-) vectors along the given axes."""
    ctx = context_of(a, b)
    if ctx is None:
        return np.cross(a, b, axisa, axisb, axisc, axis)
    if axis is not None:
        axisa, axisb, axisc = (axis,) * 3
    a, b = _as_array(ctx, a), _as_array(ctx, b)
    if a.ndim < 1 or b.ndim < 1:
        raise ValueError("At least one array has zero dimension")
    a = moveaxis(a, normalize_axis_index(axisa, a.ndim, msg_prefix="axisa"), -1)
    b = moveaxis(b, normalize_axis_index(axisb, b.ndim, msg_prefix="axisb"), -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if a.shape[-1] == 2 or b.shape[-1] == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional vectors "
                      "instead. (deprecated in NumPy 2.0)", DeprecationWarning, stacklevel=3)
    shape = broadcast_shapes(a.shape[:-1], b.shape[:-1])
    if a.shape[-1] == 3 or b.shape[-1] == 3:
        axisc = normalize_axis_index(axisc, len(shape) + 1, msg_prefix="axisc")
    dt = np.promote_types(a.dtype, b.dtype)
    av, bv = _components(lift(ctx, a, dt)), _components(lift(ctx, b, dt))

    def mul(x: Tracer, y: Tracer) -> Tracer:
        return apply_ufunc(np.multiply, x, y)

    def sub(x: Tracer, y: Tracer) -> Tracer:
        return apply_ufunc(np.subtract, x, y)

    last = sub(mul(av[0], bv[1]), mul(av[1], bv[0]))  # a0 * b1 - a1 * b0 in every case
    if len(av) == 2 and len(bv) == 2:
        return last
    if len(av) == 2:  # a2 = 0
        parts = [mul(av[1], bv[2]), apply_ufunc(np.negative, mul(av[0], bv[2]))]
    elif len(bv) == 2:  # b2 = 0
        parts = [apply_ufunc(np.negative, mul(av[2], bv[1])), mul(av[2], bv[0])]
    else:
        parts = [sub(mul(av[1], bv[2]), mul(av[2], bv[1])), sub(mul(av[2], bv[0]), mul(av[0], bv[2]))]
    out = stack([broadcast_to(p, shape) for p in parts + [last]], axis=-1)
    return moveaxis(out, -1, axisc)


# ----------------------------------------------------------------------------- numpy.linalg spellings

def _linalg_cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """numpy.linalg.cross: 3-vectors only, along one axis for both operands and the result."""
    ctx = context_of(x1, x2)
    t1, t2 = _as_array(ctx, x1), _as_array(ctx, x2)
    if t1.shape[axis] != 3 or t2.shape[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they are "
                         f"{t1.shape[axis]} and {t2.shape[axis]} dimensional instead.")
    return cross(t1, t2, axis=axis)


def _linalg_outer(x1: Any, x2: Any, /) -> Any:
    """numpy.linalg.outer: numpy.outer of two 1-d arrays (no raveling)."""
    ctx = context_of(x1, x2)
    t1, t2 = _as_array(ctx, x1), _as_array(ctx, x2)
    if t1.ndim != 1 or t2.ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={t1.ndim} and x2.ndim={t2.ndim}.")
    return _outer(t1, t2)


def _linalg_vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """numpy.linalg.vecdot: numpy.vecdot along one axis."""
    return _vecdot(x1, x2, axis=axis)


register_function(np.linalg.cross, _linalg_cross)
register_function(np.linalg.outer, _linalg_outer)
register_function(np.linalg.vecdot, _linalg_vecdot)
