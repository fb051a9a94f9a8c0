"""`numpy.linalg` inside a trace. LAPACK routines (solve, inv, cholesky, det, slogdet, qr, eigh,
eigvalsh, svd, svdvals, lstsq, pinv) are library steps whose impl is NumPy's own function
(ir/library_prims.py); `norm` is built from elementwise ops and reductions, so it fuses with its
producers, except the 2 / -2 / 'nuc' matrix norms, which reduce NumPy's singular values;
`matrix_power` is NumPy's sequence of matmuls for the static exponent; `multi_dot` is matmuls.

>>> import numpy as np, jitkernel as jk
>>> a = np.array([[4.0, 1.0], [1.0, 3.0]])
>>> x = jk.jit(lambda a, b: np.linalg.solve(a, b))(a, np.ones(2))
>>> bool(np.allclose(a @ x, 1.0))
True
"""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np
from numpy.linalg._linalg import EighResult, QRResult, SlogdetResult, SVDResult

from ..errors import UnsupportedOperationError
from ..ir.library_prims import assert_stacked_square, real_dtype
from ..trace.operands import context_of, lift, normalize_axis
from ._dispatch import register_function
from ._linalg import matmul, _common_dtype
from ._shape import moveaxis, reshape
from ._ufuncs import apply_ufunc, where
from ._creation import zeros_like, zeros, copy
from ._reductions import min as jmin, sum as jsum, any as jany, _keep, max as jmax

__all__ = ["tensordot"]  # np.linalg.* is reached through register_function


def _traced(ctx: Any, a: Any) -> Any:
    return lift(ctx, a)


def _routed(np_func: Any):
    """Register the decorated function for `np_func`; outside a trace it calls NumPy."""
    def wrap(impl: Any) -> Any:
        def routed(*args: Any, **kwargs: Any) -> Any:
            if context_of(*args, *kwargs.values()) is None:
                return np_func(*args, **kwargs)
            return impl(*args, **kwargs)
        routed.__name__, routed.__doc__ = impl.__name__, impl.__doc__
        register_function(np_func, routed)
        return routed
    return wrap


@_routed(np.linalg.inv)
def inv(a: Any) -> Any:
    """numpy.linalg.inv (LAPACK gesv through NumPy); a singular matrix raises LinAlgError."""
    ctx = context_of(a)
    return ctx.bind1("linalg_inv", _traced(ctx, a))


@_routed(np.linalg.cholesky)
def cholesky(a: Any, /, *, upper: bool = False) -> Any:
    """numpy.linalg.cholesky (lower, or upper=True); not positive definite raises LinAlgError."""
    ctx = context_of(a)
    return ctx.bind1("linalg_cholesky", _traced(ctx, a), upper=bool(upper))


@_routed(np.linalg.det)
def det(a: Any) -> Any:
    """numpy.linalg.det: stacked inputs give stacked determinants."""
    ctx = context_of(a)
    return ctx.bind1("linalg_det", _traced(ctx, a))


@_routed(np.linalg.slogdet)
def slogdet(a: Any) -> Any:
    """numpy.linalg.slogdet: SlogdetResult(sign, logabsdet)."""
    ctx = context_of(a)
    return SlogdetResult(*ctx.bind("linalg_slogdet", [_traced(ctx, a)]))


@_routed(np.linalg.solve)
def solve(a: Any, b: Any) -> Any:
    """numpy.linalg.solve: b is a vector when 1-d (NumPy 2), else a stack of matrices."""
    ctx = context_of(a, b)
    return ctx.bind1("linalg_solve", _traced(ctx, a), _traced(ctx, b))


@_routed(np.linalg.eigh)
def eigh(a: Any, UPLO: str = "L") -> Any:
    """numpy.linalg.eigh: EighResult(eigenvalues, eigenvectors), ascending eigenvalues."""
    ctx = context_of(a)
    return EighResult(*ctx.bind("linalg_eigh", [_traced(ctx, a)], UPLO=_uplo(UPLO)))


