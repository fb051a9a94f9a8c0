"""Batching rules of indexing: gather / take / take_along_axis, the functional scatters (scatter,
scatter_ufunc, put, put_along_axis, putmask, place) and dynamic_slice / dynamic_update_slice.

Every rule keeps NumPy's own indexing step (and so NumPy's bounds checks and errors): an index
that differs per example becomes an advanced index with one more array, the example number
(an iota of shape (size, 1, ...)), in front. NumPy places a block of advanced-index dimensions
where the block is when its entries are adjacent and first otherwise (`_Layout`); the rules
transpose the result back to the per-example layout with the batch axis first.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir.index_prims import gather_shape
from ..trace.tracer import Tracer
from . import ops
from .batching import broadcast_batch, register_batch

_I64 = np.dtype(np.int64)
_FULL = ("slice", None, None, None)


# ----------------------------------------------------------------------------- index layout


@dataclass(frozen=True)
class _Layout:
    """Where NumPy puts the dimensions of the advanced entries of one example's index."""

    has_arrays: bool
    contiguous: bool  # the advanced entries are adjacent: their block stays in place
    pre: int  # output dimensions made by the entries before the first advanced one
    adv_ndim: int  # dimensions of the broadcast index arrays


def _layout(index: tuple, x_ndim: int, array_ndims: Sequence[int]) -> _Layout:
    if any(e[0] == "bool" for e in index):
        raise UnsupportedOperationError("vmap of an index with a Python bool (x[True]) is not supported; "
                                        "use x[None] or np.expand_dims")
    has_arrays = any(e[0] == "array" for e in index)
    adv = [k for k, e in enumerate(index) if e[0] == "array" or (has_arrays and e[0] == "int")]
    consumed = sum(1 for e in index if e[0] in ("array", "int", "slice"))
    contiguous = bool(adv) and adv == list(range(adv[0], adv[-1] + 1))
    pre = 0
    for e in index[:adv[0]] if adv else ():
        pre += {"slice": 1, "none": 1, "ellipsis": x_ndim - consumed}.get(e[0], 0)
    return _Layout(has_arrays, contiguous, pre, max(array_ndims, default=0))


def _iota_batch(size: int, ndim: int) -> Tracer:
    """The example number as an index array of shape (size, 1, ..., 1) (`ndim` dimensions)."""
    return ops.bind1("iota", shape=(size,) + (1,) * (ndim - 1), dimension=0, dtype=_I64)


def _expand_front(x: Tracer, ndim: int) -> Tracer:
    """x with leading 1-dimensions up to `ndim` dimensions (NumPy's right-aligned broadcasting)."""
    return ops.reshape(x, (1,) * (ndim - x.ndim) + tuple(x.shape))


def _batch_front(a: Tracer, ndim: int) -> Tracer:
    """A batched index array (size, *s) as (size, 1, ..., 1, *s) with `ndim` dimensions after
    the batch axis."""
    return ops.reshape(a, (a.shape[0],) + (1,) * (ndim - (a.ndim - 1)) + tuple(a.shape[1:]))


