"""Library functions against NumPy called directly, on the
compiled and the interpreter backends: np.linalg, sorting, cumulative functions, diff,
histogram / bincount / digitize, ufunc methods, einsum and np.fft. Library steps run NumPy's
own function on both backends, so these tests also compare with NumPy outside jit (dtype, shape,
values, errors), and feed the results through fused kernels to check the buffers they land in."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitkernel as jk
from jitkernel.errors import UnsupportedOperationError

from helpers import assert_matches_numpy, check, HOST_BACKENDS
import emulator_suite

BACKENDS = HOST_BACKENDS + emulator_suite.emulator_backends()  # cuda-emulator where g++ is
SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large, HealthCheck.filter_too_much])
RNG = np.random.default_rng(8)


def _spd(shape: tuple[int, ...], dtype=np.float64) -> np.ndarray:
    """Symmetric positive definite matrices (stacked)."""
    a = RNG.standard_normal(shape)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def _mat(*shape: int, dtype=np.float64) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


# ----------------------------------------------------------------------------- np.linalg

LINALG_DTYPES = [np.float64, np.float32, np.int64, np.int32, np.bool_]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", LINALG_DTYPES)
def test_square_linalg_functions_match_numpy(backend, dtype):
    a = _spd((4, 4)) if dtype != np.bool_ else np.eye(4, dtype=bool) | (RNG.random((4, 4)) > 0.8).T * 0
    a = (np.round(a * 3) if np.dtype(dtype).kind in "iu" else a).astype(dtype)
    b = _mat(4)

    def f(a, b):
        return (np.linalg.solve(a, b), np.linalg.inv(a) + 1, np.linalg.det(a), np.linalg.slogdet(a),
                np.linalg.solve(a, np.stack([b, 2 * b], axis=1)))
    check(f, a, b, backend=backend, rtol=1e-4, atol=1e-4)
    if dtype != np.bool_:
        check(lambda a: np.linalg.cholesky(a) * 2, a, backend=backend, rtol=1e-5, atol=1e-5)
        check(lambda a: np.linalg.cholesky(a, upper=True), a, backend=backend, rtol=1e-5, atol=1e-5)
        check(lambda a: np.linalg.eigh(a), a, backend=backend, rtol=1e-4, atol=1e-4)
        check(lambda a: np.linalg.eigvalsh(a, UPLO="U").sum(), a, backend=backend, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_stacked_linalg_broadcasts_like_numpy(backend):
    a, b = _spd((3, 2, 4, 4)), _mat(2, 4, 3)
    check(lambda a, b: (np.linalg.solve(a, b), np.linalg.inv(a), np.linalg.det(a), np.linalg.cholesky(a),
                        np.linalg.eigh(a), np.linalg.slogdet(a)), a, b, backend=backend)
    check(lambda a: np.linalg.svd(a), _mat(3, 5, 4), backend=backend)
    check(lambda a: np.linalg.qr(a), _mat(2, 5, 3), backend=backend)
    check(lambda a: np.linalg.pinv(a), _mat(2, 5, 3), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r", "raw"])
def test_qr_modes(backend, shape, mode):
    check(lambda a: np.linalg.qr(a, mode=mode), _mat(*shape), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("compute_uv", [True, False])
def test_svd_variants(backend, full_matrices, compute_uv):
    for a in (_mat(5, 3), _mat(3, 5, dtype=np.float32)):
        check(lambda a: np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv), a, backend=backend)
    a = _spd((4, 4))
    check(lambda a: np.linalg.svd(a, hermitian=True, compute_uv=compute_uv), a, backend=backend)
    check(lambda a: np.linalg.svdvals(a) + 0, a, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lstsq_and_pinv(backend):
    a, b = _mat(6, 3), _mat(6)
    check(lambda a, b: np.linalg.lstsq(a, b), a, b, backend=backend)
    check(lambda a, b: np.linalg.lstsq(a, b, rcond=1e-3), a, np.stack([b, b + 1], 1), backend=backend)
    check(lambda a, b: np.linalg.lstsq(a, b), a[:2], b[:2], backend=backend)  # underdetermined: no residuals
    check(lambda a: np.linalg.pinv(a, rcond=1e-2), a, backend=backend)
    check(lambda a: np.linalg.pinv(a, rtol=1e-2), a, backend=backend)
    check(lambda a: np.linalg.pinv(a, hermitian=True), _spd((3, 3)), backend=backend)
    # A rank-deficient tall matrix: NumPy returns empty residuals (a data-dependent shape).
    deficient = np.hstack([a[:, :2], a[:, :1]])
    with pytest.raises(np.linalg.LinAlgError, match="rank 2 < 3"):
        jk.jit(lambda a, b: np.linalg.lstsq(a, b), backend=backend)(deficient, b)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 3, 4, 5, 7, 8])
def test_matrix_power_follows_numpys_multiplications(backend, n):
    a = _spd((3, 3)) / 4
    check(lambda a: np.linalg.matrix_power(a, n), a, backend=backend, rtol=0, atol=0 if n >= 0 else 1e-12)
    if n >= 0:
        ai = RNG.integers(-3, 4, (2, 3, 3)).astype(np.int8)
        check(lambda a: np.linalg.matrix_power(a, n), ai, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_multi_dot(backend):
    arrays = [_mat(4), _mat(4, 6), _mat(6, 2), _mat(2)]
    check(lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]), *arrays, backend=backend)
    check(lambda b, c: np.linalg.multi_dot([b, c]), arrays[1], arrays[2], backend=backend)
    check(lambda a, b, c: np.linalg.multi_dot([b.T, a[:, None], c[:1]]), *arrays[:3], backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rank_cond_tensordot_array_api_norms(backend):
    a = _mat(3, 4, 4)
    low = a.copy()
    low[1, :, 3] = low[1, :, 0] * 2  # rank 3
    check(lambda a: (np.linalg.matrix_rank(a), np.linalg.matrix_rank(a[0], tol=0.5), np.linalg.matrix_rank(a, rtol=0.1),
                     np.linalg.matrix_rank(a[0, 0]), np.linalg.matrix_rank(a[0, 0] * 0)), low, backend=backend)
    check(lambda a: np.linalg.matrix_rank(_spd_like(a), hermitian=True), a, backend=backend)
    sing = np.ones((2, 2))
    check(lambda a: (np.linalg.cond(a), np.linalg.cond(a, 2), np.linalg.cond(a[0], -2)), a, backend=backend)
    check(lambda a: np.linalg.cond(a), np.stack([sing, np.eye(2), np.full((2, 2), np.nan)]), backend=backend)
    b = _mat(4, 4, 5)
    check(lambda a, b: (np.tensordot(a, b), np.tensordot(a, b, axes=1), np.tensordot(a, b, axes=([1, 2], [1, 0])),
                        np.tensordot(a, b, axes=0).sum(), np.linalg.tensordot(a[0], b[0], axes=(0, 0))), a, b, backend=backend)
    check(lambda a: (np.linalg.vector_norm(a), np.linalg.vector_norm(a, axis=(0, 2), keepdims=True, ord=1),
                     np.linalg.vector_norm(a, axis=1, ord=np.inf), np.linalg.matrix_norm(a, ord="nuc"),
                     np.linalg.matrix_norm(a, keepdims=True)), a, backend=backend)
    with pytest.raises(UnsupportedOperationError, match="depending on the values"):
        jk.jit(np.linalg.eig, backend=backend)(a)
    with pytest.raises(ValueError, match="shape-mismatch"):
        jk.jit(lambda a: np.tensordot(a, a, axes=([0], [1])), backend=backend)(_mat(2, 3))


def _spd_like(a):
    return a @ np.swapaxes(a, -1, -2)


VECTOR_ORDS = [None, 2, 1, 0, np.inf, -np.inf, 3, 0.5, -1, -2]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_norm_every_order_and_axis(backend, dtype):
    x = (RNG.standard_normal((3, 4, 5)) * 3).astype(dtype)
    x.flat[3] = 0

    def vector_norms(x):
        out = [np.linalg.norm(x)] + [np.linalg.norm(x[0, 0], ord=o) for o in VECTOR_ORDS]
        out += [np.linalg.norm(x, ord=o, axis=ax, keepdims=k) for o in VECTOR_ORDS for ax, k in ((1, False), (-1, True))]
        return tuple(out)

    def matrix_norms(x):
        out = [np.linalg.norm(x[0], ord=o) for o in MATRIX_ORDS]
        out += [np.linalg.norm(x, ord=o, axis=ax, keepdims=k) for o in MATRIX_ORDS
                for ax, k in (((1, 2), False), ((2, 0), True))]
        return tuple(out)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    check(vector_norms, x, backend=backend, rtol=tol, atol=tol)
    check(matrix_norms, x, backend=backend, rtol=tol, atol=tol)
    check(lambda x: np.linalg.norm(x, axis=(0, 1)), x, backend=backend, rtol=tol, atol=tol)


@pytest.mark.parametrize("backend", BACKENDS)
def test_norm_fuses_with_its_producer_and_handles_empty_axes(backend):
    x = _mat(4, 6)
    check(lambda x: np.linalg.norm(np.sin(x) + 1, axis=1, ord=np.inf), x, backend=backend)
    check(lambda x: (np.linalg.norm(x, ord=np.inf, axis=0), np.linalg.norm(x, ord=1)), np.zeros((0, 3)), backend=backend)
    kp = jk.jit(lambda x: np.linalg.norm(np.sin(x) + 1, ord=3, axis=1)).lower(x).as_text("kernels")
    assert "library" not in kp  # elementwise and reductions only: no library step


@pytest.mark.parametrize("backend", BACKENDS)
def test_linalg_errors_are_numpys(backend):
    singular = np.ones((3, 3))
    for fn in (np.linalg.inv, lambda a: np.linalg.solve(a, np.ones(3))):
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            jk.jit(fn, backend=backend)(singular)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        jk.jit(np.linalg.cholesky, backend=backend)(-np.eye(3))
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        jk.jit(np.linalg.inv, backend=backend)(np.ones((2, 3)))
    with pytest.raises(np.linalg.LinAlgError, match="at least two-dimensional"):
        jk.jit(np.linalg.det, backend=backend)(np.ones(3))
    with pytest.raises(TypeError, match="float16 is unsupported in linalg"):
        jk.jit(np.linalg.inv, backend=backend)(np.eye(2, dtype=np.float16))
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        jk.jit(np.linalg.solve, backend=backend)(np.eye(3), np.ones(4))
    with pytest.raises(TypeError, match="exponent must be an integer"):
        jk.jit(lambda a: np.linalg.matrix_power(a, 1.5), backend=backend)(np.eye(2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_unread_singular_inverse_still_raises(backend):
    def f(a):
        unused = np.linalg.inv(a)  # noqa: F841 - NumPy raises here although nothing reads it
        return a + 1
    with pytest.raises(np.linalg.LinAlgError):
        jk.jit(f, backend=backend)(np.zeros((2, 2)))
    np.testing.assert_array_equal(jk.jit(f, backend=backend)(np.eye(2)), np.eye(2) + 1)


def test_library_step_shapes_change_between_calls():
    """The same jitted function on several sizes (shape-generic templates after the second)."""
    f = jk.jit(lambda a, b: (np.linalg.solve(a, b) * 2, np.sort(b) + 1, np.cumsum(b)))
    for n in (3, 4, 5, 7):
        a, b = _spd((n, n)), _mat(n)
        assert_matches_numpy(f(a, b), (np.linalg.solve(a, b) * 2, np.sort(b) + 1, np.cumsum(b)))


# ----------------------------------------------------------------------------- sorting

def _with_nans(draw_floats: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = draw_floats.copy()
    out[mask] = np.nan
    return out


@st.composite
def _sortable(draw):
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)))
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int16, np.uint8, np.bool_]))
    n = int(np.prod(shape))
    values = np.asarray(draw(st.lists(st.integers(-4, 4), min_size=n, max_size=n)), dtype=np.int64)
    x = values.reshape(shape).astype(dtype) if dtype != np.bool_ else (values.reshape(shape) > 0)
    if np.dtype(dtype).kind == "f":
        x = x.astype(np.float64) / 2  # ties and signed zeros
        nan = np.asarray(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool).reshape(shape)
        x = _with_nans(x, nan).astype(dtype)
        if n:
            x.flat[0] = -0.0
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    return x, axis


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(case=_sortable(), kind=st.sampled_from([None, "stable", "quicksort", "heapsort", "mergesort"]))
def test_sort_and_argsort_match_numpy_with_nans(backend, case, kind):
    x, axis = case
    check(lambda x: (np.sort(x, axis=axis, kind=kind), np.argsort(x, axis=axis, kind=kind)), x, backend=backend,
          rtol=0, atol=0)


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(case=_sortable(), side=st.sampled_from(["left", "right"]), use_sorter=st.booleans())
def test_searchsorted_matches_numpy_with_nans(backend, case, side, use_sorter):
    x, _ = case
    flat = x.ravel()
    if use_sorter:
        a, sorter = flat, np.argsort(flat, kind="stable")
        fn = lambda a, v, s: np.searchsorted(a, v, side=side, sorter=s)  # noqa: E731
        check(fn, a, x, sorter, backend=backend)
    else:
        check(lambda a, v: np.searchsorted(a, v, side=side), np.sort(flat), x, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sorting_variants(backend):
    x = _mat(4, 7)
    x[1, 3] = np.nan
    check(lambda x: (np.sort(x, stable=True), np.argsort(-x, axis=0, stable=True), x.argsort(axis=None),
                     np.argsort(np.float64(2.0) + x[0, 0])), x, backend=backend)
    check(lambda x: (np.partition(x, 3), np.partition(x, (0, -1), axis=0), np.partition(x, 2, axis=None)), x, backend=backend)
    check(lambda x: (np.argpartition(x, 3), x.argpartition([1, 2], axis=0)), x, backend=backend)
    check(lambda x: (np.sort(x) * 2 + 1).sum(axis=1), x, backend=backend)  # a library result feeds a kernel
    check(lambda a: np.searchsorted(a, 0.25), np.sort(x[0]), backend=backend)
    check(lambda a, v: a.searchsorted(v, "right"), np.arange(5), np.array([0.5, 2, 7]), backend=backend)


def _in_place_supported() -> bool:
    def write(x):
        x[...] = 0
        return x
    try:
        jk.make_ir(write)(np.ones(2))
        return True
    except jk.errors.InPlaceUpdateError:
        return False


@pytest.mark.parametrize("backend", BACKENDS)
def test_ndarray_sort_and_partition_sort_in_place(backend):
    def f(x):
        y = x[1:]
        y.sort(axis=0)
        x[0].partition(2)
        return x * 1, y + 0
    x = _mat(4, 5)
    if not _in_place_supported():
        with pytest.raises(jk.errors.InPlaceUpdateError):
            jk.jit(f, backend=backend)(x)
        return
    got_x, expected_x = x.copy(), x.copy()
    assert_matches_numpy(jk.jit(f, backend=backend)(got_x), f(expected_x))
    np.testing.assert_array_equal(got_x, expected_x)  # the caller's array is sorted in place too


@pytest.mark.parametrize("backend", BACKENDS)
def test_sorting_errors(backend):
    x = np.arange(5.0)
    with pytest.raises(ValueError, match=r"kth\(=5\) out of bounds \(5\)"):
        jk.jit(lambda x: np.partition(x, 5), backend=backend)(x)
    with pytest.raises(ValueError, match="sort kind must be one of"):
        jk.jit(lambda x: np.sort(x, kind="bogus"), backend=backend)(x)
    with pytest.raises(ValueError, match="search side must be"):
        jk.jit(lambda x: np.searchsorted(x, 1.0, side="middle"), backend=backend)(x)
    with pytest.raises(UnsupportedOperationError, match="order="):
        jk.jit(lambda x: np.sort(x, order="f"), backend=backend)(x)
    with pytest.raises(UnsupportedOperationError, match=r"numpy.unique\(..., axis=1\)"):
        jk.jit(lambda x: np.unique(x[None], axis=1), backend=backend)(x)


# ----------------------------------------------------------------------------- cumulative, diff

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int8, np.uint16, np.int64, np.bool_])
def test_cumsum_cumprod_dtypes_and_axes(backend, dtype):
    x = RNG.integers(-3, 4, (3, 5)).astype(dtype) if dtype != np.bool_ else RNG.random((3, 5)) > 0.5
    if np.dtype(dtype).kind == "f":
        x = (RNG.standard_normal((3, 5)) * 10).astype(dtype)
    check(lambda x: (np.cumsum(x), np.cumsum(x, axis=0), np.cumprod(x, axis=-1), x.cumsum(1),
                     np.cumsum(x, axis=1, dtype=np.float64), x.cumprod(), np.cumsum(x, dtype=np.int32)),
          x, backend=backend, rtol=0, atol=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cumsum_is_sequential_like_numpy(backend):
    # Sequential float32 accumulation rounds differently from a pairwise or tree sum: exact match.
    x = RNG.standard_normal(100_003).astype(np.float32) * 1000
    check(lambda x: np.cumsum(x) - 1, x, backend=backend, rtol=0, atol=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_diff_forms(backend):
    x = RNG.integers(-9, 9, (4, 5)).astype(np.int16)
    check(lambda x: (np.diff(x), np.diff(x, axis=0), np.diff(x, n=3), np.diff(x, n=0), np.diff(x, n=7),
                     np.diff(x, prepend=0), np.diff(x, append=x[:, :2], axis=1),
                     np.diff(x, axis=0, prepend=np.ones((1, 5), np.int8), append=2.5)), x, backend=backend)
    check(lambda b: (np.diff(b), np.diff(b, n=2, axis=0)), x > 0, backend=backend)
    check(lambda u: np.diff(u), np.array([3, 1, 2], np.uint8), backend=backend)
    with pytest.raises(ValueError, match="order must be non-negative"):
        jk.jit(lambda x: np.diff(x, n=-1), backend=backend)(x)
    with pytest.raises(ValueError, match="at least one dimensional"):
        jk.jit(np.diff, backend=backend)(np.float64(1.0))


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3), n=st.integers(0, 4), data=st.data())
def test_diff_hypothesis(backend, shape, n, data):
    x = RNG.integers(-5, 5, shape).astype(np.float32)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    prepend = data.draw(st.sampled_from([np._NoValue, 1.5]))
    check(lambda x: np.diff(x, n=n, axis=axis, prepend=prepend), x, backend=backend)


# ----------------------------------------------------------------------------- counting

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_histogram_forms(backend, dtype):
    a = (RNG.standard_normal((6, 7)) * 3).astype(dtype)
    w = RNG.random((6, 7)).astype(np.float32)
    edges = np.array([-4.0, -1.0, 0.0, 0.5, 3.0])
    check(lambda a: np.histogram(a), a, backend=backend)
    check(lambda a: np.histogram(a, bins=5, range=(-2, 2)), a, backend=backend)
    check(lambda a: np.histogram(a, bins=4, range=(np.float64(-2), 2.0), density=True), a, backend=backend)
    check(lambda a, w: np.histogram(a, bins=3, weights=w), a, w, backend=backend)
    check(lambda a, e: np.histogram(a, bins=e, density=True), a, edges, backend=backend)
    check(lambda a, e, w: np.histogram(a, e, weights=w * 2), a, edges.astype(np.int64), w, backend=backend)
    with pytest.raises(UnsupportedOperationError, match="bins='auto'"):
        jk.jit(lambda a: np.histogram(a, bins="auto"), backend=backend)(a)
    with pytest.raises(ValueError, match="must be positive"):
        jk.jit(lambda a: np.histogram(a, bins=0), backend=backend)(a)
    with pytest.raises(ValueError, match="max must be larger than min"):
        jk.jit(lambda a: np.histogram(a, range=(2, 1)), backend=backend)(a)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bincount_with_static_minlength(backend):
    x = np.array([0, 3, 1, 3, 3], np.int32)
    w = np.array([0.5, 1, 2, 3, 4], np.float32)
    check(lambda x: np.bincount(x, minlength=6), x, backend=backend)
    check(lambda x, w: np.bincount(x, w, minlength=4) * 2, x, w, backend=backend)
    check(lambda x: np.bincount(x.astype(np.uint8), minlength=5), x, backend=backend)
    with pytest.raises(ValueError, match="not below minlength=3"):
        jk.jit(lambda x: np.bincount(x, minlength=3), backend=backend)(x)
    with pytest.raises(ValueError, match="negative"):
        jk.jit(lambda x: np.bincount(x, minlength=9), backend=backend)(-x)
    with pytest.raises(UnsupportedOperationError, match="pass minlength"):
        jk.jit(np.bincount, backend=backend)(x)
    with pytest.raises(TypeError, match="Cannot cast"):
        jk.jit(lambda x: np.bincount(x, minlength=4), backend=backend)(x * 1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_digitize(backend):
    x = RNG.standard_normal((3, 4)) * 2
    x[0, 0] = np.nan
    bins = np.array([-2.0, -0.5, 0.0, 1.0, 1.0, 3.0])
    check(lambda x, b: (np.digitize(x, b), np.digitize(x, b, right=True), np.digitize(x, b[::-1])), x, bins, backend=backend)
    check(lambda x: np.digitize(x, np.array([1, 3, 5])), np.arange(7), backend=backend)
    with pytest.raises(ValueError, match="monotonically"):
        jk.jit(np.digitize, backend=backend)(x, np.array([1.0, 0.0, 2.0]))


# ----------------------------------------------------------------------------- ufunc methods

@pytest.mark.parametrize("backend", BACKENDS)
def test_ufunc_reduce_accumulate_outer(backend):
    xi = RNG.integers(0, 100, (4, 5)).astype(np.int32)
    xf = RNG.standard_normal((4, 5))
    check(lambda x: (np.add.accumulate(x), np.multiply.accumulate(x, axis=1), np.maximum.accumulate(x, axis=1),
                     np.subtract.accumulate(x, dtype=np.float64), np.bitwise_xor.accumulate(x)), xi, backend=backend)
    check(lambda x: (np.bitwise_xor.reduce(x), np.bitwise_or.reduce(x, axis=None), np.subtract.reduce(x, axis=1, keepdims=True),
                     np.add.reduce(x, axis=1), np.maximum.reduce(x, axis=0), np.bitwise_and.reduce(x, axis=(0, 1))), xi, backend=backend)
    check(lambda x: (np.minimum.accumulate(x), np.fmax.accumulate(x, axis=1), np.multiply.outer(x[0], x[:, 1]),
                     np.subtract.outer(x[0], x[1]), np.hypot.reduce(x, axis=1)), xf, backend=backend)
    check(lambda x: np.sin.accumulate(x), xf, backend=backend)  # NumPy's ValueError
    with pytest.raises(TypeError, match="ldexp.accumulate"):  # NumPy's own: no (float, int) -> float loop to chain
        jk.jit(lambda x: np.ldexp.accumulate(x), backend=backend)(xi)
    with pytest.raises(ValueError, match="no identity"):
        jk.jit(lambda x: np.subtract.reduce(x, axis=0), backend=backend)(np.zeros((0, 3)))


# ----------------------------------------------------------------------------- einsum

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
    ("iij->ji", [(3, 3, 2)]), ("iii->i", [(3, 3, 3)]), ("...ij,...jk->...ik", [(5, 2, 3), (5, 3, 4)]),
    ("abc,cd,de->ae", [(2, 3, 4), (4, 5), (5, 6)]), ("i,i", [(1,), (3,)]), ("ij->", [(2, 3)]),
    ("ij,kl->ijkl", [(2, 3), (1, 2)]), ("bij,bjk->bki", [(4, 2, 3), (4, 3, 2)]), ("ij,ij,ij->i", [(3, 4)] * 3),
    ("...i,...i", [(2, 3), (3,)]), ("i...,i...->...", [(3, 2), (3, 2)]), ("ji", [(2, 3)]), ("ij", [(2, 3)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 5), (5, 2)]), ("iJ,Jk->", [(0, 2), (2, 3)]), ("i,j->", [(3,), (4,)]),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("subscripts,shapes", EINSUM_CASES)
def test_einsum_forms(backend, subscripts, shapes):
    ops = [RNG.standard_normal(s) for s in shapes]
    check(lambda *o: np.einsum(subscripts, *o), *ops, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float32, np.bool_, np.uint16])
def test_einsum_dtypes(backend, dtype):
    a, b = (RNG.integers(-50, 50, s).astype(dtype) for s in ((3, 4), (4, 5)))
    check(lambda a, b: (np.einsum("ij,jk->ik", a, b), np.einsum("ij->j", a), np.einsum("ii->", b[:, :4])), a, b,
          backend=backend)
    check(lambda a, b: np.einsum("ij,jk->ik", a, b, dtype=np.float64), a, b, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_einsum_sublists_paths_and_lowering(backend):
    a, b, c = _mat(2, 3), _mat(3, 4), _mat(4)
    check(lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]), a, b, backend=backend)
    check(lambda a, b: np.einsum(a, [Ellipsis, 1], b, [1, 2]), a, b, backend=backend)
    path = ["einsum_path", (1, 2), (0, 1)]
    check(lambda a, b, c: np.einsum("ij,jk,k->i", a, b, c, optimize=path), a, b, c, backend=backend)
    check(lambda a, b, c: np.einsum("ij,jk,k->i", a, b, c, optimize=True), a, b, c, backend=backend)
    text = jk.jit(lambda a, b, c: np.einsum("ij,jk,k->i", a, b, c)).lower(a, b, c).as_text("kernels")
    library = [ln for ln in text.splitlines() if ln.strip().startswith("library")]
    assert len(library) == 2 and all("= dot_general(" in ln for ln in library), text
    with pytest.raises(TypeError, match="Cannot cast"):
        jk.jit(lambda a: np.einsum("ij->i", a, dtype=np.int32), backend=backend)(a)
    with pytest.raises(ValueError):
        jk.jit(lambda a: np.einsum("ii->i", a), backend=backend)(a)


_LETTERS = "abcdef"


@st.composite
def _einsum_problem(draw):
    sizes = {c: draw(st.integers(1, 4)) for c in _LETTERS}
    n_ops = draw(st.integers(1, 3))
    subs = []
    for _ in range(n_ops):
        k = draw(st.integers(0, 4))
        subs.append("".join(draw(st.lists(st.sampled_from(_LETTERS[:4]), min_size=k, max_size=k))))
    used = sorted(set("".join(subs)))
    if draw(st.booleans()):
        output = None  # implicit output
    else:
        # An output letter is one the inputs use, at most once each.
        output = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
    ellipsis = draw(st.booleans()) and n_ops <= 2
    shapes = []
    for s in subs:
        shape = [sizes[c] for c in s]
        if draw(st.booleans()) and shape:  # a size-1 axis broadcasts against the letter's size
            shape[draw(st.integers(0, len(shape) - 1))] = 1
        shapes.append(shape)
    if ellipsis:
        extra = draw(st.lists(st.integers(1, 3), max_size=2))
        subs = ["..." + s for s in subs]
        shapes = [extra + sh for sh in shapes]
        if output is not None:
            output = "..." + output
    # Repeated letters need equal sizes on one operand; broadcasting keeps them equal too.
    for s, sh in zip(subs, shapes):
        core = s.replace("...", "")
        off = len(sh) - len(core)
        for c in set(core):
            pos = [off + k for k, d in enumerate(core) if d == c]
            for p in pos:
                sh[p] = sizes[c]
    expr = ",".join(subs) + ("" if output is None else "->" + output)
    return expr, [tuple(sh) for sh in shapes]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=40, deadline=None, derandomize=True, database=None, print_blob=False,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(problem=_einsum_problem())
def test_einsum_hypothesis(backend, problem):
    expr, shapes = problem
    ops = [RNG.integers(-3, 4, s).astype(np.float64) for s in shapes]
    check(lambda *o: np.einsum(expr, *o), *ops, backend=backend)
    check(lambda *o: np.einsum(expr, *o, optimize=True), *ops, backend=backend)


# ----------------------------------------------------------------------------- np.fft

FFT_CASES = [
    (np.fft.fft, {}), (np.fft.ifft, {"n": 6}), (np.fft.rfft, {"axis": 0}), (np.fft.fft2, {}),
    (np.fft.fftn, {"axes": (0,), "norm": "ortho"}), (np.fft.ifftn, {"s": (4, 3), "axes": (0, 1)}), (np.fft.rfftn, {}),
    (np.fft.ihfft, {"norm": "forward"}),
]


def _check_fft(fn, x, backend):
    """Complex results compared as values (helpers' tolerances are per real dtype)."""
    got, expected = jk.jit(fn, backend=backend)(x), fn(x)
    for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
        assert type(g) is type(e) and g.dtype == e.dtype and g.shape == e.shape, (g.dtype, e.dtype, g.shape, e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-5 if e.dtype == np.complex64 else 1e-12, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,kw", FFT_CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fft_results(backend, fn, kw, dtype):
    x = _mat(4, 5, dtype=dtype)
    _check_fft(lambda x: fn(x, **kw), x, backend)
    _check_fft(lambda x: fn(x * 2 + 1, **kw) * 3, x, backend)  # fed by and feeding kernels


@pytest.mark.parametrize("backend", BACKENDS)
def test_fft_real_results_and_round_trips(backend):
    x = _mat(4, 6)
    check(lambda x: (np.fft.hfft(x), np.fft.irfft(x, n=8, axis=0), np.fft.irfftn(x, s=(4, 4), axes=(0, 1))), x, backend=backend)
    check(lambda x: (np.fft.irfft(np.fft.rfft(x)), np.fft.ifft2(np.fft.fft2(x)).real), x, backend=backend)


# ----------------------------------------------------------------------------- complex inputs

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_complex_inputs(backend, dtype):
    """Complex results keep NumPy's precision; eigenvalues, singular values, log|det| and
    residuals are real; NumPy 2 sorts complex lexicographically (NaN last)."""
    a = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))
    h = (a @ a.conj().T + 3 * np.eye(3)).astype(dtype)
    z = np.array([1 + 2j, 1 - 1j, np.nan + 0j, 1j, 1 + np.nan * 1j, -1 + 0j], dtype)
    fns = [np.sort, np.argsort, lambda z: np.searchsorted(np.sort(z), z), np.cumsum,
           lambda z: np.einsum("i,i", z, z), lambda z: np.einsum("i,j->ij", z, z)]
    fns_h = [np.linalg.inv, np.linalg.det, np.linalg.slogdet, np.linalg.cholesky, np.linalg.eigh,
             np.linalg.eigvalsh, np.linalg.svd, np.linalg.qr, np.linalg.pinv, lambda a: np.linalg.solve(a, a[0]),
             lambda a: np.linalg.lstsq(np.vstack([a, 2 * a[:1]]), np.ones(4)), np.linalg.norm,
             lambda a: np.linalg.norm(a, "nuc"), lambda a: np.linalg.norm(a, 2, axis=1),
             lambda a: np.linalg.norm(a, 0, axis=0), lambda a: np.linalg.norm(a, 3, axis=0),
             lambda a: np.linalg.norm(a, "fro", axis=(0, 1)), lambda a: np.linalg.matrix_power(a, 5),
             lambda a: np.einsum("ij,jk->ik", a, a), np.fft.fft, np.fft.ifft2, lambda a: np.fft.irfft(a, n=6)]
    tol = 1e-4 if dtype == "complex64" else 1e-10
    for fn, x in [(f, z) for f in fns] + [(f, h) for f in fns_h]:
        got, expected = jk.jit(fn, backend=backend)(x), fn(x)
        for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
            assert g.dtype == e.dtype and np.shape(g) == np.shape(e), (fn, g.dtype, e.dtype)
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- more accumulation, 1-d signal

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8, np.bool_])
def test_nancumsum_and_cumulative_sum(backend, dtype):
    x = (RNG.standard_normal((3, 4)) * 4).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[1, 2] = x[0, 0] = np.nan
    check(lambda x: (np.nancumsum(x), np.nancumprod(x, axis=1), np.nancumsum(x, axis=0, dtype=np.float64)), x,
          backend=backend, rtol=0, atol=0)
    check(lambda x: (np.cumulative_sum(x, axis=1), np.cumulative_prod(x, axis=0, include_initial=True),
                     np.cumulative_sum(x[0], include_initial=True), np.cumulative_sum(x, axis=-1, dtype=np.int64)),
          x, backend=backend, rtol=0, atol=0)
    with pytest.raises(ValueError, match="axis`` argument is required"):
        jk.jit(np.cumulative_sum, backend=backend)(x)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_correlate(backend, mode):
    a, v = _mat(7), _mat(3)
    ai, vi = RNG.integers(-5, 5, 6).astype(np.int8), RNG.integers(-5, 5, 9).astype(np.int16)
    check(lambda a, v: (np.convolve(a, v, mode), np.convolve(v, a, mode=mode), np.correlate(a, v, mode) * 2,
                        np.correlate(v, a, mode)), a, v, backend=backend)
    check(lambda a, v: (np.convolve(a, v, mode), np.correlate(a, v, mode)), ai, vi, backend=backend)
    with pytest.raises(ValueError, match="cannot be empty"):
        jk.jit(np.convolve, backend=backend)(a, np.zeros(0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_interp(backend):
    xp = np.sort(_mat(6))
    fp, x = _mat(6), _mat(3, 4) * 2
    check(lambda x, xp, fp: (np.interp(x, xp, fp), np.interp(x, xp, fp, left=-1.0, right=np.float32(2)),
                             np.interp(x, xp, fp, period=1.5), np.interp(0.25, xp, fp)), x, xp, fp, backend=backend)
    check(lambda x, xp, fp: np.interp(x, xp, fp.astype(np.float32)), x.astype(np.float32), xp, fp, backend=backend)
    with pytest.raises(ValueError, match="fp and xp are not of the same length"):
        jk.jit(np.interp, backend=backend)(x, xp, fp[:3])
