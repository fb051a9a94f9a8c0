"""np.split, array_split, hsplit, vsplit, dsplit, unstack and the joins column_stack, row_stack,
dstack, block inside jit: NumPy's pieces (dtype, shape, values, list vs tuple), its errors, a
traced section count refused, derivatives and vmap."""
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


def _array(shape, dtype, seed="split"):
    return sample(rng_for(seed, shape, np.dtype(dtype).name), dtype, shape)


# ----------------------------------------------------------------------------- splitting

@SETTINGS
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple),
       dtype=st.sampled_from(ALL_DTYPES), axis=st.integers(-3, 2),
       sections=st.one_of(st.integers(1, 4), st.lists(st.integers(-6, 7), max_size=3)),
       fname=st.sampled_from(["split", "array_split"]), backend=st.sampled_from(HOST_BACKENDS))
def test_split_matches_numpy(shape, dtype, axis, sections, fname, backend):
    """Counts that do or do not divide the axis, unsorted and out-of-range indices, bad axes."""
    f = getattr(np, fname)
    check(lambda a: f(a, sections, axis=axis), _array(shape, dtype), backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda a: np.hsplit(a, 2), lambda a: np.hsplit(a[0, 0], [1, 3]), lambda a: np.hsplit(a[0, 0, 0], 1),
    lambda a: np.vsplit(a, [1]), lambda a: np.vsplit(a[0, 0], 2), lambda a: np.dsplit(a, [2, 3]),
    lambda a: np.dsplit(a[0], 2), lambda a: np.split(a, np.array([1, 2]), axis=2),
    lambda a: np.split(a, np.int64(2)), lambda a: np.array_split(a, 0), lambda a: np.array_split(a, 7, axis=-1),
    lambda a: np.split(a, 3, axis=5),
    lambda a: np.unstack(a), lambda a: np.unstack(a, axis=-1), lambda a: np.unstack(a[0, 0, 0]),
    lambda a: np.unstack(a, axis=3),
], ids=["hsplit", "hsplit-1d", "hsplit-0d", "vsplit", "vsplit-1d", "dsplit", "dsplit-2d", "split-ndarray",
        "split-npint", "array_split-0", "array_split-more", "split-bad-axis", "unstack", "unstack-last",
        "unstack-0d", "unstack-bad-axis"])
def test_split_forms(fn, backend):
    check(fn, _array((2, 3, 4), np.float32), backend=backend)


def test_split_pieces_are_views():
    """Like NumPy's, the pieces are views: a write into one reaches the array."""
    def f(a):
        b = a.copy()
        np.split(b, 2)[1][0] = -1.0
        return b
    a = np.arange(4.0)
    np.testing.assert_array_equal(jk.jit(f)(a), f(a))


def test_traced_section_count_is_refused(no_static_int_fallback):
    with pytest.raises(jk.UnsupportedOperationError, match="traced indices_or_sections"):
        jk.jit(lambda a, n: np.split(a, n))(np.arange(4.0), 2)
    with pytest.raises(jk.UnsupportedOperationError, match="traced indices_or_sections"):
        jk.jit(lambda a, i: np.array_split(a, [1, i]))(np.arange(4.0), 2)


def test_split_grad_and_vmap():
    a = _array((6, 3), np.float64)
    w = np.arange(1.0, 4.0)
    # the second of three row blocks, weighted: d/da is w in rows 2..3, zero elsewhere
    g = jk.grad(lambda x: (np.split(x, 3)[1] * w).sum())(a)
    want = np.zeros_like(a)
    want[2:4] = w
    np.testing.assert_array_equal(g, want)
    f = lambda x: np.stack(np.array_split(x, 2, axis=1)[0] ** 2)  # noqa: E731
    np.testing.assert_allclose(jk.jacfwd(f)(a), jk.jacrev(f)(a), rtol=1e-12)
    np.testing.assert_array_equal(jk.vmap(lambda x: np.split(x, [1])[1])(a), a[:, 1:])
    np.testing.assert_array_equal(jk.vmap(lambda x: np.unstack(x)[2])(a), a[:, 2])


# ----------------------------------------------------------------------------- joining

@SETTINGS
@given(shapes=st.sampled_from([((), ()), ((3,), (3,)), ((2, 3), (2, 1)), ((2, 3, 1), (2, 3, 2)), ((0,), (0,)),
                               ((3,), (4,)), ((2, 2), (3,))]),
       dtypes=st.tuples(st.sampled_from(ALL_DTYPES), st.sampled_from(ALL_DTYPES)),
       fname=st.sampled_from(["column_stack", "dstack", "row_stack"]), backend=st.sampled_from(HOST_BACKENDS))
