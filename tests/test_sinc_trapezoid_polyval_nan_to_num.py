"""np.sinc, np.trapezoid, np.polyval and np.nan_to_num inside jit: NumPy 2.4's formulas and
dtypes, traced and concrete secondary arguments, nan_to_num's copy=False, derivatives, vmap."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, builtin_type, check, rng_for, sample

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
SPECIAL = np.array([0.0, -0.0, 0.5, -1.5, 1e-9, 3.0, np.nan, np.inf, -np.inf, 1e300, -1e-300])
DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int8, np.uint8, np.bool_]


def _parts(z):
    """A complex result as its real and imaginary parts (helpers.check compares real dtypes)."""
    return np.real(z), np.imag(z)


# ----------------------------------------------------------------------------- sinc

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sinc_dtypes_and_values(backend, dtype):
    with np.errstate(over="ignore"):  # 1e300 is inf in float16 and float32
        x = SPECIAL.astype(dtype) if np.dtype(dtype).kind == "f" else sample(rng_for("sinc", dtype), dtype, (6,))
    check(np.sinc, x, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_sinc_scalar_and_complex(backend):
    check(lambda x: (np.sinc(x[0]), np.sinc(2.5), np.sinc(np.float32(0.0))), SPECIAL, backend=backend)
    check(lambda x: _parts(np.sinc(x + 1j * x[::-1])), np.array([0.0, 0.5, 2.0]), backend=backend)


def test_sinc_derivative_is_zero_at_zero_and_analytic_elsewhere():
    d = jk.grad(np.sinc)
    assert d(0.0) == 0.0 and d(-0.0) == 0.0
    for x in (0.3, -1.7, 2.5):
        px = np.pi * x
        np.testing.assert_allclose(d(x), (np.cos(px) * px - np.sin(px)) / (px * x), rtol=1e-12)


# ----------------------------------------------------------------------------- trapezoid

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda y, x: np.trapezoid(y),
    lambda y, x: np.trapezoid(y, axis=0),
    lambda y, x: np.trapezoid(y, x[0]),                  # 1-d x along the last axis
    lambda y, x: np.trapezoid(y, x[:, 0], axis=0),       # 1-d x along axis 0
    lambda y, x: np.trapezoid(y, x),                     # x of y's shape
    lambda y, x: np.trapezoid(y, dx=0.25),
    lambda y, x: np.trapezoid(y, np.array([0.0, 1.0, 3.0, 4.5])),  # a concrete x
    lambda y, x: np.trapezoid(y.astype(np.float32)),    # float32 stays float32 (dx weak)
    lambda y, x: np.trapezoid(y.astype(np.int64), x.astype(np.int64)),  # ints: float64
    lambda y, x: np.trapezoid(y, dx=x[0, 0]),           # traced dx
], ids=["default", "axis0", "x1d", "x1d-axis0", "x2d", "dx", "concrete-x", "float32", "ints", "traced-dx"])
def test_trapezoid(backend, fn):
    rng = rng_for("trapezoid")
    check(fn, sample(rng, np.float64, (3, 4)), np.cumsum(sample(rng, np.float64, (3, 4), 0, 2), axis=1),
          backend=backend)


def test_trapezoid_errors_are_numpys():
    for fn in (lambda y: np.trapezoid(y, np.ones(3)), lambda y: np.trapezoid(y, axis=3)):
        y = np.ones((2, 4))
        with pytest.raises(Exception) as numpy_error:
            fn(y)
        with pytest.raises(builtin_type(numpy_error.value)):
            jk.jit(fn)(y)


def test_trapezoid_derivatives():
    x = np.array([0.0, 1.0, 3.0])
    # d/dy: (x[1]-x[0])/2, (x[2]-x[0])/2, (x[2]-x[1])/2
    np.testing.assert_allclose(jk.grad(lambda y: np.trapezoid(y, x))(np.ones(3)), [0.5, 1.5, 1.0], rtol=1e-12)
    y = np.array([1.0, 2.0, 3.0])
    # d/dx: -(y0+y1)/2, (y0+y1)/2 - (y1+y2)/2, (y1+y2)/2
    np.testing.assert_allclose(jk.grad(lambda t: np.trapezoid(y, t))(x), [-1.5, -1.0, 2.5], rtol=1e-12)


# ----------------------------------------------------------------------------- polyval

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda p, x: np.polyval(p, x),
    lambda p, x: np.polyval([3, 0, 1], x),                # a list: strong int64 coefficients
    lambda p, x: np.polyval([1, 2], x.astype(np.float32)),  # float32 x, int64 p: float64 (NumPy)
    lambda p, x: np.polyval(p.astype(np.float32), 3),     # a Python int x
    lambda p, x: np.polyval(p, x[0]),                     # 0-d x
    lambda p, x: np.polyval([], x),                       # no coefficients: zeros_like(x)
    lambda p, x: np.polyval(p[:, None] * x[:2], x[:2]),   # 2-d p: rows broadcast
    lambda p, x: np.polyval(p.astype(np.int8), x.astype(np.int8)),  # int8 wraps as NumPy's
], ids=["traced", "list", "float32-x", "int-x", "zero-d", "empty", "2d-p", "int8"])
def test_polyval(backend, fn):
    check(fn, np.array([3.0, -2.0, 0.5, 7.0]), np.array([5.0, 2.0, -1.5, 0.0, 100.0]), backend=backend)


@SETTINGS
@given(p=st.lists(st.floats(-10, 10), min_size=0, max_size=6), x=st.lists(st.floats(-3, 3), min_size=1, max_size=4))
def test_polyval_matches_numpy(p, x):
    p, x = np.array(p, np.float64), np.array(x)
    np.testing.assert_allclose(jk.jit(np.polyval)(p, x), np.polyval(p, x), rtol=1e-12, atol=1e-12)


def test_polyval_derivatives():
    p, x = np.array([1.0, 2.0, 3.0]), 2.0
    np.testing.assert_allclose(jk.grad(lambda c: np.polyval(c, x))(p), [x * x, x, 1.0], rtol=1e-12)
    np.testing.assert_allclose(jk.grad(lambda t: np.polyval(p, t))(x), 2 * p[0] * x + p[1], rtol=1e-12)


# ----------------------------------------------------------------------------- nan_to_num

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda x, r: np.nan_to_num(x),
    lambda x, r: np.nan_to_num(x.astype(np.float32)),
    lambda x, r: np.nan_to_num(x.astype(np.float16)),
    lambda x, r: np.nan_to_num(x, nan=-1, posinf=2.5, neginf=np.float32(3)),
    lambda x, r: np.nan_to_num(x.astype(np.float32), posinf=1e300),  # overflows to inf, as copyto
    lambda x, r: np.nan_to_num(x, nan=r),                            # traced array replacement
    lambda x, r: np.nan_to_num(x, posinf=r[0], neginf=r[1]),         # traced 0-d replacements
    lambda x, r: np.nan_to_num(x[2]),                                # 0-d
    lambda x, r: np.nan_to_num((x * 4).astype(np.int64)),            # ints unchanged
    lambda x, r: np.nan_to_num(x > 0),                               # bool unchanged
    lambda x, r: _parts(np.nan_to_num(x + 1j * x[::-1])),            # parts separately
    lambda x, r: _parts(np.nan_to_num(x * 1j, nan=5.0, posinf=r[2])),
], ids=["float64", "float32", "float16", "replacements", "overflowing-posinf", "traced-array", "traced-0d",
        "zero-d", "int", "bool", "complex", "complex-replacements"])
def test_nan_to_num(backend, fn):
    x = np.array([np.inf, -np.inf, np.nan, 1.5, -0.0, 0.25])
    with np.errstate(over="ignore"):
        check(fn, x, np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0]), backend=backend)


@pytest.mark.parametrize("fn", [
    lambda x: np.nan_to_num(x, nan=1j),                    # complex into float: TypeError
    lambda x: np.nan_to_num(x, nan=np.array([1.0, 2.0])),  # does not broadcast: ValueError
    lambda x: np.nan_to_num(x[0], copy=False),             # a NumPy scalar: ValueError
], ids=["complex-into-float", "broadcast", "zero-d-no-copy"])
def test_nan_to_num_errors(fn):
    x = np.array([np.nan, 1.0, np.inf])
    try:
        want = fn(x)
    except Exception as e:  # noqa: BLE001 - its type is what is compared
        with pytest.raises(builtin_type(e)):
            jk.jit(fn)(x)
        return
    check(fn, x, backend="cpu")  # NumPy returned: so must we, the same value
    del want


def test_nan_to_num_copy_false_writes_into_the_argument():
    def f(x):
        return np.nan_to_num(x, copy=False) + 0 * x

    def g(x):
        np.nan_to_num(x, copy=False)
        return x.sum()
    for fn in (f, g):
        a, b = np.array([np.nan, np.inf, 2.0]), np.array([np.nan, np.inf, 2.0])
        want = fn(a)
        got = jk.jit(fn)(b)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(b, a)  # the caller sees its array changed, as with NumPy


def test_nan_to_num_derivative_is_one_where_finite():
    d = jk.grad(lambda x: np.nan_to_num(x, nan=7.0).sum())(np.array([1.0, np.nan, np.inf, -np.inf, -2.0]))
    np.testing.assert_array_equal(d, [1.0, 0.0, 0.0, 0.0, 1.0])


# ----------------------------------------------------------------------------- vmap, emulator

def test_vmap():
    rng = rng_for("lib functions vmap")
    y, p = sample(rng, np.float64, (3, 5)), sample(rng, np.float64, (3, 4))
    np.testing.assert_allclose(jk.vmap(np.sinc)(y), np.sinc(y), rtol=1e-12)
    np.testing.assert_allclose(jk.vmap(np.trapezoid)(y), np.trapezoid(y, axis=1), rtol=1e-12)
    np.testing.assert_allclose(jk.vmap(np.polyval, in_axes=(0, None))(p, y[0]),
                               np.stack([np.polyval(q, y[0]) for q in p]), rtol=1e-12)
    z = np.where(y > 5, np.inf, np.where(y < -5, np.nan, y))
    np.testing.assert_array_equal(jk.vmap(np.nan_to_num)(z), np.nan_to_num(z))


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_the_emulated_gpu(backend):
    with np.errstate(over="ignore"):
        x = SPECIAL.astype(np.float32)
    check(lambda v: (np.sinc(v), np.nan_to_num(v), np.polyval(v[2:5], v), np.trapezoid(v[2:6])), x,
          backend=backend)


def test_nan_to_num_copy_false_result_is_the_array_itself():
    """NumPy returns `x` itself when copy=False: later writes through the result reach `x`."""
    def f(x):
        y = np.nan_to_num(x, copy=False)
        y[0] = 7.0
        return x
    x = np.array([np.nan, 1.0, np.inf])
    np.testing.assert_array_equal(jk.jit(f)(x.copy()), f(x.copy()))