def _batched_index(x: Tracer, x_batched: bool, index: tuple, arrays: Sequence[Tracer], batched: Sequence[bool],
                   size: int) -> tuple[tuple, list[Tracer], list[int]]:
    """The index of the whole batch for one example's `index` into x (batched or not) and the
    permutation that takes NumPy's result of it to (batch, per-example result)."""
    x_ndim = x.ndim - (1 if x_batched else 0)
    lay = _layout(index, x_ndim, [a.ndim - (1 if b else 0) for a, b in zip(arrays, batched)])
    if not any(batched):  # only x is batched: one more full slice in front
        out_ndim = 1 + len(gather_shape(tuple(x.shape[1:]), index, [a.aval for a in arrays]))
        new_index = (_FULL,) + tuple(index)
        perm = list(range(out_ndim))
        if lay.has_arrays and not lay.contiguous:  # (adv, batch, rest): the batch axis after adv
            perm = [lay.adv_ndim] + [d for d in perm if d != lay.adv_ndim]
        return new_index, list(arrays), perm
    r = lay.adv_ndim
    new_arrays = [_batch_front(a, r) if b else _expand_front(a, r + 1) for a, b in zip(arrays, batched)]
    per_example_ndim = len(gather_shape(tuple(x.shape[1:] if x_batched else x.shape), index,
                                        [a.aval if not b else type(a.aval)(a.shape[1:], a.dtype)
                                         for a, b in zip(arrays, batched)]))
    out_ndim = 1 + per_example_ndim
    rest = per_example_ndim - r  # dimensions of the basic entries
    if x_batched:
        # raw result: (batch, adv..., basic...) whatever the adjacency (the iota entry is first)
        new_index = (("array", len(new_arrays)),) + tuple(index)
        new_arrays.append(_iota_batch(size, r + 1))
        raw = ["b"] + [("a", k) for k in range(r)] + [("r", k) for k in range(rest)]
    else:
        new_index = tuple(index)
        if lay.contiguous:
            raw = [("r", k) for k in range(lay.pre)] + ["b"] + [("a", k) for k in range(r)] + \
                  [("r", k) for k in range(lay.pre, rest)]
        else:
            raw = ["b"] + [("a", k) for k in range(r)] + [("r", k) for k in range(rest)]
    if lay.contiguous:
        target = ["b"] + [("r", k) for k in range(lay.pre)] + [("a", k) for k in range(r)] + \
                 [("r", k) for k in range(lay.pre, rest)]
    else:
        target = ["b"] + [("a", k) for k in range(r)] + [("r", k) for k in range(rest)]
    assert len(raw) == out_ndim
    perm = [raw.index(t) for t in target]
    return new_index, new_arrays, perm


def _inverse(perm: Sequence[int]) -> list[int]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def _ensure_batched(x: Tracer, b: bool, size: int) -> Tracer:
    return x if b else broadcast_batch(x, size)


def batched_gather(x: Tracer, x_batched: bool, index: tuple, arrays: Sequence[Tracer], batched: Sequence[bool],
                   size: int) -> Tracer:
    """`x[index]` per example, as one gather over the batch (batch axis first)."""
    new_index, new_arrays, perm = _batched_index(x, x_batched, index, arrays, batched, size)
    return ops.transpose(ops.bind1("gather", x, *new_arrays, index=new_index), perm)


@register_batch("gather")
def _gather(args, batched, size, *, index):
    x, *arrays = args
    return [batched_gather(x, batched[0], index, arrays, batched[1:], size)], [True]


def _value_for(value: Tracer, value_batched: bool, per_example: tuple, perm: Sequence[int], size: int) -> Tracer:
    """A scatter's value for the whole batch, in the layout of the batched index (`perm` takes
    that layout to (batch, per-example)). A 0-d value broadcasts to any layout as it is."""
    if not value_batched and value.ndim == 0:
        return value
    vshape = list(value.shape[1:] if value_batched else value.shape)
    while len(vshape) > len(per_example) and vshape[0] == 1:  # NumPy drops leading 1s of a value
        vshape.pop(0)
    value = ops.reshape(value, ((size,) if value_batched else ()) + tuple(vshape))
    if len(vshape) > len(per_example):
        raise ValueError(f"could not broadcast input array from shape {tuple(vshape)} into shape {per_example}")
    off = 1 + len(per_example) - len(vshape)
    dims = ((0,) if value_batched else ()) + tuple(range(off, off + len(vshape)))
    for d, n in zip(dims[1 if value_batched else 0:], vshape):
        if n not in (1, ((size,) + per_example)[d]):
            raise ValueError(f"shape mismatch: value array of shape {tuple(vshape)} could not be broadcast to "
                             f"indexing result of shape {per_example}")
    full = ops.broadcast_in_dim(value, (size,) + tuple(per_example), dims)
    return ops.transpose(full, _inverse(perm))


