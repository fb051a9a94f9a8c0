"""NumPy's polynomial functions (numpy/lib/_polynomial_impl.py) inside a trace, written step by
step over jitkernel's functions (no primitive of their own), so dtypes, rounding order and
errors are NumPy's and derivatives and batching come from the steps:

- polyadd / polysub: the shorter operand padded with zeros of its dtype (NumPy does not trim).
- polymul: `convolve(poly1d(a1), poly1d(a2))`. poly1d trims leading zeros, a length that
  depends on the values: a NumPy constant operand is trimmed at trace time; a traced one is
  assumed to have a non-zero leading coefficient (or to be a single coefficient), checked when
  the call runs (ValueError naming the value-dependent length otherwise).
- polyder / polyint: NumPy's recursion for a static order m (polyint's constants k may be traced).
- polydiv: NumPy's division loop (static lengths); the remainder's leading entries within 1e-8
  of zero are dropped (NumPy's `while allclose(r[0], 0, rtol=1e-14)`), a data-dependent length:
  the remainder is a traced slice `r[start:]` (see "Data-dependent shapes" in
  docs/numpy-support.md), so a polydiv call is not differentiated (jitkernel refuses).
- poly: NumPy's loop of convolutions over a 1-D sequence of roots. Refused: complex roots (NumPy
  returns real coefficients when the roots come in conjugate pairs, a value-dependent dtype) and
  a square matrix (its eigenvalues: np.linalg.eigvals is not supported).
- polyfit: NumPy's scaled Vandermonde least squares (lstsq) for a static degree, with rcond, w=
  and full=; NumPy's RankWarning is not given (the rank is known only when the call runs).
- roots: refused (the eigenvalues of the companion matrix: np.linalg.eigvals; and the number of
  roots depends on the zero coefficients).

>>> import numpy as np, jitkernel as jk
>>> jk.jit(lambda a, b: np.polymul(a, b))(np.array([1.0, 2.0]), np.array([1.0, -2.0]))
array([ 1.,  0., -4.])
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..trace.operands import context_of, lift
from ..trace.tracer import Tracer
from ._linalg_lib import lstsq, pinv
from ._reductions import sum as _sum
from ._sequences import vander
from ._shape import concatenate, reshape, stack
from ._signal import convolve
from ._statistics import raise_if
from ._ufuncs import apply_ufunc
from ..transforms.custom import custom_jvp
from ._cumulative import cumprod
from ._linalg import matmul

__all__ = ["polyadd", "polysub", "polymul", "polyder", "polyint", "polydiv", "poly", "polyfit"]


def _is_traced(*args: Any) -> bool:
    """Whether a Tracer is among `args` (one level into lists): else NumPy computes the value."""
    return any(isinstance(a, Tracer) or (isinstance(a, (list, tuple)) and any(isinstance(b, Tracer) for b in a))
               for a in args)


def _refuse_poly1d(name: str, *args: Any) -> None:
    if any(isinstance(a, np.poly1d) for a in args):
        raise UnsupportedOperationError(f"numpy.{name} with a poly1d argument is not supported inside jit "
                                        "(poly1d is a Python object): pass its coefficients, p.coeffs")


def _atleast_1d(ctx: Any, x: Any) -> Tracer:
    """np.atleast_1d(x) as a strong traced array (a Python scalar takes its default dtype)."""
    t = lift(ctx, x)
    if t.weak is not None:
        t = lift(ctx, t, t.dtype)
    return reshape(t, (1,)) if t.ndim == 0 else t


def _zeros(ctx: Any, n: int, dtype: np.dtype) -> Tracer:
    return lift(ctx, ctx.const(np.zeros(n, dtype)))


# ----------------------------------------------------------------------------- polyadd, polysub

def _padded(ctx: Any, a1: Any, a2: Any) -> tuple[Tracer, Tracer]:
    """NumPy's polyadd/polysub operands: the shorter one after zeros of its own dtype."""
    t1, t2 = _atleast_1d(ctx, a1), _atleast_1d(ctx, a2)
    diff = len(t2) - len(t1)
    if diff > 0:
        t1 = concatenate([_zeros(ctx, diff, t1.dtype), t1])
    elif diff < 0:
        t2 = concatenate([_zeros(ctx, -diff, t2.dtype), t2])
    return t1, t2


