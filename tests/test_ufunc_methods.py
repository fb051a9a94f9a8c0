"""Every ufunc's reduce / accumulate / reduceat / outer / at inside jk.jit, primitive and composed
(logaddexp, gcd, ldexp, ... are written over other primitives): NumPy's values and dtypes, its
errors, derivatives of add.reduceat and of composed reductions, vmap."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.errors import UnsupportedOperationError

from helpers import HOST_BACKENDS

BINARY = sorted(n for n in dir(np) if isinstance(getattr(np, n), np.ufunc) and getattr(np, n).__name__ == n
                and getattr(np, n).nin == 2 and getattr(np, n).nout == 1 and getattr(np, n).signature is None)
UNARY = sorted(n for n in dir(np) if isinstance(getattr(np, n), np.ufunc) and getattr(np, n).__name__ == n
               and getattr(np, n).nin == 1 and getattr(np, n).nout == 1 and n != "isnat")

SAMPLES = {
    "float64": np.array([[0.5, -1.25, 3.0, 0.0], [2.0, 0.75, -0.5, 4.0], [1.5, 2.5, -3.0, 0.25]]),
    "int64": np.array([[6, -4, 9, 0], [12, 3, -8, 5], [7, 2, 15, 1]]),
    "bool": np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]]),
}


def _numpy(fn, *args):
    """NumPy's answer, or the exception type it raises (warnings silenced: jitkernel's values are
    NumPy's, its warnings are not the point here)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - NumPy's verdict is the reference
            return e


def _check(got_fn, want, backend):
    if isinstance(want, Exception):
        with pytest.raises(Exception) as info:
            got_fn()
        assert isinstance(info.value, type(want)), (info.value, want)  # NumPy's exception type
        return
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = got_fn()
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


METHODS = {
    "reduce": lambda uf, x: uf.reduce(x, axis=0),
    "reduce_axis1_keepdims": lambda uf, x: uf.reduce(x, axis=1, keepdims=True),
    "accumulate": lambda uf, x: uf.accumulate(x, axis=1),
    "reduceat": lambda uf, x: uf.reduceat(x, [0, 2, 1, 3], axis=1),
    "reduceat_axis0": lambda uf, x: uf.reduceat(x, [2, 0], axis=0),
    "outer": lambda uf, x: uf.outer(x[0], x[1, :3]),
}


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("name", BINARY)
def test_binary_ufunc_methods_match_numpy(name, method, backend):
    uf, run = getattr(np, name), METHODS[method]
    for dtype, x in SAMPLES.items():
        want = _numpy(run, uf, x)
        _check(lambda: jk.jit(lambda x: run(uf, x), backend=backend)(x), want, backend)


def _at_binary(uf, x, values):
    y = x.copy()
    uf.at(y, [0, 2, 0, 3, 0], values)
    return y


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("name", BINARY)
def test_binary_ufunc_at_applies_repeated_indices_in_order(name, backend):
    uf = getattr(np, name)
    for dtype, x in SAMPLES.items():
        row, values = x[0].copy(), x[1, [0, 1, 2, 3, 1]]
        want = _numpy(_at_binary, uf, row, values)
        _check(lambda: jk.jit(lambda r, v: _at_binary(uf, r, v), backend=backend)(row, values), want, backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_ufunc_at(name, backend):
    uf = getattr(np, name)

    def at(x):
        y = x.copy()
        uf.at(y, [1, 1, 3])
        return y
    for dtype, x in SAMPLES.items():
        row = x[0].copy()
        _check(lambda: jk.jit(at, backend=backend)(row), _numpy(at, row), backend)


# ----------------------------------------------------------------------------- reduceat


@st.composite
def reduceat_cases(draw):
    ndim = draw(st.integers(1, 2))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    axis = draw(st.integers(-ndim, ndim - 1))
    n = shape[axis]
    indices = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=6))
    name = draw(st.sampled_from(["add", "multiply", "maximum", "fmin", "logaddexp", "subtract", "gcd", "bitwise_xor"]))
    integer = name in ("gcd", "bitwise_xor")
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    x = rng.integers(-20, 20, shape) if integer else rng.standard_normal(shape)
    traced = draw(st.booleans())
    return name, x, indices, axis, traced


