"""Result types follow NumPy 2: NumPy results are strong (not weak) types, power's dtype,
clip without bounds, full_like's fill conversion, 0-d results are NumPy scalars."""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import assert_matches_numpy, call_on_copies

TPU_SUITE = True  # the backend tests run on tpu-interpret too (tests/tpu_suite.py)


SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


_FUNCTIONS = {
    "where": lambda x, s1, s2: np.where(x > 0, s1, s2) * x,
    "where_plus": lambda x, s1, s2: np.where(x > 0, s1, s2) + x,
    "clip": lambda x, s1, s2: np.clip(s1, s2, s2 + 5) + x,
    "maximum": lambda x, s1, s2: np.maximum(s1, s2) + x,
    "add": lambda x, s1, s2: np.add(s1, s2) + x,
    "sin": lambda x, s1, s2: np.sin(s1) + x,
    "asarray": lambda x, s1, s2: np.asarray(s1) + x,
    "reshape": lambda x, s1, s2: np.reshape(s1, (1,)) + x,
    "broadcast_to": lambda x, s1, s2: np.broadcast_to(s1, (2,)) + x,
    "stack": lambda x, s1, s2: np.stack([s1, s2]) + x,
    "concatenate": lambda x, s1, s2: np.concatenate([np.atleast_1d(s1), np.atleast_1d(s2)]) + x,
    "sum": lambda x, s1, s2: np.sum(s1) + x,
    "full_like": lambda x, s1, s2: np.full_like(x, s1) + s2,
    "operator": lambda x, s1, s2: (s1 + s2) + x,    # Python operators on Python scalars stay weak
}


@SETTINGS
@given(name=st.sampled_from(sorted(_FUNCTIONS)), kinds=st.sampled_from([(int, int), (float, float), (int, float),
                                                                        (bool, bool), (bool, int)]),
       dtype=st.sampled_from(["int8", "uint8", "int16", "float16", "float32", "float64", "bool"]),
       as_args=st.booleans())
def test_numpy_results_are_strong(name, kinds, dtype, as_args):
    fn = _FUNCTIONS[name]
    if name == "asarray" and as_args:
        as_args = False  # NumPy's own np.asarray() cannot take a traced value (no dispatch protocol)
    s1, s2 = kinds[0](1), kinds[1](2)
    x = np.array([2, 0], dtype)
    expected = call_on_copies(fn, x, s1, s2)
    if as_args:
        got = call_on_copies(jk.jit(fn, backend="interpret"), x, s1, s2)
    else:
        got = call_on_copies(jk.jit(lambda x: fn(x, s1, s2), backend="interpret"), x)
    if expected[0] == "raise":
        assert got[0] == "raise" and isinstance(got[1], type(expected[1])), (expected, got)
        return
    assert got[0] == "ok", got[1]
    assert_matches_numpy(got[1], expected[1])


def test_reported_where_examples(backend):
    x = np.array([2, -1], np.int8)
    assert_matches_numpy(jk.jit(lambda x: np.where(x > 0, 100, 2) * x, backend=backend)(x),
                         np.where(x > 0, 100, 2) * x)
    y = np.array([1, -1], np.float32)
    assert jk.jit(lambda x: np.where(x > 0, 1, 2) + x, backend=backend)(y).dtype == np.float64


def test_python_bool_arithmetic_is_python_arithmetic():
    assert jk.jit(lambda a, b: a + b)(True, True) == 2
    assert jk.jit(lambda a, x: (a - a) + x)(True, np.int8(3)).dtype == np.int8


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int64", "float16", "float32"])
@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 0.5, 2.0, True])
def test_power_operator_dtype_matches_numpy(dtype, exponent, backend):
    x = np.array([1, 0, 1], dtype)
    expected = call_on_copies(lambda x: x ** exponent, x)
    got = call_on_copies(jk.jit(lambda x: x ** exponent, backend=backend), x)
    if expected[0] == "raise":
        assert got[0] == "raise" and isinstance(got[1], type(expected[1]))
    else:
        assert_matches_numpy(got[1], expected[1])
    s = call_on_copies(lambda x: x.sum() ** exponent, x)
    assert_matches_numpy(jk.jit(lambda x: x.sum() ** exponent, backend=backend)(x), s[1])


def test_clip_without_bounds_returns_a_copy(backend):
    x = np.arange(4.0)
    for fn in (lambda x: np.clip(x), lambda x: np.clip(x, None, None), lambda x: x.clip()):
        assert_matches_numpy(jk.jit(fn, backend=backend)(x), fn(x))


@pytest.mark.parametrize("fill", [np.nan, np.inf, -1, 300, 300.5, -0.0, True, 2**63, np.float32(1e10)])
@pytest.mark.parametrize("dtype", [np.uint16, np.int8, np.int64, np.float16, np.bool_])
def test_full_like_converts_a_static_fill_as_numpy_does(fill, dtype, backend):
    # np.full's copyto(casting="unsafe"): NaN and out-of-range floats become whatever NumPy
    # makes of them; out-of-range Python ints raise NumPy's OverflowError.
    a = np.array([6, 5], dtype)
    with np.errstate(all="ignore"):
        try:
            want = np.full_like(a, fill)
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            with pytest.raises(type(e)):
                jk.jit(np.full_like, static_argnums=1, backend=backend)(a, fill)
            return
        got = jk.jit(np.full_like, static_argnums=1, backend=backend)(a, fill)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


_ZERO_D_FUNCTIONS = [lambda a: a, lambda a: a.copy(), lambda a: a.reshape(()), lambda a: a[...],
                     lambda a: a + 1, lambda a: a.sum(), lambda a: (a, a * 2), lambda a: a.T,
                     lambda a: np.abs(a), lambda a: np.sum(a, keepdims=True)]


@pytest.mark.parametrize("k", range(len(_ZERO_D_FUNCTIONS)))
@pytest.mark.parametrize("x", [np.array(0.5, ">f8"), np.array(3, np.int16), np.array([1.5], ">f4"),
                               np.array(-0.0, np.float32), np.array(True)], ids=repr)
def test_zero_d_results_are_numpy_scalars(k, x, backend):
    # Every 0-d result is a NumPy scalar of NumPy's value and dtype (native byte order; NumPy
    # returns some of these as 0-d arrays: docs/numpy-support.md, "0-d results").
    f = _ZERO_D_FUNCTIONS[k]
    want, got = f(x), jk.jit(f, backend=backend)(x)
    for w, g in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
        w = np.asarray(w)
        assert g.shape == w.shape
        if w.ndim == 0:
            assert isinstance(g, np.generic) and g.dtype == w.dtype.newbyteorder("=")
        else:
            assert type(g) is np.ndarray and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
        assert np.signbit(np.asarray(g, np.float64)).tolist() == np.signbit(np.asarray(w, np.float64)).tolist()
