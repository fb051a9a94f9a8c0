"""Library primitives: NumPy functions that run as one step (LAPACK, sorting, accumulation,
histograms, FFT). Each registration holds a shape/dtype rule written from NumPy's documented
behaviour and an impl that *is* the NumPy function, so the CPU backend (which runs a library
step's impl) and the interpreter agree with NumPy by construction; the tests compare both with
NumPy called directly.

Where NumPy's result dtype depends on its casting tables (cumsum of int8, histogram of float32
with int32 weights), the rule asks NumPy on a one-element sample of the same dtypes, the way
elementwise primitives ask `ufunc.resolve_dtypes`.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .primitives import Primitive, register
from .types import SUPPORTED_DTYPES, AType

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)


# Library steps whose call can raise on the data (singular matrix, not positive definite, a
# bincount value >= minlength, non-monotonic bins, no convergence): NumPy raises even when the
# result is never read, so the trace keeps such a step's value (Primitive.unread).
RAISES = "output"


def _library(name: str, rule: Callable[..., list[AType]], fn: Callable[..., Any], unread: str | None = None) -> None:
    """Register `name` whose impl is `fn(*arrays, **params)`; a tuple result is one output per
    item, each checked against the rule's avals (a mismatch raises: never a cast)."""
    expected_cache: dict = {}  # (input shapes and dtypes, params) -> the rule's (shape, dtype)s

    def expected(arrays: tuple, params: dict) -> list[tuple]:
        key = (tuple((a.shape, a.dtype) for a in arrays), tuple(params.items()))
        avals = expected_cache.get(key)
        if avals is None:
            if len(expected_cache) > 256:
                expected_cache.clear()
            rule_out = rule([AType(a.shape, a.dtype) for a in arrays], **params)
            avals = expected_cache[key] = [(av.shape, av.dtype) for av in rule_out]
        return avals

    def impl(*arrays: np.ndarray, **params: Any) -> list[np.ndarray]:
        out = fn(*arrays, **params)  # arrays (or NumPy scalars: they have .shape and .dtype too)
        outs = tuple(out) if isinstance(out, tuple) else (out,)
        results = []
        for o, (shape, dtype) in zip(outs, expected(arrays, params)):
            r = np.asarray(o)
            if r.dtype != dtype or r.shape != shape:
                # The rule disagrees with NumPy: casting would return another dtype than NumPy's.
                raise TypeError(f"internal error: {name} returned {r.dtype}{list(r.shape)}, its shape rule "
                                f"says {AType(shape, dtype)}; please report this")
            if r.base is not None and any(np.may_share_memory(r, a) for a in arrays):
                r = r.copy()  # a result is a new array, never a view of an input (an argument)
            results.append(r)
        return results
    register(Primitive(name, "library", rule, impl, unread=unread))


def _sample(dtype: np.dtype, n: int = 1) -> np.ndarray:
    return np.ones(n, dtype)


# ----------------------------------------------------------------------------- linear algebra

# The linalg steps NumPy computes matrix by matrix over leading axes (a stack of matrices, one
# LAPACK call each): passes/trip_maps.py batches them, the CPU runtime splits their stacks.
STACKED_LINALG = frozenset(("linalg_solve", "linalg_inv", "linalg_det", "linalg_slogdet", "linalg_cholesky",
                            "linalg_eigh", "linalg_eigvalsh", "linalg_qr", "linalg_svd", "linalg_pinv"))

def linalg_dtype(*dtypes: np.dtype) -> np.dtype:
    """NumPy's linalg result type (`_commonType`): single precision (float32, complex64) stays
    single, float64, complex128 and every integer or bool input compute in double; any complex
    input makes the result complex; float16 is rejected with NumPy's TypeError."""
    double = is_complex = False
    for dt in dtypes:
        dt = np.dtype(dt)
        if dt == _F16:
            raise TypeError("array type float16 is unsupported in linalg")
        if dt.kind == "c":
            is_complex = True
            double |= dt.itemsize > 8
        elif dt != _F32:
            double = True
    if is_complex:
        return np.dtype(np.complex128 if double else np.complex64)
    return _F64 if double else _F32


def real_dtype(dt: np.dtype) -> np.dtype:
    """The real dtype of the same precision (complex64 -> float32): eigenvalues of a Hermitian
    matrix, singular values, log|det| and residuals are real."""
    return np.dtype(np.finfo(dt).dtype) if np.dtype(dt).kind == "c" else np.dtype(dt)


def assert_stacked_2d(a: AType) -> None:
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")


