"""Batching rules of the structural and library primitives: argmax/argmin, slice, concatenate,
update_slice, dot_general, dot_sum, raise_if, debug_callback, the library steps of ir/library_prims.py (linalg,
sorting, accumulation, histograms, FFT) and the data-dependent steps (refused).

Where NumPy's function already broadcasts over leading axes (linalg's stacked matrices, sort
along an axis, FFT along given axes) the rule only moves the axis parameters past the batch
axis; where it does not, a batched formulation in other primitives (bincount with an offset per
example, searchsorted as a count of comparisons); the few steps with neither run once per
example in a loop (batching_control.loop_per_example).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir.primitives import ufunc_loop
from . import ops
from .batching import broadcast_batch, register_batch
from .batching_control import loop_per_example
from .batching_indexing import batched_gather

_I64 = np.dtype(np.int64)


def _ensure(x, b, size):
    return x if b else broadcast_batch(x, size)


def _shift(axis: int) -> int:
    """An axis parameter of one example for the batch: negative axes count from the end, which
    the batch axis in front does not change."""
    return axis if axis < 0 else axis + 1


# ----------------------------------------------------------------------------- small structural


def _arg_rule(prim: str):
    def rule(args, batched, size, *, axis):
        return [ops.bind1(prim, args[0], axis=_shift(axis))], [True]
    return rule


for _name in ("argmax", "argmin"):
    register_batch(_name)(_arg_rule(_name))

register_batch("dot_sum")(lambda args, batched, size, *, axes: (
    [ops.bind1("dot_sum", args[0], axes=tuple(a + 1 for a in axes))], [True]))


@register_batch("slice")
def _slice(args, batched, size, *, starts, steps, shape):
    return [ops.bind1("slice", args[0], starts=(0,) + tuple(starts), steps=(1,) + tuple(steps),
                      shape=(size,) + tuple(shape))], [True]


@register_batch("concatenate")
def _concatenate(args, batched, size, *, axis):
    ins = [_ensure(a, b, size) for a, b in zip(args, batched)]
    return [ops.bind1("concatenate", *ins, axis=axis + 1)], [True]


@register_batch("update_slice")
def _update_slice(args, batched, size, *, starts, steps):
    base, value = (_ensure(a, b, size) for a, b in zip(args, batched))
    return [ops.bind1("update_slice", base, value, starts=(0,) + tuple(starts), steps=(1,) + tuple(steps))], [True]


for _name in ("pad_fill", "where_valid"):
    register_batch(_name)(lambda args, batched, size, _p=_name: (
        [ops.bind1(_p, *[_ensure(a, b, size) for a, b in zip(args, batched)])], [True]))


@register_batch("raise_if")
def _raise_if(args, batched, size, *, exception, message):
    (value, bad), (vb, bb) = args, batched
    if bb:  # one example's condition is enough to raise, as the loop over examples would
        bad = ops.bind1("reduce_or", bad, axes=(0,))
    return [ops.bind1("raise_if", value, bad, exception=exception, message=message)], [vb]


@register_batch("debug_callback")
def _debug_callback(args, batched, size, *, call):
    # One call with the whole batch, as JAX's debug callbacks under vmap (docs/debugging.md): a
    # batched value has the batch axis first, an unbatched one is passed as it is.
    return [ops.bind1("debug_callback", *args, call=call)], [False]


# ----------------------------------------------------------------------------- dot_general


def _is_reshape(shape, perm) -> bool:
    """Whether transposing `shape` by `perm` only moves axes of length 1 (then it is a reshape)."""
    kept = [p for p in perm if shape[p] != 1]
    return kept == sorted(kept)


def _arrange(x, perm):
    """x transposed by perm, as a reshape where that is the same (no data movement)."""
    if _is_reshape(x.shape, perm):
        return ops.reshape(x, tuple(x.shape[p] for p in perm))
    return ops.transpose(x, perm)


def _to_front(ndim: int, pos: int) -> list[int]:
    return [pos] + [d for d in range(ndim) if d != pos]


def _outer_product(lhs, lb_: bool, rhs, rb_: bool, contracting, batch, size: int):
    """A dot_general whose contraction has length 1 (an outer product: the per-example gradient
    of a weight matrix, x[:, None] @ delta[None, :]) as a broadcast multiply: the same products
    (a product of one term is exact), and it fuses. Batched, the dot_general would be a stack of
    one-term matrix products: about 8x slower for 128 x 784 x 512 float32 (measured)."""
    (lc, rc), (lb, rb) = contracting, batch

    def operand(x, b, cdims, bdims):
        off = 1 if b else 0
        free = [d for d in range(x.ndim - off) if d not in cdims and d not in bdims]
        keep = ([0] if b else []) + [d + off for d in bdims] + [d + off for d in free]
        perm = keep + [d + off for d in cdims]
        moved = _arrange(x, perm)
        return ops.reshape(moved, tuple(x.shape[d] for d in keep)), len(free)

    l2, nlf = operand(lhs, lb_, lc, lb)
    r2, nrf = operand(rhs, rb_, rc, rb)
    nb = len(lb)
    out_shape = (size,) + tuple(l2.shape[1 if lb_ else 0:]) + tuple(r2.shape[(1 if rb_ else 0) + nb:])
    l_dims = ((0,) if lb_ else ()) + tuple(range(1, 1 + nb + nlf))
    r_dims = ((0,) if rb_ else ()) + tuple(range(1, 1 + nb)) + tuple(range(1 + nb + nlf, 1 + nb + nlf + nrf))
    return ops.mul(ops.broadcast_in_dim(l2, out_shape, l_dims), ops.broadcast_in_dim(r2, out_shape, r_dims))


@register_batch("dot_general")
def _dot_general(args, batched, size, *, contracting, batch):
    """Both batched: the batch axis becomes a batch dimension of the product. One batched: it
    is a free dimension of that operand (vmap of a matrix-vector product is a matrix product;
    the unbatched operand is never broadcast). With the right operand batched, the product is
    computed with the operands swapped when that leaves the batch axis first (no transpose)."""
    (lhs, rhs), (lb_, rb_) = args, batched
    (lc, rc), (lb, rb) = contracting, batch
    up = lambda dims: tuple(d + 1 for d in dims)  # noqa: E731
    if all(lhs.shape[d + lb_] == 1 for d in lc):
        return [_outer_product(lhs, lb_, rhs, rb_, contracting, batch, size)], [True]
    if lb_ and rb_:
        out = ops.bind1("dot_general", lhs, rhs, contracting=(up(lc), up(rc)), batch=((0,) + up(lb), (0,) + up(rb)))
        return [out], [True]
    if lb_:
        out = ops.bind1("dot_general", lhs, rhs, contracting=(up(lc), rc), batch=(up(lb), rb))
        return [_arrange(out, _to_front(out.ndim, len(lb)))], [True]
    lfree = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    out_shape = (size,) + tuple(lhs.shape[d] for d in lb) + tuple(lhs.shape[d] for d in lfree) + \
        tuple(rhs.shape[d + 1] for d in range(rhs.ndim - 1) if d not in rc and d not in rb)
    if not lb:
        # swapped: (batch, rhs free..., lhs free...)
        nr = len(out_shape) - 1 - len(lfree)
        swapped_shape = (size,) + out_shape[1 + len(lfree):] + out_shape[1:1 + len(lfree)]
        perm = [0] + list(range(1 + nr, 1 + nr + len(lfree))) + list(range(1, 1 + nr))
        if _is_reshape(swapped_shape, perm):
            out = ops.bind1("dot_general", rhs, lhs, contracting=(up(rc), lc), batch=((), ()))
            return [_arrange(out, perm)], [True]
    out = ops.bind1("dot_general", lhs, rhs, contracting=(lc, up(rc)), batch=(lb, up(rb)))
    return [_arrange(out, _to_front(out.ndim, len(lb) + len(lfree)))], [True]


# ----------------------------------------------------------------------------- library steps


def _stacked(prim: str):
    """linalg steps that NumPy computes on stacks of matrices (the trailing two axes)."""
    def rule(args, batched, size, **params):
        outs = ops.bind(prim, args[0], **params)
        return outs, [True] * len(outs)
    return rule


for _name in ("linalg_inv", "linalg_cholesky", "linalg_det", "linalg_slogdet", "linalg_eigh", "linalg_eigvalsh",
              "linalg_qr", "linalg_svd", "linalg_pinv"):
    register_batch(_name)(_stacked(_name))


@register_batch("linalg_solve")
def _solve(args, batched, size):
    """NumPy 2's solve treats b as a vector only when it is 1-d: a batch of vectors is solved as
    a stack of one-column matrices. Stack axes broadcast right-aligned, so the operand with
    fewer of them gets 1-axes after its batch axis."""
    (a, b), (ab, bb) = args, batched
    sa = a.ndim - ab - 2
    if b.ndim - bb == 1:
        if not bb:
            return [ops.bind1("linalg_solve", a, b)], [True]
        b = ops.reshape(b, (size,) + (1,) * sa + (b.shape[1], 1))
        out = ops.bind1("linalg_solve", a, b)
        return [ops.reshape(out, tuple(out.shape[:-1]))], [True]
    sb = b.ndim - bb - 2
    if ab and bb:
        a, b = _stack_like(a, b.ndim), _stack_like(b, a.ndim)
    elif ab and sb > sa:
        a = _stack_like(a, b.ndim + 1)
    elif bb and sa > sb:
        b = _stack_like(b, a.ndim + 1)
    return [ops.bind1("linalg_solve", a, b)], [True]


def _stack_like(x, ndim: int):
    """A batched stack (batch, *stack, m, k) with 1-dimensions after the batch axis up to `ndim`
    dimensions, so that NumPy's right-aligned broadcasting of stack axes keeps the batch axes
    together."""
    missing = ndim - x.ndim
    return x if missing <= 0 else ops.reshape(x, (x.shape[0],) + (1,) * missing + tuple(x.shape[1:]))


def _axis_rule(prim: str):
    """Steps along one axis (sort, argsort, partition, argpartition, accumulate; the tracer has
    flattened an axis=None operand already): the axis moves past the batch axis."""
    def rule(args, batched, size, *, axis, **params):
        return [ops.bind1(prim, args[0], axis=_shift(axis), **params)], [True]
    return rule


for _name in ("sort", "argsort", "partition", "argpartition", "accumulate"):
    register_batch(_name)(_axis_rule(_name))


@register_batch("ufunc_reduce")
def _ufunc_reduce(args, batched, size, *, ufunc, axes, dtype, keepdims):
    (x,) = args
    # axes: None (every axis of the example) or a sorted tuple of non-negative axes
    new_axes = tuple(range(1, x.ndim)) if axes is None else tuple(a + 1 for a in axes)
    return [ops.bind1("ufunc_reduce", x, ufunc=ufunc, axes=new_axes, dtype=dtype, keepdims=keepdims)], [True]


@register_batch("ufunc_reduceat")
def _ufunc_reduceat(args, batched, size, *, ufunc, axis, dtype):
    x, indices = args
    if batched[1]:
        raise UnsupportedOperationError(
            f"vmap of numpy.{ufunc}.reduceat with batched indices is not supported (each example would have its "
            "own segments); batch the array only, or loop over the examples")
    if not batched[0]:
        return [ops.bind1("ufunc_reduceat", x, indices, ufunc=ufunc, axis=axis, dtype=dtype)], [False]
    return [ops.bind1("ufunc_reduceat", x, indices, ufunc=ufunc, axis=axis + 1, dtype=dtype)], [True]


_ONE_D_FFT = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")


@register_batch("fft")
def _fft(args, batched, size, *, fn, n, axes, norm):
    (x,) = args
    nd = x.ndim - 1
    if fn in _ONE_D_FFT:
        new_axes: Any = _shift(axes)
    elif axes is None:
        # fft2-family defaults to (-2, -1); fftn over every axis (or the last len(s) ones)
        new_axes = None if (fn.endswith("2") or n is not None) else tuple(range(1, nd + 1))
    else:
        new_axes = tuple(_shift(a) for a in axes)
    return [ops.bind1("fft", x, fn=fn, n=n, axes=new_axes, norm=norm)], [True]


def _common_dtype(a, v):
    """The dtypes NumPy compares a and v in (the `less` loop for their dtypes)."""
    ins, _ = ufunc_loop(np.less, [a.dtype, v.dtype])
    return ops.convert(a, ins[0]), ops.convert(v, ins[1])


@register_batch("searchsorted")
def _searchsorted(args, batched, size, *, side):
    """Batched sorted arrays: the insertion index is the number of elements that sort before v
    (strictly for side='left'), in NumPy's sort order (NaN last)."""
    a, v = args[0], args[1]
    ab, vb = batched[0], batched[1]
    if not ab and not (len(args) > 2 and batched[2]):  # only v differs per example: NumPy broadcasts over it
        return [ops.bind1("searchsorted", *args, side=side)], [True]
    if len(args) > 2:  # a per-example sorter or array: sort each example's array first (a gather)
        a = batched_gather(a, ab, (("array", 0),), [args[2]], [batched[2]], size)
        ab = True
    v = _ensure(v, vb, size)
    a, v = _common_dtype(a, v)
    n, vshape = a.shape[1], tuple(v.shape[1:])
    shape = (size, n) + vshape
    a_full = ops.broadcast_in_dim(a, shape, (0, 1))
    v_full = ops.broadcast_in_dim(v, shape, (0,) + tuple(range(2, 2 + len(vshape))))
    before = ops.bind1("less" if side == "left" else "less_equal", a_full, v_full)
    if a.dtype.kind in "fc":
        v_nan = ops.bind1("isnan", v_full)
        a_ok = ops.bind1("logical_not", ops.bind1("isnan", a_full))
        extra = ops.bind1("logical_and", v_nan, a_ok) if side == "left" else v_nan
        before = ops.bind1("logical_or", before, extra)
    return [ops.bind1("reduce_sum", ops.convert(before, _I64), axes=(1,))], [True]


