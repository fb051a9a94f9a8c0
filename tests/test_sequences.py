"""np.vander and np.geomspace of traced values inside jit: NumPy's dtypes, shapes and values
(vander's products column by column, geomspace's exact end points, negative and complex-free
ranges), errors (a zero end point at run time, a traced count refused); derivatives, vmap."""
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
@given(n=st.integers(0, 5), N=st.sampled_from([None, 0, 1, 2, 4, 7]), increasing=st.booleans(),
       dtype=st.sampled_from(ALL_DTYPES), backend=st.sampled_from(HOST_BACKENDS))
def test_vander_matches_numpy(n, N, increasing, dtype, backend):
    x = sample(rng_for("vander", n, dtype.name), dtype, (n,), lo=-3, hi=3)
    check(lambda v: np.vander(v, N, increasing), x, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_vander_errors(backend):
    check(lambda v: np.vander(v.reshape(2, 2)), np.arange(4.0), backend=backend)
    check(lambda v: np.vander(v[0]), np.arange(4.0), backend=backend)


@SETTINGS
@given(start=st.sampled_from([1.0, 2.5, -3.0, 1e-3]), stop=st.sampled_from([10.0, 1000.0, -0.5, 2.5]),
       num=st.sampled_from([0, 1, 2, 5, 13]), endpoint=st.booleans(),
       dtype=st.sampled_from([None, np.float32, np.float64, np.int64]),
       in_dtype=st.sampled_from([np.float64, np.float32, np.int32]), backend=st.sampled_from(HOST_BACKENDS))
def test_geomspace_matches_numpy(start, stop, num, endpoint, dtype, in_dtype, backend):
    ends = np.array([start, stop]).astype(in_dtype)
    if 0 in ends:
        return
    check(lambda e: np.geomspace(e[0], e[1], num, endpoint=endpoint, dtype=dtype), ends, backend=backend,
          rtol=1e-6 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda e: np.geomspace(e[:2], e[2:], 4),                      # array end points
    lambda e: np.geomspace(e[:2], 100.0, 3, axis=1),
    lambda e: np.geomspace(e[0], e[3], 4, axis=-1),
    lambda e: np.geomspace(e[0] - 1.0, e[3], 4),                  # zero start: ValueError at run time
    lambda e: np.geomspace(1.0, e[1:], 3, endpoint=False),
], ids=["arrays", "axis1", "axis-1", "zero", "scalar-start"])
def test_geomspace_forms(fn, backend):
    check(fn, np.array([1.0, -2.0, 8.0, 50.0]), backend=backend)


def test_traced_counts_are_refused(no_static_int_fallback):
    with pytest.raises(jk.UnsupportedOperationError, match="traced N"):
        jk.jit(lambda x, n: np.vander(x, n))(np.arange(3.0), 2)
    with pytest.raises(jk.UnsupportedOperationError, match="traced num"):
        jk.jit(lambda x, n: np.geomspace(x[1], x[2], n))(np.arange(3.0), 2)


def test_derivatives_and_vmap():
    x = np.array([0.5, 2.0, -1.5])
    # d/dx sum(vander(x, 4)) = 3x^2 + 2x + 1
    np.testing.assert_allclose(jk.grad(lambda v: np.vander(v, 4).sum())(x), 3 * x ** 2 + 2 * x + 1, rtol=1e-12)
    f = lambda v: np.geomspace(v[1], v[1] * 8, 4) * v[0]  # noqa: E731
    np.testing.assert_allclose(jk.jacfwd(f)(x), jk.jacrev(f)(x), rtol=1e-12)
    np.testing.assert_allclose(jk.grad(lambda v: np.geomspace(v[1], 16.0, 5)[2])(x), [0, 2 / np.sqrt(2.0), 0],
                               rtol=1e-12)  # d/ds (16 s)^(1/2) = 2 / sqrt(s), s = 2
    np.testing.assert_allclose(jk.vmap(lambda v: np.vander(v, 3))(x[:, None]), np.stack([np.vander(r, 3) for r in x[:, None]]))


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_cuda_emulator(backend):
    check(lambda v: np.vander(v, 3).sum() + np.geomspace(v[1], v[2], 4), np.array([1.0, 2.0, 9.0], np.float32),
          backend=backend, rtol=1e-5)