def assert_stacked_square(a: AType) -> None:
    assert_stacked_2d(a)
    if a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def _square_rule(in_avals: list[AType], **params: Any) -> list[AType]:
    (a,) = in_avals
    assert_stacked_square(a)
    return [AType(a.shape, linalg_dtype(a.dtype))]


def _det_rule(in_avals: list[AType]) -> list[AType]:
    (a,) = in_avals
    assert_stacked_square(a)
    return [AType(a.shape[:-2], linalg_dtype(a.dtype))]


def _slogdet_rule(in_avals: list[AType]) -> list[AType]:
    (det,) = _det_rule(in_avals)
    return [det, AType(det.shape, real_dtype(det.dtype))]  # (sign, logabsdet)


def _solve_rule(in_avals: list[AType]) -> list[AType]:
    a, b = in_avals
    assert_stacked_square(a)
    dt = linalg_dtype(a.dtype, b.dtype)
    m = a.shape[-1]
    if b.ndim == 1:  # NumPy 2: b is a vector only when it is 1-d
        if b.shape[0] != m:
            raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature (m,m),(m)->(m) (size {b.shape[0]} is different from {m})")
        return [AType(a.shape[:-1], dt)]
    if b.shape[-2] != m:
        raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature (m,m),(m,n)->(m,n) (size {b.shape[-2]} is different from {m})")
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    return [AType(batch + b.shape[-2:], dt)]


def _eigh_rule(in_avals: list[AType], *, UPLO: str) -> list[AType]:
    (a,) = in_avals
    assert_stacked_square(a)
    dt = linalg_dtype(a.dtype)
    return [AType(a.shape[:-1], real_dtype(dt)), AType(a.shape, dt)]


def _eigvalsh_rule(in_avals: list[AType], *, UPLO: str) -> list[AType]:
    return _eigh_rule(in_avals, UPLO=UPLO)[:1]


def _qr_rule(in_avals: list[AType], *, mode: str) -> list[AType]:
    (a,) = in_avals
    assert_stacked_2d(a)
    dt = linalg_dtype(a.dtype)
    *batch, m, n = a.shape
    batch, k = tuple(batch), min(m, n)
    if mode == "reduced":
        return [AType(batch + (m, k), dt), AType(batch + (k, n), dt)]
    if mode == "complete":
        return [AType(batch + (m, m), dt), AType(batch + (m, n), dt)]
    if mode == "r":
        return [AType(batch + (k, n), dt)]
    if mode == "raw":
        return [AType(batch + (n, m), dt), AType(batch + (k,), dt)]
    raise ValueError(f"Unrecognized mode '{mode}'")


def _svd_rule(in_avals: list[AType], *, full_matrices: bool, compute_uv: bool, hermitian: bool) -> list[AType]:
    (a,) = in_avals
    assert_stacked_2d(a)
    if hermitian:
        assert_stacked_square(a)
    dt = linalg_dtype(a.dtype)
    *batch, m, n = a.shape
    batch, k = tuple(batch), min(m, n)
    s = AType(batch + (k,), real_dtype(dt))
    if not compute_uv:
        return [s]
    if full_matrices:
        return [AType(batch + (m, m), dt), s, AType(batch + (n, n), dt)]
    return [AType(batch + (m, k), dt), s, AType(batch + (k, n), dt)]


def _svd(a: np.ndarray, *, full_matrices: bool, compute_uv: bool, hermitian: bool) -> Any:
    out = np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, hermitian=hermitian)
    return tuple(out) if compute_uv else out


def _lstsq_rule(in_avals: list[AType], *, rcond: float | None) -> list[AType]:
    a, b = in_avals
    if a.ndim != 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    if b.ndim not in (1, 2):
        raise np.linalg.LinAlgError(f"{b.ndim}-dimensional array given. Array must be one or two-dimensional")
    m, n = a.shape
    if b.shape[0] != m:
        raise np.linalg.LinAlgError("Incompatible dimensions")
    dt = linalg_dtype(a.dtype, b.dtype)
    k = b.shape[1] if b.ndim == 2 else 1
    x = AType((n,) + b.shape[1:], dt)
    # Residuals exist when m > n and a has full rank: the rank is checked when the call runs
    # (_lstsq), so the static shape below is the one NumPy returns or the call raises.
    residuals = AType((k,) if m > n else (0,), real_dtype(dt))
    return [x, residuals, AType((), np.dtype(np.int32)), AType((min(m, n),), real_dtype(dt))]


