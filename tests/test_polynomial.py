"""NumPy's polynomial functions inside jit (polyadd, polysub, polymul, polyder, polyint, polydiv,
poly, polyfit) against NumPy 2.4: dtypes (NumPy's promotion), shapes (trimming where NumPy
trims), values, errors; derivatives (jacfwd == jacrev == the analytic linear map), vmap; and
the refusals (roots, poly of a matrix or of complex roots) with their reasons."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from jitkernel.errors import UnsupportedOperationError
from complex_compare import assert_matches
from helpers import HOST_BACKENDS, builtin_type, check, numpy_result, raises_like_numpy, rng_for, sample

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
DTYPES = [np.float64, np.float32, np.int64, np.int8, np.uint8, np.bool_, np.complex128]


def _coefficients(tag: str, dtype, n: int) -> np.ndarray:
    """n coefficients with a non-zero leading one (NumPy's trimming then keeps the length)."""
    if np.dtype(dtype) == np.bool_:
        return np.r_[True, rng_for(tag, n).integers(0, 2, n - 1).astype(bool)] if n else np.zeros(0, bool)
    if np.dtype(dtype).kind == "c":
        re = sample(rng_for(tag, "re", n), np.float64, (n,), 1, 5)
        return re + 1j * sample(rng_for(tag, "im", n), np.float64, (n,), -5, 5)
    return sample(rng_for(tag, dtype, n), dtype, (n,), 1, 9)


def _check(fn, *args, backend):
    """check() with complex results compared part by part."""
    try:
        expected = numpy_result(fn, *args)
    except Exception as e:  # noqa: BLE001 - the jitted call must raise the same type
        with pytest.raises(builtin_type(e)):
            jk.jit(fn, backend=backend)(*args)
        return
    assert_matches(jk.jit(fn, backend=backend)(*args), expected)


# ----------------------------------------------------------------------------- polyadd, polysub, polymul

ZEROS = np.zeros(3)  # made outside: np.zeros on the jitted function's own line makes a traced array


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [np.polyadd, np.polysub, np.polymul], ids=["add", "sub", "mul"])
@given(n1=st.integers(1, 6), n2=st.integers(1, 6), d1=st.sampled_from(DTYPES), d2=st.sampled_from(DTYPES))
@SETTINGS
def test_binary_against_numpy(backend, fn, n1, n2, d1, d2):
    """Lengths and dtypes (int with float, bool with int, ...): NumPy's dtype, shape, values, or
    its exception type (bool - bool)."""
    _check(fn, _coefficients("a", d1, n1), _coefficients("b", d2, n2), backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda a: np.polyadd(a, 2),                   # a Python scalar: atleast_1d's int64
    lambda a: np.polysub([1.5, 0.0, 2.0, 1.0], a),  # a list, longer
    lambda a: np.polyadd(a[0], a),                # 0-d operand
    lambda a: np.polymul(a, [0.0, 0.0, 2.0, 1.0]),  # constant leading zeros: trimmed as NumPy
    lambda a: np.polymul(a, ZEROS),               # all zeros (a constant): poly1d's [0]
    lambda a: np.polymul(a[:1], a),               # one coefficient
    lambda a: np.polyadd(a.astype(np.float32), np.array([1, 2], np.int16)),
], ids=["scalar", "list", "0d", "const-leading-zeros", "const-zeros", "one", "f32-i16"])
def test_binary_hand_cases(backend, fn):
    check(fn, np.array([3.0, -1.0, 2.0]), backend=backend)


def test_polymul_traced_leading_zero_raises_when_the_call_runs():
    """NumPy trims a leading zero (poly1d): the result length would depend on the values."""
    f = jk.jit(np.polymul)
    np.testing.assert_array_equal(f(np.array([1.0, 2.0]), np.array([3.0, 4.0])), np.polymul([1.0, 2.0], [3.0, 4.0]))
    with pytest.raises(ValueError, match="leading zero"):
        f(np.array([0.0, 2.0]), np.array([3.0, 4.0]))


def test_binary_errors_are_numpys():
    raises_like_numpy(lambda a: np.polyadd(a, np.ones(2)), np.ones((3, 2)))   # concatenate's shapes
    raises_like_numpy(lambda a: np.polymul(a, np.ones(2)), np.ones((2, 2)))   # poly1d: 1-d only
    raises_like_numpy(lambda a: np.polysub(a, a), np.array([True, False]))    # bool subtract