@_routed(np.linalg.eigvalsh)
def eigvalsh(a: Any, UPLO: str = "L") -> Any:
    """numpy.linalg.eigvalsh."""
    ctx = context_of(a)
    return ctx.bind1("linalg_eigvalsh", _traced(ctx, a), UPLO=_uplo(UPLO))


def _uplo(uplo: str) -> str:
    if uplo not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return uplo


@_routed(np.linalg.qr)
def qr(a: Any, mode: str = "reduced") -> Any:
    """numpy.linalg.qr: modes 'reduced', 'complete' (QRResult), 'r' (R) and 'raw' ((h, tau))."""
    ctx = context_of(a)
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    outs = ctx.bind("linalg_qr", [_traced(ctx, a)], mode=mode)
    if mode == "r":
        return outs[0]
    return QRResult(*outs) if mode in ("reduced", "complete") else tuple(outs)


@_routed(np.linalg.svd)
def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """numpy.linalg.svd: SVDResult(U, S, Vh), or S alone when compute_uv=False."""
    ctx = context_of(a)
    outs = ctx.bind("linalg_svd", [_traced(ctx, a)], full_matrices=bool(full_matrices),
                    compute_uv=bool(compute_uv), hermitian=bool(hermitian))
    return SVDResult(*outs) if compute_uv else outs[0]


@_routed(np.linalg.svdvals)
def svdvals(x: Any, /) -> Any:
    """numpy.linalg.svdvals: the singular values, descending."""
    return svd(x, compute_uv=False)


@_routed(np.linalg.lstsq)
def lstsq(a: Any, b: Any, rcond: Any = None) -> Any:
    """numpy.linalg.lstsq: (x, residuals, rank, s). When a has more rows than columns and is
    rank-deficient NumPy returns empty residuals (a data-dependent shape): the call raises
    LinAlgError saying so instead."""
    ctx = context_of(a, b)
    rc = None if rcond is None else float(rcond)
    x, residuals, rank, s = ctx.bind("linalg_lstsq", [_traced(ctx, a), _traced(ctx, b)], rcond=rc)
    return x, residuals, rank, s


@_routed(np.linalg.pinv)
def pinv(a: Any, rcond: Any = None, hermitian: bool = False, **kwargs: Any) -> Any:
    """numpy.linalg.pinv (through NumPy's SVD): static rcond/rtol only."""
    ctx = context_of(a)
    if "rtol" in kwargs:
        if rcond is not None:
            raise ValueError("`rtol` and `rcond` can't be both set.")
        rcond = ("rtol", kwargs.pop("rtol"))
    if kwargs:
        raise TypeError(f"pinv() got an unexpected keyword argument {next(iter(kwargs))!r}")
    if isinstance(rcond, tuple):
        rc = ("rtol", float(rcond[1]) if rcond[1] is not None else None)
    else:
        rc = None if rcond is None else float(rcond)
    return ctx.bind1("linalg_pinv", _traced(ctx, a), rcond=rc, hermitian=bool(hermitian))


@_routed(np.linalg.matrix_power)
def matrix_power(a: Any, n: Any) -> Any:
    """numpy.linalg.matrix_power with a static integer n: NumPy's own sequence of matmuls
    (binary decomposition for n > 3), the inverse first for n < 0, the identity for n == 0."""
    ctx = context_of(a)
    t = _traced(ctx, a)
    assert_stacked_square(t.aval)
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer (a static one inside jit)") from e
    if n == 0:
        eye = np.eye(t.shape[-2], dtype=t.dtype)
        return apply_ufunc(np.add, zeros_like(t), eye) if t.dtype != np.bool_ else apply_ufunc(np.logical_or, zeros_like(t), eye)
    if n < 0:
        t, n = inv(t), -n
    if n == 1:
        return copy(t)
    if n == 2:
        return matmul(t, t)
    if n == 3:
        return matmul(matmul(t, t), t)
    z = result = None
    while n > 0:
        z = t if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


