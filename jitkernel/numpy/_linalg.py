"""matmul / dot / outer / inner / vdot as dot_general (a BLAS library step on the CPU)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..trace.operands import broadcast_shapes, broadcast_to_shape, context_of, dtype_key, lift, WEAK_DEFAULT
from ._shape import ravel, reshape
from ._ufuncs import apply_ufunc


def _common_dtype(a: Any, b: Any) -> np.dtype:
    keys = [dtype_key(x) for x in (a, b)]
    keys = [WEAK_DEFAULT[k] if isinstance(k, type) else k for k in keys]
    return np.matmul.resolve_dtypes((keys[0], keys[1], None))[2]


def matmul(a: Any, b: Any, **kwargs: Any) -> Any:
    """numpy.matmul / `@`: 1-d operands are promoted and the added axis removed; batch axes broadcast."""
    ctx = context_of(a, b)
    if ctx is None:
        return np.matmul(a, b)
    dt = _common_dtype(a, b)
    x, y = lift(ctx, a, dt), lift(ctx, b, dt)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions (has 0, gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
    x1, y1 = x.ndim == 1, y.ndim == 1
    if x1:
        x = reshape(x, (1,) + x.shape)
    if y1:
        y = reshape(y, y.shape + (1,))
    if x.shape[-1] != y.shape[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(n?,k),(k,m?)->(n?,m?) (size {y.shape[-2]} is different from {x.shape[-1]})")
    batch = broadcast_shapes(x.shape[:-2], y.shape[:-2])
    if x.ndim > 2 and y.ndim == 2 and not y1:
        # A stack times one matrix (`A(r, q, 1, p) @ C(p, p)`): the stack's batch axes are rows
        # of one product, never a broadcast copy of C per batch (NPBench's doitgen materialised
        # 472 MB that way). The result's axes are already matmul's.
        return ctx.bind1("dot_general", x, y, contracting=((x.ndim - 1,), (0,)), batch=((), ()))
    x = broadcast_to_shape(ctx, x, batch + x.shape[-2:])
    y = broadcast_to_shape(ctx, y, batch + y.shape[-2:])
    nb = len(batch)
    out = ctx.bind1("dot_general", x, y, contracting=((nb + 1,), (nb,)),
                    batch=(tuple(range(nb)), tuple(range(nb))))
    if x1 or y1:
        shape = batch + (() if x1 else (x.shape[-2],)) + (() if y1 else (y.shape[-1],))
        out = reshape(out, shape)
    return out


def dot(a: Any, b: Any, out: Any = None) -> Any:
    """numpy.dot: sum over the last axis of a and the second-to-last of b (no batching)."""
    ctx = context_of(a, b)
    if ctx is None:
        return np.dot(a, b)
    x, y = lift(ctx, a), lift(ctx, b)
    if x.ndim == 0 or y.ndim == 0:
        return apply_ufunc(np.multiply, a, b)
    if x.ndim <= 2 and y.ndim <= 2:
        return matmul(a, b)
    dt = _common_dtype(a, b)
    x, y = lift(ctx, x, dt), lift(ctx, y, dt)
    yc = y.ndim - 2 if y.ndim >= 2 else 0
    if x.shape[-1] != y.shape[yc]:
        raise ValueError(f"shapes {x.shape} and {y.shape} not aligned: {x.shape[-1]} (dim {x.ndim - 1}) != {y.shape[yc]} (dim {yc})")
    return ctx.bind1("dot_general", x, y, contracting=((x.ndim - 1,), (yc,)), batch=((), ()))


def inner(a: Any, b: Any) -> Any:
    """numpy.inner: sum over the last axes of both."""
    ctx = context_of(a, b)
    if ctx is None:
        return np.inner(a, b)
    x, y = lift(ctx, a), lift(ctx, b)
    if x.ndim == 0 or y.ndim == 0:
        return apply_ufunc(np.multiply, a, b)
    dt = _common_dtype(a, b)
    x, y = lift(ctx, x, dt), lift(ctx, y, dt)
    if x.shape[-1] != y.shape[-1]:
        raise ValueError("shapes not aligned: last dimensions differ")
    return ctx.bind1("dot_general", x, y, contracting=((x.ndim - 1,), (y.ndim - 1,)), batch=((), ()))


def vdot(a: Any, b: Any) -> Any:
    """numpy.vdot: dot of the flattened operands, the first one conjugated when complex."""
    if context_of(a, b) is None:
        return np.vdot(a, b)
    x = ravel(a)
    if x.dtype.kind == "c":
        x = apply_ufunc(np.conjugate, x)
    return matmul(x, ravel(b))


def outer(a: Any, b: Any, out: Any = None) -> Any:
    """numpy.outer: ravel(a)[:, None] * ravel(b)[None, :] (NumPy's own definition)."""
    if context_of(a, b) is None:
        return np.outer(a, b)
    x, y = ravel(a), ravel(b)
    return apply_ufunc(np.multiply, reshape(x, (-1, 1)), reshape(y, (1, -1)))
