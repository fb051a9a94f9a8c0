"""A small two-way `cond` in a loop as a select (passes/cond_selects.py): NumPy's values
exactly, and the branch gone from the loop body where the rule applies."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk


def _prims(fn, *args) -> str:
    """The optimized program's text (loop bodies included)."""
    return jk.jit(fn).lower(*args).as_text("optimized")


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(st.sampled_from(["float32", "float64", "complex128", "int64"]), st.integers(1, 12),
       st.floats(-3, 3), st.integers(0, 2**16))
def test_small_branches_match_numpy(dtype, n, s, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 3).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[rng.uniform(size=n) < 0.3] = rng.choice([np.nan, -0.0, np.inf])

    def fn(x, s, n):
        y = x * 2
        for i in range(n):
            if s < 0.5 * i:
                y = -y
            else:
                y = y - x
        return y + 1, y

    got, expected = jk.jit(fn)(x, s, 3), fn(x, s, 3)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)
        ok = ~np.isnan(np.real(e))  # zero signs follow NumPy (a NaN's sign bit is no value of NumPy's)
        assert np.array_equal(np.signbit(np.real(g))[ok], np.signbit(np.real(e))[ok])
    assert "cond" not in _prims(fn, x, s, 3) and "fori_loop" in _prims(fn, x, s, 3)


def test_large_or_raising_branches_stay_branches():
    x = np.arange(6)

    def raising(x, p, n):
        for i in range(n):
            if p > i:
                x = x ** p  # integer power: a negative exponent raises
        return x

    assert "cond" in _prims(raising, x, 2, 3)
    np.testing.assert_array_equal(jk.jit(raising)(x, 2, 3), raising(x, 2, 3))

    def large(x, s, n):
        for i in range(n):
            if s > i:
                x = np.sin(x) * 2 + np.cos(x) * 3 - np.exp(-x) / 4 + 1
        return x

    assert "cond" in _prims(large, x * 1.0, 1.0, 3)
    np.testing.assert_allclose(jk.jit(large)(x * 1.0, 1.0, 3), large(x * 1.0, 1.0, 3), rtol=1e-12)

    def outside(x, s):
        if s < 0.5:
            x = -x
        return x

    assert "cond" in _prims(outside, x, 0.1)  # runs once: computing one side is cheaper
