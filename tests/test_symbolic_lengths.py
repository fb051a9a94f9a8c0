"""Slices whose length depends on a loop index (`a[i, :i]`, `x[i:]`, `a[k+1:, k+1:]`, ...) inside
traced loops (docs/architecture.md, "Symbolic dimensions"), compared with NumPy running the same
Python function (jk.lax.fori_loop runs plain Python outside a trace), on the cpu and interpret
backends. n = 300 forces a real loop for Python `for` loops (no unrolling)."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from benchmarks import first_calls
from jitkernel.errors import UnsupportedOperationError
from tests.helpers import assert_matches_numpy
from helpers import HOST_BACKENDS

BACKENDS = HOST_BACKENDS
lax = jk.lax
RNG = np.random.default_rng(7)


def run_both(f, *args, backend, rtol=None, atol=None):
    """f jitted against f run by NumPy, on copies (the functions may write into their inputs)."""
    expected = f(*[np.array(a, copy=True) for a in args])
    got = jk.jit(f, backend=backend)(*[np.array(a, copy=True) for a in args])
    assert_matches_numpy(got, expected, rtol=rtol, atol=atol)
    return got


# ----------------------------------------------------------------------------- the workloads


def trisolve(L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def back_solve(U, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for k in range(n):
        i = n - 1 - k
        x[i] = (b[i] - U[i, i + 1:] @ x[i + 1:]) / U[i, i]
    return x


def cholesky(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        L[j, j] = np.sqrt(A[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1:, j] = (A[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L


def lu(A):
    """LU without pivoting (PolyBench lu), in place: L below the diagonal, U on and above."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        A[i, i:] -= A[i, :i] @ A[:i, i:]
    return A


