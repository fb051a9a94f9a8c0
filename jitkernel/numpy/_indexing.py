"""Basic indexing with static indices: ints, slices (negative steps included), None, Ellipsis.
It becomes one `slice` primitive plus one `reshape`: index maps, never a copy."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.tracer import Tracer
from ._core import lift
from ._shape import reshape


def _unsupported(index: Any) -> UnsupportedOperationError:
    if isinstance(index, Tracer):
        why = "indexing with a traced array (dynamic gather) is not supported yet"
    elif isinstance(index, (np.ndarray, list)) and np.asarray(index).dtype == np.bool_:
        why = "boolean-mask indexing has a data-dependent shape; use np.where(mask, x, 0) instead"
    else:
        why = "advanced (integer-array) indexing is not supported yet"
    return UnsupportedOperationError(f"{why}: index {index!r}")


def getitem(t: Tracer, index: Any) -> Tracer:
    """x[index] for a Tracer, with NumPy's IndexError wording for out-of-range ints."""
    ctx = t._ctx
    if not isinstance(index, tuple):
        index = (index,)
    for ix in index:
        if not (ix is None or ix is Ellipsis or isinstance(ix, slice)
                or (isinstance(ix, (int, np.integer)) and not isinstance(ix, (bool, np.bool_)))):
            raise _unsupported(ix)
        if isinstance(ix, slice) and any(isinstance(p, Tracer) for p in (ix.start, ix.stop, ix.step)):
            raise UnsupportedOperationError("slice bounds must be static Python ints inside jit "
                                            "(mark the argument static with static_argnums)")
    n_real = sum(1 for ix in index if ix is not None and ix is not Ellipsis)
    if sum(1 for ix in index if ix is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > t.ndim:
        raise IndexError(f"too many indices for array: array is {t.ndim}-dimensional, but {n_real} were indexed")
    expanded: list[Any] = []
    for ix in index:
        if ix is Ellipsis:
            expanded.extend([slice(None)] * (t.ndim - n_real))
        else:
            expanded.append(ix)
    if Ellipsis not in index:
        expanded.extend([slice(None)] * (t.ndim - n_real))

    starts, steps, sizes, final_shape = [], [], [], []
    dim = 0
    for ix in expanded:
        if ix is None:
            final_shape.append(1)
            continue
        n = t.shape[dim]
        if isinstance(ix, slice):
            start, stop, step = ix.indices(n)
            length = len(range(start, stop, step))
            starts.append(start if length else 0)
            steps.append(step if length else 1)
            sizes.append(length)
            final_shape.append(length)
        else:
            i = int(ix)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            starts.append(i % n)
            steps.append(1)
            sizes.append(1)
        dim += 1
    out = t
    if tuple(sizes) != t.shape or any(s != 0 for s in starts) or any(s != 1 for s in steps):
        out = ctx.bind1("slice", lift(ctx, t), starts=tuple(starts), steps=tuple(steps), shape=tuple(sizes))
    out = reshape(out, tuple(final_shape))
    if out is t:
        from ._shape import _view_of
        out = _view_of(t)  # x[...], x[:]: a new view
    if all(isinstance(ix, (int, np.integer)) for ix in index) and len(index) == t.ndim:
        # An integer for every axis gives a NumPy scalar: a copy, not a view.
        out = Tracer(ctx, out.ir_var)
    return out
