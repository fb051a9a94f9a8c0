"""`x[mask] = f(a[mask], ...)` as `where(mask, f(a, ...), x)` (passes/masked_updates.py): exact
NumPy results, and the data-dependent steps gone where the rewrite applies."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk


def _datadep_steps(fn, *args) -> int:
    return jk.jit(fn).lower(*args).as_text("kernels").count("datadep")


def _same(got, expected):
    for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)  # NaN positions included
        assert np.array_equal(np.signbit(np.real(g)), np.signbit(np.real(e)))


def mandelbrot(c, maxiter):
    z = np.zeros(c.shape, c.dtype)
    n = np.zeros(c.shape, np.int64)
    for k in range(maxiter):
        i = np.less(abs(z), 2.0)
        n[i] = k
        z[i] = z[i] ** 2 + c[i]
    return z, n


def test_mandelbrot_update_loop_is_native_and_exact():
    x, y = np.linspace(-2, 0.5, 40), np.linspace(-1.2, 1.2, 30)
    c = x + y[:, None] * 1j
    f = jk.jit(mandelbrot)
    assert "datadep" not in f.lower(c, 30).as_text("kernels")
    _same(f(c, 30), mandelbrot(c, 30))


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(st.sampled_from(["float32", "float64", "complex64", "complex128", "int32"]), st.integers(1, 30),
       st.integers(0, 2**16), st.sampled_from(["square", "affine", "scalar", "mixed"]))
def test_random_masked_updates_match_numpy(dtype, n, seed, form):
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal(n) * 4).astype(dtype), (rng.standard_normal(n) * 4).astype(dtype)
    if np.dtype(dtype).kind == "f":
        a[rng.uniform(size=n) < 0.2] = np.nan
        b[rng.uniform(size=n) < 0.2] = -0.0

    def fn(x, y):
        x = x.copy()
        m = x > y if np.dtype(dtype).kind != "c" else abs(x) > abs(y)
        if form == "square":
            x[m] = x[m] * x[m]
        elif form == "affine":
            x[m] = x[m] * 3 - y[m]
        elif form == "scalar":
            x[m] = y[m] + 1
        else:
            x[m] = np.maximum(x[m], y[m]) - x[m] * y[m]
        return x

    with np.errstate(all="ignore"):
        expected = fn(a, b)
        got = jk.jit(fn)(a, b)
    _same(got, expected)
    assert _datadep_steps(fn, a, b) == 0


def test_other_updates_stay_data_dependent_and_exact():
    """A value selected by another mask, or an integer power (it may raise), keeps NumPy's
    data-dependent steps."""
    x = np.arange(-4, 6)

    def other_mask(x):
        x = x.copy()
        x[x > 0] = x[x > 0] * 2  # same mask: rewritten
        y = x.copy()
        y[y > 2] = np.sort(-x[x > 2])  # not elementwise
        z = x.copy()
        z[z > 1] = x[x > 1] - 1  # another mask object, though equal values
        return x, y, z

    _same(jk.jit(other_mask)(x), other_mask(x))

    def int_power(x, p):
        x = x.copy()
        x[x > 0] = x[x > 0] ** p
        return x

    assert _datadep_steps(int_power, x, 2) > 0
    _same(jk.jit(int_power)(x, 2), int_power(x, 2))
    with pytest.raises(ValueError):
        jk.jit(int_power)(x, -1)
