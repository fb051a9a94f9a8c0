"""np.lib.stride_tricks.as_strided inside jit (numpy/_stride_tricks.py, trace/strided.py): static
shape and byte strides of a C-contiguous traced array give NumPy's values, dtype and shape (a
gather, a copy); writeable=False is read-only as NumPy's view; writes that NumPy would make
through a view (into a writeable result, or into the source after the call) raise; strides that
are not multiples of the item size, reads outside the array and non-contiguous sources raise."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from numpy.lib.stride_tricks import as_strided

import jitkernel as jk
from jitkernel.errors import UnsupportedOperationError
from helpers import ALL_DTYPES, HOST_BACKENDS, assert_jacobians_match, check, rng_for, sample

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
X = np.arange(12.0)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("shape,strides", [
    ((4, 3), (16, 8)), ((3, 3), (0, 8)), ((2, 2, 2), (48, 24, 8)), ((12,), (8,)), ((6,), (16,)),
    ((0, 3), (8, 8)), ((3, 0), (8, 8)), ((), ()), ((5, 4), (8, 8)), ((1,), (-8,)),
], ids=repr)
def test_windows_and_broadcasts(backend, shape, strides):
    check(lambda x: np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False), X[::-1].copy(),
          backend=backend)
    if shape and 0 not in shape:
        check(lambda x: np.lib.stride_tricks.as_strided(x, shape, strides).sum(axis=-1) * 2, X, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_dtypes(backend, dtype):
    x = sample(rng_for("as_strided", dtype), dtype, (3, 4))
    n = np.dtype(dtype).itemsize
    check(lambda x: np.lib.stride_tricks.as_strided(x, (3, 3), (4 * n, n)), x, backend=backend)
    check(lambda x: np.lib.stride_tricks.as_strided(x), x, backend=backend)  # shape and strides default to x's


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@SETTINGS
@given(n=st.integers(0, 9), ndim=st.integers(1, 3), dtype=st.sampled_from([np.int64, np.float32, np.bool_, np.uint8]),
       data=st.data())
def test_matches_numpy(backend, n, ndim, dtype, data):
    x = sample(rng_for("as_strided_h", (n, ndim)), dtype, (n,))
    shape = tuple(data.draw(st.integers(0, 4)) for _ in range(ndim))
    steps = tuple(data.draw(st.integers(0, 3)) for _ in range(ndim))
    reach = sum((k - 1) * s for k, s in zip(shape, steps)) if all(shape) else -1
    if reach >= n:  # NumPy would read outside x (undefined values): refused, tested below
        return
    strides = tuple(s * x.itemsize for s in steps)
    check(lambda x: np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False), x, backend=backend)


def test_read_only_and_writeable_results():
    def write_read_only(x):
        v = np.lib.stride_tricks.as_strided(x, (3, 3), (8, 8), writeable=False)
        v[0, 0] = 5.0
        return v
    with pytest.raises(ValueError, match="read-only"):
        write_read_only(X.copy())  # NumPy's own behaviour
    with pytest.raises(ValueError, match="read-only"):
        jk.jit(write_read_only)(X)

    def write_overlapping(x):
        v = np.lib.stride_tricks.as_strided(x, (3, 3), (8, 8))  # writeable=True: rows share elements
        v[0, 1] += 1.0
        return v
    with pytest.raises(UnsupportedOperationError, match="writes through to the original array"):
        jk.jit(write_overlapping)(X)

    def write_source_after(x):
        v = np.lib.stride_tricks.as_strided(x, (3, 3), (8, 8), writeable=False)
        x[1] = -1.0  # NumPy's view sees it; a copy would not
        return v
    with pytest.raises(UnsupportedOperationError, match="after np.lib.stride_tricks.as_strided"):
        jk.jit(write_source_after)(X.copy())

    def write_before_and_copy(x):
        x[0] = 7.0
        y = np.lib.stride_tricks.as_strided(x, (3, 3), (8, 8)).copy()
        y[0, 0] = -1.0
        return y
    check(write_before_and_copy, X.copy(), backend="cpu")


@pytest.mark.parametrize("fn,match", [
    (lambda x: np.lib.stride_tricks.as_strided(x, (3,), (4,)), "multiples of the item size"),
    (lambda x: np.lib.stride_tricks.as_strided(x, (13,), (8,)), "outside the array"),
    (lambda x: np.lib.stride_tricks.as_strided(x, (2,), (-8,)), "outside the array"),
    (lambda x: np.lib.stride_tricks.as_strided(x.reshape(3, 4).T, (2,), (8,)), "not C-contiguous"),
    (lambda x: np.lib.stride_tricks.as_strided(x[x > 3], (2,), (8,)), "data-dependent"),
    (lambda x: np.lib.stride_tricks.as_strided(x, (x.shape[0] // 2,), (x[0].astype(int),)), "traced strides"),
], ids=["bytes", "past-the-end", "before-the-start", "transposed", "selection", "traced-strides"])
def test_refusals_say_why(fn, match):
    with pytest.raises(UnsupportedOperationError, match=match):
        jk.jit(fn)(X)


def test_numpys_argument_errors():
    with pytest.raises(ValueError, match="mismatch"):
        jk.jit(lambda x: np.lib.stride_tricks.as_strided(x, (2, 2), (8,)))(X)


def test_other_spellings_in_converted_code():
    def f(x):
        return as_strided(x, (4, 3), (24, 8), writeable=False).max(axis=1)
    np.testing.assert_array_equal(jk.jit(f)(X), f(X))


def test_grad_and_vmap():
    v = np.linspace(-1.0, 2.0, 6)
    f = lambda x: (np.lib.stride_tricks.as_strided(x * x, (4, 3), (8, 8), writeable=False)  # noqa: E731
                   * np.array([1.0, -2.0, 0.5])).sum(-1)
    assert_jacobians_match(f, v)
    rows = np.arange(12.0).reshape(3, 4)
    g = lambda r: np.lib.stride_tricks.as_strided(r, (3, 2), (8, 8), writeable=False)  # noqa: E731
    np.testing.assert_array_equal(jk.vmap(g)(rows), np.stack([g(r) for r in rows]))


def test_numpys_function_is_restored_after_tracing():
    original = np.lib.stride_tricks.as_strided
    jk.jit(lambda x: np.lib.stride_tricks.as_strided(x, (2,), (8,)))(X)
    assert np.lib.stride_tricks.as_strided is original
    view = np.lib.stride_tricks.as_strided(X, (2, 2), (8, 8))  # NumPy's own: a view of X
    assert np.shares_memory(view, X)
