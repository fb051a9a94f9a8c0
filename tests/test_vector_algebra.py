"""np.kron, np.cross and numpy.linalg's cross, outer and vecdot inside jit: NumPy's dtypes
(Python scalars strong as np.asarray makes them), shapes, values, axes, errors and warnings;
derivatives (against the analytic ones and jacfwd == jacrev) and vmap."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import ALL_DTYPES, HOST_BACKENDS, check, rng_for, sample

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
SHAPES = [(), (1,), (3,), (2, 3), (3, 1), (2, 1, 2), (0, 2)]


@SETTINGS
@given(sa=st.sampled_from(SHAPES), sb=st.sampled_from(SHAPES), da=st.sampled_from(ALL_DTYPES),
       db=st.sampled_from(ALL_DTYPES), backend=st.sampled_from(HOST_BACKENDS))
def test_kron_matches_numpy(sa, sb, da, db, backend):
    rng = rng_for("kron", sa, sb, da.name, db.name)
    check(np.kron, sample(rng, da, sa), sample(rng, db, sb), backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [lambda a: np.kron(2, a), lambda a: np.kron(a, 1.5), lambda a: np.kron([1, 2], a),
                                lambda a: np.kron(a, np.eye(2, dtype=np.float32))],
                         ids=["int-scalar", "float-scalar", "list", "eye"])
def test_kron_operands(fn, backend):
    check(fn, sample(rng_for("kron operands"), np.float32, (2, 2)), backend=backend)


@SETTINGS
@given(na=st.sampled_from([2, 3]), nb=st.sampled_from([2, 3]), batch=st.sampled_from([((), ()), ((4,), ()), ((2, 1), (3,))]),
       dtype=st.sampled_from([np.dtype(n) for n in ("int8", "uint8", "int64", "float32", "float64", "bool")]),
       axes=st.sampled_from([{}, {"axisa": 0}, {"axisb": 0, "axisc": 0}, {"axis": 0}, {"axisc": -2}]),
       backend=st.sampled_from(HOST_BACKENDS))
def test_cross_matches_numpy(na, nb, batch, dtype, axes, backend):
    rng = rng_for("cross", na, nb, batch, dtype.name)
    a = sample(rng, dtype, batch[0] + (na,))
    b = sample(rng, dtype, batch[1] + (nb,))
    if "axisa" in axes or "axis" in axes:
        a = np.moveaxis(a, -1, 0)
    if "axisb" in axes or "axis" in axes:
        b = np.moveaxis(b, -1, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        check(lambda x, y: np.cross(x, y, **axes), a, b, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda a, b: np.cross(a, b[:, :1]), lambda a, b: np.cross(a[0, 0], b), lambda a, b: np.cross(a, b, axisa=3),
    lambda a, b: np.cross(a, b, axisc=3), lambda a, b: np.cross(a, [0, 0, 1]),
    lambda a, b: np.linalg.cross(a, b), lambda a, b: np.linalg.cross(a.T, b.T, axis=0),
    lambda a, b: np.linalg.cross(a[:, :2], b[:, :2]), lambda a, b: np.linalg.cross(a, b, axis=4),
    lambda a, b: np.linalg.outer(a[0], b[1]), lambda a, b: np.linalg.outer(a, b[1]),
    lambda a, b: np.linalg.outer(a[0], [1, 2]),
    lambda a, b: np.linalg.vecdot(a, b), lambda a, b: np.linalg.vecdot(a, b[0], axis=0),
], ids=["cross-1", "cross-0d", "cross-axisa", "cross-axisc", "cross-list", "linalg-cross", "linalg-cross-axis0",
        "linalg-cross-2", "linalg-cross-bad-axis", "linalg-outer", "linalg-outer-2d", "linalg-outer-list",
        "linalg-vecdot", "linalg-vecdot-axis"])
def test_forms(fn, backend):
    rng = rng_for("cross forms")
    check(fn, sample(rng, np.float64, (2, 3)), sample(rng, np.float64, (2, 3)), backend=backend)


def test_cross_of_2_vectors_warns_as_numpy():
    a = np.array([1.0, 2.0])
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors are deprecated"):
        assert jk.jit(np.cross)(a, a[::-1]) == np.float64(-3.0)


def test_derivatives():
    rng = rng_for("cross grads")
    a, b = sample(rng, np.float64, (4, 3)), sample(rng, np.float64, (4, 3))
    # d/da sum(w . (a x b)) = b x w (the scalar triple product rotated)
    w = sample(rng, np.float64, (4, 3))
    g = jk.grad(lambda x: (np.cross(x, b) * w).sum())(a)
    np.testing.assert_allclose(g, np.cross(b, w), rtol=1e-12)
    m, n = sample(rng, np.float64, (2, 3)), sample(rng, np.float64, (3, 2))
    # d/dm sum(kron(m, n)) = sum(n) everywhere
    np.testing.assert_allclose(jk.grad(lambda x: np.kron(x, n).sum())(m), np.full_like(m, n.sum()), rtol=1e-12)
    f = lambda x: np.kron(x, x[:1]) ** 2 + np.linalg.outer(x[0], x[1]).sum()  # noqa: E731
    np.testing.assert_allclose(jk.jacfwd(f)(m), jk.jacrev(f)(m), rtol=1e-12)


def test_vmap():
    rng = rng_for("cross vmap")
    a, b = sample(rng, np.float64, (5, 3)), sample(rng, np.float64, (5, 3))
    np.testing.assert_allclose(jk.vmap(np.cross)(a, b), np.cross(a, b), rtol=1e-12)
    np.testing.assert_allclose(jk.vmap(lambda x: np.kron(x, x[:2]))(a), np.stack([np.kron(r, r[:2]) for r in a]),
                               rtol=1e-12)


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_cuda_emulator(backend):
    rng = rng_for("cross emulator")
    check(lambda x, y: np.cross(x, y) + np.kron(x[:1, :1], y), sample(rng, np.float32, (4, 3)),
          sample(rng, np.float32, (4, 3)), backend=backend)