def _scatter_common(prim: str, args, batched, size, index, has_value: bool, weak, extra: dict):
    x, rest = args[0], list(args[1:])
    value, value_b = (rest.pop(), batched[-1]) if has_value else (None, False)
    arrays, arrays_b = rest, list(batched[1:1 + len(rest)])
    x = _ensure_batched(x, batched[0], size)
    new_index, new_arrays, perm = _batched_index(x, True, index, arrays, arrays_b, size)
    inputs = [x] + new_arrays
    if has_value:
        per_example = gather_shape(tuple(x.shape[1:]), index,
                                   [type(a.aval)(a.shape[1:], a.dtype) if b else a.aval for a, b in zip(arrays, arrays_b)])
        v = _value_for(value, value_b, per_example, perm, size)
        if v is not value:
            weak = None  # a value of the batch's shape is an array, no longer the Python scalar
        inputs.append(v)
    return [ops.bind1(prim, *inputs, index=new_index, weak=weak, **extra)], [True]


@register_batch("scatter")
def _scatter(args, batched, size, *, index, weak):
    return _scatter_common("scatter", args, batched, size, index, True, weak, {})


@register_batch("scatter_ufunc")
def _scatter_ufunc(args, batched, size, *, ufunc, index, has_value, weak):
    return _scatter_common("scatter_ufunc", args, batched, size, index, has_value, weak,
                           {"ufunc": ufunc, "has_value": has_value})


# ----------------------------------------------------------------------------- take family


def _norm_axis(axis: int, ndim: int) -> int:
    return axis % ndim if ndim else 0


def _flat(x: Tracer, b: bool) -> Tracer:
    """One example's array flattened (the batch axis kept)."""
    return ops.reshape(x, (x.shape[0], int(np.prod(x.shape[1:], dtype=np.int64))) if b else (x.size,))


def _mode_indices(idx: Tracer, n: int, mode: str) -> Tracer:
    """np.take / np.put's `mode` applied to the indices: afterwards NumPy's indexing rule holds
    ('raise': negative indices wrap once, others raise IndexError)."""
    if mode == "raise" or n == 0:
        return idx
    idx = ops.convert(idx, _I64)
    if mode == "wrap":
        return ops.bind1("remainder", idx, ops.scalar_like(idx, n))
    if mode == "clip":
        return ops.bind1("minimum", ops.bind1("maximum", idx, ops.scalar_like(idx, 0)), ops.scalar_like(idx, n - 1))
    raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")


@register_batch("take")
def _take(args, batched, size, *, axis, mode):
    (a, idx), (ab, ib) = args, batched
    if axis is None:
        a, ab_axis = _flat(a, ab), 0
    else:
        ab_axis = _norm_axis(axis, a.ndim - (1 if ab else 0))
    if not ib:
        return [ops.bind1("take", a, idx, axis=ab_axis + 1, mode=mode)], [True]
    n = a.shape[ab_axis + (1 if ab else 0)]
    idx = _mode_indices(idx, n, mode)
    index = (_FULL,) * ab_axis + (("array", 0),)
    return [batched_gather(a, ab, index, [idx], [True], size)], [True]


def _lift_batch(x: Tracer, b: bool) -> Tracer:
    """A batch axis of 1 in front of an unbatched value (NumPy broadcasts it over the batch)."""
    return x if b else ops.reshape(x, (1,) + tuple(x.shape))


@register_batch("take_along_axis")
def _take_along(args, batched, size, *, axis):
    (arr, idx), (ab, ib) = args, batched
    if axis is None:
        arr, ax = _flat(arr, ab), 1
    else:
        ax = _norm_axis(axis, arr.ndim - (1 if ab else 0)) + 1
    return [ops.bind1("take_along_axis", _lift_batch(arr, ab), _lift_batch(idx, ib), axis=ax)], [True]


@register_batch("take_static")
def _take_static(args, batched, size, *, axis):
    (x, idx), (xb, ib) = args, batched
    if not ib:
        return [ops.bind1("take_static", x, idx, axis=axis + 1)], [True]
    return [batched_gather(x, xb, (_FULL,) * axis + (("array", 0),), [idx], [True], size)], [True]


# ----------------------------------------------------------------------------- put family


def _cycled(v: Tracer, b: bool, n: int) -> Tracer:
    """One example's values flattened and repeated (or cut) to n, as np.put and np.putmask use them."""
    v = _flat(v, b)
    m = v.shape[-1]
    if m == n:
        return v
    picks = ops.const(np.arange(n, dtype=_I64) % m, _I64)
    return ops.bind1("take_static", v, picks, axis=v.ndim - 1)