def polyadd(a1: Any, a2: Any) -> Any:
    """numpy.polyadd: no trimming, NumPy's promotion (int + float arrays is float64)."""
    if not _is_traced(a1, a2):
        return np.polyadd(a1, a2)
    _refuse_poly1d("polyadd", a1, a2)
    return apply_ufunc(np.add, *_padded(context_of(a1, a2), a1, a2))


def polysub(a1: Any, a2: Any) -> Any:
    """numpy.polysub: no trimming, NumPy's promotion (bool - bool raises NumPy's TypeError)."""
    if not _is_traced(a1, a2):
        return np.polysub(a1, a2)
    _refuse_poly1d("polysub", a1, a2)
    return apply_ufunc(np.subtract, *_padded(context_of(a1, a2), a1, a2))


# ----------------------------------------------------------------------------- polymul

def _poly1d_coeffs(ctx: Any, a: Any, name: str) -> Tracer:
    """poly1d(a)'s coefficients: 1-d, leading zeros trimmed ([0] for all zeros). A NumPy
    constant is trimmed now; a traced array must have a non-zero first coefficient (or a single
    one), checked when the call runs, since the trimmed length depends on the values."""
    if not isinstance(a, Tracer) and not (isinstance(a, (list, tuple)) and _is_traced(a)):
        return lift(ctx, ctx.const(np.poly1d(a).coeffs))
    t = _atleast_1d(ctx, a)
    if t.ndim > 1:
        raise ValueError("Polynomial must be 1d only.")
    if len(t) > 1:
        t = raise_if(t, apply_ufunc(np.equal, t[0], 0), "ValueError",
                     f"numpy.{name} inside jit: a traced coefficient array with a leading zero; NumPy "
                     "trims leading zeros (poly1d), so its result length depends on the values: "
                     "trim the coefficients outside jit or pass them as a NumPy constant")
    return t


def polymul(a1: Any, a2: Any) -> Any:
    """numpy.polymul: convolve(poly1d(a1), poly1d(a2)) (see the module docstring on trimming)."""
    if not _is_traced(a1, a2):
        return np.polymul(a1, a2)
    _refuse_poly1d("polymul", a1, a2)
    ctx = context_of(a1, a2)
    return convolve(_poly1d_coeffs(ctx, a1, "polymul"), _poly1d_coeffs(ctx, a2, "polymul"))


# ----------------------------------------------------------------------------- polyder, polyint

def _order(m: Any, name: str) -> int:
    if isinstance(m, Tracer):
        raise UnsupportedOperationError(f"numpy.{name}: the order m must be static (a Python int) inside jit")
    return int(m)