# ----------------------------------------------------------------------------- polyder, polyint

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@given(n=st.integers(1, 6), m=st.integers(0, 4), dtype=st.sampled_from(DTYPES))
@SETTINGS
def test_polyder_polyint_against_numpy(backend, n, m, dtype):
    p = _coefficients("p", dtype, n)
    _check(lambda p: np.polyder(p, m), p, backend=backend)
    _check(lambda p: np.polyint(p, m), p, backend=backend)
    _check(lambda p, k: np.polyint(p, m, k), p, np.arange(1.0, m + 2), backend=backend)  # traced k


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda p: np.polyint(p, 3, k=2),              # one constant for every order
    lambda p: np.polyint(p, 2, k=[1, 2]),         # integer constants
    lambda p: np.polyint(p, 1, k=np.float32(3)),
    lambda p: np.polyder(p.astype(np.float32), 1),  # float32 * int64 arange: float64, as NumPy
    lambda p: np.polyint(p.astype(np.float32)),
    lambda p: np.polyder(p[:1], 3),               # shorter than the order: empty
], ids=["k-scalar", "k-ints", "k-f32", "der-f32", "int-f32", "short"])
def test_polyder_polyint_hand_cases(backend, fn):
    check(fn, np.array([4.0, -3.0, 2.0, 1.0]), backend=backend)


def test_polyder_polyint_errors_are_numpys():
    raises_like_numpy(lambda p: np.polyder(p, -1), np.ones(3))
    raises_like_numpy(lambda p: np.polyint(p, -1), np.ones(3))
    raises_like_numpy(lambda p: np.polyint(p, 3, k=[1.0, 2.0]), np.ones(3))
    raises_like_numpy(lambda p: np.polyder(p), np.float64(1.0) + np.zeros(()))  # len() of 0-d