@register_batch("put")
def _put(args, batched, size, *, mode, weak):
    (x, ind, v), (xb, ib, vb) = args, batched
    shape = x.shape[1:] if xb else x.shape
    n_x = int(np.prod(shape, dtype=np.int64))
    ind = _flat(ind, ib)
    n = ind.shape[-1]
    if n == 0 or v.size // (size if vb else 1) == 0:
        return [_ensure_batched(x, xb, size)], [True]  # nothing is written (np.put of empty values)
    out = _flat(_ensure_batched(x, xb, size), True)
    ind = _lift_batch(_mode_indices(ind, n_x, mode), ib)
    if not vb and v.ndim == 0:
        value = v
    else:
        value, weak = _lift_batch(_cycled(v, vb, n), vb), None
    index = (("array", 0), ("array", 1))
    res = ops.bind1("scatter", out, _iota_batch(size, 2), ind, value, index=index, weak=weak)
    return [ops.reshape(res, (size,) + tuple(shape))], [True]


@register_batch("put_along_axis")
def _put_along(args, batched, size, *, axis, weak):
    (arr, idx, values), (ab, ib, vb) = args, batched
    shape = arr.shape[1:] if ab else arr.shape
    out = _ensure_batched(arr, ab, size)
    if axis is None:
        out, ax = _flat(out, True), 1
    else:
        ax = _norm_axis(axis, len(shape)) + 1
    idx_ndim = idx.ndim - (1 if ib else 0)
    if not vb and values.ndim == 0:
        v = values
    else:
        per = values.shape[1:] if vb else values.shape
        v = ops.reshape(values, ((size,) if vb else ()) + (1,) * (idx_ndim - len(per)) + tuple(per))
        v, weak = _lift_batch(v, vb), None
    res = ops.bind1("put_along_axis", out, _lift_batch(idx, ib), v, axis=ax, weak=weak)
    return [ops.reshape(res, (size,) + tuple(shape))], [True]


def _mask_values(values: Tracer, vb: bool, shape: tuple, size: int, n_cycle_ok: bool) -> tuple[Tracer, bool]:
    """(values for the batched step, whether they are per element of the batch)."""
    n = int(np.prod(shape, dtype=np.int64))
    m = values.size // (size if vb else 1)
    if not vb and (m <= 1 or (n_cycle_ok and n % m == 0)):
        return values, False  # cycling over the whole batch is cycling over each example
    full = ops.reshape(_cycled(values, vb, n), ((size,) if vb else ()) + tuple(shape))
    return _ensure_batched(full, vb, size), True


@register_batch("putmask")
def _putmask(args, batched, size, *, weak):
    (x, mask, values), (xb, mb, vb) = args, batched
    shape = tuple(x.shape[1:] if xb else x.shape)
    v, per_element = _mask_values(values, vb, shape, size, True)
    return [ops.bind1("putmask", _ensure_batched(x, xb, size), _ensure_batched(mask, mb, size), v,
                      weak=None if per_element else weak)], [True]


