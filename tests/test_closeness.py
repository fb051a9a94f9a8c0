"""np.isclose, np.allclose, np.array_equal, np.array_equiv, np.isposinf, np.isneginf and np.fix
inside jit: NumPy 2.4's formulas, dtypes, NaN and infinity handling, the traced bool answers of
the whole-array comparisons, errors, vmap and the emulated GPU."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, builtin_type, check, rng_for, sample

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
SPECIAL = np.array([0.0, -0.0, 1.0, 1.0 + 1e-9, 1e-9, np.nan, np.inf, -np.inf, 1e300, -1.5])
DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int8, np.uint8, np.bool_]


def _pair(dtype, key):
    rng = rng_for("closeness", dtype, key)
    if np.dtype(dtype).kind == "f":
        with np.errstate(over="ignore"):
            a = SPECIAL.astype(dtype)
        return a, np.where(rng.integers(0, 2, a.shape) == 1, a, a[::-1])
    a = sample(rng, dtype, (10,))
    return a, np.where(rng.integers(0, 2, a.shape) == 1, a, sample(rng, dtype, (10,)))


# ----------------------------------------------------------------------------- isclose, allclose

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [
    lambda a, b: np.isclose(a, b),
    lambda a, b: np.isclose(a, b, equal_nan=True),
    lambda a, b: np.isclose(a, b, rtol=0.5, atol=2),
    lambda a, b: np.isclose(a, 1),                 # a Python int b: made float
    lambda a, b: np.isclose(a[0], b[0]),           # 0-d: a NumPy scalar
    lambda a, b: np.isclose(3, b),
    lambda a, b: np.allclose(a, b),
    lambda a, b: np.allclose(a, b, equal_nan=True),
    lambda a, b: np.allclose(a, a),
], ids=["default", "equal_nan", "tolerances", "int-b", "scalars", "int-a", "allclose", "allclose-nan", "allclose-self"])
def test_isclose_allclose(backend, dtype, fn):
    check(fn, *_pair(dtype, "isclose"), backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_isclose_broadcasts_and_traced_tolerances(backend):
    a, b = np.array([[1.0, 2.0, 3.0]]), np.array([[1.05], [2.0]])
    check(lambda a, b: np.isclose(a, b), a, b, backend=backend)
    check(lambda a, b: np.isclose(a, b, rtol=b[0, 0] - 1.0), a, b, backend=backend)
    check(lambda a, b: np.isclose(a.astype(np.float32), b, atol=0.1), a, b, backend=backend)


@SETTINGS
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1, max_size=8),
       st.floats(0, 1), st.floats(0, 1), st.booleans())
def test_isclose_matches_numpy(values, rtol, atol, equal_nan):
    a = np.array(values, np.float32)
    b = np.roll(a, 1) * np.float32(1.0 + rtol / 10)
    fn = lambda a, b: np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)  # noqa: E731
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(jk.jit(fn)(a, b), fn(a, b))


def test_allclose_is_a_traced_bool_scalar():
    """NumPy's Python bool becomes a traced np.bool_: returned, or used in np.where; bool() of
    it needs its value while tracing (TracerBoolConversionError, a TypeError)."""
    a = np.array([1.0, 2.0])
    assert jk.jit(np.allclose)(a, a + 1e-9) is np.True_
    assert jk.jit(lambda a: np.where(np.allclose(a, 1.0), 1.0, 2.0))(a) == 2.0
    with pytest.raises(jk.errors.TracerBoolConversionError, match="truth value of a traced array"):
        jk.jit(lambda a: 1.0 if bool(np.allclose(a, a)) else 2.0, autograph=False)(a)


def _branch_on_allclose(a, b):
    if np.allclose(a, b):  # converted by jk.jit into a traced conditional
        return a * 2
    return a + b


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_if_on_allclose_in_converted_code(backend):
    a = np.array([1.0, 2.0])
    check(_branch_on_allclose, a, a + 1e-9, backend=backend)
    check(_branch_on_allclose, a, a + 1.0, backend=backend)


def test_isclose_nonfinite_tolerance_warns_as_numpy():
    with pytest.warns(RuntimeWarning, match="One of rtol or atol is not valid"):
        jk.jit(lambda a: np.isclose(a, a, atol=np.inf))(np.ones(2))


# ----------------------------------------------------------------------------- array_equal, array_equiv

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
@pytest.mark.parametrize("fn", [
    lambda a, b: np.array_equal(a, b),
    lambda a, b: np.array_equal(a, b, equal_nan=True),
    lambda a, b: np.array_equal(a, a, equal_nan=True),   # the same array: True, NaNs included
    lambda a, b: np.array_equal(a, a.copy()),
    lambda a, b: np.array_equal(a, a.copy(), equal_nan=True),
    lambda a, b: np.array_equal(a, b[:3]),               # shapes differ: False at trace time
    lambda a, b: np.array_equal(a, [1, 2]),
    lambda a, b: np.array_equiv(a, b),
    lambda a, b: np.array_equiv(a[:1], a),               # broadcasts
    lambda a, b: np.array_equiv(a, b[:3]),               # does not broadcast: False
    lambda a, b: np.array_equiv(a[:2], [a[0], a[1]]),
], ids=["equal", "equal_nan", "self-nan", "copy", "copy-nan", "shapes", "list", "equiv", "equiv-bcast",
        "equiv-no-bcast", "equiv-list"])
def test_array_equal_equiv(backend, dtype, fn):
    a, b = _pair(dtype, "equal")
    check(fn, a, b, backend=backend)
    check(fn, a, a.copy(), backend=backend)


# ----------------------------------------------------------------------------- isposinf, isneginf, fix

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_isposinf_isneginf_fix(backend, dtype):
    a, _ = _pair(dtype, "sign")
    check(lambda x: (np.isposinf(x), np.isneginf(x), np.fix(x * 1.5 if x.dtype.kind == "f" else x)), a,
          backend=backend)
    check(lambda x: (np.isposinf(x[0]), np.fix(x[1]), np.fix(2.5), np.isneginf(-np.inf)), a, backend=backend)


def test_fix_and_isposinf_into_out():
    def f(x, o, b):
        np.fix(x * 1.5, out=o)
        np.isposinf(x, out=b)
        return o, b
    x = SPECIAL
    got, expected = jk.jit(f)(x, np.zeros(x.size), np.zeros(x.size, bool)), f(x, np.zeros(x.size), np.zeros(x.size, bool))
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_isposinf_of_complex_is_numpys_type_error():
    z = np.array([1 + 1j, np.inf])
    with pytest.raises(TypeError) as numpy_error:
        np.isposinf(z)
    with pytest.raises(builtin_type(numpy_error.value), match="ambiguous"):
        jk.jit(lambda x: np.isposinf(x + 1j))(np.ones(2))


def test_fix_derivative_is_zero():
    np.testing.assert_array_equal(jk.grad(lambda x: np.fix(x).sum())(np.array([1.5, -2.5])), [0.0, 0.0])


def test_vmap():
    a, b = np.array([[1.0, np.nan], [np.inf, 2.0]]), np.array([[1.0, np.nan], [np.inf, 2.5]])
    np.testing.assert_array_equal(jk.vmap(lambda x, y: np.isclose(x, y, equal_nan=True))(a, b),
                                  np.isclose(a, b, equal_nan=True))
    np.testing.assert_array_equal(jk.vmap(np.array_equal)(a, b), [False, False])
    np.testing.assert_array_equal(jk.vmap(lambda x, y: np.array_equal(x, y, equal_nan=True))(a, b), [True, False])
    np.testing.assert_array_equal(jk.vmap(np.isneginf)(-a), np.isneginf(-a))


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_the_emulated_gpu(backend):
    a, b = _pair(np.float32, "gpu")
    check(lambda a, b: (np.isclose(a, b, equal_nan=True), np.allclose(a, b), np.array_equal(a, b, equal_nan=True),
                        np.isposinf(a), np.fix(a)), a, b, backend=backend)