def polyder(p: Any, m: Any = 1) -> Any:
    """numpy.polyder for a static order m: `p[:-1] * arange(n, 0, -1)`, m times."""
    m = _order(m, "polyder")
    if not _is_traced(p):
        return np.polyder(p, m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    _refuse_poly1d("polyder", p)
    ctx = context_of(p)
    t = lift(ctx, p)
    if t.weak is not None:
        t = lift(ctx, t, t.dtype)
    for _ in range(m):
        n = len(t) - 1  # NumPy's TypeError for a 0-d p
        t = apply_ufunc(np.multiply, t[:-1], np.arange(n, 0, -1))
    return t


def polyint(p: Any, m: Any = 1, k: Any = None) -> Any:
    """numpy.polyint for a static order m; the integration constants k may be traced."""
    m = _order(m, "polyint")
    if not _is_traced(p, k):
        return np.polyint(p, m, k)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    _refuse_poly1d("polyint", p)
    ctx = context_of(p, k)
    kt = _atleast_1d(ctx, np.zeros(m, float) if k is None else k)
    if len(kt) == 1 and m > 1:
        kt = apply_ufunc(np.multiply, kt[0], np.ones(m, float))
    if len(kt) < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    t = lift(ctx, p)
    if t.weak is not None:
        t = lift(ctx, t, t.dtype)
    kt = lift(ctx, kt)  # a NumPy constant k with a traced p: a constant of the trace
    for i in range(m):
        y = apply_ufunc(np.true_divide, t, np.arange(len(t), 0, -1))
        t = concatenate([y, reshape(kt[i], (1,))])  # NumPy's [k[0]]: a 1-element array of k's dtype
    return t


# ----------------------------------------------------------------------------- polydiv

def polydiv(u: Any, v: Any) -> Any:
    """numpy.polydiv: NumPy's loop (q static length); the remainder's length depends on the
    values (its leading entries within 1e-8 of zero are dropped): a data-dependent slice."""
    if not _is_traced(u, v):
        return np.polydiv(u, v)
    _refuse_poly1d("polydiv", u, v)
    ctx = context_of(u, v)
    ut = apply_ufunc(np.add, _atleast_1d(ctx, u), 0.0)
    vt = apply_ufunc(np.add, _atleast_1d(ctx, v), 0.0)
    dt = np.result_type(ut.dtype, vt.dtype)  # w = u[0] + v[0]: the common type
    m, n = len(ut) - 1, len(vt) - 1
    scale = apply_ufunc(np.true_divide, 1.0, vt[0])
    r = lift(ctx, ut, dt)
    q = []
    for k in range(m - n + 1):
        d = apply_ufunc(np.multiply, scale, r[k])
        q.append(lift(ctx, d, dt))
        part = apply_ufunc(np.subtract, r[k:k + n + 1], apply_ufunc(np.multiply, d, vt))
        r = concatenate([r[:k], lift(ctx, part, dt), r[k + n + 1:]])
    quotient = stack(q) if q else _zeros(ctx, 1, dt)
    return quotient, _trimmed_remainder(ctx, r)


def _trimmed_remainder(ctx: Any, r: Tracer) -> Tracer:
    """r without its leading entries within 1e-8 of zero (allclose(r[0], 0, rtol=1e-14) compares
    |r[0]| <= 1e-8 in double precision), keeping at least the last one."""
    if len(r) == 1:
        return r
    wide = lift(ctx, r, np.result_type(r.dtype, np.float64))
    close = apply_ufunc(np.less_equal, apply_ufunc(np.absolute, wide[:-1]), 1e-8)
    start = _sum(cumprod(lift(ctx, close, np.dtype(np.int64))))  # how many of them lead
    return r[start:]


# ----------------------------------------------------------------------------- poly

def poly(seq_of_zeros: Any) -> Any:
    """numpy.poly of a 1-D sequence of real roots: NumPy's loop of convolutions."""
    if not _is_traced(seq_of_zeros):
        return np.poly(seq_of_zeros)
    ctx = context_of(seq_of_zeros)
    z = _atleast_1d(ctx, seq_of_zeros)
    sh = z.shape
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        raise UnsupportedOperationError(
            "numpy.poly of a square matrix (its characteristic polynomial) needs np.linalg.eigvals, "
            "which jitkernel does not support (its result dtype depends on the values)")
    if len(sh) != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    dt = np.dtype(np.mintypecode(z.dtype.char))
    if dt.kind == "c":
        raise UnsupportedOperationError(
            "numpy.poly of complex roots is not supported inside jit: NumPy returns real coefficients "
            "when the roots come in conjugate pairs and complex ones otherwise (a value-dependent dtype)")
    z = lift(ctx, z, dt)
    if len(z) == 0:
        return 1.0
    a = lift(ctx, ctx.const(np.ones((1,), dt)))
    one = lift(ctx, ctx.const(np.ones((1,), dt)))
    for i in range(len(z)):
        factor = concatenate([one, reshape(apply_ufunc(np.negative, z[i]), (1,))])  # array([1, -zero])
        a = convolve(a, factor)
    return a


# ----------------------------------------------------------------------------- polyfit

def _as_float(ctx: Any, x: Any) -> Tracer:
    """NumPy's `asarray(x) + 0.0`: ints and bool become float64, float32 stays."""
    t = lift(ctx, x)
    if t.weak is not None:
        t = lift(ctx, t, t.dtype)
    return apply_ufunc(np.add, t, 0.0)


def polyfit(x: Any, y: Any, deg: Any, rcond: Any = None, full: bool = False, w: Any = None,
            cov: Any = False) -> Any:
    """numpy.polyfit for a static degree: the column-scaled Vandermonde system solved by lstsq."""
    if isinstance(deg, Tracer):
        raise UnsupportedOperationError("numpy.polyfit: deg must be static (a Python int) inside jit")
    if not _is_traced(x, y, w, rcond):
        return np.polyfit(x, y, deg, rcond=rcond, full=full, w=w, cov=cov)
    if cov:
        raise UnsupportedOperationError("numpy.polyfit(cov=...) is not supported inside jit")
    ctx = context_of(x, y, w, rcond)
    order = operator.index(deg) + 1 if isinstance(deg, (int, np.integer)) else int(deg) + 1
    xt, yt = _as_float(ctx, x), _as_float(ctx, y)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if xt.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if xt.size == 0:
        raise TypeError("expected non-empty vector for x")
    if yt.ndim < 1 or yt.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if xt.shape[0] != yt.shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = len(xt) * np.finfo(xt.dtype).eps
    elif isinstance(rcond, Tracer):
        raise UnsupportedOperationError("numpy.polyfit: rcond must be static inside jit")
    lhs = vander(xt, order)
    rhs = yt
    if w is not None:
        wt = _as_float(ctx, w)
        if wt.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if wt.shape[0] != yt.shape[0]:
            raise TypeError("expected w and y to have the same length")
        column = reshape(wt, (-1, 1))
        lhs = lift(ctx, apply_ufunc(np.multiply, lhs, column), lhs.dtype)  # lhs *= w[:, newaxis]
        rhs = lift(ctx, apply_ufunc(np.multiply, rhs, column if rhs.ndim == 2 else wt), rhs.dtype)
    scale = apply_ufunc(np.sqrt, _sum(apply_ufunc(np.multiply, lhs, lhs), axis=0))
    lhs = lift(ctx, apply_ufunc(np.true_divide, lhs, scale), lhs.dtype)  # lhs /= scale
    if full:
        c, resids, rank, s = lstsq(lhs, rhs, rcond)
        return apply_ufunc(np.true_divide, c.T, scale).T, resids, rank, s, rcond
    c = _least_squares()(lhs, rhs, float(rcond))
    return apply_ufunc(np.true_divide, c.T, scale).T  # broadcast scale coefficients


_LEAST_SQUARES: list = []


def _least_squares() -> Any:
    """(lhs, rhs, rcond) -> lstsq(lhs, rhs, rcond)[0], NumPy's value, with a derivative (the
    lstsq library step has none): the minimum-norm solution c = A+ b moves by
    dc = A+ (db - dA c) + A+ A+^T dA^T (b - A c) + (I - A+ A) dA^T A+^T c, with A+ the
    pseudo-inverse at the same rcond (the last term vanishes at full column rank; where the
    rank changes with A the derivative does not exist). Only matmuls with A+ touch the tangents, so reverse mode
    transposes the rule. Built once (custom_jvp)."""
    if not _LEAST_SQUARES:

        def solution(lhs: Tracer, rhs: Tracer, rcond: float) -> Tracer:
            return lstsq(lhs, rhs, rcond)[0]
        f = custom_jvp(solution, nondiff_argnums=(2,))
        f.__name__ = "polyfit_least_squares"

        def rule(rcond: float, primals: tuple, tangents: tuple) -> tuple:
            (a, b), (da, db) = primals, tangents
            c = f(a, b, rcond)
            a_plus = pinv(a, rcond)
            residual = apply_ufunc(np.subtract, b, matmul(a, c))
            moved = apply_ufunc(np.subtract, db, matmul(da, c))
            turned = matmul(a_plus.T, matmul(da.T, residual))
            dc = matmul(a_plus, apply_ufunc(np.add, moved, turned))
            # The minimum-norm solution's third term, (I - A+ A) dA^T A+^T c: zero for a full
            # column rank A, needed where the fit is rank-deficient (Golub and Pereyra).
            dt = matmul(da.T, matmul(a_plus.T, c))
            null_part = apply_ufunc(np.subtract, dt, matmul(a_plus, matmul(a, dt)))
            return c, apply_ufunc(np.add, dc, null_part)
        f.defjvp(rule)
        _LEAST_SQUARES.append(f)
    return _LEAST_SQUARES[0]


polyfit.__jk_support__ = ("partly: static deg and rcond, cov unsupported; NumPy's RankWarning is not "
                          "given (the rank is known only when the call runs)")
polymul.__jk_support__ = ("partly: a traced operand with a leading zero coefficient raises ValueError when "
                          "the call runs (NumPy trims it: a value-dependent length)")
polydiv.__jk_support__ = ("partly: the remainder has a data-dependent length (see \"Data-dependent shapes\" "
                          "in docs/numpy-support.md); not differentiable")
poly.__jk_support__ = ("partly: 1-D real roots; complex roots (value-dependent dtype) and a square matrix "
                       "(np.linalg.eigvals) unsupported")
polyder.__jk_support__ = "partly: static m"
polyint.__jk_support__ = ("partly: static m; a traced k needs a traced p (NumPy's dispatcher looks at p "
                          "only, so with a NumPy p NumPy's own polyint runs on the traced k and raises)")
