"""Differentiation rules of reductions (reduce_prod, reduce_max, reduce_min), movement and
structure (slice, concatenate, update_slice) and `dot_general`.

reduce_sum, broadcast_in_dim, reshape and transpose are in ad_elementwise.py (the seeds);
argmax/argmin and iota have integer results or no inputs and never reach a rule.
"""
from __future__ import annotations

import math

from ..trace.tracer import Tracer
from . import ops
from .ad import register_jvp, register_vjp


def _kept(x: Tracer, axes) -> tuple[int, ...]:
    return tuple(d for d in range(x.ndim) if d not in axes)


def _inverse(permutation) -> list[int]:
    inverse = [0] * len(permutation)
    for i, p in enumerate(permutation):
        inverse[p] = i
    return inverse


# --- reduce_max / reduce_min: the gradient split evenly between ties (JAX) -----------------------

def _chooser_locations(x: Tracer, out: Tracer, axes) -> tuple[Tracer, Tracer]:
    """(1 where x equals its reduction's result else 0, the number of such places per result).
    A NaN result matches nowhere: 0 / 0, a NaN derivative, as JAX."""
    bcast = ops.broadcast_in_dim(out, x.shape, _kept(x, axes))
    where = ops.select(ops.bind1("equal", x, bcast), ops.ones_like(x), ops.zeros_like(x))
    return where, ops.reduce_sum(where, axes)


