"""Differentiation rules of indexing: `dynamic_slice`, `dynamic_update_slice`, `take_static`,
`gather`, `take`, `take_along_axis`, `scatter`, `scatter_ufunc` (add, subtract), `put`,
`put_along_axis`, `putmask`, `place` (docs/transformations.md, "Indexing and library steps
under grad").

Every gather-like primitive is linear in its array operand: its tangent is the same gather of
the tangent, its cotangent a scatter-*add* of the cotangent into zeros (`np.add.at` semantics:
repeated indices accumulate). Every scatter that *sets* (`x[idx] = v`, np.put,
np.put_along_axis, np.putmask, np.place) is linear in (x, v): the tangent is the same scatter
of the tangents; the cotangent of x is the cotangent with the written positions zeroed, that of
v the cotangent gathered at the positions v was written to, where only the write NumPy keeps
counts (the last one for a repeated index): a scatter of element ids finds, for every written
position, which element of v won.

Indices are integers: they get no cotangent. Index normalisation (negative indices, np.take's
`mode`) is done by the same primitives the forward pass uses, so both agree by construction.
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import AType
from ..trace.tracer import Tracer
from . import ops
from .ad import differentiable, register_jvp, register_vjp

_I64 = np.dtype(np.int64)
_FULL_SLICE = ("slice", None, None, None)


def _or_zeros(t: Tracer | None, aval: AType) -> Tracer:
    return t if t is not None else ops.zeros_like(aval)


def _zero_scalar(dtype: np.dtype) -> Tracer:
    return ops.const(0, dtype)


def _ids(shape: tuple[int, ...]) -> Tracer:
    """int64 element ids 0..size-1 in the given shape (a constant)."""
    return ops.const(np.arange(int(np.prod(shape, dtype=np.int64)), dtype=_I64).reshape(shape), _I64)


def _sum_to_shape(ct: Tracer, shape: tuple[int, ...]) -> Tracer:
    """Transpose of NumPy's broadcasting of a value of `shape` to ct's shape (right-aligned;
    extra leading dimensions of the value have length 1)."""
    shape = tuple(shape)
    if len(shape) > ct.ndim:
        ct = ops.reshape(ct, (1,) * (len(shape) - ct.ndim) + tuple(ct.shape))
    dims = tuple(range(ct.ndim - len(shape), ct.ndim))
    return ops.sum_to_aval(ct, AType(shape, ct.dtype), dims)


def _value_cotangent(ct: Tracer, value: Tracer) -> Tracer | None:
    """The cotangent of a written value, from the cotangent of the positions it was written to
    (already masked to the winning writes), in the value's shape and dtype."""
    if not differentiable(value.aval):
        return None
    if value.dtype.kind == "f" and ct.dtype.kind == "c":
        ct = ops.bind1("real", ct)
    return ops.convert(_sum_to_shape(ct, value.shape), value.dtype)


def _check_value_dtype(x: Tracer, value: Tracer, what: str) -> None:
    if value.dtype.kind == "c" and x.dtype.kind != "c" and differentiable(value.aval):
        raise UnsupportedOperationError(
            f"differentiation of {what} that writes complex values into a real array (NumPy discards the imaginary "
            "part) is not supported; take np.real of the values first")


# ----------------------------------------------------------------------------- dynamic slices


def _no_layout(prim: str, layout) -> None:
    if layout is not None:
        raise UnsupportedOperationError(
            f"differentiation of {prim} of a slice whose length depends on a loop index (a symbolic length) is not "
            "supported yet; use a slice of constant length, or mask with np.where")


@register_jvp("dynamic_slice")
def _dynamic_slice_jvp(primals, tangents, *, sizes, layout=None):
    x, *starts = primals
    params = dict(sizes=sizes) if layout is None else dict(sizes=sizes, layout=layout)
    out = ops.bind("dynamic_slice", x, *starts, **params)
    return out, [ops.bind1("dynamic_slice", tangents[0], *starts, **params)]


@register_vjp("dynamic_slice")
def _dynamic_slice_vjp(cts, primals, outs, *, sizes, layout=None):
    _no_layout("dynamic_slice", layout)
    x, *starts = primals
    return [ops.bind1("dynamic_update_slice", ops.zeros_like(x.aval), cts[0], *starts)] + [None] * len(starts)


