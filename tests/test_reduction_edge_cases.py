"""Statistics and empty-axis reductions follow NumPy: mean/var/std divide by NumPy's intp count
(float16 sums of more than 65504 values), a sum over no axes adds to the identity."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import assert_identical

TPU_SUITE = True  # the backend tests run on tpu-interpret too (tests/tpu_suite.py)


FLOAT_TYPES = [np.float16, np.float32, np.float64]


@pytest.mark.parametrize("fn", ["mean", "var", "std"])
def test_float16_statistics_of_more_than_65504_values_follow_numpy(fn, backend):
    # NumPy divides by an intp count in float64: the float16 sum overflows to inf and the
    # result is inf, never inf / float16(300000) = inf / inf = nan.
    a = np.full(300_000, 3.0, np.float16)
    with np.errstate(all="ignore"):
        want = getattr(np, fn)(a)
    assert_identical(jk.jit(lambda x: getattr(np, fn)(x), backend=backend)(a), want)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(dtype=st.sampled_from(FLOAT_TYPES), rows=st.integers(1, 4), cols=st.integers(1, 300),
       axis=st.sampled_from([None, 0, 1, -1]), fn=st.sampled_from(["mean", "var", "std"]),
       ddof=st.sampled_from([0, 1, 0.5]), seed=st.integers(0, 2**16))
def test_statistics_equal_numpy_bit_for_bit(dtype, rows, cols, axis, fn, ddof, seed):
    a = (np.random.default_rng(seed).standard_normal((rows, cols)) * 100).astype(dtype)
    kw = {} if fn == "mean" else {"ddof": ddof}
    with np.errstate(all="ignore"):
        want = getattr(np, fn)(a, axis=axis, **kw)
        got = jk.jit(lambda x: getattr(np, fn)(x, axis=axis, **kw))(a)
    assert_identical(got, want)


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("shape, axis", [((), None), ((), ()), ((1,), ()), ((3, 2), ()), ((2, 9), ())])
@pytest.mark.parametrize("fn", ["sum", "prod", "mean", "max", "min"])
def test_reductions_over_no_axes_keep_numpys_signed_zero(dtype, shape, axis, fn, backend):
    a = np.full(shape, -0.0, dtype)
    assert_identical(jk.jit(lambda x: getattr(np, fn)(x, axis=axis), backend=backend)(a), getattr(np, fn)(a, axis=axis))


def test_reduction_over_no_axes_is_a_new_native_array():
    a = np.array([1.5, -0.0], ">f8")
    got = jk.jit(lambda x: np.max(x, axis=()))(a)
    assert got.dtype == np.max(a, axis=()).dtype and got.dtype.isnative


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([(1, 0), (0,), (0, 3), (3, 0), (2, 0, 3)]), st.integers(-4, 4), st.data())
def test_empty_arrays_through_partition_and_order_statistics(backend, shape, kth, data):
    """The soak's edges family: NumPy checks partition's kth only for an array with elements, and
    reduces median / quantile along one axis of an array whose kept axes are empty (jit raised
    ValueError for both; and percentile of several q over an empty axis raised ValueError where
    NumPy raises IndexError). Result or exception class as NumPy's."""
    from helpers import assert_matches_numpy, outcome
    axis = data.draw(st.one_of(st.integers(-len(shape), len(shape) - 1), st.none()))
    a = np.empty(shape, data.draw(st.sampled_from([np.float64, np.float32, np.int64])))
    q = data.draw(st.sampled_from([0.25, [0.1, 0.5], (0.0, 1.0, 0.5)]))
    method = data.draw(st.sampled_from(["linear", "nearest", "lower", "midpoint"]))
    calls = [lambda a: np.partition(a, kth, axis=axis), lambda a: np.argpartition(a, kth, axis=axis),
             lambda a: np.median(a, axis=axis), lambda a: np.quantile(a, q, axis=axis, method=method),
             lambda a: np.percentile(a, np.multiply(q, 100), axis=axis, method=method)]
    for f in calls:
        want, got = outcome(f, a), outcome(jk.jit(f, backend=backend), a)
        assert got[0] == want[0], (f, shape, axis, want, got)
        if want[0] == "raise":
            assert issubclass(got[1], want[1]), (shape, axis, want, got)
        else:
            assert_matches_numpy(got[1], want[1])  # (the sign of an empty slice's NaN is NumPy's own)
