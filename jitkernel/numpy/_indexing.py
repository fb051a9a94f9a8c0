"""Basic indexing with static indices: ints, slices (negative steps included), None, Ellipsis.
It becomes one `slice` primitive plus one `reshape`: index maps, never a copy."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.symdim import SymDim
from ..trace.tracer import Tracer
from ..trace.operands import expand_index, lift
from ._shape import reshape, _view_of
from ..trace.context import current_context
from ..trace.subtrace import SubTraceContext
from ._advanced import advanced_getitem
from ._strided_dynamic import traced_getitem


def _is_static_int(ix: Any) -> bool:
    return isinstance(ix, (int, np.integer)) and not isinstance(ix, (bool, np.bool_))


def _is_traced_int(ix: Any) -> bool:
    return isinstance(ix, Tracer) and ix.ndim == 0 and ix.dtype.kind in "iu"


def index_kind(index: tuple) -> str:
    """"basic" (static ints, slices, None, Ellipsis), "dynamic" (traced scalar ints or slice
    bounds among those, no arrays: numpy/_dynamic.py) or "advanced" (an integer or boolean
    array, list, or traced array anywhere: numpy/_advanced.py). Raises for other objects."""
    kind = "basic"
    for ix in index:
        if ix is None or ix is Ellipsis or _is_static_int(ix):
            continue
        if isinstance(ix, slice):
            if any(isinstance(p, Tracer) for p in (ix.start, ix.stop, ix.step)):
                kind = "dynamic" if kind == "basic" else kind
            continue
        if _is_traced_int(ix):
            kind = "dynamic" if kind == "basic" else kind
        elif isinstance(ix, (Tracer, np.ndarray, list, bool, np.bool_)) or getattr(type(ix), "_jk_datadep", False):
            kind = "advanced"  # (_jk_datadep: a data-dependent index array, numpy/_datadep.py)
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                             f"integer or boolean arrays are valid indices, got {type(ix).__name__}")
    return kind


def _deferred_out_of_bounds(t: Tracer, index: tuple) -> Tracer | None:
    """An out-of-bounds static index inside a loop body or a branch (a sub-trace) may never run
    (`if a[i] > 0: s += a[i + 1]` with a Python loop unrolled: the last `a[i + 1]` is out of
    bounds only where the branch is not taken). NumPy raises only when it runs, so the index
    becomes a run-time one, whose check raises NumPy's IndexError when the step runs."""
    ctx = current_context()
    if not isinstance(ctx, SubTraceContext):
        return None
    as_traced = tuple(ctx.const(np.asarray(ix, np.int64)) if _is_static_int(ix) else ix for ix in index)
    return traced_getitem(t, as_traced)


def _whole_axis_step(ix: slice) -> int | None:
    """1 for `:` and `::1`, -1 for `::-1` (the whole axis, reversed), else None."""
    if ix.start is not None or ix.stop is not None:
        return None
    if ix.step is None or (_is_static_int(ix.step) and int(ix.step) in (1, -1)):
        return 1 if ix.step is None else int(ix.step)
    return None


def getitem(t: Tracer, index: Any) -> Tracer:
    """x[index] for a Tracer, with NumPy's IndexError wording for out-of-range ints."""
    ctx = t._ctx
    if not isinstance(index, tuple):
        index = (index,)
    kind = index_kind(index)
    if kind == "advanced":
        return advanced_getitem(t, index)
    if kind == "dynamic":
        return traced_getitem(t, index)
    expanded = expand_index(index, t.ndim)

    starts, steps, sizes, final_shape = [], [], [], []
    dim = 0
    for ix in expanded:
        if ix is None:
            final_shape.append(1)
            continue
        n = t.shape[dim]
        if isinstance(ix, slice) and isinstance(n, SymDim) and _whole_axis_step(ix) is not None:
            # `x[:i][::-1]`, `np.flip(x[:i])`: the whole axis of symbolic length, reversed or not
            # (start 0 by the slice primitive's convention there; passes/lower_symbolic.py)
            starts.append(0)
            steps.append(_whole_axis_step(ix))
            sizes.append(n)
            final_shape.append(n)
        elif isinstance(ix, slice):
            start, stop, step = ix.indices(n)
            length = len(range(start, stop, step))
            starts.append(start if length else 0)
            steps.append(step if length else 1)
            sizes.append(length)
            final_shape.append(length)
        else:
            i = int(ix)
            if not -n <= i < n:
                deferred = _deferred_out_of_bounds(t, index)
                if deferred is not None:
                    return deferred
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
        out = _view_of(t)  # x[...], x[:]: a new view
    if all(isinstance(ix, (int, np.integer)) for ix in index) and len(index) == t.ndim:
        # An integer for every axis gives a NumPy scalar: a copy, not a view.
        out = Tracer(ctx, out.ir_var)
    return out