def _lstsq(a: np.ndarray, b: np.ndarray, *, rcond: float | None) -> tuple:
    x, residuals, rank, s = np.linalg.lstsq(a, b, rcond=rcond)
    m, n = a.shape
    if m > n and rank < n:
        raise np.linalg.LinAlgError(
            f"lstsq: a ({m}x{n}) has rank {int(rank)} < {n}, so NumPy returns empty residuals: a shape "
            "that depends on the data, which a jitted function cannot return; compute the residuals "
            "from x instead (np.sum((a @ x - b)**2, axis=0))")
    return x, residuals, rank, s


def _pinv_rule(in_avals: list[AType], *, rcond: Any, hermitian: bool) -> list[AType]:
    (a,) = in_avals
    assert_stacked_2d(a)
    return [AType(a.shape[:-2] + (a.shape[-1], a.shape[-2]), linalg_dtype(a.dtype))]


def _pinv(a: np.ndarray, *, rcond: Any, hermitian: bool) -> np.ndarray:
    if rcond is None:
        return np.linalg.pinv(a, hermitian=hermitian)
    if isinstance(rcond, tuple):  # ("rtol", value): NumPy 2's rtol= keyword
        return np.linalg.pinv(a, rtol=rcond[1], hermitian=hermitian)
    return np.linalg.pinv(a, rcond=rcond, hermitian=hermitian)


_library("linalg_inv", _square_rule, np.linalg.inv, unread=RAISES)
_library("linalg_cholesky", _square_rule, lambda a, *, upper: np.linalg.cholesky(a, upper=upper), unread=RAISES)
_library("linalg_det", _det_rule, np.linalg.det)
_library("linalg_slogdet", _slogdet_rule, lambda a: tuple(np.linalg.slogdet(a)))
_library("linalg_solve", _solve_rule, np.linalg.solve, unread=RAISES)
_library("linalg_eigh", _eigh_rule, lambda a, *, UPLO: tuple(np.linalg.eigh(a, UPLO=UPLO)), unread=RAISES)
_library("linalg_eigvalsh", _eigvalsh_rule, lambda a, *, UPLO: np.linalg.eigvalsh(a, UPLO=UPLO), unread=RAISES)
_library("linalg_qr", _qr_rule, lambda a, *, mode: (lambda r: tuple(r) if isinstance(r, tuple) else r)(np.linalg.qr(a, mode=mode)), unread=RAISES)
_library("linalg_svd", _svd_rule, _svd, unread=RAISES)
_library("linalg_lstsq", _lstsq_rule, _lstsq, unread=RAISES)
_library("linalg_pinv", _pinv_rule, _pinv, unread=RAISES)

# ----------------------------------------------------------------------------- sorting


def _same_rule(in_avals: list[AType], **params: Any) -> list[AType]:
    return [in_avals[0]]


def _index_rule(in_avals: list[AType], **params: Any) -> list[AType]:
    return [AType(in_avals[0].shape, _I64)]


_library("sort", _same_rule, lambda a, *, axis, kind: np.sort(a, axis=axis, kind=kind))
_library("argsort", _index_rule, lambda a, *, axis, kind: np.argsort(a, axis=axis, kind=kind))
_library("partition", _same_rule, lambda a, *, kth, axis: np.partition(a, kth, axis=axis))
_library("argpartition", _index_rule, lambda a, *, kth, axis: np.argpartition(a, kth, axis=axis))


def _searchsorted_rule(in_avals: list[AType], *, side: str) -> list[AType]:
    a, v = in_avals[:2]
    if a.ndim != 1:
        raise ValueError("object too deep for desired array")
    return [AType(v.shape, _I64)]


def _searchsorted(a: np.ndarray, v: np.ndarray, sorter: np.ndarray | None = None, *, side: str) -> np.ndarray:
    return np.searchsorted(a, v, side=side, sorter=sorter)


_library("searchsorted", _searchsorted_rule, _searchsorted)

# ----------------------------------------------------------------------------- accumulation


def _accumulate_rule(in_avals: list[AType], *, ufunc: str, axis: int, dtype: np.dtype) -> list[AType]:
    return [AType(in_avals[0].shape, dtype)]


_library("accumulate", _accumulate_rule,
         lambda a, *, ufunc, axis, dtype: getattr(np, ufunc).accumulate(a, axis=axis, dtype=dtype))



