"""np.apply_along_axis and np.apply_over_axes inside jit: NumPy's per-slice calls unrolled at
trace time (results stacked as NumPy stacks them: the first call's dtype and shape), NumPy's
loop over axes with its expand-or-keep rule, extra arguments, the slice limit naming jk.vmap,
NumPy's errors, derivatives (jacfwd == jacrev == analytic), vmap and the emulated GPU."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, check, raises_like_numpy, sample
from jitkernel.numpy._apply import MAX_SLICES

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
A = np.arange(24.0).reshape(2, 3, 4) - 7.5


def _first_call_differs(first, later):
    """A func1d whose first call returns first(r) and every later call later(r) (a fresh one
    per apply_along_axis call: the jitted and the NumPy runs each start at the first call)."""
    calls = []

    def func1d(r):
        calls.append(None)
        return first(r) if len(calls) == 1 else later(r)
    return func1d


FUNCS1D = {
    "sum": np.sum,                                         # 0-d results: the axis goes away
    "reverse-scaled": lambda r: r[::-1] * 2,               # same length
    "outer": lambda r: np.outer(r, r),                     # 2-d results: two new axes
    "first-two": lambda r: r[:2],                          # shorter
    "python-scalar": lambda r: 3,                          # asanyarray(3): int64 constant
    "cumsum-int": lambda r: np.cumsum(r).astype(np.int32),
    "sorted": np.sort,
}


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("name", list(FUNCS1D))
def test_apply_along_axis(backend, axis, name):
    check(lambda a: np.apply_along_axis(FUNCS1D[name], axis, a), A, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_extra_arguments_and_traced_closures(backend):
    check(lambda a, k: np.apply_along_axis(lambda r, s, shift=0: r * s + shift, 1, a, k, shift=1.5), A, 2.0,
          backend=backend)
    check(lambda a, w: np.apply_along_axis(lambda r: np.dot(r, w), -1, a), A, np.arange(4.0), backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_later_results_take_the_first_results_dtype_and_shape(backend):
    """NumPy writes every result into a buffer made for the first one: later results are cast
    to its dtype and broadcast to its shape."""
    int_then_float = lambda: _first_call_differs(lambda r: np.int64(1), lambda r: r.sum())  # noqa: E731
    check(lambda a: np.apply_along_axis(int_then_float(), 1, a), A, backend=backend)
    row_then_scalar = lambda: _first_call_differs(lambda r: (r[:2] * 1.5).astype(np.float32), lambda r: r.sum())  # noqa: E731
    check(lambda a: np.apply_along_axis(row_then_scalar(), 0, a), A, backend=backend)


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 2 ** 16),
       axis_pick=st.integers(0, 5), dtype=st.sampled_from([np.float64, np.float32, np.int32, np.bool_]),
       which=st.sampled_from(["sum", "reverse-scaled", "outer", "first-two", "sorted"]))
@SETTINGS
def test_apply_along_axis_matches_numpy(shape, seed, axis_pick, dtype, which):
    a = sample(np.random.default_rng(seed), dtype, tuple(shape))
    axis = axis_pick % len(shape) - (len(shape) if axis_pick > 2 else 0)
    check(lambda a: np.apply_along_axis(FUNCS1D[which], axis, a), a, backend="cpu")


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda a: np.apply_over_axes(np.sum, a, [0, 2]),
    lambda a: np.apply_over_axes(np.mean, a, -1),                              # a scalar axis
    lambda a: np.apply_over_axes(np.max, a, (1, -1, 0)),
    lambda a: np.apply_over_axes(lambda x, ax: np.cumsum(x, axis=ax), a, [2, 1]),  # rank kept
    lambda a: np.apply_over_axes(lambda x, ax: np.sum(x, axis=ax, keepdims=True) * 2, a, [1]),
], ids=["sum", "scalar-axis", "max", "cumsum", "keepdims"])
def test_apply_over_axes(backend, fn):
    check(fn, A, backend=backend)


def test_errors_are_numpys():
    raises_like_numpy(lambda a: np.apply_along_axis(np.sum, 3, a), A)                  # AxisError
    raises_like_numpy(lambda a: np.apply_along_axis(np.sum, 1, a), np.zeros((0, 3)))   # empty iteration
    raises_like_numpy(lambda a: np.apply_along_axis(_first_call_differs(lambda r: r[:2], lambda r: r[:3]), 1, a),
                       np.arange(6.0).reshape(2, 3))                                    # shapes do not broadcast
    raises_like_numpy(lambda a: np.apply_over_axes(lambda x, ax: np.sum(x), a, [0]), A)  # wrong rank
    raises_like_numpy(lambda a: np.apply_over_axes(np.sum, a, [5]), A)


def test_too_many_slices_are_refused_naming_vmap():
    a = np.zeros((MAX_SLICES + 1, 2))
    with pytest.raises(jk.UnsupportedOperationError, match="jk.vmap"):
        jk.jit(lambda a: np.apply_along_axis(np.sum, 1, a))(a)
    ok = np.ones((MAX_SLICES // 64, 2))
    np.testing.assert_array_equal(jk.jit(lambda a: np.apply_along_axis(np.sum, 1, a))(ok), ok.sum(1))


def test_derivatives():
    """d/da of apply_along_axis(softmax-like f) is block diagonal with f's Jacobian per row;
    jacfwd == jacrev, and both equal the analytic Jacobian of r -> r * r.sum()."""
    a = np.array([[1.0, 2.0, 0.5], [-1.0, 0.25, 3.0]])
    fn = lambda a: np.apply_along_axis(lambda r: r * r.sum(), 1, a)  # noqa: E731
    fwd, rev = jk.jacfwd(fn)(a), jk.jacrev(fn)(a)
    np.testing.assert_allclose(fwd, rev, rtol=1e-12, atol=1e-12)
    analytic = np.zeros((2, 3, 2, 3))
    for i, r in enumerate(a):
        analytic[i, :, i, :] = np.eye(3) * r.sum() + r[:, None]   # d(r_j * s)/d r_k
    np.testing.assert_allclose(fwd, analytic, rtol=1e-12, atol=1e-12)
    over = lambda a: np.apply_over_axes(np.sum, a ** 2, [0])  # noqa: E731
    np.testing.assert_allclose(jk.jacrev(over)(a).reshape(3, 2, 3), np.einsum("jk,ij->jik", np.eye(3), 2 * a),
                               rtol=1e-12)


def test_vmap():
    b = np.stack([A, -A, A * 2])
    fn = lambda a: np.apply_along_axis(lambda r: r[::-1] * r.sum(), 1, a)  # noqa: E731
    np.testing.assert_allclose(jk.vmap(fn)(b), np.stack([fn(x) for x in b]), rtol=1e-12)
    over = lambda a: np.apply_over_axes(np.sum, a, [0, 1])  # noqa: E731
    np.testing.assert_allclose(jk.vmap(over)(b), np.stack([over(x) for x in b]), rtol=1e-12)


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_the_emulated_gpu(backend):
    check(lambda a: (np.apply_along_axis(lambda r: r[::-1] * r.sum(), 2, a), np.apply_over_axes(np.sum, a, [0, 2])),
          A.astype(np.float32), backend=backend)