@register_jvp("dynamic_update_slice")
def _dus_jvp(primals, tangents, *, layout=None):
    x, update, *starts = primals
    params = {} if layout is None else dict(layout=layout)
    out = ops.bind("dynamic_update_slice", x, update, *starts, **params)
    tx, tu = tangents[0], tangents[1]
    return out, [ops.bind1("dynamic_update_slice", _or_zeros(tx, x.aval), _or_zeros(tu, update.aval), *starts, **params)]


@register_vjp("dynamic_update_slice")
def _dus_vjp(cts, primals, outs, *, layout=None):
    _no_layout("dynamic_update_slice", layout)
    x, update, *starts = primals
    ct = cts[0]
    ct_x = ops.bind1("dynamic_update_slice", ct, ops.zeros_like(update.aval), *starts)
    ct_u = ops.bind1("dynamic_slice", ct, *starts, sizes=tuple(update.shape))
    return [ct_x, ct_u] + [None] * len(starts)


# ----------------------------------------------------------------------------- gathers


def _scatter_add_into_zeros(aval: AType, index_arrays: list[Tracer], index: tuple, ct: Tracer) -> Tracer:
    """zeros of `aval` with `np.add.at(zeros, index, ct)`: the transpose of `x[index]`."""
    return ops.bind1("scatter_ufunc", ops.zeros_like(aval), *index_arrays, ct, ufunc="add", index=index,
                     has_value=True, weak=None)


@register_jvp("gather")
def _gather_jvp(primals, tangents, *, index):
    x, *idx = primals
    return ops.bind("gather", x, *idx, index=index), [ops.bind1("gather", tangents[0], *idx, index=index)]


@register_vjp("gather")
def _gather_vjp(cts, primals, outs, *, index):
    x, *idx = primals
    return [_scatter_add_into_zeros(x.aval, idx, index, cts[0])] + [None] * len(idx)


def _axis_index(axis: int) -> tuple:
    return (_FULL_SLICE,) * axis + (("array", 0),)


@register_jvp("take_static")
def _take_static_jvp(primals, tangents, *, axis):
    x, idx = primals
    return ops.bind("take_static", x, idx, axis=axis), [ops.bind1("take_static", tangents[0], idx, axis=axis)]


@register_vjp("take_static")
def _take_static_vjp(cts, primals, outs, *, axis):
    x, idx = primals
    return [_scatter_add_into_zeros(x.aval, [idx], _axis_index(axis), cts[0]), None]


@register_jvp("take")
def _take_jvp(primals, tangents, *, axis, mode):
    a, idx = primals
    return ops.bind("take", a, idx, axis=axis, mode=mode), [ops.bind1("take", tangents[0], idx, axis=axis, mode=mode)]


def _normalized_take_indices(idx: Tracer, n: int, mode: str) -> Tracer:
    """np.take's index rule for `mode`, as indices np.add.at reads the same way ("raise": as
    they are, negative ones wrap once; "wrap": modulo n; "clip": clipped to [0, n - 1])."""
    if mode == "wrap":
        return ops.bind1("remainder", idx, ops.full(idx.shape, n, idx.dtype))
    if mode == "clip":
        lo = ops.bind1("maximum", idx, ops.full(idx.shape, 0, idx.dtype))
        return ops.bind1("minimum", lo, ops.full(idx.shape, max(n - 1, 0), idx.dtype))
    return idx


@register_vjp("take")
def _take_vjp(cts, primals, outs, *, axis, mode):
    a, idx = primals
    if axis is None:
        flat = AType((a.aval.size,), a.dtype)
        ct = _scatter_add_into_zeros(flat, [_normalized_take_indices(idx, a.aval.size, mode)], (("array", 0),), cts[0])
        return [ops.reshape(ct, a.shape), None]
    axis = axis % a.ndim
    norm = _normalized_take_indices(idx, a.shape[axis], mode)
    return [_scatter_add_into_zeros(a.aval, [norm], _axis_index(axis), cts[0]), None]


