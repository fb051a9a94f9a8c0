"""np.i0 (NumPy's Chebyshev series), np.sort_complex, np.lexsort and np.isin inside jit:
NumPy 2.4's values, dtypes and errors, derivatives of i0 (jacfwd == jacrev == i1 * sign),
vmap and the emulated GPU."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, check, raises_like_numpy, rng_for, sample

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
X = np.array([-20.0, -8.0, -3.0, -0.0, 0.0, 1e-3, 5.0, 8.0, 8.000001, 30.0, 700.0, np.nan, np.inf, -np.inf])
DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int8, np.uint8, np.bool_]


# ----------------------------------------------------------------------------- i0

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_i0(backend, dtype):
    with np.errstate(over="ignore", invalid="ignore"):
        x = X.astype(dtype) if np.dtype(dtype).kind == "f" else sample(rng_for("i0", dtype), dtype, (8,), -12, 12)
    # exp and sqrt of the engine may differ from NumPy's by an ulp: float tolerance
    check(np.i0, x, backend=backend, rtol=1e-14 if np.dtype(dtype) == np.float64 else None)
    check(lambda x: (np.i0(x[2]), np.i0(3), np.i0([1.0, 9.0])), x, backend=backend)


def test_i0_of_complex_is_numpys_type_error():
    raises_like_numpy(lambda x: np.i0(x * 1j), np.ones(2))


@SETTINGS
@given(st.lists(st.floats(-50, 50), min_size=1, max_size=8))
def test_i0_matches_numpy(values):
    x = np.array(values)
    np.testing.assert_allclose(jk.jit(np.i0)(x), np.i0(x), rtol=1e-14)


def test_i0_derivative_is_i1_times_sign():
    from math import factorial
    x = np.array([-12.0, -2.5, 0.0, 0.7, 7.9, 8.1, 40.0])
    # i1 by its power series (converges everywhere; enough terms for |x| <= 40)
    i1 = np.array([sum((v / 2) ** (2 * k + 1) / (factorial(k) * factorial(k + 1)) for k in range(80)) for v in np.abs(x)])
    expected = i1 * np.sign(x)
    fwd, rev = jk.jacfwd(np.i0)(x), jk.jacrev(np.i0)(x)
    np.testing.assert_allclose(np.diag(fwd), expected, rtol=1e-12)
    np.testing.assert_allclose(rev, fwd, rtol=1e-13, atol=1e-15)
    assert np.isfinite(jk.grad(lambda x: np.i0(x).sum())(x)).all()


# ----------------------------------------------------------------------------- sort_complex

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES + [np.int16, np.uint16, np.int32])
def test_sort_complex(backend, dtype):
    x = sample(rng_for("sort_complex", dtype), dtype, (2, 5))
    check(lambda x: (np.real(np.sort_complex(x)), np.imag(np.sort_complex(x))),
          x, backend=backend)
    assert jk.jit(np.sort_complex)(x).dtype == np.sort_complex(x).dtype


def test_sort_complex_of_complex():
    z = np.array([1 + 2j, 1 - 1j, -3 + 0j, 1 + 2j, np.nan + 0j, 0 + 1j])
    np.testing.assert_array_equal(jk.jit(lambda z: np.sort_complex(z))(z), np.sort_complex(z))


# ----------------------------------------------------------------------------- lexsort

K1, K2, K3 = np.array([1, 1, 0, 0, 2, 1]), np.array([3.0, 1.0, 2.0, np.nan, 1.0, 1.0]), np.array([5, 4, 3, 2, 1, 0])


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda a, b, c: np.lexsort((a, b)),
    lambda a, b, c: np.lexsort((c, a, b)),
    lambda a, b, c: np.lexsort((a,)),
    lambda a, b, c: np.lexsort(np.stack([a, c])),               # a 2-d array: its rows are keys
    lambda a, b, c: np.lexsort(a),                              # a 1-d array: 0-d keys
    lambda a, b, c: np.lexsort((a.reshape(2, 3), c.reshape(2, 3))),
    lambda a, b, c: np.lexsort((a.reshape(2, 3), c.reshape(2, 3)), axis=0),
    lambda a, b, c: np.lexsort((a, b > 1)),
], ids=["two", "three", "one", "2d-array", "1d-array", "2d-keys", "axis0", "bool"])
def test_lexsort(backend, fn):
    check(fn, K1, K2, K3, backend=backend)


def test_lexsort_errors_are_numpys():
    raises_like_numpy(lambda a: np.lexsort((a, a[:3])), K1)
    raises_like_numpy(lambda a: np.lexsort((a,), axis=1), K1)


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 12), st.integers(0, 50))
def test_lexsort_matches_numpy(nkeys, n, seed):
    rng = rng_for("lexsort", seed)
    keys = tuple(rng.integers(0, 3, n) for _ in range(nkeys))  # many ties
    np.testing.assert_array_equal(jk.jit(lambda *k: np.lexsort(k))(*keys), np.lexsort(keys))


# ----------------------------------------------------------------------------- isin

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda a, b: np.isin(a, b),
    lambda a, b: np.isin(a, b, invert=True),
    lambda a, b: np.isin(a.reshape(2, 7), b),
    lambda a, b: np.isin(a, b.reshape(2, 2)),
    lambda a, b: np.isin(a, [0.0, 5, np.inf]),
    lambda a, b: np.isin(a[4], b),                               # 0-d element: a 0-d array
    lambda a, b: np.isin(a, b[:0]),                              # nothing to find
    lambda a, b: np.isin(a.astype(np.int64), [5, -3, 2]),
    lambda a, b: np.isin(a.astype(np.int64), b.astype(np.int8), kind="table"),
    lambda a, b: np.isin(a, b, assume_unique=True, kind="sort"),
    lambda a, b: np.isin(a.astype(np.float32), b),               # compared in the common dtype
], ids=["basic", "invert", "2d-element", "2d-test", "list", "0d", "empty", "ints", "table", "unique", "float32"])
def test_isin(backend, fn):
    with np.errstate(invalid="ignore", over="ignore"):
        check(fn, X, np.array([0.0, 5.0, np.nan, -20.0]), backend=backend)


def test_isin_errors_are_numpys():
    raises_like_numpy(lambda a: np.isin(a, a, kind="x"), X)
    raises_like_numpy(lambda a: np.isin(a, a, kind="table"), X)


@SETTINGS
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=10), st.lists(st.integers(-5, 5), min_size=0, max_size=6))
def test_isin_matches_numpy(element, test):
    a, b = np.array(element), np.array(test, dtype=np.int64)
    np.testing.assert_array_equal(jk.jit(np.isin)(a, b), np.isin(a, b))


# ----------------------------------------------------------------------------- vmap, emulator

def test_vmap():
    x = np.stack([X[:7], X[7:]])
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(jk.vmap(np.i0)(x), np.i0(x), rtol=1e-14)
    b = np.array([[0.0, 5.0], [8.0, 30.0]])
    np.testing.assert_array_equal(jk.vmap(np.isin)(x, b), np.stack([np.isin(r, t) for r, t in zip(x, b)]))
    keys = np.stack([K1, K3])
    np.testing.assert_array_equal(jk.vmap(lambda a, c: np.lexsort((a, c)))(keys, keys[::-1]),
                                  np.stack([np.lexsort((a, c)) for a, c in zip(keys, keys[::-1])]))


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_the_emulated_gpu(backend):
    x = X[np.isfinite(X)].astype(np.float32)
    check(lambda x: (np.i0(x), np.isin(x, x[::3]), np.lexsort((x, x > 1))), x, backend=backend)
