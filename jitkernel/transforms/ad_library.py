"""Differentiation rules of library steps: `accumulate` (cumsum directly; cumprod and the other
`ufunc.accumulate`s through a scan, so no division by x), `sort` (through the permutation),
`linalg_inv`, `linalg_solve`, `linalg_det`, `linalg_slogdet`, `linalg_cholesky`,
`linalg_eigh`, `linalg_eigvalsh` (docs/transformations.md, "Indexing and library steps under
grad").

Three ways to write a rule, used where each fits:

- closed forms (inv, solve, det, slogdet, cumsum);
- *by decomposition*: the step written with primitives that have rules (`sort` is
  `take_along_axis(a, argsort(a))`, `cumprod` a scan multiplying a carry): its tangents and
  cotangents are those of the decomposition, traced in place; the primal value is still the
  library step's own (NumPy's);
- *transposed tangent map* (cholesky, eigh): the forward rule's tangent map is linear in the
  tangents and built from primitives that have reverse rules, so its transpose (the reverse
  rule) is the reverse pass of that map (`vjp_eval` on the traced map), as JAX transposes
  linear jaxprs.

Symmetric/Hermitian inputs: NumPy's cholesky and eigh read one triangle only (and ignore the
imaginary part of the diagonal), so the derivative is taken with respect to that triangle: a
perturbation of the other triangle changes nothing, as in NumPy (JAX symmetrises the input
instead; on a symmetric input with a symmetric perturbation the two agree).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import AType
from ..ir.primitives import PRIMITIVES
from ..trace.numpy_api import NUMPY
from ..trace.tracer import Tracer
from . import ops
from .ad import differentiable, jvp_eval, register_jvp, register_vjp, vjp_eval
from .ad_control_flow import trace_sub

_I64 = np.dtype(np.int64)



def _or_zeros(t: Tracer | None, aval: AType) -> Tracer:
    return t if t is not None else ops.zeros_like(aval)


# ----------------------------------------------------------------------------- helpers


def by_decomposition(prim: str, decompose: Callable[..., list[Tracer]]) -> None:
    """Register both rules of `prim` from `decompose(*primals, **params) -> outputs`, an
    expression of the same values in primitives that have rules."""

    def traced(primals: Sequence[Tracer], params: dict):
        return trace_sub(lambda ins: decompose(*ins, **params), [p.aval for p in primals], f"{prim}.decomposed")

    @register_jvp(prim)
    def jvp(primals, tangents, **params):
        outs = ops.bind(prim, *primals, **params)
        prog, caps = traced(primals, params)
        _, touts = jvp_eval(prog, caps + list(primals), [None] * len(caps) + list(tangents))
        return outs, touts

    @register_vjp(prim)
    def vjp(cts, primals, outs, **params):
        prog, caps = traced(primals, params)
        _, backward = vjp_eval(prog, caps + list(primals), [False] * len(caps) + [differentiable(p.aval) for p in primals])
        return backward(list(cts))[len(caps):]


def transpose_of_linear(prim: str, tangent_map: Callable[..., list[Tracer | None]]) -> None:
    """Register both rules of `prim` from `tangent_map(primals, outs, tangents, **params)`, the
    output tangents as a linear function of the input tangents (None: zero)."""

    @register_jvp(prim)
    def jvp(primals, tangents, **params):
        outs = ops.bind(prim, *primals, **params)
        return outs, tangent_map(primals, outs, tangents, **params)

    @register_vjp(prim)
    def vjp(cts, primals, outs, **params):
        diff = [k for k, p in enumerate(primals) if differentiable(p.aval)]
        nz = [j for j, c in enumerate(cts) if c is not None]

        def linear(ts: list[Tracer]) -> list[Tracer]:
            tangents: list[Tracer | None] = [None] * len(primals)
            for k, t in zip(diff, ts):
                tangents[k] = t
            touts = tangent_map(primals, outs, tangents, **params)
            return [_or_zeros(touts[j], outs[j].aval) for j in nz]

        prog, caps = trace_sub(linear, [primals[k].aval for k in diff], f"{prim}.tangent_map")
        zeros = [ops.zeros_like(primals[k].aval) for k in diff]
        _, backward = vjp_eval(prog, caps + zeros, [False] * len(caps) + [True] * len(diff))
        ct_in = backward([cts[j] for j in nz])[len(caps):]
        result: list[Tracer | None] = [None] * len(primals)
        for k, c in zip(diff, ct_in):
            result[k] = c
        return result


def _mT(x: Tracer) -> Tracer:
    perm = list(range(x.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return ops.transpose(x, perm)


def _conj(x: Tracer) -> Tracer:
    return ops.bind1("conjugate", x) if x.dtype.kind == "c" else x


def _H(x: Tracer) -> Tracer:
    return _conj(_mT(x))


def _matmul(a: Tracer, b: Tracer) -> Tracer:
    """a @ b for stacks of matrices with the same batch shape."""
    nb = a.ndim - 2
    if b.ndim - 2 != nb or a.shape[:nb] != b.shape[:nb]:
        raise AssertionError(f"internal error: matmul of {a.aval} and {b.aval}")
    batch = tuple(range(nb))
    return ops.bind1("dot_general", a, b, contracting=((a.ndim - 1,), (b.ndim - 2,)), batch=(batch, batch))


def _bcast_last2(x: Tracer, shape: tuple[int, ...]) -> Tracer:
    """x of shape `batch` as `batch + (n, n)` (constant over the last two axes)."""
    return ops.broadcast_in_dim(x, shape, tuple(range(x.ndim)))


def _trace_product(a: Tracer, b: Tracer) -> Tracer:
    """tr(a @ b) over the last two axes: sum(a * b^T)."""
    return ops.reduce_sum(ops.mul(a, _mT(b)), (a.ndim - 2, a.ndim - 1))


def _eye_mask(n: int, batch: tuple[int, ...], k: int = 0, kind: str = "eq") -> Tracer:
    i, j = np.indices((n, n))
    m = {"eq": i - j == k, "lower": i - j > k, "upper": j - i > k}[kind]
    return ops.const(np.broadcast_to(m, batch + (n, n)).copy(), np.bool_)


def _where(mask: Tracer, x: Tracer) -> Tracer:
    return ops.select(mask, x, ops.zeros_like(x.aval))


def _read_triangle(dA: Tracer, lower: bool) -> Tracer:
    """The perturbation of the Hermitian matrix NumPy's cholesky/eigh actually see: the read
    triangle mirrored, and the real part of the diagonal."""
    n, batch = dA.shape[-1], tuple(dA.shape[:-2])
    strict = _where(_eye_mask(n, batch, 0, "lower" if lower else "upper"), dA)
    diag = _where(_eye_mask(n, batch), dA)
    if dA.dtype.kind == "c":
        diag = ops.convert(ops.bind1("real", diag), dA.dtype)
    return ops.add(ops.add(strict, _H(strict)), diag)


# ----------------------------------------------------------------------------- accumulate


def _reverse_axis(x: Tracer, axis: int) -> Tracer:
    n = x.shape[axis]
    starts = tuple(n - 1 if d == axis else 0 for d in range(x.ndim))
    steps = tuple(-1 if d == axis else 1 for d in range(x.ndim))
    return ops.bind1("slice", x, starts=starts, steps=steps, shape=tuple(x.shape))


def _cumsum(x: Tracer, axis: int, dtype: np.dtype) -> Tracer:
    return ops.bind1("accumulate", x, ufunc="add", axis=axis, dtype=dtype)


def _apply_binary_ufunc(ufunc: str, a: Tracer, b: Tracer) -> Tracer:
    """`ufunc(a, b)` on two operands of the loop dtype: its elementwise primitive, or for a ufunc
    composed of other primitives (logaddexp, gcd, ...) jitkernel.numpy's function of that name."""
    if ufunc in PRIMITIVES:
        return ops.bind1(ufunc, a, b)
    return getattr(NUMPY.namespace, ufunc)(a, b)


