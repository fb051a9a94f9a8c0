"""np.ediff1d, np.gradient and np.unwrap inside jit: NumPy 2.4's formulas step by step (bit
for bit on the host backends), dtypes, spacings (scalars, per-axis, coordinate arrays concrete
and traced), edge orders, axes, errors, derivatives (jacfwd == jacrev == the analytic linear
map), vmap and the emulated GPU."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, check, raises_like_numpy, rng_for, sample

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int8, np.uint8]


def _exact(fn, *args, backend):
    """The jitted result equals NumPy's bit for bit (same dtype too)."""
    got, expected = jk.jit(fn, backend=backend)(*args), fn(*args)
    for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)


# ----------------------------------------------------------------------------- ediff1d

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [
    lambda a: np.ediff1d(a),
    lambda a: np.ediff1d(a, to_begin=-1),
    lambda a: np.ediff1d(a, to_end=[7, 8], to_begin=np.array([[1], [2]])),
    lambda a: np.ediff1d(a.reshape(2, 3)),                 # raveled
    lambda a: np.ediff1d(a[:1], to_end=a[:2]),             # one element: only to_end
    lambda a: np.ediff1d(a[0], to_begin=a[1]),             # 0-d ary, traced to_begin
], ids=["plain", "begin", "both", "2d", "one", "0d"])
def test_ediff1d(backend, dtype, fn):
    check(fn, sample(rng_for("ediff1d", dtype), dtype, (6,)), backend=backend)


def test_ediff1d_errors_are_numpys():
    raises_like_numpy(lambda a: np.ediff1d(a, to_begin=1.5), np.arange(4))     # same_kind
    raises_like_numpy(lambda a: np.ediff1d(a), np.array([True, False]))         # bool subtract


def test_ediff1d_derivatives():
    """d ediff1d(a, to_begin=b)/d(a, b): the difference matrix below b's identity."""
    a, b = np.array([1.0, 4.0, 2.0, 8.0]), np.array([0.5])
    fn = lambda a, b: np.ediff1d(a, to_begin=b, to_end=a[0])  # noqa: E731
    da = np.vstack([np.zeros((1, 4)), np.diff(np.eye(4), axis=0), np.eye(4)[:1]])
    db = np.vstack([np.ones((1, 1)), np.zeros((4, 1))])
    for jac in (jk.jacfwd, jk.jacrev):
        got_a, got_b = jac(fn, argnums=(0, 1))(a, b)
        np.testing.assert_array_equal(got_a, da)
        np.testing.assert_array_equal(got_b, db)


# ----------------------------------------------------------------------------- gradient

F = np.array([[1.0, 2.0, 4.0, 7.0, 11.0], [0.5, -1.0, 3.0, 2.0, 2.5], [9.0, 1.0, 0.0, -4.0, 2.0]])
X0, X1 = np.array([0.0, 0.5, 2.0]), np.array([0.0, 1.0, 1.5, 3.5, 4.0])


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("fn", [
    lambda f, e: np.gradient(f, edge_order=e),
    lambda f, e: np.gradient(f, 0.5, edge_order=e),
    lambda f, e: np.gradient(f, 2.0, 0.25, edge_order=e),
    lambda f, e: np.gradient(f, X0, X1, edge_order=e),            # concrete coordinates
    lambda f, e: np.gradient(f, np.arange(5) * 3, axis=1, edge_order=e),  # even ints: scalar path
    lambda f, e: np.gradient(f, axis=0, edge_order=e),
    lambda f, e: np.gradient(f, X1, axis=-1, edge_order=e),
    lambda f, e: np.gradient(f, 1.0, X1, axis=(0, 1), edge_order=e),
    lambda f, e: np.gradient(f[0], edge_order=e),
    lambda f, e: np.gradient(f.astype(np.float32), 0.5, edge_order=e),    # float32 stays
    lambda f, e: np.gradient(f.astype(np.float32), X0, X1, edge_order=e),  # float64 coordinates
    lambda f, e: np.gradient(f.astype(np.int64), edge_order=e),            # ints: float64
    lambda f, e: np.gradient(f.astype(np.float16), edge_order=e),
    lambda f, e: np.gradient(f[0], np.float32(2.0), edge_order=e),
], ids=["default", "scalar", "per-axis", "coords", "even-int-coords", "axis0", "coords-axis", "mixed",
        "1d", "float32", "float32-coords", "int", "float16", "np-scalar"])
