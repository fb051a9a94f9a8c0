"""`x.shape = ...` inside jk.jit: an array the function made changes shape in place as NumPy's
does (NPBench's mandelbrot2 flattens its grids this way); arguments and arrays with views stay
refused with a message, since their other holders would see the old shape."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.errors import UnsupportedOperationError

from helpers import HOST_BACKENDS


@st.composite
def reshapes(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    size = math.prod(shape)
    divisors = [d for d in range(1, size + 1) if size % d == 0]
    first = draw(st.sampled_from(divisors))
    target = draw(st.sampled_from([(size,), (first, size // first), (first, -1), (-1,), size, (1, size, 1)]))
    return shape, target


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@settings(max_examples=25, deadline=None)
@given(reshapes())
def test_shape_assignment_of_a_fresh_array_matches_numpy(backend, case):
    shape, target = case

    def f(x):
        y = x * 2.0 + 1.0
        y.shape = target
        return y, y.sum(axis=0)

    x = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    got, want = jk.jit(f, backend=backend)(x), f(x.copy())
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_mandelbrot_style_flattening_and_grad():
    def grid(xmin, xmax):
        X = np.linspace(xmin, xmax, 3)[np.mgrid[0:3, 0:2][0]]
        C = X + X * 1j
        C.shape = 6
        return np.abs(C).sum()
    np.testing.assert_allclose(jk.jit(grid)(-1.0, 2.0), grid(-1.0, 2.0))
    g = jk.grad(lambda x: (lambda y: (setattr(y, "shape", (2, 3)), y.sum(axis=0) @ np.arange(3.0))[1])(x * x))
    np.testing.assert_allclose(g(np.arange(6.0)), 2 * np.arange(6.0) * np.tile(np.arange(3.0), 2))


def test_size_mismatch_is_numpys_value_error():
    def f(x):
        y = x * 2
        y.shape = (4,)
        return y
    with pytest.raises(ValueError, match="cannot reshape array of size 6 into shape"):
        jk.jit(f)(np.arange(6.0))


@pytest.mark.parametrize("make, what", [
    (lambda x: x, "an argument"),
    (lambda x: (lambda y: (y[1:], y)[1])(x * 2), "views or writes"),
    (lambda x: (lambda y: (y.__setitem__(0, 5.0), y)[1])(x * 2), "views or writes"),
])
def test_arguments_and_arrays_with_views_are_refused(make, what):
    def f(x):
        y = make(x)
        y.shape = (2, 3)
        return y
    with pytest.raises(UnsupportedOperationError, match=what):
        jk.jit(f)(np.arange(6.0))