def _scan_accumulate(x: Tracer, ufunc: str, axis: int) -> Tracer:
    """`ufunc.accumulate(x, axis)` as a scan: out[0] = x[0], out[i] = ufunc(out[i-1], x[i])."""
    moved = ops.moveaxis(x, axis, 0)
    n = moved.shape[0]
    rest = tuple(moved.shape[1:])
    first = ops.reshape(ops.bind1("slice", moved, starts=(0,) * moved.ndim, steps=(1,) * moved.ndim,
                                  shape=(1,) + rest), rest)
    if n == 1:
        return x
    tail = ops.bind1("slice", moved, starts=(1,) + (0,) * len(rest), steps=(1,) * moved.ndim, shape=(n - 1,) + rest)
    row = AType(rest, x.dtype)

    def step(ins: list[Tracer]) -> list[Tracer]:
        carry, xi = ins
        out = _apply_binary_ufunc(ufunc, carry, xi)
        return [out, out]

    body, caps = trace_sub(step, [row, row], f"{ufunc}.accumulate.step")
    _, ys = ops.bind("scan", *caps, first, tail, body=body, nconsts=len(caps), ncarry=1, length=n - 1, reverse=False)
    stacked = ops.bind1("concatenate", ops.reshape(first, (1,) + rest), ys, axis=0)
    return ops.moveaxis(stacked, 0, axis)


def _accumulate_decomposed(x: Tracer, *, ufunc: str, axis: int, dtype: np.dtype) -> list[Tracer]:
    x = ops.convert(x, dtype)
    if x.shape[axis] == 0:
        return [x]
    return [_scan_accumulate(x, ufunc, axis)]


@register_jvp("accumulate")
def _accumulate_jvp(primals, tangents, *, ufunc, axis, dtype):
    (x,), (t,) = primals, tangents
    out = ops.bind("accumulate", x, ufunc=ufunc, axis=axis, dtype=dtype)
    if not differentiable(out[0].aval):
        return out, [None]
    if ufunc == "add":
        return out, [_cumsum(ops.convert(t, dtype), axis, dtype)]
    prog, caps = trace_sub(lambda ins: _accumulate_decomposed(ins[0], ufunc=ufunc, axis=axis, dtype=dtype),
                           [x.aval], f"{ufunc}.accumulate")
    _, touts = jvp_eval(prog, caps + [x], [None] * len(caps) + [t])
    return out, touts


@register_vjp("accumulate")
def _accumulate_vjp(cts, primals, outs, *, ufunc, axis, dtype):
    (x,), (ct,) = primals, cts
    if not differentiable(x.aval) or not differentiable(outs[0].aval):
        return [None]
    if ufunc == "add":
        if x.shape[axis] == 0:
            return [ops.zeros_like(x.aval)]
        summed = _reverse_axis(_cumsum(_reverse_axis(ct, axis), axis, ct.dtype), axis)
        if x.dtype.kind == "f" and summed.dtype.kind == "c":
            summed = ops.bind1("real", summed)
        return [ops.convert(summed, x.dtype)]
    prog, caps = trace_sub(lambda ins: _accumulate_decomposed(ins[0], ufunc=ufunc, axis=axis, dtype=dtype),
                           [x.aval], f"{ufunc}.accumulate")
    _, backward = vjp_eval(prog, caps + [x], [False] * len(caps) + [True])
    return backward([ct])[len(caps):]


