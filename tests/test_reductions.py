"""Reductions against NumPy: sum mean prod max min argmax argmin any all var std over all dtypes,
axis None / int / negative / tuple / (), keepdims, dtype=, ddof, views, size-0 arrays and NaN."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk

from helpers import ALL_DTYPES, assert_matches_numpy, check, numpy_result, on_host, rng_for, sample

CUDA_EMULATOR_SUITE = True  # the backend fixture adds "cuda-emulator" (tests/emulator_suite.py)
TPU_SUITE = True  # and on tpu-interpret (tests/tpu_suite.py)

DTYPE_IDS = [str(d) for d in ALL_DTYPES]
_EPS = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1.2e-7, np.dtype(np.float64): 2.3e-16}

AXES = [None, 0, 1, -1, 2, (0, 2), (-1, -3), (1, 0), (), (0, 1, 2)]


def _tolerance(x: np.ndarray, n: int, power: int = 1, dtype: np.dtype | None = None) -> dict:
    """rtol/atol for a float reduction of `n` elements of `x` (of x**power for var): rounding
    grows with the number of terms times their magnitude (NumPy sums float16 with float16
    roundings along strided axes; an accumulator in float32 is more accurate than that)."""
    dt = np.dtype(dtype) if dtype is not None else x.dtype
    if dt.kind != "f":
        return {}
    mag = float(np.nanmax(np.abs(x.astype(np.float64)))) ** power if x.size else 1.0
    base = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}[dt]
    return {"rtol": max(base, 4 * n * _EPS[dt]) if dt != np.float16 else 1e-2,
            "atol": max(base, 4 * n * _EPS[dt] * mag)}


def _data(dtype: np.dtype, shape: tuple[int, ...], key: str, lo: float = -10, hi: float = 10) -> np.ndarray:
    rng = rng_for("red", key, dtype, shape)
    if dtype.kind == "u":
        lo = 0
    return sample(rng, dtype, shape, lo, hi)


# ----------------------------------------------------------------------------- sweeps over dtypes

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("fname", ["sum", "prod", "max", "min", "any", "all", "mean"])
def test_reduction_axes_keepdims(fname, dtype, backend):
    lo, hi = (0.5, 1.5) if fname == "prod" and dtype.kind == "f" else (-10, 10)
    if fname == "prod" and dtype.kind in "iu":
        lo, hi = -3, 3  # small factors, so that products do not all wrap to 0
    x = _data(dtype, (2, 3, 4), fname, lo, hi)
    if fname in ("any", "all") and dtype.kind != "b":
        x = np.where(_data(np.dtype(bool), (2, 3, 4), "mask"), x, np.zeros_like(x))
    fn = getattr(np, fname)

    def f(x):
        out = {}
        for ax in AXES:
            for keep in (False, True):
                out[f"np-{ax}-{keep}"] = fn(x, axis=ax, keepdims=keep)
        out["method-None"] = getattr(x, fname)()
        out["method-1"] = getattr(x, fname)(axis=1)
        out["method-neg-keep"] = getattr(x, fname)(-2, keepdims=True)
        out["transposed"] = fn(x.T, axis=0)
        out["negstride"] = fn(x[::-1, ::-2], axis=(0, 2))
        return out
    check(f, x, backend=backend, **_tolerance(x, x.size, dtype=numpy_result(fn, x).dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("fname", ["var", "std"])
def test_var_std(fname, dtype, backend):
    x = _data(dtype, (3, 4, 5), fname)
    fn = getattr(np, fname)

    def f(x):
        out = {}
        for ax in [None, 0, -1, (0, 2), 1]:
            for keep in (False, True):
                for ddof in (0, 1, 2):
                    out[f"{ax}-{keep}-{ddof}"] = fn(x, axis=ax, keepdims=keep, ddof=ddof)
        out["method"] = getattr(x, fname)(axis=1, ddof=1)
        out["transposed"] = fn(x.T, axis=0)
        return out
    try:
        res_dtype = numpy_result(fn, x).dtype
    except TypeError:
        with pytest.raises(TypeError):
            jk.jit(f, backend=backend)(x)
        return
    check(f, x, backend=backend, **_tolerance(x, x.size, power=2 if fname == "var" else 1, dtype=res_dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("fname", ["argmax", "argmin"])
def test_argmax_argmin(fname, dtype, backend):
    x = _data(dtype, (3, 4, 5), fname, -5, 5)  # small range: ties, so "first occurrence" matters
    fn = getattr(np, fname)

    def f(x):
        out = {}
        for ax in [None, 0, 1, 2, -1, -3]:
            for keep in (False, True):
                out[f"{ax}-{keep}"] = fn(x, axis=ax, keepdims=keep)
        out["method"] = getattr(x, fname)()
        out["method-axis"] = getattr(x, fname)(axis=1)
        out["view"] = fn(x[:, ::-1].T, axis=1)
        out["1d"] = fn(x[0, 0])
        return out
    check(f, x, backend=backend)


# ----------------------------------------------------------------------------- dtype= and accumulators

@pytest.mark.parametrize("src", ["bool", "int8", "uint8", "int16", "uint32", "int64", "float16", "float32"])
def test_reduction_dtype_argument(src, backend):
    dt = np.dtype(src)
    x = _data(dt, (4, 6), "dtype-arg", -100, 100)

    def f(x):
        return {
            "sum-f32": np.sum(x, dtype=np.float32),
            "sum-f64-axis": x.sum(axis=0, dtype=np.float64),
            "sum-i8": np.sum(x, axis=1, dtype=np.int8),  # wraps, like NumPy
            "sum-u16": np.sum(x, axis=0, dtype=np.uint16),
            "prod-i64": np.prod(x[:, :3], axis=1, dtype=np.int64),
            "prod-f64": np.prod(x[:2, :3], dtype=np.float64),
            "mean-f32": np.mean(x, axis=1, dtype=np.float32),
            "mean-f64": x.mean(dtype=np.float64),
            "var-f64": np.var(x, axis=0, dtype=np.float64),
            "std-f32": np.std(x, dtype=np.float32, ddof=1),
        }
    kw = {"rtol": 1e-4, "atol": 1e-2} if dt.kind == "f" or dt == np.int64 else {"rtol": 1e-5, "atol": 1e-3}
    if src == "float16":
        # NumPy casts float16 -> int8/uint16 for dtype= sums; values must stay in range to be defined.
        x = np.round(x / 20).astype(dt)
    check(f, x, backend=backend, **kw)


def test_integer_sum_wraparound(backend):
    x = np.full((1000,), 2**62, dtype=np.int64)
    u = np.full((300,), 250, dtype=np.uint8)
    check(lambda x, u: (x.sum(), np.prod(x[:3]), u.sum(), u.sum(dtype=np.uint8), np.prod(u[:4], dtype=np.uint8)),
          x, u, backend=backend)


def test_long_float32_sum_accuracy(backend):
    """A long float32 sum: NumPy's pairwise summation is accurate to a few ulps; so must we be."""
    x = rng_for("long").uniform(0, 1, size=(100_000,)).astype(np.float32)
    got = jk.jit(lambda x: (x.sum(), x.mean(), x.reshape(100, 1000).sum(axis=0)), backend=backend)(x)
    exact = (x.astype(np.float64).sum(), x.astype(np.float64).mean(),
             x.astype(np.float64).reshape(100, 1000).sum(axis=0))
    assert_matches_numpy(got, tuple(np.float32(e) if np.ndim(e) == 0 else e.astype(np.float32) for e in exact),
                         rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- 0-d and size-0

def test_reductions_of_0d(backend):
    x = np.array(2.5, np.float32)
    i = np.array(-3, np.int8)
    check(lambda x, i: (x.sum(), np.prod(x), x.max(), np.min(x, axis=None), x.mean(), np.any(x), x.all(),
                        np.argmax(x), i.sum(), i.var(), np.std(x), np.sum(x, axis=()), x.sum(keepdims=True)),
          x, i, backend=backend)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float16", "float32", "float64"])
def test_reductions_of_size0(dtype, backend):
    x = np.zeros((0, 3), dtype=dtype)

    def f(x):
        return {
            "sum": x.sum(), "sum0": x.sum(axis=0), "sum1": x.sum(axis=1), "sumk": x.sum(keepdims=True),
            "prod": np.prod(x), "prod0": np.prod(x, axis=0),
            "any": np.any(x), "all": np.all(x), "any0": x.any(axis=0), "all1": x.all(axis=1),
            "max1": x.max(axis=1), "min1": np.min(x, axis=1, keepdims=True),  # reduce a non-empty axis
            "argmax1": np.argmax(x, axis=1), "mean0": x.mean(axis=0), "mean": np.mean(x),
            "var0": np.var(x, axis=0), "std": np.std(x),
        }
    check(f, x, backend=backend)


@pytest.mark.parametrize("call", [
    lambda x: np.max(x), lambda x: x.min(), lambda x: np.max(x, axis=0), lambda x: np.min(x, axis=(0, 1)),
    lambda x: np.argmax(x), lambda x: x.argmin(axis=0), lambda x: np.amax(x),
], ids=["max", "min-method", "max-axis0", "min-axes", "argmax", "argmin-axis0", "amax"])
def test_empty_max_min_raise_valueerror(call, backend):
    x = np.zeros((0, 3), np.float32)
    with pytest.raises(ValueError):
        numpy_result(call, x)
    with pytest.raises(ValueError, match="empty|zero-size|identity"):
        jk.jit(call, backend=backend)(x)


# ----------------------------------------------------------------------------- NaN

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nan_propagation(dtype, backend):
    x = _data(np.dtype(dtype), (4, 5), "nan")
    x[1, 2] = np.nan
    x[3, 0] = np.nan
    x[2, 4] = np.inf
    x[0, 1] = -np.inf

    def f(x):
        return {"max": x.max(), "min": x.min(), "max0": x.max(axis=0), "min1": np.min(x, axis=1),
                "argmax": np.argmax(x), "argmin": x.argmin(), "argmax0": np.argmax(x, axis=0),
                "argmin1": np.argmin(x, axis=1), "sum": x.sum(axis=1), "mean": x.mean(axis=0),
                "any": np.any(x, axis=0), "all": np.all(x), "prod": np.prod(x, axis=1),
                "maxT": np.max(x.T, axis=0), "var": np.var(x, axis=1)}
    check(f, x, backend=backend, rtol=1e-2 if dtype == "float16" else 1e-5,
          atol=5e-2 if dtype == "float16" else 1e-4)


def test_nan_and_signed_zero_max_min(backend):
    x = np.array([[np.nan, 1.0, 2.0], [1.0, np.nan, -1.0], [-0.0, 0.0, 0.5], [np.inf, np.nan, -np.inf]],
                 dtype=np.float32)
    check(lambda x: (np.argmax(x, axis=1), np.argmin(x, axis=1), x.max(axis=1), x.min(axis=0),
                     np.argmax(x), np.argmin(x.T, axis=0)), x, backend=backend)


# ----------------------------------------------------------------------------- axis errors

@pytest.mark.parametrize("call", [
    lambda x: x.sum(axis=3), lambda x: np.mean(x, axis=-4), lambda x: x.max(axis=(0, 0)),
    lambda x: np.argmax(x, axis=5), lambda x: np.var(x, axis=(1, 7)),
], ids=["sum-3", "mean--4", "max-repeated", "argmax-5", "var-7"])
def test_bad_axis(call, backend):
    check(call, np.ones((2, 3, 4), np.float32), backend=backend)


def test_reduction_unsupported_kwargs(backend):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(jk.UnsupportedOperationError, match="where"):
        jk.jit(lambda x: np.sum(x, where=x > 0), backend=backend)(x)
    with pytest.raises(jk.UnsupportedOperationError, match="initial"):
        jk.jit(lambda x: np.max(x, initial=0.0), backend=backend)(x)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "uint8", "bool"])
