"""Kernels as they are written (measured on NPBench by benchmarks/npbench_as_written.py).

Our own small programs in the style of that suite's kernels, each run by NumPy and jitted on the
`cpu` and `interpret` backends: the result and the final contents of every argument must be
NumPy's. One section per mechanism the suite exposed; the generators cover each class.
"""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import assert_matches_numpy, HOST_BACKENDS, load, run_on_copies
import emulator_suite

BACKENDS = HOST_BACKENDS + emulator_suite.emulator_backends()  # cuda-emulator where g++ is
DRAWN_BACKENDS = emulator_suite.DRAWN_BACKENDS


def same_as_numpy(fn, *args, backend, jit_kwargs=None, refusal_ok=False):
    """The jitted call gives NumPy's result (or NumPy's exception type) and leaves every argument
    with NumPy's final contents. With `refusal_ok`, jitkernel may instead refuse with a clear
    UnsupportedOperationError (a generator's program may hold a form that is not supported)."""
    expected = run_on_copies(fn, *args)
    got = run_on_copies(jk.jit(fn, backend=backend, **(jit_kwargs or {})), *args)
    if refusal_ok and got[0] == "raise" and got[1] is NotImplementedError:
        return got
    assert got[0] == expected[0], (got, expected)
    if got[0] == "raise":
        assert issubclass(got[1], expected[1]), (got, expected)
        return got
    assert_matches_numpy(got[1], expected[1])
    for k, (a, b) in enumerate(zip(got[2], expected[2])):
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape, (k, a.dtype, b.dtype, a.shape, b.shape)
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-300, err_msg=f"argument {k}")
    return got


# ----------------------------------------------------------------------------- views at a traced index
# `row = A[i]` with a traced `i` is a view of A in NumPy: a write through it changes A's row i.
# It used to alias A as a whole, so the write replaced all of A by the row (silently wrong, and
# the written-back argument was the row broadcast over every row).

def _row_update(A, i):
    row = A[i]
    row += 1.0
    return A.sum()


def _column_item(A, i):
    col = A[:, i]
    col[0] = 7.0


def _column_aug(A, q, k):
    A[:, k] -= q * 2.0  # Python reads A[:, k], updates it in place, and stores it back
    return A


def _loop_rows(A):
    for i in range(A.shape[0]):
        r = A[i]
        r *= i + 1.0
    return A


def _gram_schmidt(A):  # the shape of a modified Gram-Schmidt: writes through columns at loop indices
    n = A.shape[1]
    Q = np.zeros_like(A)
    R = np.zeros((n, n))
    for k in range(n):
        R[k, k] = np.sqrt(np.dot(A[:, k], A[:, k]))
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