@settings(max_examples=60, deadline=None)
@given(reduceat_cases())
def test_reduceat_matches_numpy(case):
    """Constant and traced indices, any order (indices[i] >= indices[i+1] reads a[indices[i]]),
    either axis: NumPy's method, bit for bit."""
    name, x, indices, axis, traced = case
    uf = getattr(np, name)
    want = uf.reduceat(x, indices, axis=axis)
    if traced:
        got = jk.jit(lambda x, i: uf.reduceat(x, i, axis=axis))(x, np.asarray(indices))
    else:
        got = jk.jit(lambda x: uf.reduceat(x, indices, axis=axis))(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_reduceat_index_out_of_bounds_raises_numpys_error():
    x = np.arange(5.0)
    with pytest.raises(IndexError, match="out-of-bounds"):
        jk.jit(lambda x: np.add.reduceat(x, [0, 7]))(x)  # constant: at trace time
    f = jk.jit(lambda x, i: np.add.reduceat(x, i))
    with pytest.raises(IndexError, match="out-of-bounds"):
        f(x, np.array([0, 7]))  # traced: when the step runs
    with pytest.raises(IndexError, match="out-of-bounds"):
        f(x, np.array([-1]))
    np.testing.assert_array_equal(f(x, np.array([1, 3])), np.add.reduceat(x, [1, 3]))


def test_reduceat_dtype_and_errors():
    x8 = np.arange(6, dtype=np.int8)
    assert jk.jit(lambda x: np.add.reduceat(x, [0, 3]))(x8).dtype == np.add.reduceat(x8, [0, 3]).dtype
    assert jk.jit(lambda x: np.add.reduceat(x, [0, 3], dtype=np.float32))(x8).dtype == np.float32
    with pytest.raises(ValueError, match="binary"):
        jk.jit(lambda x: np.sin.reduceat(x, [0]))(np.ones(3))
    with pytest.raises(TypeError, match="scalar"):
        jk.jit(lambda x: np.add.reduceat(x.sum(), [0]))(np.ones(3))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 7), min_size=1, max_size=5), st.booleans())
def test_grad_of_add_reduceat(indices, traced):
    """add.reduceat is linear: its transpose sums each segment's cotangent into the segment's
    elements; jacfwd and jacrev agree with each other and with the dense segment matrix."""
    x = np.linspace(-1.0, 2.0, 8)
    idx = np.asarray(indices)
    segments = np.zeros((len(indices), 8))
    for i, lo in enumerate(indices):
        hi = indices[i + 1] if i + 1 < len(indices) else 8
        segments[i, lo:hi if lo < hi else lo + 1] = 1.0
    if traced:
        def f(x):
            return jk.jit(lambda x, i: np.add.reduceat(np.sin(x), i))(x, idx)
    else:
        def f(x):
            return np.add.reduceat(np.sin(x), indices)
    expected = segments * np.cos(x)
    np.testing.assert_allclose(jk.jacfwd(f)(x), expected, rtol=1e-13)
    np.testing.assert_allclose(jk.jacrev(f)(x), expected, rtol=1e-13)


def test_derivatives_of_other_reduceats_are_refused():
    with pytest.raises(UnsupportedOperationError, match="maximum.reduceat"):
        jk.grad(lambda x: np.maximum.reduceat(x, [0, 2]).sum())(np.arange(4.0))


def test_vmap_of_reduceat():
    X = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(jk.vmap(lambda r: np.add.reduceat(r, [0, 2, 1]))(X),
                                  np.add.reduceat(X, [0, 2, 1], axis=1))
    with pytest.raises(UnsupportedOperationError, match="batched indices"):
        jk.vmap(lambda r, i: np.add.reduceat(r, i))(X, np.array([[0, 1], [0, 2], [1, 3]]))


# ----------------------------------------------------------------------------- composed ufuncs' reductions


def test_grad_of_composed_reduce_and_accumulate():
    """logaddexp.reduce/accumulate run NumPy's method forward; differentiated, they are a scan of
    jitkernel's logaddexp (its derivative: the softmax weights)."""
    x = np.array([0.3, -1.2, 2.0, 0.7])
    lse = np.logaddexp.reduce(x)
    np.testing.assert_allclose(jk.grad(lambda x: np.logaddexp.reduce(x))(x), np.exp(x - lse), rtol=1e-13)
    acc = np.logaddexp.accumulate(x)
    expected = np.tril(np.exp(x[None, :] - acc[:, None]))
    np.testing.assert_allclose(jk.jacrev(lambda x: np.logaddexp.accumulate(x))(x), expected, rtol=1e-12)
    np.testing.assert_allclose(jk.jacfwd(lambda x: np.logaddexp.accumulate(x))(x), expected, rtol=1e-12)


def test_composed_accumulate_is_refused_on_the_gpu_renderer():
    with pytest.raises(UnsupportedOperationError, match="composes"):
        jk.jit(lambda x: np.logaddexp.accumulate(x), backend="cuda-emulator")(np.arange(4.0))


def test_isnat_raises_numpys_type_error():
    with pytest.raises(TypeError, match="only defined for np.datetime64"):
        jk.jit(lambda x: np.isnat(x))(np.ones(2))