@_routed(np.linalg.multi_dot)
def multi_dot(arrays: Any, *, out: Any = None) -> Any:
    """numpy.linalg.multi_dot: NumPy's optimal parenthesisation (by shapes), then matmuls."""
    if out is not None:
        raise UnsupportedOperationError("numpy.linalg.multi_dot: out= is not supported inside jit")
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    ctx = context_of(*arrays)
    ts = [_traced(ctx, a) for a in arrays]
    first_1d, last_1d = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_1d:
        ts[0] = reshape(ts[0], (1, -1))
    if last_1d:
        ts[-1] = reshape(ts[-1], (-1, 1))
    for t in ts:
        if t.ndim != 2:
            raise np.linalg.LinAlgError(f"{t.ndim}-dimensional array given. Array must be two-dimensional")
    if len(ts) == 2:
        result = matmul(ts[0], ts[1])
    else:
        from numpy.linalg._linalg import _multi_dot_matrix_chain_order
        samples = [np.broadcast_to(np.zeros((), t.dtype), t.shape) for t in ts]
        order = _multi_dot_matrix_chain_order(samples, return_costs=False)

        def chain(i: int, j: int) -> Any:
            return ts[i] if i == j else matmul(chain(i, order[i, j]), chain(order[i, j] + 1, j))
        result = chain(0, len(ts) - 1)
    if first_1d and last_1d:
        return reshape(result, ())
    if first_1d or last_1d:
        return reshape(result, (-1,))
    return result


# ----------------------------------------------------------------------------- norm


def _max_or_zero(x: Any, axis: Any, keepdims: bool = False) -> Any:
    """x.max(axis, initial=0) for non-negative x (NumPy's norm gives 0 for an empty axis)."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(normalize_axis(a, x.ndim) for a in axes)
    if any(x.shape[a] == 0 for a in axes):
        shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
        return _keep(zeros(shape, x.dtype), x.shape, axes, keepdims)
    return jmax(x, axis=axis, keepdims=keepdims)


def _svd_norm(x: Any, row: int, col: int, how: str) -> Any:
    s = svd(moveaxis(x, (row, col), (-2, -1)), compute_uv=False)
    if how == "max":
        return _max_or_zero(s, -1)
    return s.min(axis=-1) if how == "min" else s.sum(axis=-1)


def _abs_squared(t: Any) -> Any:
    """(x.conj() * x).real as NumPy's norm computes it: x * x for real x, re*re + im*im else."""
    if t.dtype.kind != "c":
        return apply_ufunc(np.multiply, t, t)
    re, im = np.real(t), np.imag(t)
    return apply_ufunc(np.add, apply_ufunc(np.multiply, re, re), apply_ufunc(np.multiply, im, im))


