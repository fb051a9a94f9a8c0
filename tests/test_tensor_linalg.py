"""np.linalg.tensorinv and np.linalg.tensorsolve inside jit: NumPy's reshapes around inv and
solve (shapes, ind, axes, dtypes and NumPy's errors), derivatives (jacfwd == jacrev == the
analytic ones of the matrix inverse) and vmap."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import HOST_BACKENDS, check, raises_like_numpy, rng_for

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))


def _well_conditioned(rng, rows_shape, cols_shape, dtype=np.float64):
    """A tensor whose (prod(rows), prod(cols)) matrix is the identity plus small noise."""
    n = int(np.prod(rows_shape))
    m = np.eye(n) * 3.0 + rng.standard_normal((n, n)) * 0.3
    return m.reshape(tuple(rows_shape) + tuple(cols_shape)).astype(dtype)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("ind,rows,cols", [(2, (2, 3), (6,)), (1, (6,), (2, 3)), (1, (4,), (4,)),
                                           (2, (2, 2), (2, 2)), (3, (1, 2, 3), (3, 2))])
def test_tensorinv(backend, ind, rows, cols):
    a = _well_conditioned(rng_for("tensorinv", ind, rows), rows, cols)
    check(lambda a: np.linalg.tensorinv(a, ind=ind), a, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_tensorsolve_dtypes(backend, dtype):
    rng = rng_for("tensorsolve", np.dtype(dtype).name)
    a = _well_conditioned(rng, (6,), (2, 3))
    if np.dtype(dtype).kind == "i":
        a = np.round(a * 4)
    a = a.astype(dtype)
    b = rng.standard_normal(6).astype(dtype) if np.dtype(dtype).kind != "i" else np.arange(6, dtype=dtype)
    check(lambda a, b: np.linalg.tensorsolve(a, b), a, b, backend=backend)


def test_tensorsolve_complex():
    rng = rng_for("tensorsolve-complex")
    a = (_well_conditioned(rng, (6,), (2, 3)) + 1j * _well_conditioned(rng, (6,), (2, 3))).astype(np.complex128)
    b = rng.standard_normal(6) + 1j
    got, want = jk.jit(lambda a, b: np.linalg.tensorsolve(a, b))(a, b), np.linalg.tensorsolve(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("axes", [None, (0,), (2, 0), (1, 3)])
def test_tensorsolve_axes(backend, axes):
    rng = rng_for("tensorsolve-axes", axes)
    a = _well_conditioned(rng, (2, 3), (3, 2))
    b = rng.standard_normal((2, 3))
    check(lambda a, b: np.linalg.tensorsolve(a, b, axes=axes), a, b, backend=backend)


@given(rows=st.lists(st.integers(1, 3), min_size=1, max_size=3), seed=st.integers(0, 2 ** 16),
       split=st.integers(0, 3), dtype=st.sampled_from([np.float64, np.float32]))
@SETTINGS
def test_tensorsolve_and_tensorinv_match_numpy(rows, seed, split, dtype):
    """Any split of prod(rows) unknowns into a trailing shape."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(rows))
    cols = [d for d in (2, 3) if n % d == 0 and d > 1][: split % 2] if split else []
    rest = n // int(np.prod(cols)) if cols else n
    cols = tuple(cols) + ((rest,) if rest > 1 or not cols else ())
    a = _well_conditioned(rng, tuple(rows), cols, dtype)
    b = rng.standard_normal(tuple(rows)).astype(dtype)
    check(lambda a, b: np.linalg.tensorsolve(a, b), a, b, backend="cpu", rtol=1e-4 if dtype == np.float32 else 1e-10)
    check(lambda a: np.linalg.tensorinv(a, ind=len(rows)), a, backend="cpu",
          rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-5 if dtype == np.float32 else 1e-12)


def test_errors_are_numpys():
    a = np.ones((2, 3, 4))
    raises_like_numpy(lambda a: np.linalg.tensorinv(a, ind=0), a)            # ind must be > 0
    raises_like_numpy(lambda a: np.linalg.tensorinv(a, ind=1), a)            # 2 x 12: not square
    raises_like_numpy(lambda a, b: np.linalg.tensorsolve(a, b), a, np.ones(2))  # 2 * 12 != 12 ** 2
    raises_like_numpy(lambda a, b: np.linalg.tensorsolve(a, b, axes=(5,)), np.ones((2, 2)), np.ones(2))
    singular = np.zeros((2, 2, 4))
    with pytest.raises(np.linalg.LinAlgError):
        jk.jit(lambda a: np.linalg.tensorinv(a, ind=2))(singular)


def test_derivatives_are_those_of_the_inverse():
    """d tensorinv(a)/d a = -A^-1 dA A^-1, reshaped; jacfwd == jacrev; tensorsolve's derivative
    in b is the inverse itself, in a it is -A^-1 dA x."""
    rng = rng_for("tensor-grad")
    a = _well_conditioned(rng, (2, 2), (4,))
    b = rng.standard_normal((2, 2))
    A = a.reshape(4, 4)
    Ai = np.linalg.inv(A)
    fn = lambda a: np.linalg.tensorinv(a, ind=2)  # noqa: E731
    fwd, rev = jk.jacfwd(fn)(a), jk.jacrev(fn)(a)
    np.testing.assert_allclose(fwd, rev, rtol=1e-10, atol=1e-12)
    analytic = -np.einsum("ik,lj->ijkl", Ai, Ai).reshape(4, 4, 4, 4)  # d(Ai)_ij / dA_kl
    np.testing.assert_allclose(fwd.reshape(4, 4, 4, 4), analytic, rtol=1e-10, atol=1e-12)
    solve_b = lambda b: np.linalg.tensorsolve(a, b)  # noqa: E731
    np.testing.assert_allclose(jk.jacfwd(solve_b)(b).reshape(4, 4), Ai, rtol=1e-10)
    np.testing.assert_allclose(jk.jacrev(solve_b)(b).reshape(4, 4), Ai, rtol=1e-10)
    solve_a = lambda a: np.linalg.tensorsolve(a, b)  # noqa: E731
    x = np.linalg.solve(A, b.ravel())
    fwd, rev = jk.jacfwd(solve_a)(a), jk.jacrev(solve_a)(a)
    np.testing.assert_allclose(fwd, rev, rtol=1e-10, atol=1e-12)
    analytic = -np.einsum("ik,l->ikl", Ai, x)  # dx_i / dA_kl = -(A^-1)_ik x_l
    np.testing.assert_allclose(fwd.reshape(4, 4, 4), analytic, rtol=1e-10, atol=1e-12)


def test_vmap():
    rng = rng_for("tensor-vmap")
    a = np.stack([_well_conditioned(rng, (2, 3), (6,)) for _ in range(3)])
    b = rng.standard_normal((3, 2, 3))
    np.testing.assert_allclose(jk.vmap(lambda a, b: np.linalg.tensorsolve(a, b))(a, b),
                               np.stack([np.linalg.tensorsolve(x, y) for x, y in zip(a, b)]), rtol=1e-10)
    np.testing.assert_allclose(jk.vmap(lambda a: np.linalg.tensorinv(a))(a),
                               np.stack([np.linalg.tensorinv(x) for x in a]), rtol=1e-10)
