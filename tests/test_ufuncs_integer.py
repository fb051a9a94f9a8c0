"""np.gcd, np.lcm and np.bitwise_count inside jit: NumPy's loop dtypes, its errors, and its
bits on every integer dtype (minimum values, zeros and wrapping products included)."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, INT_DTYPES, builtin_type, check, full_range, rng_for

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
SIZE = 8  # one array length: each dtype combination compiles once


def _extremes(dtype: np.dtype) -> list[int]:
    info = np.iinfo(dtype)
    values = {info.min, info.min + 1, info.min // 2, 0, 1, 2, 3, 6, 12, info.max // 2, info.max - 1, info.max}
    if info.min < 0:
        values |= {-1, -2, -6}
    return sorted(values)


def _draw_array(data: st.DataObject, dtype: np.dtype) -> np.ndarray:
    values = st.one_of(st.sampled_from(_extremes(dtype)),
                       st.integers(int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)))
    return np.array(data.draw(st.lists(values, min_size=SIZE, max_size=SIZE)), dtype)


def _same(got, want) -> None:
    assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)


@functools.cache
def _jitted(ufunc: np.ufunc, backend: str, *dtypes: np.dtype):
    """One jitted function per ufunc, backend and operand dtypes (compiled once each)."""
    return jk.jit(lambda *args: ufunc(*args), backend=backend)


@SETTINGS
@given(a_dtype=st.sampled_from(INT_DTYPES), b_dtype=st.sampled_from(INT_DTYPES), data=st.data())
def test_gcd_and_lcm_match_numpy_on_every_integer_dtype(a_dtype, b_dtype, data):
    a, b = _draw_array(data, a_dtype), _draw_array(data, b_dtype)
    for ufunc in (np.gcd, np.lcm):
        try:
            want = ufunc(a, b)
        except TypeError:  # uint64 with a signed type: NumPy has no loop
            with pytest.raises(TypeError, match="did not contain a loop"):
                _jitted(ufunc, "cpu", a.dtype, b.dtype)(a, b)
            continue
        for backend in HOST_BACKENDS:
            _same(_jitted(ufunc, backend, a.dtype, b.dtype)(a, b), want)


@SETTINGS
@given(dtype=st.sampled_from(INT_DTYPES + [np.dtype(bool)]), data=st.data())
def test_bitwise_count_matches_numpy_on_every_integer_dtype(dtype, data):
    if dtype.kind == "b":
        a = np.array(data.draw(st.lists(st.booleans(), min_size=SIZE, max_size=SIZE)))
    else:
        a = _draw_array(data, dtype)
    for backend in HOST_BACKENDS:
        _same(_jitted(np.bitwise_count, backend, a.dtype)(a), np.bitwise_count(a))


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_minimum_values_and_zeros(backend, dtype):
    info = np.iinfo(dtype)
    a = np.array([info.min, info.min, info.min, info.min, 0, 0, info.max, info.max, 1], dtype)
    b = np.array([0, 6, info.min, info.max, 0, 5, info.max, info.max - 1, info.min], dtype)
    check(lambda x, y: (np.gcd(x, y), np.lcm(x, y), np.bitwise_count(x), np.bitwise_count(y)), a, b,
          backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_random_full_range_int64(backend):
    rng = rng_for("gcd full range")
    a, b = full_range(rng, np.int64, (200,)), full_range(rng, np.int64, (200,))
    check(lambda x, y: (np.gcd(x, y), np.lcm(x, y), np.bitwise_count(x)), a, b, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda x: np.gcd(x, 6),              # a weak Python int takes x's dtype (NEP 50)
    lambda x: np.lcm(4, x),
    lambda x: np.gcd(x.astype(np.int8), np.uint8(200)),  # int16 loop
    lambda x: np.gcd(x[:, None], x[None, :]),             # broadcasting
    lambda x: np.lcm(x[0], x[1]),                         # 0-d operands
    lambda x: np.bitwise_count(-x),                      # |x|: bitwise_count(-1) == 1
    lambda x: np.bitwise_count(x > 2),                   # bool: NumPy's int8 loop
], ids=["weak-int", "weak-int-left", "mixed-signedness", "broadcast", "zero-d", "negative", "bool"])
def test_operand_forms(backend, fn):
    check(fn, np.arange(-3, 9), backend=backend)


@pytest.mark.parametrize("fn", [
    lambda x: np.gcd(x, 2.0), lambda x: np.lcm(x.astype(np.float32), x), lambda x: np.gcd(x > 0, x > 1),
    lambda x: np.bitwise_count(x.astype(np.float64)), lambda x: np.gcd(x.astype(np.int8), 1000),
    lambda x: np.gcd(x.astype(np.uint64), x),
], ids=["float-scalar", "float32", "bool", "count-float", "out-of-range-int", "uint64-int64"])
def test_numpy_errors(fn):
    x = np.arange(4)
    with pytest.raises(Exception) as numpy_error:
        fn(x)
    with pytest.raises(builtin_type(numpy_error.value)) as ours:
        jk.jit(fn)(x)
    if isinstance(numpy_error.value, TypeError):
        assert str(numpy_error.value).split("(")[0] in str(ours.value)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_out_argument(backend):
    def f(a, b):
        out = np.zeros_like(a)
        np.gcd(a, b, out=out)
        return out
    check(f, np.arange(10, dtype=np.int32), np.int32(12) * np.ones(10, np.int32), backend=backend)


def test_vmap_and_loops():
    a, b = np.array([[4, 6], [9, 3]]), np.array([[2, 4], [6, 0]])
    np.testing.assert_array_equal(jk.vmap(np.gcd)(a, b), np.gcd(a, b))
    body = jk.jit(lambda x: jk.lax.fori_loop(0, 3, lambda i, v: np.lcm(v, i + 2), x))
    np.testing.assert_array_equal(body(np.arange(1, 6)), np.lcm(np.lcm(np.lcm(np.arange(1, 6), 2), 3), 4))


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_the_emulated_gpu(backend):
    rng = rng_for("gcd emulator")
    for dtype in (np.int8, np.uint32, np.int64):
        a, b = full_range(rng, dtype, (16,)), full_range(rng, dtype, (16,))
        check(lambda x, y: (np.gcd(x, y), np.lcm(x, y), np.bitwise_count(x)), a, b, backend=backend)