@pytest.mark.parametrize("backend", BACKENDS)
def test_write_through_a_view_at_a_traced_index_changes_only_that_window(backend):
    A = np.arange(12.0).reshape(3, 4)
    same_as_numpy(_row_update, A, 1, backend=backend)
    same_as_numpy(_row_update, A, -1, backend=backend)
    same_as_numpy(_column_item, A, 2, backend=backend)
    same_as_numpy(_column_aug, A, np.arange(3.0), 1, backend=backend)
    same_as_numpy(_loop_rows, A, backend=backend)
    same_as_numpy(_gram_schmidt, np.random.default_rng(0).random((6, 4)), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_view_at_a_traced_index_out_of_bounds_raises_index_error(backend):
    assert same_as_numpy(_row_update, np.ones((3, 4)), 3, backend=backend)[0] == "raise"


_TRACED_VIEWS = ["[i]", "[:, i]", "[i, 1:3]", "[-1 - i]", "[i][1:]", "[1:, i]", "[i, ::2]", "[i, None]",
                 "[::-1][i]"]
_STATIC_VIEWS = ["[1]", "[:, 2]", "[1:, ::2]", ".T", ".reshape(-1)", "[...]", ""]  # "": the same array
_WRITES = ["{v} += 1.5", "{v} *= -2", "{v}[...] = {x}[0, 0]", "{v}[0] = 9", "{v}[-1] = {v}.sum()",
           "np.copyto({v}, 0.5)", "{v}.fill(3)", "np.add({v}, 1, out={v})"]


@st.composite
def view_write_programs(draw):
    """Views of the arguments (at a traced index `i`, or static), written through by name, in
    straight-line code, in a loop over a traced range whose index is `i`, or under an `if` on a
    traced value; the view is made before the block or inside it."""
    block = draw(st.sampled_from(["plain", "loop", "if"]))
    before, inside = [], []
    for k in range(draw(st.integers(1, 4))):
        x = draw(st.sampled_from(["a", "b"]))
        v = f"v{k}"
        views = _TRACED_VIEWS if block != "if" else _STATIC_VIEWS
        made_before = block != "plain" and draw(st.booleans())
        if made_before:
            view = draw(st.sampled_from(_STATIC_VIEWS if block == "loop" else views))
        else:
            view = draw(st.sampled_from(views))
        (before if made_before else inside).append(f"{v} = {x}{view}")
        inside.append(draw(st.sampled_from(_WRITES)).format(v=v, x=draw(st.sampled_from(["a", "b"]))))
    if block == "plain":
        lines = inside
    elif block == "loop":
        lines = before + ["for i in range(1, n):"] + ["    " + line for line in inside]
    else:
        lines = before + ["if b[0, 0] < n:"] + ["    " + line for line in inside]
    body = "\n".join(f"    {line}" for line in lines)
    return f"def f(a, b, {'i' if block == 'plain' else 'n'}):\n{body}\n    return a * 1, b.sum()\n"


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(src=view_write_programs(), i=st.integers(-3, 2), backend=st.sampled_from(DRAWN_BACKENDS))
def test_random_writes_through_views_match_numpy(tmp_path_factory, src, i, backend):
    f = load(tmp_path_factory.mktemp("gen"), src)
    a = np.arange(12.0).reshape(3, 4) / 3
    b = np.arange(12.0).reshape(3, 4)[::-1] - 5
    try:
        same_as_numpy(f, a, b, i if "i):" in src.splitlines()[0] else abs(i) + 1, backend=backend,
                      refusal_ok=True)  # a clear refusal is allowed, never a wrong answer
    except AssertionError as e:
        raise AssertionError(f"{src}\n{e}") from None


# ----------------------------------------------------------------------------- writes through a view in a loop
# `row = A[i]; row *= c` inside a converted loop writes A: autograph must carry A (the view's
# base), not only names written with `A[...] = ...`. Before, the body wrote the enclosing trace's
# array and the trace crashed with a KeyError.

def _scale_rows_traced(A, n):
    for i in range(n):
        row = A[i]
        row *= 2.0
        row[0] = -row[-1]
    return A.sum()


def _view_made_before_the_loop(A, n):
    col = A[:, 1]
    for i in range(n):
        col += i
    return A


def _reshaped_view_in_loop(A, n):
    for i in range(n):
        flat = A.reshape(-1)
        flat[i] = 100.0 + i
        t = A.T
        t[0, i] = -1.0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [_scale_rows_traced, _view_made_before_the_loop, _reshaped_view_in_loop])
def test_writes_through_views_inside_a_traced_loop_reach_the_base(fn, backend):
    same_as_numpy(fn, np.arange(12.0).reshape(3, 4), 3, backend=backend)


def test_writing_an_enclosing_array_from_a_loop_body_is_a_clear_error():
    def body(i, c):
        view = outer_view[0]
        view[0] = 1.0  # outer_view belongs to the enclosing trace: not a carry of this loop
        return c

    def f(A):
        global outer_view
        outer_view = A[1:]
        return jk.lax.fori_loop(0, 2, body, A.sum())

    with pytest.raises(jk.errors.UnsupportedOperationError, match="enclosing trace"):
        jk.jit(f, autograph=False)(np.ones((3, 4)))


# ----------------------------------------------------------------------------- helper functions are converted too
# NPBench's conv2d_bias calls conv2d (two loops), cavity_flow calls build_up_b and
# pressure_poisson: the callee's loops must be loops (not 961 unrolled iterations), as
# AutoGraph converts called functions.

def _prefix_sum_into(a):
    for i in range(1, a.shape[0]):
        a[i] += a[i - 1]


def _smooth(u, n):
    for _ in range(n):
        u[1:-1] = 0.5 * (u[2:] + u[:-2])
    return u


def _calls_helpers(a, u, n):
    _prefix_sum_into(a)
    v = _smooth(u.copy(), n)
    return a.sum() + _norm_of(v)