def _along_axis_index(shape: tuple[int, ...], idx: Tracer, axis: int) -> tuple[list[Tracer], tuple]:
    """The fancy index that np.take_along_axis / np.put_along_axis use: `idx` on `axis`, an
    arange broadcast along every other axis."""
    arrays = []
    for d, n in enumerate(shape):
        if d == axis:
            arrays.append(idx)
        else:
            arrays.append(ops.const(np.arange(n, dtype=_I64).reshape([n if e == d else 1 for e in range(len(shape))]), _I64))
    return arrays, tuple(("array", d) for d in range(len(shape)))


@register_jvp("take_along_axis")
def _take_along_jvp(primals, tangents, *, axis):
    arr, idx = primals
    return (ops.bind("take_along_axis", arr, idx, axis=axis),
            [ops.bind1("take_along_axis", tangents[0], idx, axis=axis)])


@register_vjp("take_along_axis")
def _take_along_vjp(cts, primals, outs, *, axis):
    arr, idx = primals
    if axis is None:
        flat = AType((arr.aval.size,), arr.dtype)
        return [ops.reshape(_scatter_add_into_zeros(flat, [idx], (("array", 0),), cts[0]), arr.shape), None]
    arrays, index = _along_axis_index(arr.shape, idx, axis % arr.ndim)
    return [_scatter_add_into_zeros(arr.aval, arrays, index, cts[0]), None]


# ----------------------------------------------------------------------------- scatters (set)


def _winners(x_shape: tuple[int, ...], write, read, written_shape: tuple[int, ...]) -> Tracer:
    """A bool mask of `written_shape`: whether each written element is the one NumPy keeps at
    its position (the last write of a repeated index). `write(target, values)` scatters like
    the forward pass, `read(target)` gathers the written positions."""
    ids = _ids(written_shape)
    board = write(ops.full(x_shape, -1, _I64), ids)
    return ops.bind1("equal", read(board), ids)


def _masked(mask: Tracer, ct: Tracer) -> Tracer:
    return ops.select(mask, ct, ops.zeros_like(ct.aval))


@register_jvp("scatter")
def _scatter_jvp(primals, tangents, *, index, weak):
    x, *idx, value = primals
    _check_value_dtype(x, value, "x[index] = value")
    out = ops.bind("scatter", x, *idx, value, index=index, weak=weak)
    if not differentiable(x.aval):
        return out, [None]
    tv = tangents[-1] if tangents[-1] is not None else _zero_scalar(value.dtype)
    return out, [ops.bind1("scatter", _or_zeros(tangents[0], x.aval), *idx, tv, index=index, weak=None)]


def _has_arrays(index: tuple) -> bool:
    return any(entry[0] == "array" for entry in index)


@register_vjp("scatter")
def _scatter_vjp(cts, primals, outs, *, index, weak):
    x, *idx, value = primals
    ct = cts[0]
    ct_x = ops.bind1("scatter", ct, *idx, _zero_scalar(ct.dtype), index=index, weak=None)
    ct_v = None
    if differentiable(value.aval):
        gathered = ops.bind1("gather", ct, *idx, index=index)
        if _has_arrays(index):  # an index array may repeat a position: only the last write counts
            mask = _winners(x.shape, lambda t, v: ops.bind1("scatter", t, *idx, v, index=index, weak=None),
                            lambda t: ops.bind1("gather", t, *idx, index=index), tuple(gathered.shape))
            gathered = _masked(mask, gathered)
        ct_v = _value_cotangent(gathered, value)
    return [ct_x] + [None] * len(idx) + [ct_v]


@register_jvp("put")
def _put_jvp(primals, tangents, *, mode, weak):
    x, ind, v = primals
    _check_value_dtype(x, v, "np.put")
    out = ops.bind("put", x, ind, v, mode=mode, weak=weak)
    if not differentiable(x.aval):
        return out, [None]
    return out, [ops.bind1("put", _or_zeros(tangents[0], x.aval), ind, _or_zeros(tangents[2], v.aval), mode=mode, weak=None)]


