"""np.resize, np.rollaxis and np.matrix_transpose inside jit: NumPy's shapes, values, views
and errors; derivatives and vmap."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import ALL_DTYPES, HOST_BACKENDS, check, rng_for, sample

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))


@SETTINGS
@given(shape=st.sampled_from([(), (1,), (4,), (2, 3), (0, 3)]), dtype=st.sampled_from(ALL_DTYPES),
       new_shape=st.sampled_from([0, 5, (2, 2), (3, 5), (1, 0, 2), (2, -1), (7,), ()]),
       backend=st.sampled_from(HOST_BACKENDS))
def test_resize_matches_numpy(shape, dtype, new_shape, backend):
    check(lambda a: np.resize(a, new_shape), sample(rng_for("resize", shape, dtype.name), dtype, shape), backend=backend)


@SETTINGS
@given(ndim=st.integers(1, 4), axis=st.integers(-5, 4), start=st.integers(-6, 6), dtype=st.sampled_from(ALL_DTYPES),
       backend=st.sampled_from(HOST_BACKENDS))
def test_rollaxis_matches_numpy(ndim, axis, start, dtype, backend):
    shape = (2, 3, 4, 1)[:ndim]
    check(lambda a: np.rollaxis(a, axis, start), sample(rng_for("rollaxis", ndim), dtype, shape), backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [lambda a: np.matrix_transpose(a), lambda a: np.matrix_transpose(a[0]),
                                lambda a: np.matrix_transpose(a[0, 0]), lambda a: np.linalg.matrix_transpose(a)],
                         ids=["3d", "2d", "1d", "linalg"])
def test_matrix_transpose(fn, backend):
    check(fn, sample(rng_for("matrix_transpose"), np.float32, (2, 3, 4)), backend=backend)


def test_views_write_through():
    """rollaxis and matrix_transpose are views, as in NumPy: a write reaches the array."""
    def f(a):
        b = a.copy()
        np.rollaxis(b, 1)[0, 0] = -1.0
        np.matrix_transpose(b)[1, 0] = -2.0
        return b
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(jk.jit(f)(a), f(a))


def test_derivatives_and_vmap():
    a = np.arange(1.0, 7.0)
    # resize to 10 repeats a[0..3] twice: gradient 2 there, 1 elsewhere
    np.testing.assert_array_equal(jk.grad(lambda x: np.resize(x, (2, 5)).sum())(a), [2, 2, 2, 2, 1, 1])
    m = np.arange(24.0).reshape(2, 3, 4)
    f = lambda x: np.rollaxis(x, 2) * np.matrix_transpose(x).sum()  # noqa: E731
    np.testing.assert_allclose(jk.jacfwd(f)(m), jk.jacrev(f)(m), rtol=1e-12)
    np.testing.assert_array_equal(jk.vmap(lambda x: np.resize(x, 4))(m[0]), np.stack([np.resize(r, 4) for r in m[0]]))
    np.testing.assert_array_equal(jk.vmap(np.matrix_transpose)(m), np.matrix_transpose(m))


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_cuda_emulator(backend):
    check(lambda a: np.resize(a, (3, 5)) + np.rollaxis(a[None], 1).sum(), np.arange(6.0, dtype=np.float32),
          backend=backend)


@pytest.mark.parametrize("fn", [lambda a: np.resize(a, 5), lambda a: np.rollaxis(a, 1), lambda a: np.matrix_transpose(a)],
                         ids=["resize", "rollaxis", "matrix_transpose"])
def test_byte_order_as_numpy(fn):
    """resize makes a native-order array; rollaxis and matrix_transpose are views ('>f8' stays)."""
    a = np.arange(6.0).reshape(2, 3).astype(">f8")
    got, want = jk.jit(fn)(a), fn(a)
    assert got.dtype.str == want.dtype.str
    np.testing.assert_array_equal(got, want)
