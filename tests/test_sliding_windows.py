"""np.lib.stride_tricks.sliding_window_view inside jit: NumPy 2.4's windows (values, dtype,
shape) for every window_shape/axis form, NumPy's errors, read-only results (writes raise
NumPy's ValueError), derivatives (jacfwd == jacrev), vmap and the emulated GPU. as_strided:
tests/test_as_strided.py."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from numpy.lib.stride_tricks import sliding_window_view as swv

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import ALL_DTYPES, HOST_BACKENDS, assert_jacobians_match, check, rng_for, sample

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
X = np.arange(24.0).reshape(4, 6)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("window,axis", [
    ((2, 3), None), (3, 1), (2, 0), (2, -1), ((2, 2), (1, 1)), ((1, 3), (0, 1)), ((3, 2), (1, 0)),
    (6, 1), (0, 1), (1, 0), (4, 0), ([2], [1]),
], ids=repr)
def test_windows(backend, window, axis):
    check(lambda x: swv(x, window, axis), X, backend=backend)
    check(lambda x: swv(x, window, axis).sum(axis=-1) * 2, X, backend=backend)  # a consumer


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_dtypes(backend, dtype):
    x = sample(rng_for("windows", dtype), dtype, (3, 5))
    check(lambda x: swv(x, (2, 3)), x, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("window,axis", [
    (3, None), ((2,), None), (7, 1), (-1, 0), ((2, 2), 0), (2, 2), ((5, 1), None),
], ids=repr)
def test_errors_are_numpys(backend, window, axis):
    check(lambda x: swv(x, window, axis), X, backend=backend)


def test_results_are_read_only():
    for write in (lambda v: v.__setitem__((0, 0, 0), 5.0), lambda v: v.__iadd__(1.0),
                  lambda v: np.add(v, 1.0, out=v), lambda v: v[1].fill(0.0)):
        with pytest.raises(ValueError, match="read-only") as numpy_error:
            write(swv(X, 3, 1))  # NumPy's own behaviour and message
        # (ufunc out=: NumPy says 'output array is read-only', jitkernel's check for every
        # write into a broadcast says 'assignment destination is read-only')
        with pytest.raises(type(numpy_error.value), match="read-only"):
            jk.jit(lambda x: write(swv(x, 3, 1)))(X)

    def copy_then_write(x):
        y = swv(x, 3, 1).copy()
        y[0, 0, 0] = -1.0
        return y
    check(copy_then_write, X, backend="cpu")
    with pytest.raises(jk.errors.UnsupportedOperationError, match="writeable=True"):
        jk.jit(lambda x: swv(x, 3, writeable=True))(X[0])


def test_a_write_into_the_source_after_taking_windows_raises():
    def f(x):
        w = swv(x, 3)
        x[1] = -1.0  # NumPy's windows are a view: they see this write; a copy would not
        return w.sum(-1)
    with pytest.raises(jk.errors.UnsupportedOperationError, match="after np.lib.stride_tricks.sliding_window_view"):
        jk.jit(f)(X[0].copy())


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@SETTINGS
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data())
def test_matches_numpy(backend, shape, data):
    x = sample(rng_for("swv", shape), np.float32, tuple(shape))
    axes = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=3))
    window = tuple(data.draw(st.integers(0, shape[a])) for a in axes)
    check(lambda x: swv(x, window, axes), x, backend=backend)


def test_grad_and_vmap():
    v = np.linspace(-1.0, 2.0, 6)
    f = lambda x: (swv(x * x, 3) * np.array([1.0, -2.0, 0.5])).sum(-1)  # noqa: E731 (a 1-d convolution)
    assert_jacobians_match(f, v)
    rows = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(jk.vmap(lambda r: swv(r, 2))(rows), swv(rows, 2, axis=1))


@pytest.mark.parametrize("backend", emulator_backends())
def test_emulated_gpu(backend):
    check(lambda x: swv(x, (2, 3)).mean(axis=(-2, -1)), X, backend=backend)
    check(lambda x: swv(x, 3, 1), X.astype(np.int32), backend=backend)