def _norm_of(v):
    total = 0.0
    for k in range(v.shape[0]):
        total += v[k] * v[k]
    return np.sqrt(total)


@pytest.mark.parametrize("backend", BACKENDS)
def test_helpers_called_by_a_jitted_function_match_numpy(backend):
    same_as_numpy(_calls_helpers, np.arange(50.0), np.linspace(0, 1, 40), 7, backend=backend)


def test_a_loop_in_a_called_helper_stays_one_loop():
    program = jk.make_ir(_calls_helpers)(np.arange(50.0), np.linspace(0, 1, 40), 7)
    loops = [e for e in program.eqns if e.prim in ("fori_loop", "while_loop")]
    assert len(loops) == 3, [e.prim for e in program.eqns]
    assert len(program.eqns) < 40


def test_only_the_users_functions_are_converted():
    from jitkernel.autograph.callees import is_user_function
    from jitkernel.autograph import convert
    assert is_user_function(_prefix_sum_into)
    assert not is_user_function(np.linalg.norm) and not is_user_function(np.mean)
    assert not is_user_function(jk.lax.fori_loop) and not is_user_function(len)
    import json
    assert not is_user_function(json.dumps)
    assert convert(_prefix_sum_into) is convert(_prefix_sum_into)  # converted once, cached


# ----------------------------------------------------------------------------- creation under other spellings
# `from numpy import zeros` and `np.ndarray(shape, dtype)` (NPBench's vadv) bypass the patch of
# np.zeros: they made NumPy constants, into which traced values cannot be written.

_CREATION_SOURCE = '''
from numpy import zeros, empty, ones, full, zeros_like
import numpy

def f(x):
    out = zeros(x.shape)
    out[1:] = x[:-1]
    col = np.ndarray((x.shape[0], 2), dtype=x.dtype)
    col[:, 0] = x
    col[:, 1] = x * 2
    e = empty(3, np.int32)
    e[...] = 4
    e[0] = x.shape[0]
    o = ones((2,)) + full(2, 7.0)
    o[0] = x.max()
    z = zeros_like(x)
    z += x
    m = numpy.ndarray(shape=(2,))
    m[:] = x[:2]
    return out, col, e, o, z, m
'''


@pytest.mark.parametrize("backend", BACKENDS)
def test_creation_functions_imported_from_numpy_make_traced_arrays(tmp_path, backend):
    f = load(tmp_path, _CREATION_SOURCE)
    same_as_numpy(f, np.arange(5.0), backend=backend)


# ----------------------------------------------------------------------------- integer arguments used as sizes
# NPBench passes sizes as Python ints (`kernel(M, float_n, data)`: `np.eye(M)`, `range(M - 1)`,
# `np.reshape(A, (NR, NQ, 1, NP))`, `u[1:N - 1]`). An int argument is a run-time value; when the
# trace needs it as a Python int, the function is traced again with its ints static.

def _sized_by_arguments(x, n, m):
    out = np.zeros((n, m))
    out[1:n - 1, 0] = x[:n - 2]
    for i in range(m - 1):
        out[0, i + 1] = out[0, i] + x[i]
    return out.reshape(n * m) @ np.ones(n * m)


def _scaled(x, n):
    return x * n


@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_arguments_used_as_sizes_are_traced_static(backend):
    x = np.arange(10.0)
    same_as_numpy(_sized_by_arguments, x, 5, 4, backend=backend)
    f = jk.jit(_sized_by_arguments, backend=backend)
    for n, m in ((5, 4), (6, 3), (5, 4)):
        np.testing.assert_allclose(f(x, n, m), _sized_by_arguments(x, n, m), rtol=1e-12)
    assert f.static_argnums == {1, 2} and f.cache_size() == 2
    assert any("n: static value 5 -> 6" in r for rec in f.recompilations() for r in rec.reasons)


def test_integers_used_as_values_stay_run_time_values():
    f = jk.jit(_scaled)
    for n in (2, 3, 4):
        np.testing.assert_array_equal(f(np.ones(3), n), np.ones(3) * n)
    assert f.static_argnums == frozenset() and f.cache_size() == 1