def test_joins_match_numpy(shapes, dtypes, fname, backend):
    f = getattr(np, fname)
    a, b = _array(shapes[0], dtypes[0], "a"), _array(shapes[1], dtypes[1], "b")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        check(lambda x, y: f([x, y]), a, b, backend=backend)


def test_row_stack_warns_as_numpy():
    a = np.ones((2, 3))
    with pytest.warns(DeprecationWarning, match="`row_stack` alias is deprecated"):
        out = jk.jit(lambda x: np.row_stack([x, x], dtype=np.float32))(a)
    assert out.dtype == np.float32 and out.shape == (4, 3)
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError):
        jk.jit(lambda x: np.row_stack([x, x], dtype=np.int8))(a)  # same_kind: float -> int refused


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda a, b: np.block([a, b]),
    lambda a, b: np.block([[a, b], [b, a]]),
    lambda a, b: np.block([[a], [b]]),
    lambda a, b: np.block([[[a]], [[b]]]),
    lambda a, b: np.block([[1, 2], [a[0, :2]]]),          # Python scalars: strong int64 arrays
    lambda a, b: np.block([[a[0, 0], b[0, 0]], [3, 4]]),
    lambda a, b: np.block(a),
    lambda a, b: np.block([a]),
    lambda a, b: np.block([[a, b], b]),                    # mismatched list depths
    lambda a, b: np.block([[a, b], []]),                   # an empty list
    lambda a, b: np.block([(a, b)]),                       # a tuple
    lambda a, b: np.block([[a], [b[:, :1]]]),              # shapes that do not fit
    lambda a, b: np.block([a.astype(np.int8), b.astype(np.uint8) > 0]),
], ids=["row", "2x2", "column", "3-deep", "scalars", "scalar-blocks", "array", "one", "depths", "empty",
        "tuple", "misfit", "dtypes"])
def test_block_forms(fn, backend):
    rng = rng_for("block")
    check(fn, sample(rng, np.float64, (2, 3)), sample(rng, np.float32, (2, 3)), backend=backend)


def test_block_of_one_array_is_a_copy():
    def f(a):
        b = np.block(a)
        b[0] = 5.0
        return a, b
    a = np.arange(3.0)
    got, want = jk.jit(f)(a), f(a.copy())
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_join_grad_and_vmap():
    a, b = _array((2, 2), np.float64, "a"), _array((2, 2), np.float64, "b")
    w = np.arange(16.0).reshape(4, 4)
    g = jk.grad(lambda x: (np.block([[x, b], [b, x]]) * w).sum())(a)
    np.testing.assert_array_equal(g, w[:2, :2] + w[2:, 2:])
    f = lambda x: np.dstack([x, x ** 2]) + np.column_stack([x[0], x[1]])[None]  # noqa: E731
    np.testing.assert_allclose(jk.jacfwd(f)(a), jk.jacrev(f)(a), rtol=1e-12)
    np.testing.assert_array_equal(jk.vmap(lambda x: np.column_stack([x, x]))(a), np.stack([np.column_stack([r, r]) for r in a]))


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_cuda_emulator(backend):
    a = _array((4, 6), np.float32)
    check(lambda x: np.block([[x[:2], x[2:]], [x[2:], x[:2]]]) + np.hsplit(x, 3)[1].sum(), a, backend=backend)
    check(lambda x: np.dstack(np.array_split(x, 3, axis=1)), a, backend=backend)


@pytest.mark.parametrize("fn", [lambda a: np.split(a, 2, axis=1)[0], lambda a: np.unstack(a)[1], lambda a: np.dstack([a]),
                                lambda a: np.block(a), lambda a: np.block([a]), lambda a: np.column_stack([a[0]]),
                                lambda a: np.concatenate([a])],
                         ids=["split", "unstack", "dstack-one", "block-array", "block-one", "column_stack-one", "concatenate-one"])
def test_byte_order_as_numpy(fn):
    """Pieces are views ('>f8' stays); a join of one array is a new native-order array, as in NumPy."""
    a = np.arange(12.0).reshape(3, 4).astype(">f8")
    got, want = jk.jit(fn)(a), fn(a)
    assert got.dtype.str == want.dtype.str
    np.testing.assert_array_equal(got, want)