@_routed(np.linalg.norm)
def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """numpy.linalg.norm, every vector and matrix order, following NumPy's own formulas (so the
    elementwise parts fuse); the 2, -2 and 'nuc' matrix norms reduce the singular values."""
    ctx = context_of(x)
    t = _traced(ctx, x)
    if t.dtype.kind not in "fc":
        t = t.astype(np.float64)
    sqrt, absolute = np.sqrt, np.absolute
    if axis is None and (ord is None or (ord in ("f", "fro") and t.ndim == 2) or (ord == 2 and t.ndim == 1)):
        flat = reshape(t, (-1,))
        if t.dtype.kind == "c":  # NumPy: x.real.dot(x.real) + x.imag.dot(x.imag)
            re, im = np.real(flat), np.imag(flat)
            ret = apply_ufunc(sqrt, apply_ufunc(np.add, matmul(re, re), matmul(im, im)))
        else:
            ret = apply_ufunc(sqrt, matmul(flat, flat))
        return reshape(ret, (1,) * t.ndim) if keepdims else ret
    nd = t.ndim
    if axis is None:
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (operator.index(axis),)
        except TypeError as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
    if len(axis) == 1:
        if ord == np.inf:
            return _max_or_zero(apply_ufunc(absolute, t), axis, keepdims)
        if ord == -np.inf:
            return jmin(apply_ufunc(absolute, t), axis=axis, keepdims=keepdims)
        if ord == 0:
            return jsum(apply_ufunc(np.not_equal, t, 0).astype(real_dtype(t.dtype)), axis=axis, keepdims=keepdims)
        if ord == 1:
            return jsum(apply_ufunc(absolute, t), axis=axis, keepdims=keepdims)
        if ord is None or ord == 2:
            return apply_ufunc(sqrt, jsum(_abs_squared(t), axis=axis, keepdims=keepdims))
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order '{ord}' for vectors")
        p = np.asarray(ord, dtype=real_dtype(t.dtype))
        ret = jsum(apply_ufunc(np.power, apply_ufunc(absolute, t), p), axis=axis, keepdims=keepdims)
        return apply_ufunc(np.power, ret, np.reciprocal(p))
    if len(axis) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    row, col = (normalize_axis(a, nd) for a in axis)
    if row == col:
        raise ValueError("Duplicate axes given.")
    absx = None if ord in (2, -2, "nuc", None, "fro", "f") else apply_ufunc(absolute, t)
    if ord == 2:
        ret = _svd_norm(t, row, col, "max")
    elif ord == -2:
        ret = _svd_norm(t, row, col, "min")
    elif ord in (1, -1):
        c = col - 1 if col > row else col
        s = jsum(absx, axis=row)
        ret = _max_or_zero(s, c) if ord == 1 else jmin(s, axis=c)
    elif ord in (np.inf, -np.inf):
        r = row - 1 if row > col else row
        s = jsum(absx, axis=col)
        ret = _max_or_zero(s, r) if ord == np.inf else jmin(s, axis=r)
    elif ord in (None, "fro", "f"):
        ret = apply_ufunc(sqrt, jsum(_abs_squared(t), axis=axis))
    elif ord == "nuc":
        ret = _svd_norm(t, row, col, "sum")
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        shape = list(t.shape)
        shape[axis[0]] = shape[axis[1]] = 1
        ret = reshape(ret, tuple(shape))
    return ret


@_routed(np.linalg.vector_norm)
def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """numpy.linalg.vector_norm (array API): any number of axes, flattened into one."""
    ctx = context_of(x)
    t = _traced(ctx, x)
    shape = list(t.shape)
    if axis is None:
        v, ax = reshape(t, (-1,)), 0
    elif isinstance(axis, tuple):
        from numpy.lib.array_utils import normalize_axis_tuple
        axes = normalize_axis_tuple(axis, t.ndim)
        rest = tuple(i for i in range(t.ndim) if i not in axes)
        moved = t if axes + rest == tuple(range(t.ndim)) else t.transpose(axes + rest)
        v = reshape(moved, (math.prod(t.shape[i] for i in axes),) + tuple(t.shape[i] for i in rest))
        ax = 0
    else:
        v, ax = t, axis
    res = norm(v, axis=ax, ord=ord)
    if keepdims:
        from numpy.lib.array_utils import normalize_axis_tuple
        for i in normalize_axis_tuple(range(len(shape)) if axis is None else axis, len(shape)):
            shape[i] = 1
        res = reshape(res, tuple(shape))
    return res


@_routed(np.linalg.matrix_norm)
def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """numpy.linalg.matrix_norm (array API): norm over the last two axes."""
    return norm(x, axis=(-2, -1), keepdims=keepdims, ord=ord)


@_routed(np.linalg.matrix_rank)
def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    """numpy.linalg.matrix_rank: singular values above the tolerance, counted (int64)."""
    ctx = context_of(A)
    t = _traced(ctx, A)
    if t.ndim < 2:
        return jany(apply_ufunc(np.not_equal, t, 0)).astype(np.int64)
    s = svd(t, compute_uv=False, hermitian=hermitian)
    if tol is None:
        if rtol is None:
            rtol = max(t.shape[-2:]) * np.finfo(s.dtype).eps
            threshold = apply_ufunc(np.multiply, _max_or_zero(s, -1, keepdims=True), rtol)
        else:
            r = _traced(ctx, rtol)
            threshold = apply_ufunc(np.multiply, _max_or_zero(s, -1, keepdims=True), reshape(r, r.shape + (1,)))
    else:
        tt = _traced(ctx, tol)
        threshold = reshape(tt, tt.shape + (1,))
    return jsum(apply_ufunc(np.greater, s, threshold), axis=-1)