def test_an_error_that_remains_with_static_integers_says_both():
    def f(x, n):
        return np.zeros(n)[x.shape[0] + 10]  # IndexError in NumPy too, at any n

    with pytest.raises(IndexError, match="out of bounds") as info:
        jk.jit(f)(np.ones(2), 3)
    assert "integer arguments n static" in "".join(getattr(info.value, "__notes__", []))
    with pytest.raises(IndexError):
        f(np.ones(2), 3)


@pytest.mark.usefixtures("no_static_int_fallback")
def test_without_the_fallback_a_size_argument_raises_the_tracer_error():
    with pytest.raises(jk.errors.TracerIntegerConversionError, match="mark it static"):
        jk.jit(_sized_by_arguments)(np.arange(10.0), 5, 4)


# ----------------------------------------------------------------------------- for x in array
# `for b in data:` (NPBench's crc16) iterated at trace time: 1600 bytes x 8 bits unrolled into a
# program too large to call. Over a traced array it is one loop with a traced index.

def _checksum(data, poly=0x1021):
    acc = 0xFFFF
    for b in data:
        cur = 0xFF & b
        for _ in range(8):
            if (acc & 1) ^ (cur & 1):
                acc = (acc >> 1) ^ poly
            else:
                acc >>= 1
            cur >>= 1
    return acc & 0xFFFF


def _row_sums_and_last(a):
    s = 0.0
    last = -1.0
    for r in a:
        s = s + r.sum()
        last = r
    for k in (1, 2):  # a Python iterable: Python's loop
        s = s + k
    for r in a[:0]:  # no iteration: the name keeps its value
        last = r * 0
    return s, last


@pytest.mark.parametrize("backend", BACKENDS)
def test_for_over_an_array_is_one_loop_with_numpys_result(backend):
    data = np.random.default_rng(0).integers(0, 256, 300).astype(np.uint8)
    same_as_numpy(_checksum, data, backend=backend)
    same_as_numpy(_row_sums_and_last, np.arange(12.0).reshape(3, 4), backend=backend)
    assert len(jk.make_ir(_checksum)(data).eqns) < 20


# A helper that writes its parameter, called in a loop (NPBench's channel_flow calls
# pressure_poisson_periodic(nit, p, ...) in a while loop): the array passed is loop state.

def _relax(nit, p, b):
    for _ in range(nit):
        pn = p.copy()
        p[1:-1] = 0.5 * (pn[2:] + pn[:-2]) - b[1:-1]
        p[0] = p[1]


def _relax_twice(p, b):
    _relax(2, p, b)


def _iterate_until_converged(p, b, tol):
    diff = 1.0
    steps = 0
    while diff > tol:
        old = p.copy()
        _relax_twice(p, b)
        diff = np.abs(p - old).max()
        steps += 1
    return steps


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_helper_writing_its_parameter_inside_a_loop_writes_the_callers_array(backend):
    from jitkernel.autograph.callees import written_parameters
    assert written_parameters(_relax) == {1, "p"} and written_parameters(_relax_twice) == {0, "p"}
    same_as_numpy(_iterate_until_converged, np.linspace(0, 1, 20) ** 2, np.zeros(20), 1e-4, backend=backend)


# ----------------------------------------------------------------------------- the same array under two names
# `y = x; for ...: x += y[0]`: NumPy reads the updated x through y on every trip. The loop's
# carry for x is a new value, so y would read x from before the loop: that was silently wrong
# (the alias check skipped the very same object); it is a clear error now, as for views.

def _two_names_in_loop(x, n):
    y = x
    for _ in range(n):
        x += y[0]
    return x


def _two_names_in_branch(x, c):
    y = x
    if c > 0:
        x *= 2.0
        x += y[-1]
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, arg", [(_two_names_in_loop, 6), (_two_names_in_branch, 1.0)])
def test_an_array_under_two_names_is_never_read_stale(fn, arg, backend):
    got = same_as_numpy(fn, np.arange(3.0) + 1, arg, backend=backend, refusal_ok=True)
    if got[0] == "raise":
        with pytest.raises(jk.errors.UnsupportedOperationError, match="same array under two names"):
            jk.jit(fn, backend=backend)(np.arange(3.0) + 1, arg)