def _ufunc_reduce_rule(in_avals: list[AType], *, ufunc: str, axes: Any, dtype: np.dtype,
                       keepdims: bool) -> list[AType]:
    (a,) = in_avals
    reduced = range(a.ndim) if axes is None else axes
    if any(a.shape[d] == 0 for d in reduced) and getattr(np, ufunc).identity is None:
        raise ValueError(f"zero-size array to reduction operation {ufunc} which has no identity")
    if keepdims:
        return [AType(tuple(1 if d in reduced else n for d, n in enumerate(a.shape)), dtype)]
    return [AType(tuple(n for d, n in enumerate(a.shape) if d not in reduced), dtype)]


_library("ufunc_reduce", _ufunc_reduce_rule,
         lambda a, *, ufunc, axes, dtype, keepdims: getattr(np, ufunc).reduce(a, axis=axes, dtype=dtype, keepdims=keepdims))



def _ufunc_reduceat_rule(in_avals: list[AType], *, ufunc: str, axis: int, dtype: np.dtype) -> list[AType]:
    a, indices = in_avals
    if indices.ndim != 1 or indices.dtype.kind not in "iu":
        raise TypeError(f"ufunc_reduceat: indices must be a 1-D integer array, got {indices}")
    shape = list(a.shape)
    shape[axis] = indices.shape[0]
    return [AType(tuple(shape), dtype)]


# `ufunc.reduceat(a, indices, axis)`: NumPy's own method (its order of operations, its
# IndexError for an index outside [0, n) when the indices are traced).
_library("ufunc_reduceat", _ufunc_reduceat_rule,
         lambda a, indices, *, ufunc, axis, dtype: getattr(np, ufunc).reduceat(a, indices, axis=axis, dtype=dtype),
         unread=RAISES)

# ----------------------------------------------------------------------------- histograms


@functools.lru_cache(maxsize=None)
def histogram_dtypes(a: np.dtype, bins: np.dtype | None, weights: np.dtype | None,
                     density: bool, range: Any, nbins: int | None = None) -> tuple[np.dtype, np.dtype]:  # noqa: A002
    """(counts, edges) dtypes of np.histogram for these input dtypes and range (the range's
    number types take part in the edges' dtype), asked of NumPy itself. `nbins` is the int
    bins= of the call: with a static range its edges do not depend on the data, so NumPy's
    checks of range and bin count ("Cannot create 4 finite-sized bins") raise here with the
    call's own numbers; without a range the probe's data decides the edges, so it takes 2 bins
    (the call's real edges are checked when it runs)."""
    w = None if weights is None else _sample(weights, 2)
    b = np.arange(3).astype(bins) if bins is not None else nbins if range is not None and nbins is not None else 2
    hist, edges = np.histogram(np.arange(2).astype(a), bins=b, range=range, weights=w, density=density or None)
    return hist.dtype, edges.dtype


def _histogram_rule(in_avals: list[AType], *, bins: int | None, range: Any, density: bool,
                    weighted: bool) -> list[AType]:
    a = in_avals[0]
    edges_in = None if bins is not None else in_avals[1]
    w = in_avals[-1] if weighted else None
    if w is not None and w.shape != a.shape:
        raise ValueError("weights should have the same shape as a.")
    if edges_in is not None and edges_in.ndim != 1:
        raise ValueError("`bins` must be 1d, when an array")
    nbins = bins if bins is not None else edges_in.shape[0] - 1
    hist_dt, edge_dt = histogram_dtypes(a.dtype, None if edges_in is None else edges_in.dtype,
                                        None if w is None else w.dtype, density, range, bins)
    return [AType((nbins,), hist_dt), AType((nbins + 1,), edge_dt)]


def _histogram(a: np.ndarray, *rest: np.ndarray, bins: int | None, range: Any, density: bool,
               weighted: bool) -> tuple:
    weights = rest[-1] if weighted else None
    b = bins if bins is not None else rest[0]
    return tuple(np.histogram(a, bins=b, range=range, density=density or None, weights=weights))


_library("histogram", _histogram_rule, _histogram, unread=RAISES)


def _bincount_rule(in_avals: list[AType], *, minlength: int) -> list[AType]:
    x = in_avals[0]
    weights = in_avals[1] if len(in_avals) > 1 else None
    sample = np.bincount(np.zeros(1, x.dtype), None if weights is None else _sample(weights.dtype))
    if x.ndim != 1:
        raise ValueError("object too deep for desired array" if x.ndim > 1 else "object of too small depth for desired array")
    if weights is not None and weights.shape != x.shape:
        raise ValueError("The weights and list don't have the same length.")
    return [AType((minlength,), sample.dtype)]