# ----------------------------------------------------------------------------- sort


def _sort_decomposed(a: Tracer, *, axis, kind) -> list[Tracer]:
    # argsort's stable order; for ties the values are equal, so any order gives the same sort
    perm = ops.bind1("argsort", a, axis=axis, kind="stable")
    return [ops.bind1("take_along_axis", a, perm, axis=axis)]


by_decomposition("sort", _sort_decomposed)


def _partition_decomposed(a: Tracer, *, kth, axis) -> list[Tracer]:
    # np.partition and np.argpartition run the same introselect, so the permutation is the one
    # behind the primal's arrangement (checked on thousands of arrays, ties included)
    perm = ops.bind1("argpartition", a, kth=kth, axis=axis)
    return [ops.bind1("take_along_axis", a, perm, axis=axis)]


by_decomposition("partition", _partition_decomposed)


# ----------------------------------------------------------------------------- ufunc.reduce, bincount, convolve


def _ufunc_reduce_decomposed(a: Tracer, *, ufunc, axes, dtype, keepdims) -> list[Tracer]:
    """`ufunc.reduce` as the last element of `ufunc.accumulate` (a scan), axis by axis."""
    x = ops.convert(a, dtype)
    reduced = tuple(range(x.ndim)) if axes is None else tuple(axes)
    for axis in sorted(reduced, reverse=True):
        n = x.shape[axis]
        if n == 0:
            shape = tuple(m for d, m in enumerate(x.shape) if d != axis)
            x = ops.full(shape, getattr(np, ufunc).identity, dtype)
        else:
            acc = _scan_accumulate(x, ufunc, axis)
            last = _cut(acc, axis, n - 1, n)
            x = ops.reshape(last, tuple(m for d, m in enumerate(x.shape) if d != axis))
    if keepdims:
        x = ops.reshape(x, tuple(1 if d in reduced else m for d, m in enumerate(a.shape)))
    return [x]


by_decomposition("ufunc_reduce", _ufunc_reduce_decomposed)


@register_jvp("bincount")
def _bincount_jvp(primals, tangents, *, minlength):
    out = ops.bind("bincount", *primals, minlength=minlength)
    if len(primals) < 2 or tangents[1] is None:
        return out, [None]
    return out, [ops.bind1("bincount", primals[0], tangents[1], minlength=minlength)]


@register_vjp("bincount")
def _bincount_vjp(cts, primals, outs, *, minlength):
    if len(primals) < 2 or not differentiable(primals[1].aval):
        return [None] * len(primals)
    x, w = primals  # out[k] = sum of w[i] over x[i] == k: the cotangent of w[i] is ct[x[i]]
    return [None, ops.convert(ops.bind1("take", cts[0], x, axis=0, mode="raise"), w.dtype)]