def test_compiled_for_takes_the_same_static_integer_path():
    f = jk.jit(_sized_by_arguments)
    text, compiled = f.compiled_for(np.arange(10.0), 5, 4)
    assert "n=5" in text and "m=4" in text
    np.testing.assert_allclose(f(np.arange(10.0), 5, 4), _sized_by_arguments(np.arange(10.0), 5, 4))
    assert f.cache_size() == 1


def test_setting_the_shape_of_a_fresh_array_works_and_of_an_argument_is_a_clear_error():
    def f(x):
        y = x * 2
        y.shape = (x.size,)
        return y
    np.testing.assert_array_equal(jk.jit(f)(np.ones((2, 3))), f(np.ones((2, 3))))

    def g(x):
        x.shape = (x.size,)
        return x
    with pytest.raises(jk.errors.UnsupportedOperationError, match=r"x = x.reshape.*|x.shape = "):
        jk.jit(g)(np.ones((2, 3)))


def test_a_selection_bound_in_a_long_loop_body_is_local_to_the_iteration():
    """NPBench's azimint_naive: a selection bound in the body of `for i in range(npt)` and used
    only there is no loop state (autograph/analysis.iteration_locals): the loop is one compiled
    loop with the data-dependent selection inside, at npt=300 as at 20 (it was state whose kind
    changes, and the loop was unrolled whole: 1000 bodies crashed LLVM's optimiser)."""
    def azimint(data, radius, npt):
        rmax = radius.max()
        res = np.zeros(npt)
        for i in range(npt):
            r1 = rmax * i / npt
            r2 = rmax * (i + 1) / npt
            mask = np.logical_and((r1 <= radius), (radius < r2))
            values = data[mask]
            res[i] = values.mean()
        return res

    rng = np.random.default_rng(0)
    data, radius = rng.random(2000), rng.random(2000)
    for npt in (20, 300):
        np.testing.assert_allclose(jk.jit(azimint, static_argnames=("npt",))(data, radius, npt),
                                   azimint(data, radius, npt), rtol=1e-12)


def test_a_long_loop_whose_state_becomes_a_selection_is_one_loop():
    """A selection that is loop state (read after the loop) changes kind on the first iteration
    only (an array before, a selection after): that iteration runs as Python and the rest is one
    loop carrying the selection's padded buffer and count, not an unroll of 300 bodies (LLVM's
    optimiser crashed on 1000)."""
    def last_selection(data, radius, npt):
        res = np.zeros(npt)
        values = data[:0]
        for i in range(npt):
            mask = np.logical_and(i / npt <= radius, radius < (i + 1) / npt)
            values = data[mask]
            res[i] = values.sum()
        return res, values

    rng = np.random.default_rng(0)
    data, radius = rng.random(50), rng.random(50)
    for npt in (300, 20):
        for got, want in zip(jk.jit(last_selection, static_argnames=("npt",))(data, radius, npt),
                             last_selection(data, radius, npt)):
            np.testing.assert_allclose(got, want)


# ----------------------------------------------------------------------------- CSR matrix-vector product
# NPBench's spmv: per row, slices `A_col[A_row[i]:A_row[i + 1]]` whose bounds are data, bound in
# the loop body and used only there (iteration locals: autograph/analysis.py), gathered `x[cols]`.

def spmv(A_row, A_col, A_val, x):
    y = np.empty(A_row.size - 1, A_val.dtype)
    for i in range(A_row.size - 1):
        cols = A_col[A_row[i]:A_row[i + 1]]
        vals = A_val[A_row[i]:A_row[i + 1]]
        y[i] = vals @ x[cols]
    return y


@st.composite
def csr_matrices(draw):
    """A random CSR matrix (uint32 indices as NPBench's initialize makes them, empty rows
    included) and a vector."""
    m, n = draw(st.integers(1, 300)), draw(st.integers(1, 12))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    dense = rng.random((m, n)) * (rng.random((m, n)) < draw(st.sampled_from([0.0, 0.1, 0.5, 1.0])))
    rows = np.concatenate([[0], np.cumsum((dense != 0).sum(axis=1))]).astype(np.uint32)
    cols = np.nonzero(dense)[1].astype(np.uint32)
    return rows, cols, dense[dense != 0], rng.random(n)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(csr_matrices())
def test_csr_matrix_vector_product_as_written_matches_numpy(csr):
    for backend in HOST_BACKENDS:
        same_as_numpy(spmv, *csr, backend=backend)
