"""Shape and movement functions. They become broadcast / reshape / transpose / slice /
concatenate primitives, which fusion turns into index maps (no memory pass)."""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import check_dtype
from ..ir.symdim import SymDim, reshape_axis_map
from ..trace.operands import (broadcast_shapes, broadcast_to_shape, context_of, lift, normalize_axes, normalize_axes_legacy_0d,
                    normalize_axis, result_type, shape_of)
from ..trace.tracer import Tracer
from ..trace.views import fresh, is_c_contiguous


def _order_c(fname: str, order: str) -> None:
    if order not in ("C", "K", "A", None):
        raise UnsupportedOperationError(f"numpy.{fname}: order={order!r} is not supported inside jit (C order only)")


def _resolve_symbolic_shape(shape: Any, old: tuple) -> tuple:
    """A reshape of a value of symbolic length: every symbolic axis stays whole (one -1 may
    stand for a static quotient or for the one symbolic length not written)."""
    shape = [s if isinstance(s, SymDim) else int(s) for s in ((shape,) if not isinstance(shape, (tuple, list)) else shape)]
    shape = [-1 if isinstance(s, int) and s < 0 else s for s in shape]  # any negative length: the unknown one
    if sum(1 for s in shape if isinstance(s, int) and s == -1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in [s for s in shape if isinstance(s, int)]:
        k = next(i for i, s in enumerate(shape) if isinstance(s, int) and s == -1)
        missing = [d for d in old if isinstance(d, SymDim) and not any(d == s for s in shape)]
        old_static = math.prod(d for d in old if not isinstance(d, SymDim))
        new_static = math.prod(s for s in shape if not isinstance(s, SymDim) and s != -1)
        if len(missing) == 1 and old_static == new_static:
            shape[k] = missing[0]
        elif not missing and new_static and old_static % new_static == 0:
            shape[k] = old_static // new_static
        else:
            raise ValueError(f"cannot reshape array of shape {old} into shape {tuple(shape)}")
    if reshape_axis_map(old, tuple(shape)) is None:
        raise ValueError(f"cannot reshape array of shape {old} into shape {tuple(shape)}: an axis whose length "
                         "depends on a loop index must stay an axis of its own")
    return tuple(shape)


def _resolve_shape(shape: Any, size: int) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = [int(s) for s in shape]
    unknown = [i for i, s in enumerate(shape) if s < 0]  # NumPy takes any negative length as the unknown one
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if unknown:
        known = math.prod(s for i, s in enumerate(shape) if i != unknown[0])
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
        shape[unknown[0]] = size // known
    if any(s < 0 for s in shape) or math.prod(shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
    return tuple(shape)


def reshape(a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None, copy: Any = None) -> Any:
    """numpy.reshape (C order; -1 allowed)."""
    ctx = context_of(a)
    shape = newshape if shape is None else shape
    if ctx is None:
        return np.reshape(a, shape, order=order)
    _order_c("reshape", order)
    t = lift(ctx, a)
    if t.aval.is_symbolic or any(isinstance(d, SymDim) for d in (shape if isinstance(shape, (tuple, list)) else ())):
        new = _resolve_symbolic_shape(shape, t.shape)
    else:
        new = _resolve_shape(shape, t.size)
    if new == t.shape:
        return t if t.weak is None and not (t.ndim == 0 and t.scalar) else _view_of(t)
    return ctx.bind1("reshape", t, new_shape=new)


def view_of(t: Any) -> Any:
    """ndarray.view(): a new view object of t's memory (a strong 0-d array of a scalar)."""
    return _view_of(t)


def _view_of(t: Any) -> Any:
    """A new Tracer that is a view of t (NumPy's reshape/transpose to the same shape return a
    new view object; of a Python or NumPy scalar, a strong 0-d array)."""
    out = Tracer(t._ctx, t.ir_var)
    out.share_memory_with(t)
    return out


def ravel(a: Any, order: str = "C") -> Any:
    """numpy.ravel (C order)."""
    if context_of(a) is None:
        return np.ravel(a, order)
    _order_c("ravel", order)
    out = reshape(a, (-1,))
    if isinstance(a, Tracer) and not is_c_contiguous(a):
        out = fresh(out)  # NumPy's ravel copies unless the array is C-contiguous
    return out


def transpose(a: Any, axes: Any = None) -> Any:
    """numpy.transpose."""
    ctx = context_of(a)
    if ctx is None:
        return np.transpose(a, axes)
    t = lift(ctx, a)
    if axes is None:
        perm = tuple(range(t.ndim))[::-1]
    else:
        perm = tuple(normalize_axis(ax, t.ndim) for ax in axes)
        if len(perm) != t.ndim or len(set(perm)) != t.ndim:
            raise ValueError("axes don't match array")
    if perm == tuple(range(t.ndim)):
        return t if t.weak is None and not (t.ndim == 0 and t.scalar) else _view_of(t)
    return ctx.bind1("transpose", t, permutation=perm)


def permute_dims(a: Any, axes: Any = None) -> Any:
    return transpose(a, axes)


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    """numpy.swapaxes."""
    if context_of(a) is None:
        return np.swapaxes(a, axis1, axis2)
    n = len(shape_of(a))
    perm = list(range(n))
    i, j = normalize_axis(axis1, n), normalize_axis(axis2, n)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def moveaxis(a: Any, source: Any, destination: Any) -> Any:
    """numpy.moveaxis."""
    if context_of(a) is None:
        return np.moveaxis(a, source, destination)
    from numpy.lib.array_utils import normalize_axis_tuple
    n = len(shape_of(a))
    src = normalize_axis_tuple(source, n, "source")
    dst = normalize_axis_tuple(destination, n, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [d for d in range(n) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


def expand_dims(a: Any, axis: Any) -> Any:
    """numpy.expand_dims (tuple of axes allowed)."""
    if context_of(a) is None:
        return np.expand_dims(a, axis)
    shape = shape_of(a)
    from numpy.lib.array_utils import normalize_axis_tuple
    axes = normalize_axis_tuple(axis if isinstance(axis, (tuple, list)) else (axis,), len(shape) + len(
        axis if isinstance(axis, (tuple, list)) else (axis,)))
    it = iter(shape)
    new = tuple(1 if d in axes else next(it) for d in range(len(shape) + len(axes)))
    return reshape(a, new)


def squeeze(a: Any, axis: Any = None) -> Any:
    """numpy.squeeze: squeezing an axis whose size is not 1 raises ValueError, as NumPy does."""
    if context_of(a) is None:
        return np.squeeze(a, axis)
    shape = shape_of(a)
    if axis is None:
        axes = tuple(d for d, n in enumerate(shape) if n == 1)
    else:
        axes = normalize_axes_legacy_0d(axis, len(shape))
        if any(shape[d] != 1 for d in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return reshape(a, tuple(n for d, n in enumerate(shape) if d not in axes))


def _check_iterable_shape(shape: tuple[int, ...]) -> None:
    """NumPy's broadcast_to converts the shape, then builds an iterator over it, before it
    compares shapes: a length past npy_intp and a size past it raise those errors first."""
    largest = int(np.iinfo(np.intp).max)
    if any(n > largest for n in shape):
        raise ValueError("Maximum allowed dimension exceeded")
    if math.prod(shape) > largest:
        raise ValueError("iterator is too large")


def broadcast_to(array: Any, shape: Any, subok: bool = False) -> Any:
    """numpy.broadcast_to."""
    ctx = context_of(array)
    if ctx is None:
        return np.broadcast_to(array, shape)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    t = lift(ctx, array)
    _check_iterable_shape(shape)
    try:
        if broadcast_shapes(t.shape, shape) != shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {t.shape} and requested shape {shape}") from None
    return broadcast_to_shape(ctx, t, shape)


def broadcast_arrays(*args: Any) -> list:
    """numpy.broadcast_arrays."""
    if context_of(*args) is None:
        return np.broadcast_arrays(*args)
    shape = broadcast_shapes(*[shape_of(a) for a in args])
    return [broadcast_to(a, shape) for a in args]


def concatenate(arrays: Sequence[Any], axis: Any = 0, out: Any = None, dtype: Any = None, casting: str = "same_kind") -> Any:
    """numpy.concatenate (axis=None flattens first)."""
    arrays = list(arrays)
    ctx = context_of(*arrays)
    if ctx is None:
        return np.concatenate(arrays, axis=axis, dtype=dtype)
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if out is not None:
        raise UnsupportedOperationError("numpy.concatenate: out= is not supported inside jit")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    dt = check_dtype(dtype, "concatenate") if dtype is not None else result_type(*[lift(ctx, a) for a in arrays])
    for a in arrays:
        src = lift(ctx, a).dtype
        if dtype is not None and not np.can_cast(src, dt, casting):
            # NumPy checks the cast before any data moves (complex -> float, float -> int)
            raise TypeError(f"Cannot cast array data from {src!r} to {dt!r} according to the rule {casting!r}")
    ts = [lift(ctx, lift(ctx, a), dt) for a in arrays]
    nd = ts[0].ndim
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    if any(t.ndim != nd for t in ts):
        raise ValueError("all the input arrays must have same number of dimensions")
    ax = normalize_axis(axis, nd)
    if len(ts) == 1:
        # a new array in native byte order (or dtype='s), as NumPy's (an identity convert:
        # removed by simplify after the byte-order analysis)
        return ctx.request_byteorder(ctx.bind1("convert", ts[0], dtype=ts[0].dtype), dtype)
    return ctx.request_byteorder(ctx.bind1("concatenate", *ts, axis=ax), dtype)


concat = concatenate


def stack(arrays: Sequence[Any], axis: int = 0, out: Any = None, dtype: Any = None) -> Any:
    """numpy.stack."""
    arrays = list(arrays)
    if context_of(*arrays) is None:
        return np.stack(arrays, axis=axis, dtype=dtype)
    if not arrays:
        raise ValueError("need at least one array to stack")
    shapes = {shape_of(a) for a in arrays}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    ax = normalize_axis(axis, len(shape_of(arrays[0])) + 1)
    return concatenate([expand_dims(a, ax) for a in arrays], axis=ax, dtype=dtype)


def _at_least(arys: tuple, one: Callable[[Any], Any]) -> Any:
    """NumPy 2's atleast_Nd: one array for one argument, a tuple for several (or none)."""
    results = tuple(one(a if isinstance(a, Tracer) else np.asarray(a)) for a in arys)
    return results[0] if len(results) == 1 else results


def _at_least_1d(a: Any) -> Any:
    return reshape(a, (1,)) if len(shape_of(a)) == 0 else a


def _at_least_2d(a: Any) -> Any:
    s = shape_of(a)
    return reshape(a, (1,) * (2 - len(s)) + s) if len(s) < 2 else a


def _at_least_3d(a: Any) -> Any:
    s = shape_of(a)
    # NumPy: () -> (1, 1, 1), (N,) -> (1, N, 1), (M, N) -> (M, N, 1)
    new = {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}.get(len(s))
    return reshape(a, new) if new is not None else a


def atleast_1d(*arys: Any) -> Any:
    return _at_least(arys, _at_least_1d)


def atleast_2d(*arys: Any) -> Any:
    return _at_least(arys, _at_least_2d)


def atleast_3d(*arys: Any) -> Any:
    return _at_least(arys, _at_least_3d)


def hstack(arrays: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """numpy.hstack."""
    arrays = [atleast_1d(a) for a in arrays]
    return concatenate(arrays, axis=0 if len(shape_of(arrays[0])) == 1 else 1, dtype=dtype, casting=casting)


def vstack(arrays: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """numpy.vstack (np.row_stack calls it with casting=)."""
    return concatenate([atleast_2d(a) for a in arrays], axis=0, dtype=dtype, casting=casting)


def flip(m: Any, axis: Any = None) -> Any:
    """numpy.flip (a negative-step slice: an index map, no copy)."""
    if context_of(m) is None:
        return np.flip(m, axis)
    n = len(shape_of(m))
    axes = normalize_axes(axis, n)
    return m[tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(n))]


def astype(x: Any, dtype: Any, copy: bool = True) -> Any:
    """ndarray.astype / numpy.astype (unsafe casting, as NumPy's default)."""
    ctx = context_of(x)
    if ctx is None:
        return np.asarray(x).astype(dtype)
    dt = check_dtype(dtype, "astype")
    t = lift(ctx, x)
    reordered = ctx.byteorder_differs(t, dtype)  # '<f8' -> '>f8': NumPy converts, natively the same
    if copy is False and t.dtype == dt and not reordered and isinstance(x, Tracer) and x.weak is None \
            and not (x.ndim == 0 and x.scalar):
        return x  # NumPy returns the array itself: writes through the result reach it
    if t.dtype == dt:
        # astype makes a new array even to the same dtype (strong; in the byte order asked for): an
        # identity convert, removed by simplify after the byte-order analysis.
        out = ctx.bind1("convert", t, dtype=dt)
        out.scalar = t.scalar
        return ctx.request_byteorder(out, dtype)
    return ctx.request_byteorder(lift(ctx, t, dt), dtype)  # complex -> real warns ComplexWarning there
