"""Slices with traced bounds and a step other than 1: `x[i*i::i] = False` (a sieve),
`x[n - i::-i]`, `x[j:k:2].sum()`, where the start, stop or step is a traced scalar (a loop
index, a value read from an array).

Such a slice's length, and so the positions it touches, are known only at run time. Both
operations keep static shapes by working on the whole axis with NumPy's slice rules applied to
the run-time values (`_run_time_indices`, CPython's `PySlice_AdjustIndices`):

- a write `x[a:b:s] = v` is `np.where(selected, v', x)` along the axis, where `selected[k]`
  says that position k is one of the slice's and `v'[k]` is the value's element for it (its
  `(k - start) // step`-th, or the broadcast value). One elementwise step that fuses, and that
  runs inside a compiled loop (no Python-driven iteration, no unrolling);
- a read `x[a:b:s]` is the boolean selection `x'[selected']` (`numpy/_datadep.py`: a padded
  buffer with a run-time count), where `x'` and `selected'` are flipped for a negative step
  so that the selection comes out in the slice's order.

Other index entries (integers, static slices, None, another traced strided slice) are taken
first by ordinary indexing (`x[i, a::s]` is `x[i][a::s]`), and a write goes back through the
same index. A step of zero raises NumPy's ValueError at run time; that check is made only where
the trace does not know the step's sign (a traced argument, a loop index over a range with
traced bounds), since a raise_if step keeps a loop Python-driven on the CPU backend
(fusion/loops.py): correct but slower. A loop index over a static range, or a constant, needs
none. Cost: a write touches the whole axis (n elements, not n / step), a read is a selection
step; `benchmarks/first_calls.py` times the sieve.

>>> import numpy as np, jitkernel as jk
>>> def sieve(flags):
...     for i in range(2, 10):
...         if flags[i]:
...             flags[i * i::i] = False
...     return flags
>>> flags = np.ones(100, bool); flags[:2] = False
>>> int(jk.jit(sieve)(flags).sum())
25
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.context import current_context, user_frame_location
from ..trace.numpy_api import NUMPY
from ..trace.operands import expand_index, lift
from ..trace.tracer import Tracer
from ._datadep import traced_mask_getitem
from ._dynamic import dynamic_getitem, dynamic_update, value_range
from ._statistics import raise_if

__all__: list[str] = []

_I64 = np.dtype(np.int64)


def is_traced_strided(ix: Any) -> bool:
    """A slice with a traced start, stop or step whose step is not the static 1."""
    if not isinstance(ix, slice) or not any(isinstance(p, Tracer) for p in (ix.start, ix.stop, ix.step)):
        return False
    step = ix.step
    return not (step is None or (isinstance(step, (int, np.integer)) and not isinstance(step, bool) and int(step) == 1))


def holds_traced_strided(index: tuple) -> bool:
    return any(is_traced_strided(ix) for ix in index)


def traced_getitem(x: Any, index: tuple) -> Any:
    """`x[index]` for an index holding traced values: strided slices here, the rest by
    _dynamic.dynamic_getitem."""
    return strided_getitem(x, index) if holds_traced_strided(index) else dynamic_getitem(x, index)


def traced_update(x: Any, index: tuple, value: Any) -> Any:
    """`x` with `x[index] = value` for an index holding traced values (as `traced_getitem`)."""
    return strided_update(x, index, value) if holds_traced_strided(index) else dynamic_update(x, index, value)


# ----------------------------------------------------------------------------- run-time slice rules


def _sign(step: Any) -> int | None:
    """+1 or -1 when the step's sign is known at trace time (a constant, a loop index with a
    known range), else None."""
    if not isinstance(step, Tracer):
        return 1 if step is None or int(step) > 0 else -1
    try:
        r = value_range(step)
    except Exception:  # (a value outside any trace's bookkeeping: decide at run time)
        r = None
    if r is None:
        return None
    lo, hi = r
    return 1 if lo > 0 else (-1 if hi < 0 else None)


def _as_i64(ctx: Any, p: Any) -> Tracer:
    if isinstance(p, Tracer):
        return lift(ctx, p, _I64) if p.dtype != _I64 or p.weak is not None else p
    return ctx.const(np.asarray(int(p), _I64))


def _run_time_indices(ctx: Any, ix: slice, n: int) -> tuple[Tracer, Tracer, Tracer, Tracer]:
    """(start, stop, step, length) of `ix` on an axis of length n, as `slice.indices(n)` and
    `len(range(...))` give them, computed at run time (int64 Tracers). The step is checked
    (NumPy's ValueError for a zero step)."""
    jnp = NUMPY.namespace
    step = _as_i64(ctx, 1 if ix.step is None else ix.step)
    if _sign(ix.step) is None:  # (a raise_if step keeps a loop out of the native loops: only where needed)
        step = raise_if(step, step == 0, "ValueError", "slice step cannot be zero")
    up = step > 0
    # defaults: start 0 or n - 1, stop n or -1 (before the first element)
    start = jnp.where(up, 0, n - 1) if ix.start is None else _adjust(jnp, _as_i64(ctx, ix.start), n, up)
    stop = jnp.where(up, n, -1) if ix.stop is None else _adjust(jnp, _as_i64(ctx, ix.stop), n, up)
    magnitude = jnp.abs(step)
    distance = jnp.where(up, stop - start, start - stop)
    length = jnp.where(distance > 0, (distance - 1) // magnitude + 1, 0)
    return _as_i64(ctx, start), _as_i64(ctx, stop), step, _as_i64(ctx, length)


def _adjust(jnp: Any, p: Tracer, n: int, up: Tracer) -> Tracer:
    """A bound as CPython adjusts it: a negative one counts from the end, then it is clamped
    to [0, n] for a positive step and to [-1, n - 1] for a negative one."""
    p = jnp.where(p < 0, p + n, p)
    return jnp.where(up, jnp.clip(p, 0, n), jnp.clip(p, -1, n - 1))


def _selection(ctx: Any, ix: slice, n: int) -> tuple[Tracer, Tracer, Tracer, Tracer]:
    """(selected, position, length, step): per position k of the axis, whether the slice
    touches it and, where it does, its place in the slice."""
    jnp = NUMPY.namespace
    start, stop, step, length = _run_time_indices(ctx, ix, n)
    k = ctx.const(np.arange(n, dtype=_I64))
    offset = jnp.where(step > 0, k - start, start - k)  # >= 0 on the slice's side of start
    magnitude = jnp.abs(step)
    # The quotient in float64 (vectorised, where an int64 division per element is not): exact
    # for a multiple of the step (both below 2**53, an axis length), and for any other offset
    # the check `quotient * step == offset` fails whatever the rounding.
    quotient = jnp.astype(jnp.trunc(jnp.astype(offset, np.float64) / jnp.astype(magnitude, np.float64)), _I64)
    selected = (offset >= 0) & (quotient * magnitude == offset) & (quotient < length)
    return selected, quotient, length, step


# ----------------------------------------------------------------------------- the index around it


def _split(x: Any, index: tuple) -> tuple[tuple, int, slice]:
    """`index` with its first traced strided slice replaced by `:`, the axis of `x[outer]` that
    slice applies to, and the slice."""
    expanded = expand_index(index, x.ndim)
    position = next(p for p, ix in enumerate(expanded) if is_traced_strided(ix))
    axis = sum(1 for ix in expanded[:position] if ix is None or isinstance(ix, slice))
    outer = tuple(expanded[:position]) + (slice(None),) + tuple(expanded[position + 1:])
    return outer, axis, expanded[position]


def _is_whole(index: tuple) -> bool:
    return all(isinstance(ix, slice) and ix == slice(None) for ix in index)


def _along(mask: Tracer, axis: int, ndim: int) -> Tracer:
    """A per-position vector of `axis` shaped to broadcast against an array of `ndim` axes."""
    shape = [1] * ndim
    shape[axis] = mask.shape[0]
    return NUMPY.namespace.reshape(mask, tuple(shape))


# ----------------------------------------------------------------------------- read and write


def strided_getitem(x: Tracer, index: tuple) -> Any:
    """`x[index]` where an entry is a traced strided slice: a data-dependent selection (its
    length is known at run time)."""
    jnp = NUMPY.namespace
    ctx = current_context() or x._ctx
    outer, axis, ix = _split(x, index)
    y = x if _is_whole(outer) else x[outer]
    if axis != 0:
        raise UnsupportedOperationError(
            f"reading a slice with traced bounds and a step other than 1 on an axis other than the first of the "
            f"result ({_text(ix)}) is not supported yet, at {user_frame_location()}: its length is known only at "
            "run time. Move the axis first (np.moveaxis) or write through the slice instead.")
    selected, _, _, step = _selection(ctx, ix, y.shape[0])
    sign = _sign(ix.step)
    if sign is None:
        y = raise_if(y, step == 0, "ValueError", "slice step cannot be zero")
    if sign == 1:
        return traced_mask_getitem(y, (selected,))
    flipped, flipped_mask = jnp.flip(y, 0), jnp.flip(selected, 0)
    if sign == -1:
        return traced_mask_getitem(flipped, (flipped_mask,))
    up = step > 0
    values = jnp.where(up, y, flipped)  # (a 0-d condition: the whole array or its flip)
    return traced_mask_getitem(values, (jnp.where(up, selected, flipped_mask),))


def strided_update(x: Tracer, index: tuple, value: Any) -> Tracer:
    """The array `x` with `x[index] = value` applied, where an entry of `index` is a traced
    strided slice (NumPy's broadcasting of `value`; a value whose length along the slice differs
    from the slice's raises NumPy's ValueError at run time)."""
    jnp = NUMPY.namespace
    ctx = current_context() or x._ctx
    if any(ix is None for ix in index):
        raise UnsupportedOperationError(
            f"np.newaxis (None) in an assignment index with a traced scalar is not supported yet, at "
            f"{user_frame_location()}")
    outer, axis, ix = _split(x, index)
    whole = _is_whole(outer)
    y = x if whole else x[outer]
    if not isinstance(y, Tracer) or y.ndim == 0:  # pragma: no cover (the slice's axis exists)
        raise UnsupportedOperationError(f"the assignment at {user_frame_location()} is not supported")
    if getattr(type(value), "_jk_datadep", False):
        new = _update_from_selection(ctx, y, axis, ix, value)
        return new if whole else NUMPY.dynamic_update(x, outer, new)
    v = lift(ctx, value)
    if v.dtype != y.dtype:
        v = jnp.astype(v, y.dtype)  # NumPy's setitem casts the value (unsafe casting)
    v = _aligned_value(v, y.shape, axis, ix)
    n = y.shape[axis]
    selected, position, length, _ = _selection(ctx, ix, n)
    m = v.shape[axis]
    if m != 1:
        if m == 0:
            v = jnp.zeros(v.shape[:axis] + (1,) + v.shape[axis + 1:], y.dtype)  # (written nowhere)
        else:
            v = jnp.take(v, jnp.clip(position, 0, m - 1), axis=axis)
        v = raise_if(v, length != m, "ValueError",
                     f"could not broadcast input array from shape {_shape_text(value)} into the slice {_text(ix)} "
                     f"(its length differs), at {user_frame_location()}")
    new = jnp.where(_along(selected, axis, y.ndim), v, y)
    if whole:
        return new
    return NUMPY.dynamic_update(x, outer, new)


def _update_from_selection(ctx: Any, y: Tracer, axis: int, ix: slice, value: Any) -> Tracer:
    """`y[ix] = value` along `axis` where the value has a length known only at run time (a
    selection: `x[a::s] += 1` reads `x[a::s]`, a selection, and writes it back): the slice's
    q-th position takes the value's q-th element (its padded buffer, `_datadep.DataDependent`);
    a count that differs from the slice's length raises NumPy's ValueError at run time."""
    jnp = NUMPY.namespace
    if axis != 0:
        raise UnsupportedOperationError(
            f"assigning a value of data-dependent length to a slice with traced bounds and a step other than 1 "
            f"on an axis other than the first ({_text(ix)}) is not supported yet, at {user_frame_location()}")
    data = value.padded if value.padded.dtype == y.dtype else jnp.astype(value.padded, y.dtype)
    rest = tuple(data.shape[1:])
    if len(rest) > y.ndim - 1 or any(s not in (1, d) for s, d in zip(rest[::-1], y.shape[:0:-1])):
        raise ValueError(f"could not broadcast input array from shape (<count>, {', '.join(map(str, rest))}) into "
                         f"the slice {_text(ix)} of an array of shape {tuple(y.shape)}")
    selected, position, length, _ = _selection(ctx, ix, y.shape[0])
    g = jnp.take(data, jnp.clip(position, 0, data.shape[0] - 1), axis=0)  # (n, *rest)
    g = jnp.reshape(g, (g.shape[0],) + (1,) * (y.ndim - 1 - len(rest)) + rest)
    g = jnp.broadcast_to(g, tuple(y.shape))
    g = raise_if(g, value.count != length, "ValueError",
                 f"could not broadcast a value of data-dependent length into the slice {_text(ix)} (the lengths "
                 f"differ), at {user_frame_location()}")
    return jnp.where(_along(selected, 0, y.ndim), g, y)


def _aligned_value(v: Tracer, region: tuple, axis: int, ix: slice) -> Tracer:
    """`v` with as many axes as the region, every axis but `axis` broadcast to the region's
    (NumPy's rules: trailing alignment, extra leading axes of length 1 dropped)."""
    jnp = NUMPY.namespace
    while v.ndim > len(region) and v.shape[0] == 1:
        v = jnp.reshape(v, v.shape[1:])
    bad = v.ndim > len(region)
    shape = (1,) * (len(region) - v.ndim) + tuple(v.shape) if not bad else ()
    if bad or any(s not in (1, d) for k, (s, d) in enumerate(zip(shape, region)) if k != axis):
        raise ValueError(f"could not broadcast input array from shape {_shape_text(v)} into the slice {_text(ix)} "
                         f"of an array of shape {tuple(region)}")
    v = jnp.reshape(v, shape)
    target = tuple(shape[k] if k == axis else d for k, d in enumerate(region))
    return jnp.broadcast_to(v, target) if target != shape else v


def _shape_text(v: Any) -> str:
    return str(tuple(np.shape(v)) if not isinstance(v, Tracer) else tuple(v.shape))


def _text(ix: slice) -> str:
    def part(p: Any) -> str:
        return "" if p is None else ("<traced>" if isinstance(p, Tracer) else str(p))
    return f"[{part(ix.start)}:{part(ix.stop)}:{part(ix.step)}]"