def test_large_reductions_all_axes(dtype, backend):
    """Large and odd-sized reductions along the contiguous axis, a strided axis and all axes."""
    dt = np.dtype(dtype)
    x = _data(dt, (1001, 37), "large", -1, 1) if dt.kind == "f" else _data(dt, (1001, 37), "large", -50, 50)
    x[500, 3] = 1e9 if dt.kind == "f" else x[500, 3]

    def f(x):
        return {"sum0": x.sum(axis=0), "sum1": x.sum(axis=1), "sum": x.sum(), "max0": x.max(axis=0),
                "min1": x.min(axis=1), "argmax0": x.argmax(axis=0), "argmin1": x.argmin(axis=1),
                "argmax": x.argmax(), "mean0": x.mean(axis=0), "any1": x.any(axis=1), "all0": x.all(axis=0),
                "sumT": x.T[::-1].sum(axis=1), "prod0": np.prod(x[:5], axis=0)}
    kw = {"rtol": 1e-5, "atol": 1e-2} if dt == np.float32 else {"rtol": 1e-12, "atol": 1e-6} if dt == np.float64 else {}
    check(f, x, backend=backend, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint16"])
def test_argmax_ties_and_late_nan(dtype, backend):
    x = np.full((7, 300), 6, dtype=dtype)
    x[:, 250] = 9
    x[:, 100] = 9  # a tie: the first occurrence wins
    x[:, 5] = 1
    x[:, 200] = 1
    if dtype.startswith("float"):
        x[3, 299] = np.nan  # NaN wins, even at the end
        x[4, 0] = np.nan
    check(lambda x: (x.argmax(axis=1), x.argmin(axis=1), np.argmax(x), x.max(axis=1), x.min(axis=1)), x,
          backend=backend)


_ARG_SPECIALS = [np.nan, np.nan, np.inf, -np.inf, 0.0, -0.0, 9.0, -9.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_argmax_argmin_with_many_nans_and_ties(dtype, backend):
    """argmax/argmin over every axis of arrays holding several NaNs, infinities, signed zeros and
    tied extremes at drawn places: the first NaN (else the first extreme) wins, whatever order the
    backend reduces in (the chip reduces in a tree, and its library argmax kept the last of two
    NaNs). One compile per backend; hypothesis varies only the values."""
    from hypothesis import given, settings, HealthCheck, strategies as st
    shape = (6, 50, 5)
    jitted = jk.jit(_all_arg_reductions, backend=backend)

    @settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(seed=st.integers(0, 2**16), places=st.lists(
        st.tuples(st.integers(0, int(np.prod(shape)) - 1), st.sampled_from(_ARG_SPECIALS)), max_size=12))
    def run(seed, places):
        x = np.random.default_rng(seed).integers(-3, 4, size=shape).astype(dtype)  # small ints: many ties
        for flat, value in places:
            x.reshape(-1)[flat] = value
        assert_matches_numpy(on_host(jitted(x)), _all_arg_reductions(x))

    run()


def _all_arg_reductions(x):
    return tuple(f(x, axis=a) for f in (np.argmax, np.argmin) for a in (None, 0, 1, 2))


# ----------------------------------------------------------------------------- row patterns

def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _layer_norm(x, axis):
    mu = x.mean(axis=axis, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axis, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5)


def _logsumexp(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return np.log(np.exp(x - m).sum(axis=axis)) + m.squeeze(axis)


@pytest.mark.parametrize("shape", [(4, 7), (1, 5), (5, 1), (3, 0), (33, 129), (2, 3, 17)], ids=str)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_row_patterns(dtype, shape, backend):
    """Softmax, layer norm, log-sum-exp, centring and variance along each axis: reductions whose
    results feed elementwise work on the same rows (the fusion engine's row kernels)."""
    x = _data(np.dtype(dtype), shape, "rows", -4, 4)

    def f(x):
        out = {}
        for axis in range(-1, -x.ndim - 1, -1):
            if x.shape[axis] == 0:
                continue  # max over an empty axis raises (tested elsewhere)
            out[f"softmax{axis}"] = _softmax(x, axis)
            out[f"layernorm{axis}"] = _layer_norm(x, axis)
            out[f"logsumexp{axis}"] = _logsumexp(x, axis)
            out[f"centred{axis}"] = x - x.mean(axis=axis, keepdims=True)
            out[f"var{axis}"] = x.var(axis=axis)
            out[f"scaled{axis}"] = x / np.abs(x).max(axis=axis, keepdims=True) + x.sum(axis=axis, keepdims=True)
        out["softmaxT"] = _softmax(x.T, 0)
        return out
    tol = {"float16": {"rtol": 2e-2, "atol": 2e-2}, "float32": {"rtol": 1e-4, "atol": 1e-4}}.get(dtype, {})
    check(f, x, backend=backend, **tol)