def _bincount(x: np.ndarray, weights: np.ndarray | None = None, *, minlength: int) -> np.ndarray:
    out = np.bincount(x, weights, minlength=minlength)
    if out.shape[0] != minlength:
        raise ValueError(
            f"bincount: the largest value of x is {int(x.max())}, not below minlength={minlength}: "
            "the result would have a length that depends on the data, which a jitted function cannot "
            "return; pass a minlength larger than every value")
    return out


_library("bincount", _bincount_rule, _bincount, unread=RAISES)


def _digitize_rule(in_avals: list[AType], *, right: bool) -> list[AType]:
    x, bins = in_avals
    np.digitize(np.zeros(1, x.dtype), np.zeros(1, bins.dtype))  # NumPy's TypeError for bad dtypes
    if bins.ndim != 1:
        raise ValueError("object too deep for desired array" if bins.ndim > 1 else "object of too small depth for desired array")
    return [AType(x.shape, _I64)]


_library("digitize", _digitize_rule, lambda x, bins, *, right: np.digitize(x, bins, right=right), unread=RAISES)

# ----------------------------------------------------------------------------- 1-d signal


def _convolve_rule(in_avals: list[AType], *, fn: str, mode: str) -> list[AType]:
    a, v = in_avals
    if a.ndim > 1 or v.ndim > 1:
        raise ValueError("object too deep for desired array")
    n, m = a.size, v.size
    if n == 0:
        raise ValueError("a cannot be empty")
    if m == 0:
        raise ValueError("v cannot be empty")
    length = {"full": n + m - 1, "same": max(n, m), "valid": max(n, m) - min(n, m) + 1}.get(mode)
    if length is None:
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    out = getattr(np, fn)(np.ones(1, a.dtype), np.ones(1, v.dtype))  # NumPy's dtype (and TypeError)
    return [AType((length,), out.dtype)]


_library("convolve", _convolve_rule, lambda a, v, *, fn, mode: getattr(np, fn)(a, v, mode=mode))


def _interp_rule(in_avals: list[AType], *, left: Any, right: Any, period: Any) -> list[AType]:
    x, xp, fp = in_avals
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("Data points must be 1D sequences")
    if xp.shape != fp.shape:
        raise ValueError("fp and xp are not of the same length.")
    if xp.size == 0:
        raise ValueError("array of sample points is empty")
    out = np.interp(np.zeros(1, x.dtype), np.zeros(1, xp.dtype), np.zeros(1, fp.dtype), left=left, right=right)
    return [AType(x.shape, out.dtype)]


_library("interp", _interp_rule,
         lambda x, xp, fp, *, left, right, period: np.interp(x, xp, fp, left=left, right=right, period=period), unread=RAISES)

# ----------------------------------------------------------------------------- FFT

_FFT_FUNCTIONS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
                  "fftn", "ifftn", "rfftn", "irfftn")


def _fft_rule(in_avals: list[AType], *, fn: str, n: Any, axes: Any, norm: Any) -> list[AType]:
    """NumPy's own result on a zero sample whose untransformed axes have length 1 (the result
    shape along them is the input's)."""
    (a,) = in_avals
    one_d = fn in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
    kept = {ax % a.ndim for ax in ((axes,) if one_d else (axes if axes is not None else range(a.ndim)))} if a.ndim else set()
    sample_shape = tuple(s if d in kept else min(s, 1) for d, s in enumerate(a.shape))
    kw = {"n": n, "axis": axes} if one_d else {"s": n, "axes": axes}
    out = getattr(np.fft, fn)(np.zeros(sample_shape, a.dtype), norm=norm, **kw)
    shape = tuple(o if d in kept else s for d, (o, s) in enumerate(zip(out.shape, a.shape)))
    if out.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"numpy.fft.{fn} of {a.dtype} returns {out.dtype}, and this build of jitkernel does "
                        "not support complex dtypes yet, so it cannot be traced")
    return [AType(shape, out.dtype)]


def _fft(a: np.ndarray, *, fn: str, n: Any, axes: Any, norm: Any) -> np.ndarray:
    one_d = fn in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
    kw = {"n": n, "axis": axes} if one_d else {"s": n, "axes": axes}
    return getattr(np.fft, fn)(a, norm=norm, **kw)


_library("fft", _fft_rule, _fft)

__all__ = ["linalg_dtype", "real_dtype", "assert_stacked_2d", "assert_stacked_square", "histogram_dtypes"]
