"""np.nanmedian, np.nanquantile and np.nanpercentile inside jit: NumPy 2.4's values (bit for
bit: the same arithmetic on each slice's non-NaN elements), dtypes, axes, keepdims, q shapes,
all-NaN slices, integer input, errors, derivatives, vmap and the emulated GPU."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, builtin_type, check, rng_for, sample

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
A = np.array([[3.0, np.nan, 1.0, 2.0, np.nan, 8.0],
              [np.nan] * 6,
              [5.0, 4.0, 3.0, 2.0, 1.0, 0.5],
              [np.inf, 1.0, np.nan, 2.0, -np.inf, -0.0]])


def _numpy(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice encountered"
        return fn(*args)


def _exact(fn, *args, backend="cpu"):
    got, expected = jk.jit(fn, backend=backend)(*args), _numpy(fn, *args)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda a: np.nanmedian(a),
    lambda a: np.nanmedian(a, axis=1),
    lambda a: np.nanmedian(a, axis=0),
    lambda a: np.nanmedian(a, axis=(0, 1)),
    lambda a: np.nanmedian(a, axis=1, keepdims=True),
    lambda a: np.nanmedian(a[:, :5].astype(np.float32), axis=1),
    lambda a: np.nanmedian(a[0]),
    lambda a: np.nanquantile(a, 0.3, axis=1),
    lambda a: np.nanquantile(a, [0.0, 0.25, 1.0], axis=1),
    lambda a: np.nanquantile(a, np.array([[0.1], [0.9]]), axis=0, keepdims=True),
    lambda a: np.nanquantile(a.astype(np.float32), 0.3, axis=1),           # weak q: float32
    lambda a: np.nanquantile(a.astype(np.float32), np.array(0.3), axis=1),  # strong q: float64
    lambda a: np.nanquantile(a.astype(np.float32), np.float32(0.7), axis=1),
    lambda a: np.nanquantile(a, 1, axis=0),                                 # integer q
    lambda a: np.nanquantile(a, 0.5),
    lambda a: np.nanpercentile(a, 50, axis=1),
    lambda a: np.nanpercentile(a, [10, 90], axis=(0, 1), keepdims=True),
    lambda a: np.nanpercentile(a.astype(np.float16), 37.5, axis=1),
], ids=["median", "median-axis1", "median-axis0", "median-axes", "median-keepdims", "median-float32", "median-1d",
        "quantile", "quantile-list", "quantile-2d-q", "weak-float32", "strong-float32", "np-float32-q", "int-q",
        "quantile-all", "percentile", "percentile-keepdims", "percentile-float16"])
def test_bit_exact(backend, fn):
    _exact(fn, A, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint8, np.bool_])
def test_integer_and_bool_input_is_the_plain_statistic(backend, dtype):
    a = sample(rng_for("nanstat", dtype), dtype, (3, 5))
    check(lambda a: (np.nanmedian(a, axis=1), np.nanquantile(a, 0.3, axis=0), np.nanpercentile(a, [5, 60])), a,
          backend=backend)


def test_empty_array_is_nanmean():
    check(lambda a: (np.nanmedian(a), np.nanquantile(a, 0.5, axis=0)), np.zeros((0, 3)), backend="cpu")


@SETTINGS
@given(st.integers(0, 40), st.tuples(st.integers(1, 5), st.integers(1, 6)), st.sampled_from([None, 0, 1, -1]),
       st.floats(0, 1), st.sampled_from([np.float64, np.float32]))
def test_matches_numpy(seed, shape, axis, q, dtype):
    rng = rng_for("nanstat", seed)
    a = rng.integers(-3, 4, shape).astype(dtype)  # many ties
    a[rng.random(shape) < 0.35] = np.nan
    _exact(lambda a: np.nanmedian(a, axis=axis), a)
    _exact(lambda a: np.nanquantile(a, q, axis=axis), a)
    if dtype == np.float64:  # float32 with a strong q: NumPy's dtype for an all-NaN slice is float32, else float64
        _exact(lambda a: np.nanpercentile(a, [q * 100, 100 - q * 100], axis=axis), a)


def test_errors_are_numpys():
    for fn in (lambda a: np.nanquantile(a, 1.5), lambda a: np.nanpercentile(a, -1), lambda a: np.nanmedian(a, axis=2),
               lambda a: np.nanquantile(a + 1j, 0.5)):
        with pytest.raises(Exception) as numpy_error:
            _numpy(fn, A)
        with pytest.raises(builtin_type(numpy_error.value)):
            jk.jit(fn)(A)
    with pytest.raises(jk.errors.UnsupportedOperationError, match="traced q"):
        jk.jit(lambda a, q: np.nanquantile(a, q))(A, 0.5)


def test_derivatives_flow_to_the_chosen_elements():
    x = np.array([4.0, np.nan, 1.0, 3.0, 2.0])
    # nanmedian of [4, 1, 3, 2]: (2 + 3) / 2; the NaN and the others get 0
    np.testing.assert_array_equal(jk.grad(np.nanmedian)(x), [0.0, 0.0, 0.0, 0.5, 0.5])
    # nanquantile 0.25 of [1, 2, 3, 4]: virtual index 0.75: 1 + (2 - 1) * 0.75
    np.testing.assert_allclose(jk.grad(lambda v: np.nanquantile(v, 0.25))(x), [0.0, 0.0, 0.25, 0.0, 0.75])
    fwd = jk.jacfwd(lambda v: np.nanpercentile(v, [30, 80]))(x)
    np.testing.assert_allclose(jk.jacrev(lambda v: np.nanpercentile(v, [30, 80]))(x), fwd, rtol=1e-12)


def test_vmap():
    np.testing.assert_array_equal(jk.vmap(np.nanmedian)(A), _numpy(lambda a: np.nanmedian(a, axis=1), A))
    np.testing.assert_array_equal(jk.vmap(lambda r: np.nanquantile(r, [0.2, 0.6]))(A),
                                  _numpy(lambda a: np.nanquantile(a, [0.2, 0.6], axis=1).T, A))


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_the_emulated_gpu(backend):
    check(lambda a: (np.nanmedian(a, axis=1), np.nanquantile(a, [0.1, 0.5], axis=0)), A.astype(np.float32),
          backend=backend)