def _register_chooser(prim: str) -> None:
    @register_jvp(prim)
    def jvp(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        (out,) = ops.bind(prim, x, axes=axes)
        where, counts = _chooser_locations(x, out, axes)
        return [out], [ops.div(ops.reduce_sum(ops.mul(t, where), axes), counts)]

    @register_vjp(prim)
    def vjp(cts, primals, outs, *, axes):
        (x,), (out,) = primals, outs
        where, counts = _chooser_locations(x, out, axes)
        share = ops.broadcast_in_dim(ops.div(cts[0], counts), x.shape, _kept(x, axes))
        return [ops.mul(share, where)]


_register_chooser("reduce_max")
_register_chooser("reduce_min")


# --- reduce_prod: products of all the other elements, without dividing by x ----------------------

def _rows(x: Tracer, axes) -> tuple[Tracer, list[int], tuple[int, ...]]:
    """x with the reduced axes moved first and flattened: (n, rest), and how to undo it."""
    kept = _kept(x, axes)
    perm = list(axes) + list(kept)
    moved = ops.transpose(x, perm)
    n = math.prod(x.shape[d] for d in axes)
    rest = math.prod(x.shape[d] for d in kept)
    return ops.reshape(moved, (n, rest)), perm, moved.shape


def _exclusive_products(rows: Tracer) -> Tracer:
    """p[i] = prod_{j < i} rows[j] along axis 0 (p[0] = 1): a Hillis-Steele scan of log2(n)
    shifted multiplies, built from primitives that have rules (so it differentiates again)."""
    n, rest = rows.shape
    one_row = ops.full((1, rest), 1, rows.dtype)
    if n == 1:
        return one_row
    shifted = ops.bind1("concatenate", one_row, _rows_slice(rows, 0, n - 1), axis=0)
    k = 1
    while k < n:  # shifted holds exclusive products over windows of k elements
        head = ops.full((k, rest), 1, rows.dtype)
        shifted = ops.mul(shifted, ops.bind1("concatenate", head, _rows_slice(shifted, 0, n - k), axis=0))
        k *= 2
    return shifted


def _rows_slice(rows: Tracer, start: int, length: int, step: int = 1) -> Tracer:
    return ops.bind1("slice", rows, starts=(start, 0), steps=(step, 1), shape=(length, rows.shape[1]))


def _reverse_rows(rows: Tracer) -> Tracer:
    n = rows.shape[0]
    return _rows_slice(rows, n - 1, n, -1)


def _products_of_others(x: Tracer, axes) -> tuple[Tracer, list[int], tuple[int, ...]]:
    rows, perm, moved_shape = _rows(x, axes)
    left = _exclusive_products(rows)
    right = _reverse_rows(_exclusive_products(_reverse_rows(rows)))
    return ops.mul(left, right), perm, moved_shape


@register_jvp("reduce_prod")
def _prod_jvp(primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    (out,) = ops.bind("reduce_prod", x, axes=axes)
    if x.size == 0:
        return [out], [ops.zeros_like(out)]
    others, _, _ = _products_of_others(x, axes)
    t_rows, _, _ = _rows(t, axes)
    return [out], [ops.reshape(ops.reduce_sum(ops.mul(t_rows, others), (0,)), out.shape)]


@register_vjp("reduce_prod")
def _prod_vjp(cts, primals, outs, *, axes):
    (x,), (ct,) = primals, cts
    if x.size == 0:
        return [ops.zeros_like(x)]
    others, perm, moved_shape = _products_of_others(x, axes)
    ct_rows = ops.broadcast_in_dim(ops.reshape(ct, (1, others.shape[1])), others.shape, (0, 1))
    grad = ops.reshape(ops.mul(ct_rows, others), moved_shape)
    return [ops.transpose(grad, _inverse(perm))]


# --- slice / update_slice / concatenate ---------------------------------------------------------

@register_jvp("slice")
def _slice_jvp(primals, tangents, *, starts, steps, shape):
    p = dict(starts=starts, steps=steps, shape=shape)
    return ops.bind("slice", *primals, **p), [ops.bind1("slice", tangents[0], **p)]


@register_vjp("slice")
def _slice_vjp(cts, primals, outs, *, starts, steps, shape):
    # the region written back into zeros (negative steps too: update_slice takes the same region)
    return [ops.bind1("update_slice", ops.zeros_like(primals[0]), cts[0], starts=starts, steps=steps)]


@register_jvp("update_slice")
def _update_slice_jvp(primals, tangents, *, starts, steps):
    base, value = primals
    tb, tv = tangents
    tb = ops.zeros_like(base) if tb is None else tb
    tv = ops.zeros_like(value) if tv is None else tv
    p = dict(starts=starts, steps=steps)
    return ops.bind("update_slice", *primals, **p), [ops.bind1("update_slice", tb, tv, **p)]


@register_vjp("update_slice")
def _update_slice_vjp(cts, primals, outs, *, starts, steps):
    base, value = primals
    (ct,) = cts  # the base's cotangent is ct with the overwritten region zeroed
    ct_base = ops.bind1("update_slice", ct, ops.zeros_like(value), starts=starts, steps=steps)
    ct_value = ops.bind1("slice", ct, starts=starts, steps=steps, shape=value.shape)
    return [ct_base, ct_value]


@register_jvp("concatenate")
def _concat_jvp(primals, tangents, *, axis):
    ts = [ops.zeros_like(p) if t is None else t for p, t in zip(primals, tangents)]
    return ops.bind("concatenate", *primals, axis=axis), [ops.bind1("concatenate", *ts, axis=axis)]


@register_vjp("concatenate")
def _concat_vjp(cts, primals, outs, *, axis):
    (ct,) = cts
    result, offset = [], 0
    for p in primals:
        starts = tuple(offset if d == axis else 0 for d in range(ct.ndim))
        result.append(ops.bind1("slice", ct, starts=starts, steps=(1,) * ct.ndim, shape=p.shape)
                      if p.dtype.kind in "fc" else None)
        offset += p.shape[axis]
    return result


# --- dot_general --------------------------------------------------------------------------------
# out = [batch, lhs free, rhs free]. The cotangent of each operand is again one dot_general of
# the output cotangent with the other operand, followed by a transpose only where its natural
# layout differs from the operand's.

def _free(ndim: int, contract, batch) -> list[int]:
    return [d for d in range(ndim) if d not in contract and d not in batch]


@register_jvp("dot_general")
def _dot_jvp(primals, tangents, *, contracting, batch):
    lhs, rhs = primals
    tl, tr = tangents
    p = dict(contracting=contracting, batch=batch)
    terms = [None if tl is None else ops.bind1("dot_general", tl, rhs, **p),
             None if tr is None else ops.bind1("dot_general", lhs, tr, **p)]
    return ops.bind("dot_general", lhs, rhs, **p), [ops.add_any(*terms)]


def _dot_lhs_cotangent(ct: Tracer, lhs: Tracer, rhs: Tracer, contracting, batch) -> Tracer:
    (lc, rc), (lb, rb) = contracting, batch
    nb = len(lb)
    lfree, rfree = _free(lhs.ndim, lc, lb), _free(rhs.ndim, rc, rb)
    ct_rfree = tuple(nb + len(lfree) + j for j in range(len(rfree)))
    # dot_general(ct, rhs) -> [batch, lhs free, rhs's contracting dims in increasing order]
    out = ops.bind1("dot_general", ct, rhs, contracting=(ct_rfree, tuple(rfree)), batch=(tuple(range(nb)), tuple(rb)))
    rc_order = sorted(rc)
    position = {}
    for i, d in enumerate(lb):
        position[d] = i
    for j, d in enumerate(lfree):
        position[d] = nb + j
    for d_l, d_r in zip(lc, rc):
        position[d_l] = nb + len(lfree) + rc_order.index(d_r)
    return ops.transpose(out, [position[d] for d in range(lhs.ndim)])


def _dot_rhs_cotangent(ct: Tracer, lhs: Tracer, rhs: Tracer, contracting, batch) -> Tracer:
    (lc, rc), (lb, rb) = contracting, batch
    nb = len(lb)
    lfree, rfree = _free(lhs.ndim, lc, lb), _free(rhs.ndim, rc, rb)
    ct_lfree = tuple(nb + j for j in range(len(lfree)))
    # dot_general(lhs, ct) -> [batch, lhs's contracting dims in increasing order, rhs free]
    out = ops.bind1("dot_general", lhs, ct, contracting=(tuple(lfree), ct_lfree), batch=(tuple(lb), tuple(range(nb))))
    lc_order = sorted(lc)
    position = {}
    for i, d in enumerate(rb):
        position[d] = i
    for d_l, d_r in zip(lc, rc):
        position[d_r] = nb + lc_order.index(d_l)
    for j, d in enumerate(rfree):
        position[d] = nb + len(lc) + j
    return ops.transpose(out, [position[d] for d in range(rhs.ndim)])


@register_vjp("dot_general")
def _dot_vjp(cts, primals, outs, *, contracting, batch):
    lhs, rhs = primals
    (ct,) = cts
    return [_dot_lhs_cotangent(ct, lhs, rhs, contracting, batch), _dot_rhs_cotangent(ct, lhs, rhs, contracting, batch)]