@register_batch("digitize")
def _digitize(args, batched, size, *, right):
    (x, bins), (_, bb) = args, batched
    if not bb:
        return [ops.bind1("digitize", x, bins, right=right)], [True]
    return loop_per_example("digitize", args, batched, size, {"right": right})


@register_batch("interp")
def _interp(args, batched, size, *, left, right, period):
    params = {"left": left, "right": right, "period": period}
    if not batched[1] and not batched[2]:
        return [ops.bind1("interp", args[0], args[1], args[2], **params)], [True]
    return loop_per_example("interp", args, batched, size, params)


@register_batch("bincount")
def _bincount(args, batched, size, *, minlength):
    """One bincount over the batch: example b counts into bins [b * minlength, (b+1) * minlength).
    A value outside [0, minlength) would count into another example's bins, so it raises first
    (NumPy raises for it too)."""
    x, xb = args[0], batched[0]
    x = _ensure(x, xb, size)
    neg = ops.bind1("reduce_or", ops.bind1("less", x, ops.scalar_like(x, 0)), axes=(0, 1)) if x.dtype.kind == "i" \
        else ops.const(False, np.bool_)
    x = ops.bind1("raise_if", x, neg, exception="ValueError", message="'list' argument must have no negative elements")
    big = ops.bind1("reduce_or", ops.bind1("greater_equal", x, ops.scalar_like(x, minlength)), axes=(0, 1))
    x = ops.bind1("raise_if", x, big, exception="ValueError", message=(
        f"bincount: a value of x is not below minlength={minlength}: the result would have a length that "
        "depends on the data, which a jitted function cannot return; pass a minlength larger than every value"))
    xi = ops.convert(x, _I64)
    offsets = ops.bind1("iota", shape=tuple(x.shape), dimension=0, dtype=_I64)
    flat = ops.reshape(ops.add(xi, ops.mul(offsets, ops.scalar_like(offsets, minlength))), (x.size,))
    ins = [flat]
    if len(args) > 1:
        ins.append(ops.reshape(_ensure(args[1], batched[1], size), (x.size,)))
    out = ops.bind1("bincount", *ins, minlength=size * minlength)
    return [ops.reshape(out, (size, minlength))], [True]


def _per_example(prim: str):
    def rule(args, batched, size, **params):
        return loop_per_example(prim, args, batched, size, params)
    return rule


for _name in ("histogram", "convolve", "linalg_lstsq"):
    register_batch(_name)(_per_example(_name))


def _refuse(prim: str):
    def rule(args, batched, size, **params):
        raise UnsupportedOperationError(
            f"vmap of {prim} (a value of data-dependent shape: boolean mask selection, nonzero, unique, a "
            "slice with traced bounds) is not supported: the examples' results would have different shapes; "
            "write it with fixed shapes instead (np.where(mask, x, 0).sum() for x[mask].sum(), slices of static length)")
    return rule


for _name in ("datadep_call", "datadep_pure"):
    register_batch(_name)(_refuse(_name))