# ----------------------------------------------------------------------------- polydiv

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@given(m=st.integers(1, 6), n=st.integers(1, 4), d1=st.sampled_from(DTYPES[:5]), d2=st.sampled_from(DTYPES[:5]))
@SETTINGS
def test_polydiv_against_numpy(backend, m, n, d1, d2):
    check(np.polydiv, _coefficients("u", d1, m), _coefficients("v", d2, n), backend=backend, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("u, v", [
    ([1.0, 3.0, 2.0], [1.0, 1.0]),                 # exact: remainder [0.]
    ([1.0, 3.0, 3.0], [1.0, 1.0]),                 # remainder [1.]
    ([1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 1.0]),       # remainder of length 2
    ([1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0, 2.0]),  # v longer than u: no loop, q = [0.]
    ([0.0, 0.0, 3.0], [2.0]),                      # u's own leading zeros trimmed from r
    ([2.0, 4.0], [0.0, 1.0]),                      # v[0] == 0: inf and nan, as NumPy
], ids=["exact", "one", "two", "longer-v", "leading-zeros", "zero-lead-v"])
def test_polydiv_hand_cases(backend, u, v):
    check(np.polydiv, np.array(u), np.array(v), backend=backend)


def test_polydiv_float32_and_ints():
    check(np.polydiv, np.array([2, 7, 3], np.int32), np.array([1, 3], np.int8), backend=HOST_BACKENDS[0])
    check(np.polydiv, np.array([2, 7, 3.5], np.float32), np.array([1, 3], np.float32), backend=HOST_BACKENDS[0])


# ----------------------------------------------------------------------------- poly

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@given(n=st.integers(0, 6), dtype=st.sampled_from([np.float64, np.float32, np.float16, np.int64, np.int8, np.bool_]))
@SETTINGS
def test_poly_against_numpy(backend, n, dtype):
    check(np.poly, sample(rng_for("roots", dtype, n), dtype, (n,), -3, 3), backend=backend)


def test_poly_refusals_say_why():
    with pytest.raises(UnsupportedOperationError, match="eigvals"):
        jk.jit(np.poly)(np.eye(3))
    with pytest.raises(UnsupportedOperationError, match="conjugate pairs"):
        jk.jit(np.poly)(np.array([1 + 1j, 1 - 1j]))
    raises_like_numpy(np.poly, np.ones((2, 3)))


def test_roots_is_refused_with_its_reason():
    with pytest.raises(UnsupportedOperationError, match="eigvals"):
        jk.jit(np.roots)(np.array([1.0, -3.0, 2.0]))


# ----------------------------------------------------------------------------- polyfit

X = np.linspace(-1.0, 2.0, 12)
Y = 0.5 * X ** 3 - X + 0.25 * np.sin(7 * X)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@given(npts=st.integers(4, 12), deg=st.integers(0, 3), dtype=st.sampled_from([np.float64, np.float32, np.int64]),
       weighted=st.booleans(), two_d=st.booleans())
@SETTINGS
def test_polyfit_against_numpy(backend, npts, deg, dtype, weighted, two_d):
    x = (X[:npts] * 3).astype(dtype)
    y = np.stack([Y[:npts], Y[:npts] ** 2], axis=1) if two_d else Y[:npts]
    w = np.linspace(0.5, 2.0, npts)
    fn = (lambda x, y, w: np.polyfit(x, y, deg, w=w)) if weighted else (lambda x, y, w: np.polyfit(x, y, deg))
    check(fn, x, y, w, backend=backend, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_polyfit_full_and_rcond(backend):
    check(lambda x, y: np.polyfit(x, y, 3, full=True), X, Y, backend=backend, rtol=1e-9, atol=1e-9)
    check(lambda x, y: np.polyfit(x, y, 2, rcond=1e-3), X, Y, backend=backend, rtol=1e-9, atol=1e-9)


def test_polyfit_errors_are_numpys():
    raises_like_numpy(lambda x, y: np.polyfit(x, y, -1), X, Y)
    raises_like_numpy(lambda x, y: np.polyfit(x, y, 2), X.reshape(3, 4), Y)
    raises_like_numpy(lambda x, y: np.polyfit(x, y, 2), X, Y[:5])
    raises_like_numpy(lambda x, y: np.polyfit(x, y, 2, w=np.ones(3)), X, Y)
    with pytest.raises(UnsupportedOperationError, match="cov"):
        jk.jit(lambda x, y: np.polyfit(x, y, 2, cov=True))(X, Y)


def test_polyfit_derivative_in_y():
    """The fit is linear in y: d c / d y = the pseudo-inverse of the Vandermonde matrix."""
    fn = lambda y: np.polyfit(X, y, 3)  # noqa: E731
    expected = np.linalg.pinv(np.vander(X, 4))
    for jac in (jk.jacfwd, jk.jacrev):
        np.testing.assert_allclose(jac(fn)(Y), expected, rtol=1e-9, atol=1e-9)


def test_polyfit_derivative_in_x_and_w():
    """Through the scaled Vandermonde matrix: jacfwd == jacrev == central differences of NumPy's fit."""
    w = np.linspace(0.5, 2.0, len(X))
    for argnum, at in ((0, X), (1, w)):
        def numpy_fit(v, argnum=argnum):
            return np.polyfit(v, Y, 3, w=w) if argnum == 0 else np.polyfit(X, Y, 3, w=v)
        h = 1e-6
        columns = [(numpy_fit(at + h * e) - numpy_fit(at - h * e)) / (2 * h) for e in np.eye(len(at))]
        expected = np.stack(columns, axis=1)
        fn = lambda x, w: np.polyfit(x, Y, 3, w=w)  # noqa: E731
        fwd, rev = jk.jacfwd(fn, argnums=argnum)(X, w), jk.jacrev(fn, argnums=argnum)(X, w)
        np.testing.assert_allclose(fwd, rev, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fwd, expected, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- derivatives, vmap

def test_polymul_polyder_polyint_derivatives():
    """Linear maps with known matrices: d(a*b)/da is b's convolution (Toeplitz) matrix; polyder
    and polyint are diagonal maps (plus the constant)."""
    a, b = np.array([1.0, -2.0, 3.0]), np.array([2.0, 5.0])
    conv = np.array([[b[0], 0, 0], [b[1], b[0], 0], [0, b[1], b[0]], [0, 0, b[1]]])
    der = np.array([[3.0, 0, 0, 0], [0, 2.0, 0, 0], [0, 0, 1.0, 0]])
    integ = np.vstack([np.diag([1 / 3, 1 / 2, 1.0]), np.zeros((1, 3))])
    for jac in (jk.jacfwd, jk.jacrev):
        np.testing.assert_allclose(jac(lambda a: np.polymul(a, b))(a), conv, rtol=1e-14)
        np.testing.assert_allclose(jac(np.polyder)(np.array([1.0, 2.0, 3.0, 4.0])), der, rtol=1e-14)
        np.testing.assert_allclose(jac(np.polyint)(a), integ, rtol=1e-14)
        np.testing.assert_allclose(jac(lambda p, k: np.polyint(p, 1, k), argnums=1)(a, np.array([2.0])),
                                   np.eye(4)[:, 3:], rtol=1e-14)  # k traced with p: NumPy dispatches on p


def test_vmap():
    ps = np.array([[1.0, 2.0, 3.0], [4.0, -1.0, 0.5]])
    np.testing.assert_array_equal(jk.vmap(np.polyder)(ps), np.stack([np.polyder(p) for p in ps]))
    np.testing.assert_array_equal(jk.vmap(lambda p: np.polyadd(p, [1.0, 1.0]))(ps),
                                  np.stack([np.polyadd(p, [1.0, 1.0]) for p in ps]))
    ys = np.stack([Y, Y ** 2])
    np.testing.assert_allclose(jk.vmap(lambda y: np.polyfit(X, y, 2))(ys),
                               np.stack([np.polyfit(X, y, 2) for y in ys]), rtol=1e-9)