@register_batch("place")
def _place(args, batched, size, *, weak):
    (x, mask, vals), (xb, mb, vb) = args, batched
    shape = tuple(x.shape[1:] if xb else x.shape)
    out, mask = _ensure_batched(x, xb, size), _ensure_batched(mask, mb, size)
    m = vals.size // (size if vb else 1)
    if not vb and m <= 1:
        return [ops.bind1("place", out, mask, vals, weak=weak)], [True]
    if m == 0:  # a batched empty vals: the examples' own step raises where a mask is set
        return [ops.bind1("place", out, mask, ops.reshape(vals, (0,)), weak=None)], [True]
    # the k-th set element of each example takes vals[k % m]
    flat_mask = ops.reshape(mask, (size, out.size // size))
    rank = ops.bind1("accumulate", ops.convert(flat_mask, _I64), ufunc="add", axis=1, dtype=_I64)
    pos = ops.bind1("remainder", ops.sub(rank, ops.scalar_like(rank, 1)), ops.scalar_like(rank, m))
    v = _flat(vals, vb)
    picked = batched_gather(v, vb, (("array", 0),), [pos], [True], size) if vb else \
        ops.bind1("gather", v, pos, index=(("array", 0),))
    full = ops.reshape(picked, (size,) + shape)
    return [ops.bind1("putmask", out, mask, full, weak=None)], [True]


# ----------------------------------------------------------------------------- dynamic slices


def _checked_starts(x_shape: tuple, starts: Sequence[Tracer], starts_b: Sequence[bool], sizes: Sequence[int],
                    size: int, what: str) -> list[Tracer]:
    """Per-example start indices (int64, batch axis first where batched) after NumPy's rule:
    a negative start wraps once; a window outside the axis raises IndexError (raise_if)."""
    out = []
    for d, (s, b, n, k) in enumerate(zip(starts, starts_b, x_shape, sizes)):
        s = ops.convert(s, _I64)
        s = ops.select(ops.bind1("less", s, ops.scalar_like(s, 0)), ops.add(s, ops.scalar_like(s, n)), s)
        bad = ops.bind1("logical_or", ops.bind1("less", s, ops.scalar_like(s, 0)),
                        ops.bind1("greater", s, ops.scalar_like(s, n - k)))
        if b:
            bad = ops.bind1("reduce_or", bad, axes=(0,))
        s = ops.bind1("raise_if", s, bad, exception="IndexError",
                      message=f"index out of bounds for axis {d} with size {n} (a start index of {what}, in one "
                              f"of the examples of vmap)")
        out.append(s)
    return out


def _window_index(starts: Sequence[Tracer], starts_b: Sequence[bool], sizes: Sequence[int]) -> list[Tracer]:
    """Index arrays start + arange(size) per dimension, as an outer product with the batch axis
    first: dimension d has shape (size|1, 1, .., k_d, .., 1)."""
    r = len(sizes)
    arrays = []
    for d, (s, b, k) in enumerate(zip(starts, starts_b, sizes)):
        lead = s.shape[0] if b else 1
        shape = (lead,) + tuple(k if e == d else 1 for e in range(r))
        ar = ops.bind1("iota", shape=shape, dimension=d + 1, dtype=_I64)
        sb = ops.broadcast_in_dim(s, shape, (0,) if b else ())
        arrays.append(ops.add(sb, ar))
    return arrays


def _symbolic(layout) -> None:
    if layout is not None:
        raise UnsupportedOperationError("vmap of a slice of symbolic length (a length that depends on a loop "
                                        "index) is not supported")


@register_batch("dynamic_slice")
def _dynamic_slice(args, batched, size, *, sizes, layout=None):
    _symbolic(layout)
    (x, *starts), (xb, *sb) = args, batched
    shape = tuple(x.shape[1:] if xb else x.shape)
    if not any(sb):
        zero = ops.const(0, starts[0].dtype if starts else _I64)
        return [ops.bind1("dynamic_slice", x, zero, *starts, sizes=(size,) + tuple(sizes))], [True]
    checked = _checked_starts(shape, starts, sb, sizes, size, "dynamic_slice")
    arrays = _window_index(checked, sb, sizes)
    if xb:
        arrays = [_iota_batch(size, len(sizes) + 1)] + arrays
    index = tuple(("array", k) for k in range(len(arrays)))
    return [ops.bind1("gather", x, *arrays, index=index)], [True]


@register_batch("dynamic_update_slice")
def _dynamic_update_slice(args, batched, size, *, layout=None):
    _symbolic(layout)
    (x, update, *starts), (xb, ub, *sb) = args, batched
    x, update = _ensure_batched(x, xb, size), _ensure_batched(update, ub, size)
    if not any(sb):
        zero = ops.const(0, starts[0].dtype if starts else _I64)
        return [ops.bind1("dynamic_update_slice", x, update, zero, *starts)], [True]
    sizes = tuple(update.shape[1:])
    checked = _checked_starts(tuple(x.shape[1:]), starts, sb, sizes, size, "dynamic_update_slice")
    arrays = [_iota_batch(size, len(sizes) + 1)] + _window_index(checked, sb, sizes)
    index = tuple(("array", k) for k in range(len(arrays)))
    return [ops.bind1("scatter", x, *arrays, update, index=index, weak=None)], [True]
