"""np.quantile, np.percentile, np.nanquantile and np.nanpercentile inside jit with every method
NumPy 2.4 has (static q) and weights= with method='inverted_cdf': NumPy's values bit for bit
(the same formulas: NumPy's own helpers for a static length, the same arithmetic on the traced
non-NaN count), dtypes (float16/32 data, Python-scalar, float32 and integer q), signed zeros,
NaN slices, errors, derivatives, vmap and the emulated GPU."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, builtin_type, central_differences, rng_for

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
METHODS = ["inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf", "hazen",
           "weibull", "linear", "median_unbiased", "normal_unbiased", "lower", "higher", "midpoint", "nearest"]
QS = [0, 1, 0.0, 0.3, 0.5, 1.0, [0.0, 0.1, 0.25, 0.5, 0.77, 1.0], np.float32(0.4), np.array([0.2, 0.9], np.float32)]


def _numpy(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice encountered"
        return fn(*args)


def _exact(fn, *args, backend="cpu"):
    """Same dtype, shape, values (NaN in the same places) and signs of zero as NumPy."""
    try:
        expected = _numpy(fn, *args)
    except Exception as e:  # noqa: BLE001 - the jitted call must raise the same type
        with pytest.raises(builtin_type(e)):
            jk.jit(fn, backend=backend)(*args)
        return
    got = jk.jit(fn, backend=backend)(*args)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


def _data(dtype, n, nan):
    x = (rng_for("quantile", dtype, n).standard_normal((n, 4)) * 10).astype(dtype)
    if nan:
        x[rng_for("nan", n).random((n, 4)) < 0.3] = np.nan
        x[:, 0] = 1.5      # NumPy's nanquantile takes its result dtype from the first slice
        x[:, -1] = np.nan  # an all-NaN slice
    return x


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int32, np.uint8])
def test_every_method_bit_exact(backend, method, dtype):
    for n in (1, 2, 5):
        x = _data(dtype, n, nan=False)
        for q in QS:
            _exact(lambda a: np.quantile(a, q, axis=0, method=method), x, backend=backend)
        _exact(lambda a: np.percentile(a, [0, 37.5, 100], method=method), x, backend=backend)
        _exact(lambda a: np.percentile(a, 62, axis=1, method=method, keepdims=True), x, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_nan_functions_every_method_bit_exact(backend, method, dtype):
    for n in (1, 3, 8):
        x = _data(dtype, n, nan=True)
        for q in QS:
            _exact(lambda a: np.nanquantile(a, q, axis=0, method=method), x, backend=backend)
            _exact(lambda a: np.quantile(a, q, axis=0, method=method), x, backend=backend)  # NaN slices
        _exact(lambda a: np.nanpercentile(a, [5, 95], axis=0, method=method, keepdims=True), x, backend=backend)


@pytest.mark.parametrize("method", METHODS)
def test_signed_zeros_and_infinities(method):
    x = np.array([[-0.0, -0.0, np.nan], [-0.0, 0.0, -0.0], [np.inf, -np.inf, 1.0]]).T
    for q in (0, 1, 0.0, 0.5, 1.0):
        _exact(lambda a: np.nanquantile(a, q, axis=0, method=method), x)
        _exact(lambda a: np.quantile(a, q, axis=0, method=method), x)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@SETTINGS
@given(n=st.integers(1, 9), method=st.sampled_from(METHODS), data=st.data())
def test_matches_numpy(backend, n, method, data):
    q = data.draw(st.floats(0, 1) | st.lists(st.floats(0, 1), min_size=1, max_size=3))
    nan = data.draw(st.booleans())
    x = _data(np.float64, n, nan)
    fn = np.nanquantile if data.draw(st.booleans()) else np.quantile
    _exact(lambda a: fn(a, q, axis=0, method=method), x, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("name", ["quantile", "nanquantile", "percentile", "nanpercentile"])
def test_weights_inverted_cdf(backend, name):
    scale = 100 if "percentile" in name else 1
    for dtype in (np.float64, np.float32, np.int16):
        for n in (1, 2, 5, 9):
            x = _data(dtype, n, nan=dtype != np.int16)
            w = rng_for("weights", n).integers(0, 4, (n, 4)).astype(float)
            w[0] = 0           # leading zero weights: skipped at q = 0
            w[:, 0] += 0.5     # other slices may weigh zero in all: NumPy's ValueError
            for q in (0, 1, 0.0, 0.3, 1.0, [0.0, 0.25, 0.77, 1.0], np.float32(0.4)):
                qs = np.multiply(q, scale) if not isinstance(q, (int, float)) else q * scale
                _exact(lambda a, v: getattr(np, name)(a, qs, axis=0, method="inverted_cdf", weights=v), x, w,
                       backend=backend)
    x = _data(np.float64, 6, nan=False).T
    _exact(lambda a, v: getattr(np, name)(a, [10 * scale / 100, 0.6 * scale], axis=1, method="inverted_cdf",
                                          weights=np.broadcast_to(v, a.shape), keepdims=True), x, np.arange(6.0),
           backend=backend)


def test_weights_errors():
    x, w = np.arange(6.0), np.ones(6)
    _exact(lambda a, v: np.quantile(a, 0.5, weights=v), x, w)                            # not inverted_cdf
    _exact(lambda a, v: np.quantile(a, 0.5, method="inverted_cdf", weights=v), x, -w)     # negative
    _exact(lambda a, v: np.quantile(a, 0.5, method="inverted_cdf", weights=v), x, 0 * w)  # all zero
    _exact(lambda a, v: np.quantile(a, 0.5, method="inverted_cdf", weights=v), x, w[:3])  # shape
    _exact(lambda a, v: np.quantile(a.reshape(2, 3), 0.5, method="inverted_cdf", weights=v), x, w[:3])  # no axis
    _exact(lambda a, v: np.quantile(a, 0.5, method="inverted_cdf", weights=v), x, np.where(w > 0, np.inf, 0))
    _exact(lambda a: np.quantile(a, 0.5, method="no_such_method"), x)
    _exact(lambda a: np.nanquantile(a, 0.5, method="no_such_method"), x)
    _exact(lambda a: np.quantile(a, 1.5, method="hazen"), x)


def test_grad_and_vmap():
    x = np.array([3.0, -1.0, 2.5, 7.0, 0.5])
    for method in ("hazen", "midpoint", "averaged_inverted_cdf", "nearest"):
        f = lambda v: np.quantile(v * v, [0.3, 0.8], method=method)  # noqa: E731
        np.testing.assert_allclose(jk.jacfwd(f)(x), jk.jacrev(f)(x), rtol=0, atol=1e-15)
        g = lambda v: np.nanpercentile(v * v, [30, 80], method=method)  # noqa: E731
        np.testing.assert_allclose(jk.jacfwd(g)(x), jk.jacrev(g)(x), rtol=0, atol=1e-15)
    # d/dx of weibull's interpolation: NumPy's positions and weights
    f = lambda v: np.quantile(v, 0.3, method="weibull")  # noqa: E731
    np.testing.assert_allclose(jk.grad(f)(x), central_differences(f, x), atol=1e-6)
    rows = _data(np.float64, 6, nan=True).T
    for method in ("median_unbiased", "closest_observation"):
        np.testing.assert_array_equal(jk.vmap(lambda r: np.nanquantile(r, [0.2, 0.6], method=method))(rows[:-1]),
                                      np.nanquantile(rows[:-1], [0.2, 0.6], axis=1, method=method).T)
        np.testing.assert_array_equal(jk.vmap(lambda r: np.quantile(r, 0.7, method=method))(rows),
                                      np.quantile(rows, 0.7, axis=1, method=method))


@pytest.mark.parametrize("backend", emulator_backends())
def test_emulated_gpu(backend):
    x = _data(np.float32, 5, nan=True)
    _exact(lambda a: np.nanquantile(a, [0.1, 0.6], axis=0, method="hazen"), x, backend=backend)
    _exact(lambda a: np.quantile(a, 0.35, axis=0, method="closest_observation"), x, backend=backend)
    _exact(lambda a, v: np.quantile(a, 0.5, axis=0, method="inverted_cdf", weights=v), x, np.ones((5, 4)),
           backend=backend)