def test_gradient_bit_exact(backend, edge_order, fn):
    _exact(lambda f: fn(f, edge_order), F, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_traced_spacing(backend, edge_order):
    """Traced coordinates always take the uneven formula (NumPy's check for even spacing needs
    their values): the same derivative up to rounding; a traced scalar spacing is exact."""
    check(lambda f, x0, x1: np.gradient(f, x0, x1, edge_order=edge_order), F, X0, X1, backend=backend)
    check(lambda f, x1: np.gradient(f, np.arange(3.0), x1, edge_order=edge_order), F, np.arange(5.0) * 2,
          backend=backend)
    _exact(lambda f: np.gradient(f, f[0, 1], edge_order=edge_order), F, backend=backend)


def test_gradient_errors_are_numpys():
    for fn in (lambda f: np.gradient(f, 1.0, 2.0, 3.0), lambda f: np.gradient(f, np.ones((3, 5)), 1.0),
               lambda f: np.gradient(f, X1, X1), lambda f: np.gradient(f, edge_order=3),
               lambda f: np.gradient(f[:2], axis=0, edge_order=2), lambda f: np.gradient(f, axis=2),
               lambda f: np.gradient(f > 0)):
        raises_like_numpy(fn, F)


@SETTINGS
@given(st.sampled_from([np.float64, np.float32, np.int32]), st.integers(0, 10),
       st.tuples(st.integers(3, 5), st.integers(3, 5), st.integers(1, 3)), st.integers(-3, 2), st.sampled_from([1, 2]))
def test_gradient_matches_numpy(dtype, seed, shape, axis, edge_order):
    f = sample(rng_for("gradient", seed), dtype, shape)
    axis = None if axis == -3 else axis
    fn = lambda f: np.gradient(f, axis=axis, edge_order=edge_order)  # noqa: E731
    if min(f.shape[a] for a in ((0, 1, 2) if axis is None else (axis,))) <= edge_order:
        raises_like_numpy(fn, f)  # too few points for the edge order: NumPy's ValueError
    else:
        _exact(fn, f, backend="cpu")


def test_gradient_derivatives_are_the_stencil():
    """gradient is linear in f: its Jacobian (forward and reverse) is NumPy's stencil matrix."""
    for edge_order in (1, 2):
        for spacing in ((), (X1,)):
            fn = lambda f: np.gradient(f, *spacing, edge_order=edge_order)  # noqa: E731, B023
            stencil = np.stack([fn(e) for e in np.eye(5)], axis=1)
            np.testing.assert_allclose(jk.jacfwd(fn)(X1 ** 2), stencil, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(jk.jacrev(fn)(X1 ** 2), stencil, rtol=1e-12, atol=1e-12)
    # d/dx of the interior value (f2 - f0) / (x2 - x0) with uneven coordinates, 2 points each side
    f = np.array([1.0, 4.0, 2.0])
    d = jk.jacfwd(lambda x: np.gradient(f, x))(np.array([0.0, 1.0, 3.0]))
    np.testing.assert_allclose(d, jk.jacrev(lambda x: np.gradient(f, x))(np.array([0.0, 1.0, 3.0])), rtol=1e-12)


# ----------------------------------------------------------------------------- unwrap

P = np.cumsum(np.array([0.0, 3.0, 3.5, -4.0, 1.0, 6.0, -3.14159, np.pi, -np.pi]))


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda p: np.unwrap(p),
    lambda p: np.unwrap(p, discont=4.0),
    lambda p: np.unwrap(p, period=5.0),
    lambda p: np.unwrap(p.astype(np.float32)),
    lambda p: np.unwrap(p.reshape(3, 3), axis=0),
    lambda p: np.unwrap(p.reshape(3, 3)),
    lambda p: np.unwrap(np.round(p * 3).astype(np.int64), period=8),       # integer period: ints
    lambda p: np.unwrap(np.round(p * 3).astype(np.int64), period=7),       # odd period
    lambda p: np.unwrap(np.round(p * 3).astype(np.int8)),                  # float period: float64
    lambda p: np.unwrap(np.array([0, 4, 8, 12, 0]), period=8),            # |jump| == period/2
    lambda p: np.unwrap(p, discont=p[1]),                                  # traced discont
], ids=["default", "discont", "period", "float32", "axis0", "2d", "int-period", "odd-period", "int8", "boundary",
        "traced-discont"])
def test_unwrap_bit_exact(backend, fn):
    _exact(fn, P, backend=backend)


@SETTINGS
@given(st.lists(st.floats(-20, 20), min_size=1, max_size=12), st.sampled_from([2 * np.pi, 1.0, 360.0]))
def test_unwrap_matches_numpy(values, period):
    p = np.array(values)
    fn = lambda p: np.unwrap(p, period=period)  # noqa: E731
    np.testing.assert_array_equal(jk.jit(fn)(p), fn(p))


def test_unwrap_derivative_is_identity_away_from_jumps():
    jac_f, jac_r = jk.jacfwd(np.unwrap)(P), jk.jacrev(np.unwrap)(P)
    np.testing.assert_array_equal(jac_f, np.eye(P.size))
    np.testing.assert_array_equal(jac_r, np.eye(P.size))


# ----------------------------------------------------------------------------- vmap, emulator

def test_vmap():
    np.testing.assert_array_equal(jk.vmap(np.gradient)(F), np.stack([np.gradient(r) for r in F]))
    np.testing.assert_array_equal(jk.vmap(np.ediff1d)(F), np.stack([np.ediff1d(r) for r in F]))
    p = np.stack([P, P[::-1]])
    np.testing.assert_array_equal(jk.vmap(np.unwrap)(p), np.stack([np.unwrap(r) for r in p]))


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_the_emulated_gpu(backend):
    check(lambda f, p: (np.gradient(f, X0, X1, edge_order=2), np.ediff1d(f, to_begin=0.0), np.unwrap(p)),
          F.astype(np.float32), P.astype(np.float32), backend=backend)