def lu_polybench(A):
    """PolyBench lu as its loops are written, with the inner dot products as slices."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]
    return A


def _lower(n, dtype=np.float64):
    return (np.tril(RNG.uniform(-1, 1, (n, n))) + n * np.eye(n)).astype(dtype), RNG.standard_normal(n).astype(dtype)


def _spd(n):
    m = RNG.uniform(-1, 1, (n, n))
    return m @ m.T + n * np.eye(n)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [1, 2, 7, 300])
def test_triangular_solves(backend, n):
    L, b = _lower(n)
    run_both(trisolve, L, b, backend=backend, rtol=1e-12, atol=1e-14)
    run_both(back_solve, L.T.copy(), b, backend=backend, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [1, 2, 7, 300])
def test_cholesky(backend, n):
    A = _spd(n)
    L = run_both(cholesky, A, backend=backend, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(L @ L.T, A, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [1, 2, 7, 300])
def test_lu_without_pivoting(backend, n):
    if backend == "interpret" and n == 300:
        n = 60  # the interpreter runs the ~n^2/2 inner trips one equation at a time (8 s at 300)
    A = _spd(n)
    LU = run_both(lu, A, backend=backend, rtol=1e-9, atol=1e-10)
    L, U = np.tril(LU, -1) + np.eye(n), np.triu(LU)
    np.testing.assert_allclose(L @ U, A, rtol=1e-9, atol=1e-8)
    run_both(lu_polybench, A, backend=backend, rtol=1e-9, atol=1e-10)


def test_the_workloads_are_native_loops_with_no_full_copy():
    """The compiled form is one native loop whose carry is updated in place (no copy of L or A
    per trip) and whose dots are sums over the run-time length."""
    text = jk.jit(cholesky).lower(_spd(300)).as_text("kernels")
    assert "[native]" in text and "in place" in text and "update_copy" not in text
    assert "library" not in text and "dot_general" not in text
    text = jk.jit(trisolve).lower(*_lower(300)).as_text("kernels")
    assert "[native]" in text and "in place" in text
    text = jk.jit(lu).lower(_spd(300)).as_text("kernels")  # a chain: inner loop, then a row update
    assert text.count("in place") == 2 and "update_copy" not in text


# ----------------------------------------------------------------------------- each slice form

N = 9
A9 = RNG.standard_normal((N, N))
X9 = RNG.standard_normal(N)


def reads_prefix_rows_and_columns(a, x):
    return lax.fori_loop(0, N, lambda i, s: s + a[:i, i].sum() * 2 + a[i, :i + 1].max() - a[i, :i] @ x[:i], 0.0)


def reads_suffixes(a, x):
    return lax.fori_loop(0, N, lambda i, s: s + (a[i + 1:, i] * x[i + 1:]).sum() + np.exp(x[i:]).sum(), 0.0)


def reads_blocks_with_broadcasting(a, x):
    def body(i, s):
        block = a[:i, :] * x - a[i]  # (i, N) * (N,) - (N,)
        return s + block.sum() + (a[i:, i:] @ x[i:]).sum() + np.abs(a[:i + 1, 0]).min()
    return lax.fori_loop(0, N, body, 0.0)


def writes_prefix(a, x):
    def body(i, x):
        x[:i] = x[:i] * 0.5 + a[i, :i]
        return x
    return lax.fori_loop(0, N, body, x)


def writes_suffix_augmented(a, x):
    def body(i, x):
        x[i:] += a[i, i:]
        return x
    return lax.fori_loop(0, N, body, x)


def writes_a_column_suffix_and_a_scalar(a, x):
    def body(i, a):
        a[i + 1:, i] = a[i + 1:, i] / a[i, i]
        a[i, i] = a[i, :i].sum()
        return a
    return lax.fori_loop(0, N, body, a)


def outer_product_update(a, x):
    def body(k, A):
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:]) / A[k, k]
        return A
    return lax.fori_loop(0, N - 1, body, a + N * np.eye(N))


def matrix_vector_on_a_growing_block(a, x):
    def body(i, y):
        y[:i] = a[:i, :i] @ x[:i] + y[:i]
        return y
    return lax.fori_loop(0, N, body, np.zeros(N))


def windows_with_both_bounds_traced(a, x):
    # x[4 - i:4 + i] grows both ways: its padded window starts at min(4 - i, N - 8)
    def body(i, c):
        x, s = c
        s = s + x[4 - i:4 + i].sum() + a[i, 4 - i:4 + i] @ x[4 - i:4 + i]
        x[4 - i:4 + i] = x[4 - i:4 + i] * 0.5 + 1
        return x, s
    return lax.fori_loop(0, 5, body, (x, 0.0))


def empty_slices(a, x):
    # x[i:5] is empty for i >= 5, x[:i] at i = 0 (sum 0, dot 0), a[i, i + 1:i] and (from
    # i = 1 on, where i - 1 does not wrap) a[i, i:i - 1] always.
    return (lax.fori_loop(0, N, lambda i, s: s + x[i:5].sum() + x[:i] @ x[:i] + a[i, i + 1:i].sum(), 0.0)
            + lax.fori_loop(1, N, lambda i, s: s + a[i, i:i - 1].sum() + a[:i - 1, i] @ x[1:i], 0.0))


FORMS = [reads_prefix_rows_and_columns, reads_suffixes, reads_blocks_with_broadcasting, writes_prefix,
         writes_suffix_augmented, writes_a_column_suffix_and_a_scalar, outer_product_update,
         matrix_vector_on_a_growing_block, windows_with_both_bounds_traced, empty_slices]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f", FORMS, ids=lambda f: f.__name__)
def test_slice_forms_match_numpy(backend, f):
    run_both(f, A9, X9, backend=backend, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.complex128])
def test_dtypes(backend, dtype):
    def f(a, x):
        def body(i, c):
            x, s = c
            s = s + (a[i, :i].sum() + a[:i, i] @ x[:i] + (a[i + 1:, i] * 3).sum()).astype(dtype)
            x[i:] = x[i:] + a[i, i:]
            return x, s
        return lax.fori_loop(0, N, body, (x, np.zeros((), dtype)))
    a = (A9 * 10).astype(dtype)
    x = (X9 * 10).astype(dtype)
    if dtype == np.complex128:  # (tests/helpers.py compares real dtypes)
        a, x = a + 1j * a.T, x - 2j * x
        want, got = f(a.copy(), x.copy()), jk.jit(f, backend=backend)(a.copy(), x.copy())
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
        return
    tol = 1e-5 if dtype == np.float32 else None
    run_both(f, a, x, backend=backend, rtol=tol, atol=tol)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_in_the_padding_does_not_leak(backend):
    """NaN and inf outside the slices (the upper triangle, the tail of x) are in the padded
    windows the lowering reads: sums, products, max/min and dots must not see them."""
    a = np.tril(A9) + np.triu(np.full((N, N), np.nan), 1)
    a[0, N - 1] = np.inf
    x = X9.copy()
    x[N // 2:] = np.nan

    def f(a, x):
        def body(i, s):
            row = a[i, :i + 1]
            return s + row.sum() + np.prod(row * 0.1 + 1) + row.max() + row.min() + a[i, :i] @ a[i, :i]
        return lax.fori_loop(0, N, body, 0.0) + lax.fori_loop(0, N // 2, lambda i, s: s + x[:i] @ x[:i], 0.0)
    got = run_both(f, a, x, backend=backend, rtol=1e-12, atol=1e-12)
    assert np.isfinite(got)


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_for_loop_of_300_trips(backend):
    def f(x):
        s = 0.0
        for i in range(300):
            s = s + x[:i].sum() - x[i:].max()
        return s
    run_both(f, RNG.standard_normal(300), backend=backend, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_loop_over_range_of_an_outer_index(backend):
    def f(a):
        s = 0.0
        for i in range(300):
            for j in range(i, i + 2):  # traced bounds of known ranges: 0 <= j <= 300
                s = s + a[i, j:].sum() + a[:j, i].sum()
        return s
    run_both(f, RNG.standard_normal((300, 300)), backend=backend, rtol=1e-12)


# ----------------------------------------------------------------------------- argmin and argmax
# `j = i + np.argmin(a[i:])` (a selection sort) used to be refused, so a static loop unrolled
# (100 bodies: 10 s for the first call). The padding never wins a tie, NaN wins as in NumPy.

def _selection_sort(a):
    a = a.copy()
    for i in range(len(a)):
        j = i + np.argmin(a[i:])
        a[i], a[j] = a[j], a[i]
    return a


def _arg_forms(a, A):
    s = 0
    for i in range(1, len(a)):
        s += np.argmax(a[:i]) + np.argmin(a[i:]) * 10 + np.argmax(a[i - 1:]) * 100
    for i in range(1, 4):
        s += np.argmin(A[i:, 1:], axis=0).sum() + np.argmax(A[:i], axis=1).sum() + np.argmin(A[i:])
    return s


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("a", [RNG.random(40), np.array([3.0, np.nan, 1, np.nan, 0.5, 7]), np.full(6, np.inf),
                               np.array([-np.inf, 2, -np.inf, 5, 1, 1]), RNG.integers(-5, 5, 12),
                               np.full(8, np.iinfo(np.int64).max)], ids=["random", "nan", "inf", "-inf", "int", "intmax"])
def test_argmin_and_argmax_of_loop_index_slices_match_numpy(backend, a):
    run_both(_selection_sort, a, backend=backend)
    run_both(_arg_forms, a, np.resize(a, (5, 6)).astype(float), backend=backend)


def test_a_selection_sort_is_one_native_loop():
    assert [e.prim for e in jk.make_ir(_selection_sort)(np.ones(100)).eqns] == ["fori_loop"]


# ----------------------------------------------------------------------------- loops that stop early
# A `return` or `break` makes the loop a while loop, whose index had no known range, so
# `A[k:, k]` was refused ("the range of a traced bound is not known").

# (the function benchmarks/first_calls.py times: one definition for both)
_determinant = first_calls.determinant


def _first_prefix_over(a, limit):
    for i in range(1, len(a)):
        if a[:i].sum() > limit:
            break
    return i, a[i:].max()


@pytest.mark.parametrize("backend", BACKENDS)
def test_loop_index_slices_in_loops_with_return_or_break(backend):
    A = RNG.random((9, 9))
    run_both(_determinant, A, backend=backend, rtol=1e-9)
    singular = A.copy()
    singular[:, 3] = 0.0
    run_both(_determinant, singular, backend=backend)
    for limit in (0.5, 3.0, 100.0):
        run_both(_first_prefix_over, RNG.random(20), limit, backend=backend)
    assert "while_loop" in [e.prim for e in jk.make_ir(_determinant)(A).eqns]


# ----------------------------------------------------------------------------- errors


def _raises(f, match, *args):
    with pytest.raises(UnsupportedOperationError, match=match):
        jk.jit(f)(*args)


def test_errors_name_the_cause_and_the_line():
    x = X9.copy()
    _raises(lambda x: lax.fori_loop(1, N, lambda i, s: s + np.sort(x[:i])[0], 0.0),
            r"sort of a value of symbolic length.*test_symbolic_lengths.py:\d+", x)
    _raises(lambda x: lax.fori_loop(1, N, lambda i, s: s + x[:i].mean(), 0.0),
            r"known only at run time.*test_symbolic_lengths.py:\d+", x)
    _raises(lambda x: lax.fori_loop(0, N, lambda i, s: s + (x[:i] + x[N - i:]).sum(), 0.0),
            r"different positions.*test_symbolic_lengths.py:\d+", x)
    # NumPy clamps i + 3 to 9 on the last trips: this branch raises naming the line; the
    # data-dependent windows of helper datadep (numpy/_datadep.py) may compute it instead.
    clamped = lambda x: lax.fori_loop(0, N, lambda i, s: s + x[i:i + 3].sum() + x[:i].sum(), 0.0)  # noqa: E731
    try:
        got = jk.jit(clamped)(x)
    except UnsupportedOperationError as e:
        assert re.search(r"outside the axis, where NumPy clamps it.*test_symbolic_lengths.py:\d+", str(e)), str(e)
    else:
        assert_matches_numpy(got, clamped(x))
    # both bounds traced and the padded window [4 - i, 4 - i + 8) may leave the axis: a
    # data-dependent window instead (numpy/_datadep.py window, tests/test_data_dependent_shapes.py)
    np.testing.assert_allclose(jk.jit(lambda x: lax.fori_loop(0, 5, lambda i, s: s + x[4 - i:4 + i].sum(), 0.0))(x),
                               sum(x[4 - i:4 + i].sum() for i in range(5)))
    _raises(lambda x: lax.fori_loop(0, N, lambda i, s: s + x[i, :i].max(), 0.0),
            r"may be 0", A9)

    def writes_through_a_variable(x):
        def body(i, x):
            y = x[:i]
            y += 1  # NumPy writes into x through the view: not supported, never silently dropped
            return x
        return lax.fori_loop(0, N, body, x)
    _raises(writes_through_a_variable, r"write into an array of symbolic length.*y \+= 1", x)
    with pytest.raises(TypeError, match="shape changed"):
        jk.jit(lambda x: lax.fori_loop(1, N, lambda i, c: x[:i], x))(x)


# ----------------------------------------------------------------------------- random bodies

M = 8


@st.composite
def affine_bound(draw, lo, hi):
    """c + k * i within [0, M] for every i in [lo, hi)."""
    k = draw(st.sampled_from([-1, 0, 1, 2]))
    values = [k * i for i in range(lo, hi)]
    c = draw(st.integers(-min(values), M - max(values)))
    return c, k


@st.composite
def loop_bodies(draw):
    lo = draw(st.integers(0, 2))
    hi = draw(st.integers(lo + 1, 4 if draw(st.booleans()) else M))
    if any(2 * i > M for i in range(lo, hi)):
        hi = lo + 1
    return dict(lo=lo, hi=hi, start=draw(affine_bound(lo, hi)), stop=draw(affine_bound(lo, hi)),
                reduce=draw(st.sampled_from(["sum", "dot", "exp", "prod", "row", "col"])),
                update=draw(st.sampled_from([None, "assign", "add", "scale"])),
                dtype=draw(st.sampled_from([np.float64, np.float32, np.int64])))


def _body_function(p):
    (c0, k0), (c1, k1) = p["start"], p["stop"]
    red, upd = p["reduce"], p["update"]

    def f(a, x, y):
        def body(i, carry):
            x, acc = carry
            sl = slice(c0 + k0 * i, c1 + k1 * i)
            u, v = x[sl], y[sl]
            if red == "sum":
                r = u.sum()
            elif red == "dot":
                r = u @ v
            elif red == "exp":
                r = (np.exp(u * 0.01) * v - y[i]).sum()
            elif red == "prod":
                r = np.prod(u % 3 + 1)
            elif red == "row":
                r = a[i, sl] @ v
            else:
                r = (a[sl, i] * u).sum()
            if upd == "assign":
                x[sl] = v - u
            elif upd == "add":
                x[sl] += a[i, sl]
            elif upd == "scale":
                x[sl] = u * 2 + y[i]
            return x, acc + r.astype(x.dtype)
        return lax.fori_loop(p["lo"], p["hi"], body, (x, np.zeros((), x.dtype)))
    return f


@settings(max_examples=40, deadline=None)
@given(loop_bodies(), st.sampled_from(BACKENDS))
def test_random_bodies_with_affine_bounds_match_numpy(p, backend):
    dt = p["dtype"]
    a = (RNG.uniform(-3, 3, (M, M))).astype(dt)
    x, y = (RNG.uniform(-3, 3, M)).astype(dt), (RNG.uniform(-3, 3, M)).astype(dt)
    f = _body_function(p)
    got = jk.jit(f, backend=backend)(a.copy(), x.copy(), y.copy())
    expected = f(a.copy(), x.copy(), y.copy())
    tol = 1e-4 if dt == np.float32 else None
    assert_matches_numpy(got, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_window_at_traced_starts_is_a_view(backend):
    """x[i:i + 2] is a view of x: `x[i:i + 2] += v` and writes through a kept window reach x, and
    a kept window sees later writes to x (it was an 'identity' view of all of x before)."""
    def f(x):
        def body(i, c):
            x, s = c
            x[i:i + 2] += 1.0
            w = x[i + 1:i + 3]
            x[i + 2] = 10.0 * i
            s = s + w.sum()
            w *= 2.0
            return x, s
        return lax.fori_loop(0, 5, body, (x, 0.0))
    run_both(f, np.arange(8.0), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sums_of_prefixes_follow_numpys_pairwise_order_exactly(backend):
    """x[:i].sum() and x[i:].sum() compiled are NumPy's pairwise sums of their elements (the
    loop runs over the valid range), not sums of n elements with zeros: bit-identical for every
    i. The interpreter runs the lowered program (padded sums): equal within rounding."""
    def f(x):
        out = np.zeros_like(x)
        for i in range(x.shape[0]):
            out[i] = x[:i].sum() + x[i:].sum()
        return out
    x = RNG.standard_normal(700) * 10.0 ** RNG.integers(-8, 8, 700)
    expected = f(x.copy())
    got = jk.jit(f, backend=backend)(x.copy())
    if backend == "cpu":
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-12)


# ----------------------------------------------------------------------------- reversed windows
# `np.flip(r[:k])`, `x[k:][::-1]`: a window of loop-index length reversed (PolyBench durbin), and
# a dot of two windows of one length at different positions (`x[:k] @ y[n - k:]`: the valid
# parts are realigned; they were paired position by position before, a silent wrong answer).


def durbin(r):
    """PolyBench durbin as NPBench writes it (Levinson-Durbin with np.flip of loop-index slices)."""
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, r.shape[0]):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [2, 7, 300])
def test_durbin_with_flipped_loop_index_slices(backend, n):
    r = RNG.uniform(0.0, 1.0, n) / n  # a diagonally dominant Toeplitz system: stable
    run_both(durbin, r, backend=backend, rtol=1e-10, atol=1e-13)


@st.composite
def reversed_windows(draw):
    """A loop over i in [lo, hi) with a window W = [c0 + k0 i, c1 + k1 i) of x and a second window
    V of the same length (W itself, W shifted, or the suffix of the same length), either one
    reversed, combined by `op`."""
    lo = draw(st.integers(0, 2))
    hi = draw(st.integers(lo + 1, M))
    if any(2 * i > M for i in range(lo, hi)):
        hi = lo + 1
    (c0, k0), (c1, k1) = draw(affine_bound(lo, hi)), draw(affine_bound(lo, hi))
    lengths = [max(c1 + k1 * i - (c0 + k0 * i), 0) for i in range(lo, hi)]
    other = draw(st.sampled_from(["same", "shifted", "suffix"]))
    bounds = [b for i in range(lo, hi) for b in (c0 + k0 * i, c1 + k1 * i)]
    shift = draw(st.integers(-min(bounds), M - max(bounds))) if -min(bounds) <= M - max(bounds) else 0
    if other == "shifted" and shift == 0 or any(n == 0 for n in lengths) and other == "suffix":
        other = "same"  # (a suffix of length <= 0 is x[M - n:] with a wrapping start)
    return dict(lo=lo, hi=hi, w=(c0, k0, c1, k1), other=other, shift=shift,
                flip=draw(st.sampled_from(["first", "second", "both"])),
                op=draw(st.sampled_from(["dot", "assign", "add", "sum2d", "row"])))


def _reversed_window_function(p):
    c0, k0, c1, k1 = p["w"]

    def windows(i):
        w = slice(c0 + k0 * i, c1 + k1 * i)
        if p["other"] == "same":
            return w, w
        if p["other"] == "shifted":
            return w, slice(c0 + p["shift"] + k0 * i, c1 + p["shift"] + k1 * i)
        return w, slice(M - (c1 - c0) - (k1 - k0) * i, None)  # x[M - length:]

    def f(a, x, y):
        def body(i, carry):
            x, acc = carry
            w, v = windows(i)
            u, t = x[w], y[v]
            if p["flip"] in ("first", "both"):
                u = np.flip(u)
            if p["flip"] in ("second", "both"):
                t = t[::-1]
            if p["op"] == "dot":
                acc = acc + u @ t
            elif p["op"] == "assign":
                x[w] = np.flip(y[w]) * 2.0 + x[w]
            elif p["op"] == "add":
                x[w] += 0.5 * np.flip(x[w])
            elif p["op"] == "sum2d":
                acc = acc + (np.flip(a[w, w], axis=p["flip"] == "first") * a[w, w]).sum()
            else:
                acc = acc + np.flip(a[i, w]) @ t
            return x, acc
        return lax.fori_loop(p["lo"], p["hi"], body, (x, 0.0))
    return f


@settings(max_examples=40, deadline=None)
@given(reversed_windows(), st.sampled_from(BACKENDS))
def test_reversed_windows_and_realigned_dots_match_numpy(p, backend):
    a = RNG.uniform(-3, 3, (M, M))
    x, y = RNG.uniform(-3, 3, M), RNG.uniform(-3, 3, M)
    f = _reversed_window_function(p)
    got = jk.jit(f, backend=backend)(a.copy(), x.copy(), y.copy())
    assert_matches_numpy(got, f(a.copy(), x.copy(), y.copy()), rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- vector times a matrix window
# `data[:, i] @ data[:, i:M]` (PolyBench covariance, correlation), `x[:i] @ a[:i, i:]` (lu): the
# right operand holds its contracted axis before its free one. The product is laid out with the
# contraction outermost, so the kernel reads the matrix's rows in memory order and accumulates
# into the output (as BLAS's gemv does); it read columns with a stride before, 10x slower.


def covariance(data):
    M = data.shape[1]
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / 3.0
    return cov


def test_a_vector_times_a_matrix_window_walks_the_matrix_in_memory_order():
    data = RNG.standard_normal((40, 300))
    run_both(covariance, data, backend="cpu", rtol=1e-12, atol=1e-12)
    text = jk.jit(covariance).lower(data).as_text("kernels")
    kernel = text[text.index("dot_sum over"):]
    assert re.search(r"over \[i0<40, i1<300\]", kernel[:40]), kernel[:200]
    assert re.search(r"store %\d+\[i1\] <- sum-reduce", kernel), kernel[:800]


@st.composite
def vector_matrix_windows(draw):
    lo = draw(st.integers(0, 2))
    hi = draw(st.integers(lo + 1, M))
    if any(2 * i > M for i in range(lo, hi)):
        hi = lo + 1
    return dict(lo=lo, hi=hi, w=draw(affine_bound(lo, hi)) + draw(affine_bound(lo, hi)),
                form=draw(st.sampled_from(["static_contract", "window_contract", "both", "matrix_rows"])),
                dtype=draw(st.sampled_from([np.float64, np.float32, np.int64, np.complex128])))


@settings(max_examples=40, deadline=None)
@given(vector_matrix_windows(), st.sampled_from(BACKENDS))
def test_vector_times_matrix_windows_match_numpy(p, backend):
    c0, k0, c1, k1 = p["w"]
    form = p["form"]

    def f(a, b, x):
        def body(i, c):
            y, acc = c
            w = slice(c0 + k0 * i, c1 + k1 * i)
            if form == "static_contract":
                acc = acc + (x @ a[:, w]).sum()
                y[w] = y[w] + x @ a[:, w]
            elif form == "window_contract":
                acc = acc + (x[w] @ a[w, :] * b[i]).sum()
            elif form == "both":
                y[w] = x[w] @ a[w, w] - y[w]
            else:
                acc = acc + (b[w, :] @ a[:, w]).sum()
            return y, acc
        return lax.fori_loop(p["lo"], p["hi"], body, (np.zeros(M, a.dtype), np.zeros((), a.dtype)))

    dt = p["dtype"]
    a, b, x = (RNG.uniform(-3, 3, s).astype(dt) for s in ((M, M), (M, M), M))
    got = jk.jit(f, backend=backend)(a.copy(), b.copy(), x.copy())
    want = f(a.copy(), b.copy(), x.copy())
    tol = 1e-4 if dt == np.float32 else 1e-12
    for g, e in zip(got, want):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol)