@_routed(np.linalg.cond)
def cond(x: Any, p: Any = None) -> Any:
    """numpy.linalg.cond: ratio of singular values (p None, 2, -2) or norm(x) * norm(inv(x));
    NaN from a failed inversion becomes inf unless x holds NaN, as NumPy does."""
    ctx = context_of(x)
    t = _traced(ctx, x)
    if t.ndim >= 2 and t.shape[-1] * t.shape[-2] == 0:
        raise np.linalg.LinAlgError("cond is not defined on empty arrays")
    if p is None or p in (2, -2):
        s = svd(t, compute_uv=False)
        first, last = s[..., 0], s[..., -1]
        r = apply_ufunc(np.divide, last, first) if p == -2 else apply_ufunc(np.divide, first, last)
    else:
        raise UnsupportedOperationError(
            "numpy.linalg.cond with p other than None, 2, -2 inverts x ignoring singularity (NaN entries); "
            "inside jit use np.linalg.norm(x, p) * np.linalg.norm(np.linalg.inv(x), p)")
    nan_in_x = jany(apply_ufunc(np.isnan, t), axis=(-2, -1))
    fix = apply_ufunc(np.logical_and, apply_ufunc(np.isnan, r), apply_ufunc(np.logical_not, nan_in_x))
    return where(fix, np.asarray(np.inf, r.dtype), r)


def _data_dependent_dtype(name: str) -> Any:
    def raise_it(*args: Any, **kwargs: Any) -> Any:
        if context_of(*args, *kwargs.values()) is None:
            return getattr(np.linalg, name)(*args, **kwargs)
        raise UnsupportedOperationError(
            f"numpy.linalg.{name} returns real or complex arrays depending on the values (complex only when "
            "an eigenvalue is), so its dtype is not known when tracing; inside jit use np.linalg.eigh / "
            "eigvalsh for symmetric (Hermitian) matrices")
    raise_it.__jk_support__ = "unsupported: the result dtype depends on the values (use eigh for Hermitian matrices)"
    register_function(getattr(np.linalg, name), raise_it)
    return raise_it


eig, eigvals = _data_dependent_dtype("eig"), _data_dependent_dtype("eigvals")


def tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    """numpy.tensordot as one dot_general (free axes of a, then of b)."""
    ctx = context_of(a, b)
    if ctx is None:
        return np.tensordot(a, b, axes)
    dt = _common_dtype(a, b)
    x, y = lift(ctx, a, dt), lift(ctx, b, dt)
    try:
        n = operator.index(axes)
        axes_a, axes_b = list(range(x.ndim - n, x.ndim)), list(range(n))
    except TypeError:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, int) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, int) else list(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError("shape-mismatch for sum")
    axes_a = [normalize_axis(ax, x.ndim) for ax in axes_a]
    axes_b = [normalize_axis(ax, y.ndim) for ax in axes_b]
    if any(x.shape[i] != y.shape[j] for i, j in zip(axes_a, axes_b)):
        raise ValueError("shape-mismatch for sum")
    return ctx.bind1("dot_general", x, y, contracting=(tuple(axes_a), tuple(axes_b)), batch=((), ()))


register_function(np.linalg.tensordot, tensordot)

# Notes for the generated support table (jitkernel/numpy/support_table.py, branch arrayfns).
lstsq.__jk_support__ = "partly: a tall rank-deficient a raises LinAlgError (NumPy's empty residuals have a data-dependent shape)"
matrix_power.__jk_support__ = "partly: static integer n"
cond.__jk_support__ = "partly: p None, 2, -2 (other p invert ignoring singularity)"
pinv.__jk_support__ = "partly: static rcond/rtol"
