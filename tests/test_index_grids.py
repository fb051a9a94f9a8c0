"""Index grids and index conversions inside jit: fromfunction, tril/triu/diag_indices_from,
mask_indices (static shapes: NumPy's constants), fill_diagonal (in place on a traced array),
ravel_multi_index and unravel_index (traced indices; modes, orders and NumPy's errors, the
out-of-range ones checked at run time)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
import jitkernel.numpy as jnp
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, INT_DTYPES, check, rng_for, sample

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))


# ----------------------------------------------------------------------------- grids of static shapes

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda a: a[np.tril_indices_from(a)], lambda a: a[np.tril_indices_from(a, -1)],
    lambda a: a[np.triu_indices_from(a, 2)], lambda a: np.triu_indices_from(a),
    lambda a: np.tril_indices_from(a[0]),                        # not 2-d: NumPy's ValueError
    lambda a: a[:3, :3][np.diag_indices_from(a[:3, :3])], lambda a: np.diag_indices_from(a),
    lambda a: np.diag_indices_from(a[0]),
    lambda a: a[:3, :3][np.mask_indices(3, np.triu, 1)],
    lambda a: np.fromfunction(lambda i, j: i * a[0, 0] + j, (2, 3)),
    lambda a: jnp.fromfunction(lambda i, j: i * a[0, 0] + j, (2, 3)),
    lambda a: jnp.fromfunction(lambda i, j, k: i + 10 * j - k, (2, 3, 2), dtype=np.int32),
    lambda a: jnp.fromfunction(lambda i: i + a[0], (4,), dtype=np.float32),
    lambda a: np.indices((2, 3)) + a[0, 0].astype(np.int64),
], ids=["tril", "tril-k", "triu-k", "triu-indices", "tril-1d", "diag", "diag-nonsquare", "diag-1d", "mask",
        "np-fromfunction", "fromfunction", "fromfunction-3d-int32", "fromfunction-f32", "indices"])
def test_grids(fn, backend):
    check(fn, sample(rng_for("grids"), np.float64, (3, 4)), backend=backend)


def test_traced_sizes_are_refused(no_static_int_fallback):
    with pytest.raises(jk.UnsupportedOperationError, match="traced k"):
        jk.jit(lambda a, k: np.tril_indices_from(a, k))(np.ones((3, 3)), 1)
    with pytest.raises(jk.UnsupportedOperationError, match="traced shape"):
        jk.jit(lambda i, n: np.unravel_index(i, (n, 3)))(np.array([1]), 2)


# ----------------------------------------------------------------------------- fill_diagonal

def _filled(a, val, wrap=False):
    np.fill_diagonal(a, val, wrap=wrap)
    return a


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("shape, wrap", [((3, 3), False), ((5, 3), False), ((7, 3), True), ((3, 5), False),
                                         ((3, 3, 3), False), ((2, 2, 2, 2), False), ((0, 0), False),
                                         ((3,), False), ((3, 3, 2), False)])
@pytest.mark.parametrize("val", ["scalar", "vector", "traced"])
def test_fill_diagonal(shape, wrap, val, backend):
    a = sample(rng_for("fill", shape), np.float64, shape)
    v = np.array([7.5, -2.0, 3.0, 1.0])
    values = {"scalar": lambda x, w: 2.7, "vector": lambda x, w: [1.0, 2.0], "traced": lambda x, w: w[:2] * 2}[val]
    check(lambda x, w: _filled(x.copy(), values(x, w), wrap), a, v, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_fill_diagonal_casts_and_reaches_views(backend):
    check(lambda x: _filled(x, 2.9), np.zeros((3, 3), np.int32), backend=backend)      # unsafe cast, as NumPy
    check(lambda x: (_filled(x[1:], -1.0), x)[1], np.zeros((4, 3)), backend=backend)  # writes through a view


def test_fill_diagonal_grad_and_vmap():
    a = np.arange(9.0).reshape(3, 3)
    g = jk.grad(lambda v: (_filled(a.copy() * 1.0 + 0 * v, v) * a).sum())(1.5)
    np.testing.assert_allclose(g, np.trace(a))
    got = jk.vmap(lambda x, v: _filled(x.copy(), v))(np.zeros((2, 3, 3)), np.array([1.0, 2.0]))
    np.testing.assert_array_equal(got, [np.eye(3), 2 * np.eye(3)])


# ----------------------------------------------------------------------------- ravel / unravel

@SETTINGS
@given(dims=st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple),
       dtype=st.sampled_from(INT_DTYPES + [np.dtype(np.bool_), np.dtype(np.float64)]),
       mode=st.sampled_from(["raise", "wrap", "clip", ("wrap", "clip", "raise")]),
       order=st.sampled_from(["C", "F"]), n=st.integers(0, 4), spread=st.integers(1, 8),
       backend=st.sampled_from(HOST_BACKENDS))
def test_ravel_multi_index_matches_numpy(dims, dtype, mode, order, n, spread, backend):
    rng = rng_for("ravel", dims, dtype.name, n)
    idx = tuple(sample(rng, dtype, (n,), lo=-spread // 2, hi=spread) for _ in dims)
    mode = mode[:len(dims)] if isinstance(mode, tuple) else mode
    check(lambda *ix: np.ravel_multi_index(ix, dims, mode=mode, order=order), *idx, backend=backend)


@SETTINGS
@given(dims=st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple),
       dtype=st.sampled_from(INT_DTYPES + [np.dtype(np.float32)]), order=st.sampled_from(["C", "F"]),
       shape=st.sampled_from([(), (3,), (2, 2)]), over=st.sampled_from([0, 0, 0, -1, 2]), backend=st.sampled_from(HOST_BACKENDS))
def test_unravel_index_matches_numpy(dims, dtype, order, shape, over, backend):
    size = int(np.prod(dims))
    idx = sample(rng_for("unravel", dims, dtype.name, shape), dtype, shape, lo=0, hi=max(size - 1, 0))
    if over and idx.size:  # past the end, or negative (past the end for unsigned): ValueError
        idx.flat[0] = size - 1 + abs(over) if over > 0 or dtype.kind == "u" else over
    check(lambda i: np.unravel_index(i, dims, order=order), idx.astype(dtype), backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda i, j: np.ravel_multi_index((i, j[:, None]), (5, 6)),          # broadcast index arrays
    lambda i, j: np.ravel_multi_index(np.stack([i, j]), (5, 6)),         # one (2, n) array
    lambda i, j: np.ravel_multi_index((i[0], j[1]), (5, 6)),             # 0-d: a NumPy scalar
    lambda i, j: np.ravel_multi_index((i, j), (5, 6), mode="bad"),
    lambda i, j: np.ravel_multi_index((i, j), (5, 6), order="X"),
    lambda i, j: np.ravel_multi_index((i,), (5, 6)),
    lambda i, j: np.ravel_multi_index((i, j), (2 ** 40, 2 ** 40)),
    lambda i, j: np.ravel_multi_index((i, j), (5, 4)),                   # j out of range: run time
    lambda i, j: np.unravel_index(i * 6 + j, (5, 6)),
    lambda i, j: np.unravel_index(i * 6 + j, (5, 5)),                    # out of range: run time
    lambda i, j: np.unravel_index(i, (5, 6), order="K"),
    lambda i, j: np.unravel_index(i.astype(np.uint8), (3, 2), order="F"),
], ids=["broadcast", "array", "scalar", "bad-mode", "bad-order", "short", "huge-dims", "raise", "unravel",
        "unravel-raise", "unravel-bad-order", "unravel-uint8-F"])
def test_index_conversion_forms(fn, backend):
    check(fn, np.array([0, 4, 2, 3]), np.array([5, 0, 4, 1]), backend=backend)


def test_unravel_error_names_the_cause():
    with pytest.raises(ValueError, match="out of bounds for array with size 12"):
        jk.jit(lambda i: np.unravel_index(i, (3, 4)))(np.array([3, 12]))
    with pytest.raises(ValueError, match="invalid entry in coordinates array"):
        jk.jit(lambda i: np.ravel_multi_index((i, i), (3, 4)))(np.array([-1]))


def test_index_conversion_vmap():
    i = np.array([[1, 2], [3, 0]])
    got = jk.vmap(lambda r: np.ravel_multi_index((r[0], r[1]), (4, 3)))(i)
    np.testing.assert_array_equal(got, np.ravel_multi_index((i[:, 0], i[:, 1]), (4, 3)))
    got = jk.vmap(lambda r: np.unravel_index(r, (2, 2)))(i)
    np.testing.assert_array_equal(np.stack(got), np.stack(np.unravel_index(i, (2, 2))))


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_cuda_emulator(backend):
    i, j = np.array([0, 4, 2, 3]), np.array([5, 0, 4, 1])
    check(lambda i, j: np.unravel_index(np.ravel_multi_index((i, j), (5, 6), mode="wrap"), (6, 5)), i, j,
          backend=backend)
    check(lambda x: _filled(x.copy(), x[0, :2]), np.arange(9.0).reshape(3, 3), backend=backend)
