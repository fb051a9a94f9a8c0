"""Differentiation of indexing and library steps (transforms/ad_indexing.py, ad_library.py):
dynamic slices, gathers (repeated indices accumulate), scatters (the last write wins), np.put,
np.put_along_axis, np.putmask, np.place, np.add.at, cumsum/cumprod/ufunc.accumulate, sort and
the linalg steps, checked against central finite differences (`jk.check_grads`), with the
errors for steps without a rule.

Sweeps run on the interpret backend (no LLVM compile); a representative subset runs on cpu.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.errors import UnsupportedOperationError
from jitkernel.transforms import ad, ops


class _Interpret:
    """The interpret backend inside a hypothesis test (fixtures run once per test, not example)."""

    def __enter__(self):
        self.saved = jk.config.default_backend
        jk.config.update("default_backend", "interpret")

    def __exit__(self, *exc):
        jk.config.update("default_backend", self.saved)


def _prims(f, *args) -> set[str]:
    return {eqn.prim for eqn in jk.make_ir(f)(*args).eqns}


RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3))
IDX = np.array([0, 2, 0, 3])


def _set(x, index, v):
    y = x.copy()
    y[index] = v
    return y * y


def _add_at(x, v):
    y = x.copy()
    np.add.at(y, np.array([1, 1, 3]), v)
    return y * y


def _subtract_at(x, v):
    y = x.copy()
    np.subtract.at(y, (np.array([1, 1, 3]), 2), v)
    return y * y


def _put(x, v, ind):
    y = x.copy()
    np.put(y, ind, v, mode="wrap")
    return y * y


def _put_clip(x, v, ind):
    y = x.copy()
    np.put(y, ind, v, mode="clip")
    return y * y


def _putmask(x, v):
    y = x.copy()
    np.putmask(y, x > 0, v)
    return y * y


def _place(x, v):
    y = x.copy()
    np.place(y, x > 0, v)
    return y * y


def _put_along(x, v):
    y = x.copy()
    np.put_along_axis(y, np.array([[0, 0, 2]]), v, axis=0)
    return y * y


def _dus(x, v, i):
    y = x.copy()
    y[i] = v
    return y * y


# name: (function, arguments, the primitive it must trace to)
INDEXING = {
    "dynamic_slice": (lambda x, i: x[i] * x[i], (X, 2), "dynamic_slice"),
    "dynamic_slice_negative": (lambda x, i: np.sin(x[i]), (X, -1), "dynamic_slice"),
    "dynamic_update_slice": (_dus, (X, RNG.standard_normal(3), 2), "dynamic_update_slice"),
    "gather_repeated": (lambda x: x[IDX] * x[IDX], (X,), "gather"),
    "gather_mixed": (lambda x: np.sin(x[IDX[:2], 1:]), (X,), "gather"),
    "gather_2d_index": (lambda x: x[np.array([[0, 1], [1, 3]]), np.array([2, 2])] ** 2, (X,), "gather"),
    "take_wrap": (lambda x: np.take(x, np.array([5, -1, 5]), mode="wrap") ** 2, (X,), "take"),
    "take_clip_axis": (lambda x: np.take(x, np.array([7, -3, 1]), axis=0, mode="clip") ** 2, (X,), "take"),
    "take_raise": (lambda x: np.take(x, np.array([-1, 2, 2]), axis=1) ** 2, (X,), "take"),
    "take_along_axis": (lambda x: np.take_along_axis(x, np.array([[0, 0, 2]]), axis=0) ** 2, (X,), "take_along_axis"),
    "take_along_none": (lambda x: np.take_along_axis(x, np.array([1, 1, 11]), axis=None) ** 2, (X,), "take_along_axis"),
    "repeat_counts": (lambda x: np.repeat(x, [2, 0, 1], axis=1) ** 2, (X,), None),
    "scatter_repeated": (lambda x, v: _set(x, np.array([1, 1, 3]), v), (X, RNG.standard_normal((3, 3))), "scatter"),
    "scatter_broadcast": (lambda x, v: _set(x, (np.array([1, 1, 3]), slice(1, None)), v), (X, RNG.standard_normal(2)),
                          "scatter"),
    "add_at": (_add_at, (X, RNG.standard_normal((3, 3))), "scatter_ufunc"),
    "subtract_at": (_subtract_at, (X, RNG.standard_normal(3)), "scatter_ufunc"),
    # traced indices: with constant ones np.put traces to update_slice
    "put_wrap_cyclic": (_put, (X, RNG.standard_normal(2), np.array([1, 5, 1, 20, 2])), "put"),
    "put_clip": (_put_clip, (X, RNG.standard_normal(3), np.array([-4, 30, 0])), "put"),
    "putmask_cyclic": (_putmask, (X, RNG.standard_normal(5)), "putmask"),
    "place_cyclic": (_place, (X, RNG.standard_normal(2)), "place"),
    "put_along_axis": (_put_along, (X, RNG.standard_normal((1, 3))), "put_along_axis"),
}


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_indexing_rules_order2(interpret, name):
    f, args, prim = INDEXING[name]
    if prim is not None:
        assert prim in _prims(f, *args)
    jk.check_grads(f, args, order=2)


@pytest.mark.parametrize("name", ["gather_repeated", "scatter_repeated", "put_wrap_cyclic", "place_cyclic",
                                  "dynamic_update_slice", "take_wrap"])
def test_indexing_rules_cpu(name):
    f, args, _ = INDEXING[name]
    jk.check_grads(f, args, order=1)


def test_repeated_gather_indices_accumulate():
    g = jk.grad(lambda x: x[np.array([0, 0, 1, 0])].sum())(np.zeros(3))
    np.testing.assert_array_equal(g, [3.0, 1.0, 0.0])
    g = jk.grad(lambda x, i: (x[i] * np.array([1.0, 2.0, 4.0])).sum())(np.zeros(2), np.array([1, 1, 0]))
    np.testing.assert_array_equal(g, [4.0, 3.0])


def test_scatter_last_write_wins():
    def f(x, v):
        y = x.copy()
        y[np.array([1, 1, 0])] = v
        return (y * np.array([1.0, 10.0, 100.0])).sum()
    gx, gv = jk.grad(f, argnums=(0, 1))(np.zeros(3), np.zeros(3))
    np.testing.assert_array_equal(gx, [0.0, 0.0, 100.0])
    np.testing.assert_array_equal(gv, [0.0, 10.0, 1.0])  # the first write to index 1 is overwritten


def test_mixed_dtype_writes(interpret):
    # a float64 value written into a float32 array (NumPy casts); an integer value gets no cotangent
    x32 = X.astype(np.float32)
    jk.check_grads(lambda x, v: _set(x, np.array([0, 2]), v), (x32, RNG.standard_normal(3)), order=1)
    g = jk.grad(lambda x: _set(x, np.array([0]), np.array([7])).sum())(X)
    np.testing.assert_array_equal(g[0], 0.0)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 4), m=st.integers(1, 3), k=st.integers(1, 6), seed=st.integers(0, 10 ** 6))
def test_gather_scatter_sweep(n, m, k, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, m))
    idx = rng.integers(-n, n, size=k)  # repeats and negative indices
    v = rng.standard_normal((k, m))
    with _Interpret():
        jk.check_grads(lambda x: np.sin(x[idx]) * x[idx], (x,), order=1)
        jk.check_grads(lambda x, v: _set(x, idx, v), (x, v), order=1)
        jk.check_grads(lambda x: np.take(x, idx * 3 + 1, mode="wrap") ** 2, (x,), order=1)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 5), start=st.integers(-5, 4), seed=st.integers(0, 10 ** 6))
def test_dynamic_slice_sweep(n, start, seed):
    start = max(-n, min(start, n - 1))
    x = np.random.default_rng(seed).standard_normal((n, 2))
    with _Interpret():
        jk.check_grads(lambda x, i: np.cos(x[i]) * x[i], (x, start), order=1)

# ----------------------------------------------------------------------------- library steps


A = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
S = A @ A.T
AB = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
AC = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3)) + 3 * np.eye(3)
HC = AC @ AC.conj().T
B = RNG.standard_normal(3)
BM = RNG.standard_normal((3, 2))
T5x3 = RNG.standard_normal((5, 3))
XP = np.array([0.0, 1.0, 2.5, 4.0])
FP = np.array([1.0, -1.0, 2.0, 0.5])
C4x3 = RNG.standard_normal((4, 3)) + 1j * RNG.standard_normal((4, 3))


def _sign_free(usv):
    u, s, vt = usv
    return np.abs(u), s, np.abs(vt)

LIBRARY = {
    "cumsum": (lambda x: np.cumsum(x, axis=0) * x, (X,), "accumulate"),
    "cumsum_flat": (lambda x: np.cumsum(x) ** 2, (X,), "accumulate"),
    "cumprod": (lambda x: np.cumprod(x, axis=1), (X,), "accumulate"),
    "cumprod_with_zero": (lambda x: np.cumprod(np.where(x > 0, x, 0.0), axis=0), (X,), "accumulate"),
    "maximum_accumulate": (lambda x: np.maximum.accumulate(x, axis=0), (X,), "accumulate"),
    "cumsum_complex": (lambda x: np.cumsum(x * (1 + 2j), axis=1), (X,), "accumulate"),
    "sort": (lambda x: np.sort(x, axis=0) * np.arange(4.0)[:, None], (X,), "sort"),
    "sort_flat": (lambda x: np.sort(x, axis=None) * np.arange(12.0), (X,), "sort"),
    "inv": (np.linalg.inv, (A,), "linalg_inv"),
    "inv_batched": (np.linalg.inv, (AB,), "linalg_inv"),
    "inv_complex": (np.linalg.inv, (AC,), "linalg_inv"),
    "inv_float32": (np.linalg.inv, (A.astype(np.float32),), "linalg_inv"),
    "solve_vector": (np.linalg.solve, (A, B), "linalg_solve"),
    "solve_matrix": (np.linalg.solve, (A, BM), "linalg_solve"),
    "solve_batched_vector": (np.linalg.solve, (AB, B), "linalg_solve"),
    "solve_mixed_dtypes": (np.linalg.solve, (A.astype(np.float32), B), "linalg_solve"),
    "det": (np.linalg.det, (A,), "linalg_det"),
    "det_batched": (np.linalg.det, (AB,), "linalg_det"),
    "det_complex": (np.linalg.det, (AC,), "linalg_det"),
    "slogdet": (lambda a: np.linalg.slogdet(a)[1], (A,), "linalg_slogdet"),
    "slogdet_complex": (lambda a: tuple(np.linalg.slogdet(a)), (AC,), "linalg_slogdet"),
    "cholesky": (np.linalg.cholesky, (S,), "linalg_cholesky"),
    "cholesky_upper": (lambda a: np.linalg.cholesky(a, upper=True), (S,), "linalg_cholesky"),
    "cholesky_complex": (np.linalg.cholesky, (HC,), "linalg_cholesky"),
    "eigh_values": (lambda a: np.linalg.eigh(a)[0], (S,), "linalg_eigh"),
    # eigenvectors are defined up to sign: check sign-independent functions of them
    "eigh_vectors": (lambda a: np.linalg.eigh(a)[1] ** 2, (S,), "linalg_eigh"),
    "eigh_vectors_upper": (lambda a: np.linalg.eigh(a, UPLO="U")[1] ** 2, (S,), "linalg_eigh"),
    "eigh_complex": (lambda a: np.abs(np.linalg.eigh(a)[1]) + np.linalg.eigh(a)[0].sum(), (HC,), "linalg_eigh"),
    "eigvalsh": (np.linalg.eigvalsh, (S,), "linalg_eigvalsh"),
    # NumPy returns namedtuples (QRResult, SVDResult): the tests return plain tuples
    "qr_tall": (lambda a: tuple(np.linalg.qr(a)), (T5x3,), "linalg_qr"),
    "qr_wide": (lambda a: tuple(np.linalg.qr(a)), (T5x3.T.copy(),), "linalg_qr"),
    "qr_complete_square": (lambda a: tuple(np.linalg.qr(a, mode="complete")), (A,), "linalg_qr"),
    "qr_r": (lambda a: np.linalg.qr(a, mode="r"), (T5x3,), "linalg_qr"),
    "qr_complex": (lambda a: tuple(np.linalg.qr(a)), (C4x3,), "linalg_qr"),
    "svd_values": (lambda a: np.linalg.svd(a, compute_uv=False), (T5x3,), "linalg_svd"),
    "svd_values_complex": (lambda a: np.linalg.svd(a, compute_uv=False), (C4x3,), "linalg_svd"),
    # singular vectors are defined up to sign (a phase): sign-independent functions of them
    "svd_tall": (lambda a: _sign_free(np.linalg.svd(a, full_matrices=False)), (T5x3,), "linalg_svd"),
    "svd_wide": (lambda a: _sign_free(np.linalg.svd(a, full_matrices=False)), (T5x3.T.copy(),), "linalg_svd"),
    "svd_square_full": (lambda a: _sign_free(np.linalg.svd(a)), (A,), "linalg_svd"),
    "svd_complex": (lambda a: _sign_free(np.linalg.svd(a, full_matrices=False)), (C4x3,), "linalg_svd"),
    "average_weights": (lambda x, w: np.average(x, weights=w), (B, np.abs(BM[:, 0]) + 0.1), "raise_if"),
    "partition": (lambda x: np.partition(x, 2, axis=1) * np.arange(3.0), (X,), "partition"),
    "partition_kths": (lambda x: np.partition(x, (0, 3), axis=0), (X,), "partition"),
    "subtract_reduce": (lambda x: np.subtract.reduce(x, axis=1), (X,), "ufunc_reduce"),
    "divide_reduce_keepdims": (lambda x: np.divide.reduce(x, axis=0, keepdims=True), (X + 3,), "ufunc_reduce"),
    "hypot_reduce_all": (lambda x: np.hypot.reduce(x, axis=None), (X,), "ufunc_reduce"),
    "bincount_weights": (lambda w: np.bincount(np.array([0, 2, 2, 1, 0]), w, minlength=4), (T5x3[:, 0],), "bincount"),
    "convolve_full": (np.convolve, (T5x3[:, 0], B), "convolve"),
    "convolve_same_swapped": (lambda a, v: np.convolve(v, a, "same"), (T5x3[:, 0], B), "convolve"),
    "convolve_valid": (lambda a, v: np.convolve(a, v, "valid"), (T5x3[:, 0], B), "convolve"),
    "correlate": (np.correlate, (T5x3[:, 0], B), "convolve"),
    "correlate_complex": (lambda a, v: np.correlate(a, v, "full"), (C4x3[:, 0], C4x3[:, 1]), "convolve"),
    "interp": (np.interp, (np.array([-1.0, 0.3, 1.7, 3.1, 5.0]), XP, FP), "interp"),
    "interp_left_right": (lambda x, fp: np.interp(x, XP, fp, left=3.0, right=-2.0), (np.array([-1.0, 0.3, 5.0]), FP),
                          "interp"),
    "interp_complex": (lambda x, fp: np.interp(x, XP, fp), (np.array([0.3, 3.9]), FP + 1j * FP[::-1]), "interp"),
}


Z = X + 1j * RNG.standard_normal((4, 3))
FFT = {
    "fft": (np.fft.fft, (X,)),
    "fft_truncated": (lambda x: np.fft.fft(x, n=2, axis=0), (Z,)),
    "fft_padded_ortho": (lambda x: np.fft.fft(x, n=5, norm="ortho"), (Z,)),
    "ifft_forward": (lambda x: np.fft.ifft(x, norm="forward"), (Z,)),
    "fft2_s": (lambda x: np.fft.fft2(x, s=(3, 5)), (Z,)),
    "fftn_ortho": (lambda x: np.fft.fftn(x, norm="ortho"), (X,)),
    "ifftn_axis": (lambda x: np.fft.ifftn(x, axes=(0,)), (Z,)),
    "rfft": (np.fft.rfft, (X,)),
    "rfft_n": (lambda x: np.fft.rfft(x, n=5, axis=0, norm="ortho"), (X,)),
    "irfft": (np.fft.irfft, (Z,)),
    "irfft_odd": (lambda x: np.fft.irfft(x, n=7, norm="forward"), (Z,)),
    "rfft_irfft": (lambda x: np.fft.irfft(np.fft.rfft(x) * np.arange(2.0)), (X,)),
    "fft_float32": (np.fft.fft, (X.astype(np.float32),)),
    "hfft": (lambda x: np.fft.hfft(x, norm="ortho"), (Z,)),
    "ihfft": (np.fft.ihfft, (X,)),
    "rfft2": (np.fft.rfft2, (X,)),
    "rfftn_s": (lambda x: np.fft.rfftn(x, s=(3, 5), axes=(0, 1)), (X,)),
    "irfft2": (np.fft.irfft2, (Z,)),
    "irfftn_s": (lambda x: np.fft.irfftn(x, s=(5, 7), axes=(0, 1), norm="forward"), (Z,)),
}


@pytest.mark.parametrize("name", sorted(FFT))
def test_fft_rules_order2(interpret, name):
    f, args = FFT[name]
    assert "fft" in _prims(f, *args)
    jk.check_grads(f, args, order=2)


def test_fft_rules_cpu():
    jk.check_grads(lambda x: np.fft.irfft(np.fft.rfft(x) * np.arange(2.0)), (X,), order=1)


# second order is checked for one case of each rule; the slowest variants check first order
FIRST_ORDER_ONLY = {"svd_complex", "svd_wide", "svd_square_full", "eigh_complex", "hypot_reduce_all", "qr_complex",
                    "interp_complex", "divide_reduce_keepdims"}


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_library_rules(interpret, name):
    f, args, prim = LIBRARY[name]
    assert prim in _prims(f, *args)
    jk.check_grads(f, args, order=1 if name in FIRST_ORDER_ONLY else 2)


@pytest.mark.parametrize("name", ["cumprod", "sort", "inv", "solve_vector", "det", "cholesky", "eigh_vectors", "qr_tall",
                                  "svd_tall"])
def test_library_rules_cpu(name):
    f, args, _ = LIBRARY[name]
    jk.check_grads(f, args, order=1)


def test_symmetric_steps_read_one_triangle():
    # NumPy's cholesky reads the lower triangle only: the gradient has no upper part, as
    # finite differences of NumPy's own function say
    g = jk.grad(lambda a: np.linalg.cholesky(a).sum())(S)
    assert np.all(np.triu(g, 1) == 0) and np.any(np.tril(g, -1) != 0)
    g = jk.grad(lambda a: np.linalg.eigvalsh(a, UPLO="U")[-1])(S)
    assert np.all(np.tril(g, -1) == 0)


def test_sort_gradient_follows_the_permutation():
    g = jk.grad(lambda x: (np.sort(x) * np.array([1.0, 10.0, 100.0])).sum())(np.array([3.0, 1.0, 2.0]))
    np.testing.assert_array_equal(g, [100.0, 1.0, 10.0])
    np.testing.assert_array_equal(jk.grad(lambda x: np.argsort(x).astype(float).sum() + x.sum())(np.ones(3)), 1.0)


def test_cumprod_without_division_at_zero():
    # x has a zero: a rule dividing by x would give nan
    g = jk.grad(lambda x: np.cumprod(x).sum())(np.array([2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(g, [1.0, 2.0 + 6.0, 0.0])


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 4), seed=st.integers(0, 10 ** 6))
def test_linalg_sweep(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    s = a @ a.T + np.eye(n)
    with _Interpret():
        jk.check_grads(lambda a: np.linalg.inv(a).sum() + np.linalg.slogdet(a)[1], (a,), order=1)
        jk.check_grads(lambda s: np.linalg.cholesky(s), (s,), order=1)

# ----------------------------------------------------------------------------- errors and a broken rule


@pytest.mark.parametrize("f,text", [
    (lambda x: np.linalg.pinv(np.outer(x, x) + np.eye(3)).sum(), "numpy.linalg.pinv"),
    (lambda x: np.linalg.lstsq(np.outer(x, x) + np.eye(3), x)[0].sum(), "numpy.linalg.lstsq"),
    (lambda x: np.linalg.svd(np.outer(x, x[:2]))[0].sum(), "full_matrices=True"),
    (lambda x: np.linalg.qr(np.outer(x, x[:2]), mode="complete")[0].sum(), "mode='complete'"),
    (lambda x: np.histogram(x, bins=2, weights=x)[0].sum(), "numpy.histogram"),
    (lambda x: np.interp(x, XP, FP, period=3.0).sum(), "period="),
])
def test_library_steps_without_rule_name_the_function(interpret, f, text):
    with pytest.raises(UnsupportedOperationError, match=text.replace(".", r"\.")):
        jk.grad(f)(np.array([1.0, 2.0, 3.0]))


def test_multiply_at_is_refused(interpret):
    def f(x):
        y = x.copy()
        np.multiply.at(y, np.array([0, 0]), 2.0)
        return y.sum()
    with pytest.raises(UnsupportedOperationError, match=r"numpy\.multiply\.at"):
        jk.grad(f)(np.ones(3))


def test_mask_selection_is_refused_clearly(interpret):
    x = np.array([1.0, -2.0, 3.0])
    with pytest.raises(UnsupportedOperationError, match="data-dependent shape"):
        jk.grad(lambda x: np.sort(x[x > 0]).sum())(x)
    with pytest.raises(UnsupportedOperationError, match="data-dependent shape"):
        jk.vjp(lambda x: x[x > 0], x)


def test_a_broken_gather_rule_is_caught(interpret, monkeypatch):
    # a cotangent that *sets* instead of adding loses the repeated indices
    def broken(cts, primals, outs, *, index):
        x, *idx = primals
        zeros = ops.zeros_like(x.aval)
        return [ops.bind1("scatter", zeros, *idx, cts[0], index=index, weak=None)] + [None] * len(idx)
    monkeypatch.setitem(ad.VJP_RULES, "gather", broken)
    # a function object of its own: transformed functions are memoised per function (and their
    # compiled programs cached), so INDEXING's would reuse the program of the correct rule
    with pytest.raises(jk.GradientCheckError, match="element"):
        jk.check_grads(lambda x: x[IDX] * x[IDX], (X,), order=1, modes=("rev",))