def _convolve_decomposed(a: Tracer, v: Tracer, *, fn, mode) -> list[Tracer]:
    """np.convolve / np.correlate as a matrix product: full[i] = sum_j a[j] v[i - j] with the
    matrix gathered from v (np.correlate(a, v) is np.convolve(a, conj(v[::-1])))."""
    out_dt = np.result_type(a.dtype, v.dtype)
    a, v = ops.convert(a, out_dt), ops.convert(v, out_dt)
    if fn == "correlate":
        v = _conj(_reverse_axis(v, 0))
    n, m = a.shape[0], v.shape[0]
    length = n + m - 1
    i, j = np.indices((length, n))
    k = i - j
    index = ops.const(np.clip(k, 0, m - 1), _I64)
    inside = ops.const((k >= 0) & (k < m), np.bool_)
    matrix = _where(inside, ops.bind1("gather", v, index, index=(("array", 0),)))
    full = ops.bind1("dot_general", matrix, a, contracting=((1,), (0,)), batch=((), ()))
    short, long_ = min(n, m), max(n, m)
    if mode == "full":
        return [full]
    if mode == "same":
        return [_cut(full, 0, (short - 1) // 2, (short - 1) // 2 + long_)]
    return [_cut(full, 0, short - 1, long_)]  # "valid"


by_decomposition("convolve", _convolve_decomposed)


def _interp_decomposed(x: Tracer, xp: Tracer, fp: Tracer, *, left, right, period) -> list[Tracer]:
    """np.interp as gathers: the segment j with xp[j] <= x < xp[j+1] (searchsorted, side
    "right"), the straight line through its ends; `left`/`right` (default fp[0], fp[-1]) outside.
    At a knot the derivative is the one of the segment to its right."""
    if period is not None:
        raise UnsupportedOperationError("differentiation of numpy.interp with period= is not supported yet")
    out_dt = np.dtype(np.complex128) if fp.dtype.kind == "c" else np.dtype(np.float64)
    x, xp, fp = ops.convert(x, np.float64), ops.convert(xp, np.float64), ops.convert(fp, out_dt)
    n = xp.shape[0]
    first, last = _cut(xp, 0, 0, 1), _cut(xp, 0, n - 1, n)

    def at(values: Tracer, idx: Tracer) -> Tracer:
        return ops.bind1("gather", values, idx, index=(("array", 0),))

    def edge(value: Any, default: Tracer) -> Tracer:
        if value is None:
            return ops.broadcast_in_dim(ops.reshape(default, ()), x.shape, ())
        return ops.full(x.shape, value, out_dt)

    lo_val, hi_val = edge(left, _cut(fp, 0, 0, 1)), edge(right, _cut(fp, 0, n - 1, n))
    if n == 1:
        inside = ops.broadcast_in_dim(ops.reshape(fp, ()), x.shape, ())
    else:
        j = ops.sub(ops.bind1("searchsorted", xp, x, side="right"), ops.full(x.shape, 1, _I64))
        j = ops.bind1("minimum", ops.bind1("maximum", j, ops.full(x.shape, 0, _I64)), ops.full(x.shape, n - 2, _I64))
        j1 = ops.add(j, ops.full(x.shape, 1, _I64))
        x0, x1, f0, f1 = at(xp, j), at(xp, j1), at(fp, j), at(fp, j1)
        slope = ops.div(ops.sub(f1, f0), ops.convert(ops.sub(x1, x0), out_dt))
        inside = ops.add(f0, ops.mul(ops.convert(ops.sub(x, x0), out_dt), slope))
    below = ops.bind1("less", x, ops.broadcast_in_dim(ops.reshape(first, ()), x.shape, ()))
    above = ops.bind1("greater", x, ops.broadcast_in_dim(ops.reshape(last, ()), x.shape, ()))
    return [ops.select(below, lo_val, ops.select(above, hi_val, inside))]


by_decomposition("interp", _interp_decomposed)


# ----------------------------------------------------------------------------- inv, solve, det


@register_jvp("linalg_inv")
def _inv_jvp(primals, tangents, **params):
    (a,), (t,) = primals, tangents
    y = ops.bind("linalg_inv", a, **params)
    return y, [ops.neg(_matmul(_matmul(y[0], t), y[0]))]


@register_vjp("linalg_inv")
def _inv_vjp(cts, primals, outs, **params):
    yT = _mT(outs[0])
    return [ops.neg(_matmul(_matmul(yT, cts[0]), yT))]


def _as_matrix_rhs(b: Tracer, a: Tracer) -> tuple[Tracer, bool]:
    """NumPy 2's solve: a 1-d b is a vector; as a one-column matrix with a's batch shape."""
    if b.ndim == 1:
        batch = tuple(a.shape[:-2])
        col = ops.reshape(b, (b.shape[0], 1))
        return ops.broadcast_in_dim(col, batch + col.shape, (len(batch), len(batch) + 1)), True
    return b, False


def _bcast_batch(x: Tracer, batch: tuple[int, ...]) -> Tracer:
    shape = batch + tuple(x.shape[-2:])
    return ops.broadcast_in_dim(x, shape, tuple(range(len(shape) - x.ndim, len(shape))))


def _solve_parts(a: Tracer, b: Tracer, x: Tracer):
    """a, b and x in the result's dtype, as matrices with the result's batch shape."""
    dt = x.dtype
    a_c, b_c = ops.convert(a, dt), ops.convert(b, dt)
    b_m, vector = _as_matrix_rhs(b_c, a_c)
    x_m = ops.reshape(x, tuple(x.shape) + (1,)) if vector else x
    batch = tuple(x_m.shape[:-2])
    return _bcast_batch(a_c, batch), _bcast_batch(b_m, batch), x_m, vector


@register_jvp("linalg_solve")
def _solve_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    out = ops.bind("linalg_solve", a, b)
    x = out[0]
    a_m, b_m, x_m, vector = _solve_parts(a, b, x)
    rhs = None
    if tb is not None:
        rhs = _as_matrix_rhs(ops.convert(tb, x.dtype), a_m)[0] if vector else ops.convert(tb, x.dtype)
        rhs = _bcast_batch(rhs, tuple(x_m.shape[:-2]))
    if ta is not None:
        term = ops.neg(_matmul(_bcast_batch(ops.convert(ta, x.dtype), tuple(x_m.shape[:-2])), x_m))
        rhs = term if rhs is None else ops.add(rhs, term)
    dx = ops.bind1("linalg_solve", a_m, rhs)
    return out, [ops.reshape(dx, x.shape)]


def _to_input(ct: Tracer, p: Tracer) -> Tracer:
    """A cotangent computed in the result's dtype and batch shape, summed and cast to input p's."""
    ct = ops.reduce_sum(ct, tuple(range(ct.ndim - p.ndim)))  # batch axes p was broadcast along
    ct = ops.sum_to_aval(ct, AType(p.shape, ct.dtype), tuple(range(p.ndim)))
    if p.dtype.kind == "f" and ct.dtype.kind == "c":
        ct = ops.bind1("real", ct)
    return ops.convert(ct, p.dtype)


@register_vjp("linalg_solve")
def _solve_vjp(cts, primals, outs):
    a, b = primals
    x = outs[0]
    a_m, b_m, x_m, vector = _solve_parts(a, b, x)
    ct = ops.reshape(cts[0], x_m.shape)
    g = ops.bind1("linalg_solve", _mT(a_m), ct)  # a^-T ct
    ct_a = _to_input(ops.neg(_matmul(g, _mT(x_m))), a) if differentiable(a.aval) else None
    ct_b = None
    if differentiable(b.aval):
        if vector:
            g = ops.reduce_sum(ops.reshape(g, tuple(g.shape[:-1])), tuple(range(g.ndim - 2)))
        ct_b = _to_input(g, b)
    return [ct_a, ct_b]


@register_jvp("linalg_det")
def _det_jvp(primals, tangents):
    (a,), (t,) = primals, tangents
    d = ops.bind("linalg_det", a)
    inv = ops.bind1("linalg_inv", a)
    return d, [ops.mul(d[0], _trace_product(inv, t))]


@register_vjp("linalg_det")
def _det_vjp(cts, primals, outs):
    (a,) = primals
    inv = ops.bind1("linalg_inv", a)
    scale = _bcast_last2(ops.mul(cts[0], outs[0]), tuple(a.shape))
    return [ops.mul(scale, _mT(inv))]


@register_jvp("linalg_slogdet")
def _slogdet_jvp(primals, tangents):
    (a,), (t,) = primals, tangents
    sign, logabs = outs = ops.bind("linalg_slogdet", a)
    tau = _trace_product(ops.bind1("linalg_inv", a), t)  # d log det = tr(a^-1 da)
    if a.dtype.kind != "c":
        return outs, [None, tau]
    re = ops.bind1("real", tau)
    i_im = ops.bind1("make_complex", ops.zeros_like(re.aval), ops.bind1("imag", tau))
    return outs, [ops.mul(sign, i_im), re]


@register_vjp("linalg_slogdet")
def _slogdet_vjp(cts, primals, outs):
    (a,) = primals
    ct_sign, ct_log = cts
    sign = outs[0]
    ct_tau = None
    if ct_log is not None:
        ct_tau = ops.convert(ct_log, a.dtype)
    if a.dtype.kind == "c" and ct_sign is not None:
        # d sign = sign * i * Im(tau): under Re(sum(c * .)), its transpose is -i Re(i c sign)
        re = ops.bind1("real", ops.mul(ops.full(sign.shape, 1j, a.dtype), ops.mul(ct_sign, sign)))
        term = ops.mul(ops.full(sign.shape, -1j, a.dtype), ops.convert(re, a.dtype))
        ct_tau = term if ct_tau is None else ops.add(ct_tau, term)
    if ct_tau is None:
        return [None]
    inv = ops.bind1("linalg_inv", a)
    return [ops.mul(_bcast_last2(ct_tau, tuple(a.shape)), _mT(inv))]


# ----------------------------------------------------------------------------- cholesky, eigh


def _cholesky_tangent(primals, outs, tangents, *, upper):
    (a,), (t,) = primals, tangents
    if t is None:
        return [None]
    factor = outs[0]
    lower = _H(factor) if upper else factor  # a = lower @ lower^H
    n, batch = a.shape[-1], tuple(a.shape[:-2])
    l_inv = ops.bind1("linalg_inv", lower)
    x = _matmul(_matmul(l_inv, _read_triangle(t, not upper)), _H(l_inv))
    half = ops.full(x.shape, 0.5, x.dtype)
    phi = ops.add(_where(_eye_mask(n, batch, 0, "lower"), x), ops.mul(half, _where(_eye_mask(n, batch), x)))
    d_lower = _matmul(lower, phi)
    return [_H(d_lower) if upper else d_lower]


transpose_of_linear("linalg_cholesky", _cholesky_tangent)


def _eigh_pieces(a: Tracer, w: Tracer, v: Tracer) -> Tracer:
    """JAX's F matrix: F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it."""
    n, batch = a.shape[-1], tuple(a.shape[:-2])
    wc = ops.convert(w, v.dtype)
    shape = batch + (n, n)
    wj = ops.broadcast_in_dim(wc, shape, tuple(range(len(batch))) + (len(batch) + 1,))
    wi = ops.broadcast_in_dim(wc, shape, tuple(range(len(batch))) + (len(batch),))
    eye = ops.convert(_eye_mask(n, batch), v.dtype)
    return ops.sub(ops.bind1("reciprocal", ops.add(eye, ops.sub(wj, wi))), eye)


def _vdag_t_v(v: Tracer, t: Tracer, lower: bool) -> Tracer:
    return _matmul(_matmul(_H(v), _read_triangle(t, lower)), v)


def _diag_real(m: Tracer) -> Tracer:
    n = m.shape[-1]
    d = ops.reduce_sum(_where(_eye_mask(n, tuple(m.shape[:-2])), m), (m.ndim - 1,))
    return ops.bind1("real", d) if d.dtype.kind == "c" else d


def _eigh_tangent(primals, outs, tangents, *, UPLO):
    (a,), (t,) = primals, tangents
    if t is None:
        return [None, None]
    w, v = outs
    vtv = _vdag_t_v(v, t, UPLO == "L")
    dv = _matmul(v, ops.mul(_eigh_pieces(a, w, v), vtv))
    return [_diag_real(vtv), dv]


transpose_of_linear("linalg_eigh", _eigh_tangent)


@register_jvp("linalg_eigvalsh")
def _eigvalsh_jvp(primals, tangents, *, UPLO):
    (a,), (t,) = primals, tangents
    w = ops.bind("linalg_eigvalsh", a, UPLO=UPLO)
    _, v = ops.bind("linalg_eigh", a, UPLO=UPLO)
    return w, [_diag_real(_vdag_t_v(v, t, UPLO == "L"))]


@register_vjp("linalg_eigvalsh")
def _eigvalsh_vjp(cts, primals, outs, *, UPLO):
    (a,) = primals
    _, v = ops.bind("linalg_eigh", a, UPLO=UPLO)

    def linear(ts: list[Tracer]) -> list[Tracer]:
        return [_diag_real(_vdag_t_v(v, ts[0], UPLO == "L"))]

    prog, caps = trace_sub(linear, [a.aval], "linalg_eigvalsh.tangent_map")
    _, backward = vjp_eval(prog, caps + [ops.zeros_like(a.aval)], [False] * len(caps) + [True])
    return backward([cts[0]])[len(caps):]


# ----------------------------------------------------------------------------- qr, svd (JAX's rules)


def _cut(x: Tracer, axis: int, start: int, stop: int) -> Tracer:
    """x[..., start:stop, ...] along `axis` (a static slice)."""
    axis %= x.ndim
    shape = tuple(stop - start if d == axis else n for d, n in enumerate(x.shape))
    starts = tuple(start if d == axis else 0 for d in range(x.ndim))
    return ops.bind1("slice", x, starts=starts, steps=(1,) * x.ndim, shape=shape)


def _thin_qr_tangent(q: Tracer, r: Tracer, dx: Tracer) -> tuple[Tracer, Tracer]:
    """JAX's `_thin_qr_jvp` (m >= n): dq, dr of x = q r for the tangent dx."""
    n, batch = r.shape[-1], tuple(r.shape[:-2])
    dx_rinv = _matmul(dx, ops.bind1("linalg_inv", r))
    qt_dx_rinv = _matmul(_H(q), dx_rinv)
    low = _where(_eye_mask(n, batch, 0, "lower"), qt_dx_rinv)
    do = ops.sub(low, _H(low))  # skew-Hermitian
    if qt_dx_rinv.dtype.kind == "c":  # the imaginary part of the diagonal
        diag = _where(_eye_mask(n, batch), qt_dx_rinv)
        do = ops.add(do, ops.sub(diag, ops.convert(ops.bind1("real", diag), diag.dtype)))
    dq = ops.add(_matmul(q, ops.sub(do, qt_dx_rinv)), dx_rinv)
    dr = _matmul(ops.sub(qt_dx_rinv, do), r)
    return dq, dr


def _qr_tangent(primals, outs, tangents, *, mode):
    (x,), (dx,) = primals, tangents
    if dx is None:
        return [None] * len(outs)
    m, n = x.shape[-2:]
    if mode == "raw" or (mode == "complete" and m > n):
        raise UnsupportedOperationError(
            f"differentiation of numpy.linalg.qr(mode={mode!r}) of a {m}x{n} matrix is not supported (as in JAX); "
            "use mode='reduced'")
    if mode == "r":
        q, r = ops.bind("linalg_qr", x, mode="reduced")
    else:
        q, r = outs
    if m >= n:
        dq, dr = _thin_qr_tangent(q, r, dx)
    else:  # wide: x = q [r1 r2], r1 square (JAX's rule)
        dq, dr1 = _thin_qr_tangent(q, _cut(r, -1, 0, m), _cut(dx, -1, 0, m))
        dr2 = ops.add(_matmul(_H(dq), _cut(x, -1, m, n)), _matmul(_H(q), _cut(dx, -1, m, n)))
        dr = ops.bind1("concatenate", dr1, dr2, axis=x.ndim - 1)
    return [dr] if mode == "r" else [dq, dr]


transpose_of_linear("linalg_qr", _qr_tangent)


def _diag_matrix(v: Tracer) -> Tracer:
    k, batch = v.shape[-1], tuple(v.shape[:-1])
    full = ops.broadcast_in_dim(v, batch + (k, k), tuple(range(len(batch))) + (len(batch) + 1,))
    return _where(_eye_mask(k, batch), full)


def _row(s: Tracer, dtype: np.dtype) -> Tracer:
    """s[..., None, :] broadcast to (..., k, k), in `dtype`."""
    k, batch = s.shape[-1], tuple(s.shape[:-1])
    return ops.convert(ops.broadcast_in_dim(s, batch + (k, k), tuple(range(len(batch))) + (len(batch) + 1,)), dtype)


def _svd_tangent(primals, outs, tangents, *, full_matrices, compute_uv, hermitian):
    (a,), (da,) = primals, tangents
    if da is None:
        return [None] * len(outs)
    m, n = a.shape[-2:]
    if hermitian:
        raise UnsupportedOperationError(
            "differentiation of numpy.linalg.svd(hermitian=True) is not supported yet; use hermitian=False")
    if compute_uv and full_matrices and m != n:
        raise UnsupportedOperationError(
            "differentiation of numpy.linalg.svd with full_matrices=True of a non-square matrix is not supported (as "
            "in JAX); pass full_matrices=False")
    if compute_uv:
        u, s, vt = outs
    else:
        u, s, vt = ops.bind("linalg_svd", a, full_matrices=False, compute_uv=True, hermitian=False)
    dt = a.dtype
    k, batch = s.shape[-1], tuple(s.shape[:-1])
    ut, v = _H(u), _H(vt)
    ds_mat = _matmul(_matmul(ut, da), v)
    ds = _diag_real(ds_mat)
    if not compute_uv:
        return [ds]
    s_row = _row(s, s.dtype)  # s_dim: s[..., None, :]
    s_col = _mT(s_row)
    s_diffs = ops.mul(ops.add(s_row, s_col), ops.sub(s_row, s_col))
    eye = ops.convert(_eye_mask(k, batch), s.dtype)
    f = ops.sub(ops.bind1("reciprocal", ops.add(s_diffs, eye)), eye)
    dss = ops.mul(_row(s, dt), ds_mat)
    sds = ops.mul(_mT(_row(s, dt)), ds_mat)
    s_zeros = ops.convert(ops.bind1("equal", s, ops.zeros_like(s.aval)), s.dtype)
    s_inv = ops.sub(ops.bind1("reciprocal", ops.add(s, s_zeros)), s_zeros)
    half = ops.full(ds_mat.shape, 0.5, dt)
    dudv_diag = ops.mul(ops.mul(half, ops.sub(ds_mat, _H(ds_mat))), ops.convert(_diag_matrix(s_inv), dt))
    fc = ops.convert(f, dt)
    du = _matmul(u, ops.add(ops.mul(fc, ops.add(dss, _H(dss))), dudv_diag))
    dv = _matmul(v, ops.mul(fc, ops.add(sds, _H(sds))))
    if m > n:
        dav = _matmul(da, v)
        du = ops.add(du, ops.div(ops.sub(dav, _matmul(u, _matmul(ut, dav))), _bcast_rows(s, dt, m)))
    if n > m:
        dahu = _matmul(_H(da), u)
        dv = ops.add(dv, ops.div(ops.sub(dahu, _matmul(v, _matmul(vt, dahu))), _bcast_rows(s, dt, n)))
    return [du, ds, _H(dv)]


def _bcast_rows(s: Tracer, dtype: np.dtype, rows: int) -> Tracer:
    """s[..., None, :] broadcast to (..., rows, k), in `dtype`."""
    k, batch = s.shape[-1], tuple(s.shape[:-1])
    return ops.convert(ops.broadcast_in_dim(s, batch + (rows, k), tuple(range(len(batch))) + (len(batch) + 1,)), dtype)


transpose_of_linear("linalg_svd", _svd_tangent)


# ----------------------------------------------------------------------------- fft

# Every numpy.fft function is real-linear: the tangent is the same transform of the tangent.
# Reverse rules (the transpose under Re(sum(a * b))): the DFT matrix is symmetric, so a
# complex-to-complex transform is its own transpose (same norm); the zero-padding or truncation
# to `n` transposes to truncation or zero-padding back to the input's length; rfft is fft
# followed by keeping the first n//2+1 entries; irfft reads the half spectrum with weights 1 (the
# constant term, the Nyquist term of an even n) and 2 (the rest), so its transpose is those
# weights times ifft of the cotangent.

_C2C = ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn")
_ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")


def _fit(x: Tracer, axis: int, length: int) -> Tracer:
    """x truncated or zero-padded to `length` along `axis` (what numpy.fft does for n=)."""
    axis %= x.ndim
    have = x.shape[axis]
    if have == length:
        return x
    if have > length:
        return _cut(x, axis, 0, length)
    pad_shape = tuple(length - have if d == axis else n for d, n in enumerate(x.shape))
    return ops.bind1("concatenate", x, ops.zeros_like(AType(pad_shape, x.dtype)), axis=axis)


def _fft_axes(x: Tracer, fn: str, n: Any, axes: Any) -> list[int]:
    if fn in _ONE_D:
        return [axes % x.ndim]
    if axes is None:
        return list(range(x.ndim)) if n is None else list(range(x.ndim - len(n), x.ndim))
    return [a % x.ndim for a in axes]


def _to_input_dtype(ct: Tracer, x: Tracer) -> Tracer:
    if x.dtype.kind != "c" and ct.dtype.kind == "c":
        ct = ops.bind1("real", ct)
    return ops.convert(ct, x.dtype)


@register_jvp("fft")
def _fft_jvp(primals, tangents, *, fn, n, axes, norm):
    (x,), (t,) = primals, tangents
    params = dict(fn=fn, n=n, axes=axes, norm=norm)
    return ops.bind("fft", x, **params), [ops.bind1("fft", t, **params)]


@register_vjp("fft")
def _fft_vjp(cts, primals, outs, *, fn, n, axes, norm):
    (x,), (ct,) = primals, cts
    ax = _fft_axes(x, fn, n, axes)
    if fn in _C2C:
        back = ops.bind1("fft", ct, fn=fn, n=None, axes=axes, norm=norm)
        for a in ax:
            back = _fit(back, a, x.shape[a])
        return [_to_input_dtype(back, x)]
    if fn == "rfft":
        (a,) = ax
        length = n if n is not None else x.shape[a]
        back = ops.bind1("fft", _fit(ct, a, length), fn="fft", n=None, axes=a, norm=norm)
        return [_to_input_dtype(_fit(back, a, x.shape[a]), x)]
    if fn == "irfft":
        (a,) = ax
        length = outs[0].shape[a]
        half = length // 2 + 1
        spectrum = _cut(ops.bind1("fft", ct, fn="ifft", n=None, axes=a, norm=norm), a, 0, half)
        weights = np.full(half, 2.0)
        weights[0] = 1.0
        if length % 2 == 0:
            weights[-1] = 1.0
        shape = [1] * ct.ndim
        shape[a] = half
        w = ops.broadcast_in_dim(ops.const(weights.reshape(shape), spectrum.dtype), tuple(spectrum.shape),
                                 tuple(range(ct.ndim)))
        return [_to_input_dtype(_fit(ops.mul(w, spectrum), a, x.shape[a]), x)]
    # hfft, ihfft, rfft2, rfftn, irfft2, irfftn: NumPy's own definitions in terms of the above
    out_shape = tuple(outs[0].shape)
    prog, caps = trace_sub(lambda ins: [_fft_composed(ins[0], fn, n, ax, norm, out_shape)], [x.aval], f"{fn}.composed")
    _, backward = vjp_eval(prog, caps + [x], [False] * len(caps) + [True])
    return backward([ct])[len(caps):]


_SWAP_NORM = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _fft1(x: Tracer, fn: str, n: Any, axis: int, norm: Any) -> Tracer:
    return ops.bind1("fft", x, fn=fn, n=n, axes=axis, norm=norm)


def _fft_composed(x: Tracer, fn: str, n: Any, ax: list[int], norm: Any, out_shape: tuple) -> Tracer:
    """numpy.fft's definitions (numpy/fft/_pocketfft.py) of the transforms without their own
    reverse rule, in terms of fft, ifft, rfft and irfft."""
    if fn == "hfft":
        return _fft1(_conj(x), "irfft", out_shape[ax[0]], ax[0], _SWAP_NORM[norm])
    if fn == "ihfft":
        return _conj(_fft1(x, "rfft", n, ax[0], _SWAP_NORM[norm]))
    if fn in ("rfft2", "rfftn"):
        last = n[-1] if n is not None else x.shape[ax[-1]]
        y = _fft1(x, "rfft", last, ax[-1], norm)
        for a in ax[:-1]:
            y = _fft1(y, "fft", out_shape[a], a, norm)
        return y
    if fn in ("irfft2", "irfftn"):
        y = x
        for a in ax[:-1]:
            y = _fft1(y, "ifft", out_shape[a], a, norm)
        return _fft1(y, "irfft", out_shape[ax[-1]], ax[-1], norm)
    raise UnsupportedOperationError(f"differentiation of numpy.fft.{fn} is not supported yet")


# ----------------------------------------------------------------------------- ufunc.reduceat


@register_jvp("ufunc_reduceat")
def _ufunc_reduceat_jvp(primals, tangents, *, ufunc, axis, dtype):
    x, indices = primals
    out = ops.bind("ufunc_reduceat", x, indices, ufunc=ufunc, axis=axis, dtype=dtype)
    if tangents[0] is None or not differentiable(out[0].aval):
        return out, [None]
    if ufunc != "add":
        raise UnsupportedOperationError(
            f"differentiation of numpy.{ufunc}.reduceat is not supported (numpy.add.reduceat is: it is linear); "
            "with constant indices, reduce each slice instead")
    return out, [ops.bind1("ufunc_reduceat", ops.convert(tangents[0], dtype), indices, ufunc="add", axis=axis,
                           dtype=dtype)]


@register_vjp("ufunc_reduceat")
def _ufunc_reduceat_vjp(cts, primals, outs, *, ufunc, axis, dtype):
    """add.reduceat is linear: x[j] reaches out[i] when j lies in segment i, [indices[i],
    indices[i+1]) (to the end for the last; [indices[i], indices[i] + 1) when indices[i] >=
    indices[i+1]). The cotangent is ct contracted with that (segments x n) membership mask."""
    (x, indices), (ct,) = primals, cts
    if not differentiable(x.aval) or not differentiable(outs[0].aval):
        return [None, None]
    if ufunc != "add":
        raise UnsupportedOperationError(f"differentiation of numpy.{ufunc}.reduceat is not supported "
                                        "(numpy.add.reduceat is: it is linear)")
    n, m = x.shape[axis], indices.shape[0]
    i64 = np.dtype(np.int64)
    lo = ops.convert(indices, i64)
    following = ops.bind1("concatenate", ops.bind1("slice", lo, starts=(1,), steps=(1,), shape=(m - 1,)),
                          ops.full((1,), n, i64), axis=0) if m else lo
    hi = ops.select(ops.bind1("less", lo, following), following, ops.add(lo, ops.full((m,), 1, i64)))
    j = ops.bind1("iota", shape=(m, n), dimension=1, dtype=i64)
    lo2, hi2 = (ops.broadcast_in_dim(v, (m, n), (0,)) for v in (lo, hi))
    inside = ops.bind1("logical_and", ops.bind1("greater_equal", j, lo2), ops.bind1("less", j, hi2))
    mask = ops.convert(inside, ct.dtype)
    # ct: x's shape with axis -> m; contract its axis with the mask's first one, then put n back.
    moved = ops.moveaxis(ct, axis, ct.ndim - 1)
    summed = ops.bind1("dot_general", moved, mask, contracting=((moved.ndim - 1,), (0,)), batch=((), ()))
    back = ops.moveaxis(summed, summed.ndim - 1, axis)
    if x.dtype.kind == "f" and back.dtype.kind == "c":
        back = ops.bind1("real", back)
    return [ops.convert(back, x.dtype), None]


# ----------------------------------------------------------------------------- no rule (yet)


_NUMPY_NAMES = {
    "linalg_lstsq": "numpy.linalg.lstsq",
    "linalg_pinv": "numpy.linalg.pinv", "histogram": "numpy.histogram",
}


def _no_rule(prim: str) -> Callable[..., Any]:
    def rule(*args: Any, **params: Any) -> Any:
        raise UnsupportedOperationError(
            f"differentiation (grad, jvp, vjp) of {_NUMPY_NAMES[prim]} (the library step {prim!r}) is not supported yet; "
            "wrap it in jk.stop_gradient if its derivative is not needed")
    return rule


for _prim in _NUMPY_NAMES:
    register_jvp(_prim)(_no_rule(_prim))
    register_vjp(_prim)(_no_rule(_prim))
