"""Small primitive builders for transformation rules (ad_rules*, batching_rules*).

Rules run while a trace is active: every helper here binds one primitive in the innermost
trace context (`current_context()`), on Tracers, with the exact input dtypes the primitive's
shape rule wants. Rules never go through the NumPy-level functions (jitkernel.numpy): those
decide NumPy's promotions and view semantics, which a rule has already fixed.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..ir import AType
from ..trace.context import current_context
from ..trace.tracer import Tracer


def bind(prim: str, *inputs: Tracer, **params: Any) -> list[Tracer]:
    """`prim(*inputs, **params)` in the innermost trace."""
    return current_context().bind(prim, list(inputs), **params)


def bind1(prim: str, *inputs: Tracer, **params: Any) -> Tracer:
    return bind(prim, *inputs, **params)[0]


def const(value: Any, dtype: Any) -> Tracer:
    """A 0-d (or given array) constant of `dtype`."""
    return current_context().const(np.asarray(value, dtype=dtype))


def full(shape: Sequence[int], value: Any, dtype: Any) -> Tracer:
    """An array of `shape` filled with `value` (a constant broadcast: fuses to nothing)."""
    c = const(value, dtype)
    shape = tuple(shape)
    return c if shape == () else bind1("broadcast_in_dim", c, shape=shape, broadcast_dimensions=())


def zeros_like(x: Tracer | AType) -> Tracer:
    aval = x if isinstance(x, AType) else x.aval
    return full(aval.shape, 0, aval.dtype)


def ones_like(x: Tracer | AType) -> Tracer:
    aval = x if isinstance(x, AType) else x.aval
    return full(aval.shape, 1, aval.dtype)


def scalar_like(x: Tracer, value: Any) -> Tracer:
    """`value` broadcast to x's shape and dtype."""
    return full(x.shape, value, x.dtype)


def convert(x: Tracer, dtype: Any) -> Tracer:
    dtype = np.dtype(dtype)
    return x if x.dtype == dtype else bind1("convert", x, dtype=dtype)


def add(a: Tracer, b: Tracer) -> Tracer:
    return bind1("add", a, b)


def sub(a: Tracer, b: Tracer) -> Tracer:
    return bind1("subtract", a, b)


def mul(a: Tracer, b: Tracer) -> Tracer:
    return bind1("multiply", a, b)


def div(a: Tracer, b: Tracer) -> Tracer:
    return bind1("divide", a, b)


def neg(a: Tracer) -> Tracer:
    return bind1("negative", a)


def select(pred: Tracer, a: Tracer, b: Tracer) -> Tracer:
    return bind1("select", pred, a, b)


def add_any(a: Tracer | None, b: Tracer | None) -> Tracer | None:
    """The sum of two tangents or cotangents, where None is a symbolic zero."""
    if a is None:
        return b
    if b is None:
        return a
    return add(a, b)


def broadcast_in_dim(x: Tracer, shape: Sequence[int], dims: Sequence[int]) -> Tracer:
    shape, dims = tuple(shape), tuple(dims)
    if x.shape == shape and dims == tuple(range(len(shape))):
        return x
    return bind1("broadcast_in_dim", x, shape=shape, broadcast_dimensions=dims)


def reduce_sum(x: Tracer, axes: Sequence[int]) -> Tracer:
    axes = tuple(sorted(set(axes)))
    return x if not axes else bind1("reduce_sum", x, axes=axes)


def reshape(x: Tracer, shape: Sequence[int]) -> Tracer:
    shape = tuple(shape)
    return x if x.shape == shape else bind1("reshape", x, new_shape=shape)


def transpose(x: Tracer, permutation: Sequence[int]) -> Tracer:
    permutation = tuple(permutation)
    return x if permutation == tuple(range(x.ndim)) else bind1("transpose", x, permutation=permutation)


def moveaxis(x: Tracer, src: int, dst: int) -> Tracer:
    perm = [d for d in range(x.ndim) if d != src]
    perm.insert(dst, src)
    return transpose(x, perm)


def sum_to_aval(ct: Tracer, aval: AType, dims: Sequence[int]) -> Tracer:
    """Transpose of `broadcast_in_dim(x, ct.shape, dims)` for x of `aval`: sum the axes that
    broadcasting created or stretched, back to x's shape."""
    dims = tuple(dims)
    created = [d for d in range(ct.ndim) if d not in dims]
    stretched = [dst for src, dst in enumerate(dims) if aval.shape[src] == 1 and ct.shape[dst] != 1]
    out = reduce_sum(ct, created + stretched)
    return reshape(out, aval.shape)


def real_dtype(dtype: Any) -> np.dtype:
    """float32 for complex64, float64 for complex128, the dtype itself otherwise."""
    dtype = np.dtype(dtype)
    return np.dtype({"c8": "f4", "c16": "f8"}.get(dtype.kind + str(dtype.itemsize), dtype)) if dtype.kind == "c" else dtype


def is_float(aval_or_dtype: Any) -> bool:
    """Whether values of this dtype carry tangents (floating or complex)."""
    dtype = aval_or_dtype.dtype if hasattr(aval_or_dtype, "dtype") else np.dtype(aval_or_dtype)
    return dtype.kind in "fc"