def _fold_cyclic(c: Tracer, m: int, value: Tracer) -> Tracer | None:
    """NumPy repeats a short value array cyclically (np.put, np.putmask): element k of the flat
    `c` was written from value.flat[k % m]; sum them back into the value's shape."""
    n = c.aval.size
    c = ops.reshape(c, (n,))
    if m == 0:
        return None
    rows = -(-n // m)
    if rows * m != n:
        c = ops.bind1("concatenate", c, ops.zeros_like(AType((rows * m - n,), c.dtype)), axis=0)
    folded = ops.reduce_sum(ops.reshape(c, (rows, m)), (0,)) if rows > 0 else ops.zeros_like(AType((m,), c.dtype))
    return _value_cotangent(ops.reshape(folded, value.shape), value)


@register_vjp("put")
def _put_vjp(cts, primals, outs, *, mode, weak):
    x, ind, v = primals
    ct = cts[0]
    ct_x = ops.bind1("put", ct, ind, _zero_scalar(ct.dtype), mode=mode, weak=None)
    ct_v = None
    if differentiable(v.aval) and v.aval.size and ind.aval.size:
        n, m = ind.aval.size, v.aval.size
        gathered = ops.bind1("take", ct, ind, axis=None, mode=mode)  # shape of ind
        used = ops.reshape(_ids((n,)), ind.shape)  # one id per write; write k reads v.flat[k % m]
        board = ops.bind1("put", ops.full(x.shape, -1, _I64), ind, used, mode=mode, weak=None)
        mask = ops.bind1("equal", ops.bind1("take", board, ind, axis=None, mode=mode), used)
        c = _masked(mask, gathered)
        if m >= n:
            c = ops.reshape(c, (n,))
            if m > n:
                c = ops.bind1("concatenate", c, ops.zeros_like(AType((m - n,), c.dtype)), axis=0)
            ct_v = _value_cotangent(ops.reshape(c, v.shape), v)
        else:
            ct_v = _fold_cyclic(c, m, v)
    return [ct_x, None, ct_v]


@register_jvp("put_along_axis")
def _put_along_jvp(primals, tangents, *, axis, weak):
    x, idx, values = primals
    _check_value_dtype(x, values, "np.put_along_axis")
    out = ops.bind("put_along_axis", x, idx, values, axis=axis, weak=weak)
    if not differentiable(x.aval):
        return out, [None]
    tv = tangents[2] if tangents[2] is not None else _zero_scalar(values.dtype)
    return out, [ops.bind1("put_along_axis", _or_zeros(tangents[0], x.aval), idx, tv, axis=axis, weak=None)]


@register_vjp("put_along_axis")
def _put_along_vjp(cts, primals, outs, *, axis, weak):
    x, idx, values = primals
    ct = cts[0]
    ct_x = ops.bind1("put_along_axis", ct, idx, _zero_scalar(ct.dtype), axis=axis, weak=None)
    ct_v = None
    if differentiable(values.aval):
        gathered = ops.bind1("take_along_axis", ct, idx, axis=axis)
        mask = _winners(x.shape, lambda t, v: ops.bind1("put_along_axis", t, idx, v, axis=axis, weak=None),
                        lambda t: ops.bind1("take_along_axis", t, idx, axis=axis), tuple(gathered.shape))
        ct_v = _value_cotangent(_masked(mask, gathered), values)
    return [ct_x, None, ct_v]


def _bool_mask(mask: Tracer, shape: tuple[int, ...]) -> Tracer:
    m = ops.convert(mask, np.bool_)
    return ops.reshape(m, shape)


def _masked_write_jvp(prim: str):
    """np.putmask and np.place are linear in (x, values) for a fixed mask: the tangent is the
    same write applied to the tangents."""
    def jvp(primals, tangents, *, weak):
        x, mask, values = primals
        _check_value_dtype(x, values, f"np.{prim}")
        out = ops.bind(prim, x, mask, values, weak=weak)
        if not differentiable(x.aval):
            return out, [None]
        return out, [ops.bind1(prim, _or_zeros(tangents[0], x.aval), mask, _or_zeros(tangents[2], values.aval),
                               weak=None)]
    return jvp


register_jvp("putmask")(_masked_write_jvp("putmask"))
register_jvp("place")(_masked_write_jvp("place"))


def _masked_write_ct_x(ct: Tracer, mask: Tracer, shape: tuple[int, ...]) -> tuple[Tracer, Tracer]:
    """The boolean mask and x's cotangent of a masked write: zero where the write replaced x."""
    m = _bool_mask(mask, shape)
    return m, ops.select(m, ops.zeros_like(ct.aval), ct)


@register_vjp("putmask")
def _putmask_vjp(cts, primals, outs, *, weak):
    x, mask, values = primals
    ct = cts[0]
    m, ct_x = _masked_write_ct_x(ct, mask, x.shape)
    ct_v = None
    if differentiable(values.aval) and values.aval.size:
        ct_v = _fold_cyclic(_masked(m, ct), values.aval.size, values)  # x.flat[n] = values.flat[n % m]
    return [ct_x, None, ct_v]




@register_vjp("place")
def _place_vjp(cts, primals, outs, *, weak):
    x, mask, vals = primals
    ct = cts[0]
    m, ct_x = _masked_write_ct_x(ct, mask, x.shape)
    ct_v = None
    size = vals.aval.size
    if differentiable(vals.aval) and size and x.aval.size:
        # the k-th selected position (in flat order) gets vals.flat[k % size]
        flat_mask = ops.reshape(m, (x.aval.size,))
        rank = ops.bind1("accumulate", flat_mask, ufunc="add", axis=0, dtype=_I64)
        slot = ops.bind1("remainder", ops.sub(rank, ops.full(rank.shape, 1, _I64)), ops.full(rank.shape, size, _I64))
        written = ops.reshape(_masked(m, ct), (x.aval.size,))
        summed = _scatter_add_into_zeros(AType((size,), ct.dtype), [slot], (("array", 0),), written)
        ct_v = _value_cotangent(ops.reshape(summed, vals.shape), vals)
    return [ct_x, None, ct_v]


# ----------------------------------------------------------------------------- ufunc.at


_LINEAR_AT = {"add": 1, "subtract": -1}


def _check_ufunc_at(ufunc: str, has_value: bool) -> None:
    if ufunc not in _LINEAR_AT or not has_value:
        raise UnsupportedOperationError(
            f"differentiation of numpy.{ufunc}.at (the primitive scatter_ufunc with ufunc={ufunc!r}) is not supported "
            "yet: only np.add.at and np.subtract.at have rules; write the update with np.add.at of the change")


@register_jvp("scatter_ufunc")
def _scatter_ufunc_jvp(primals, tangents, *, ufunc, index, has_value, weak):
    _check_ufunc_at(ufunc, has_value)
    x, *idx, value = primals
    _check_value_dtype(x, value, f"np.{ufunc}.at")
    out = ops.bind("scatter_ufunc", x, *idx, value, ufunc=ufunc, index=index, has_value=True, weak=weak)
    if not differentiable(x.aval):
        return out, [None]
    if tangents[-1] is None:
        return out, [tangents[0]]
    t = ops.bind1("scatter_ufunc", _or_zeros(tangents[0], x.aval), *idx, tangents[-1], ufunc=ufunc, index=index,
                  has_value=True, weak=None)
    return out, [t]


@register_vjp("scatter_ufunc")
def _scatter_ufunc_vjp(cts, primals, outs, *, ufunc, index, has_value, weak):
    _check_ufunc_at(ufunc, has_value)
    x, *idx, value = primals
    ct = cts[0]
    ct_v = None
    if differentiable(value.aval):
        g = ops.bind1("gather", ct, *idx, index=index)
        ct_v = _value_cotangent(g if _LINEAR_AT[ufunc] > 0 else ops.neg(g), value)
    return [ct] + [None] * len(idx) + [ct_v]


# ----------------------------------------------------------------------------- data-dependent shapes


def _datadep_error(*args, where="", **params):
    raise UnsupportedOperationError(
        "differentiation of a value of data-dependent shape (a boolean mask selection x[mask], np.nonzero, np.unique, "
        f"a slice with bounds read from data) is not supported{' (' + where + ')' if where else ''}: the number of "
        "elements is only known at run time. Write it with a static shape instead, e.g. np.where(mask, x, 0) in place of x[mask]")


for _prim in ("datadep_call", "datadep_pure"):
    register_jvp(_prim)(_datadep_error)
    register_vjp(_prim)(_datadep_error)


# ----------------------------------------------------------------------------- raise_if


@register_jvp("raise_if")
def _raise_if_jvp(primals, tangents, *, exception, message):
    # the value passes through (the check runs on the primal, where NumPy makes it)
    return ops.bind("raise_if", *primals, exception=exception, message=message), [tangents[0]]


@register_vjp("raise_if")
def _raise_if_vjp(cts, primals, outs, *, exception, message):
    return [cts[0], None]
