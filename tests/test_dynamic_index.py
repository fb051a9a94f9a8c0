"""Traced scalar indices (numpy/_dynamic.py, ir/dynamic_slice.py): a[i], a[i, i], a[i, j],
a[:, i], a[i:i+k] with NumPy's run-time rules (negative indices wrap, out-of-bounds integers
raise IndexError), on the cpu and interpret backends, against NumPy called directly."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.errors import UnsupportedOperationError
from jitkernel.numpy._dynamic import dynamic_update
from tests.helpers import assert_matches_numpy
import emulator_suite
from helpers import HOST_BACKENDS


BACKENDS = HOST_BACKENDS + emulator_suite.emulator_backends()  # cuda-emulator where g++ is
DRAWN_BACKENDS = emulator_suite.DRAWN_BACKENDS
lax = jk.lax
A = np.arange(30.0).reshape(5, 6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("i,j", [(0, 0), (2, 3), (-1, -6), (4, 5), (-5, 2)])
def test_integer_indices_match_numpy(backend, i, j):
    f = jk.jit(lambda a, i, j: (a[i], a[i, j], a[:, j], a[i, i], a[-1, j], a[i, 1:5:2], a[None, i, ..., None]),
               backend=backend)
    expected = (A[i], A[i, j], A[:, j], A[i, i], A[-1, j], A[i, 1:5:2], A[None, i, ..., None])
    assert_matches_numpy(f(A, i, j), expected)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("i,j", [(5, 0), (-6, 0), (0, 6), (1, -7)])
def test_out_of_bounds_raises_numpys_index_error_at_run_time(backend, i, j):
    f = jk.jit(lambda a, i, j: a[i, j] * 2, backend=backend)
    with pytest.raises(IndexError) as numpy_error:
        A[i, j]
    with pytest.raises(IndexError, match=str(numpy_error.value)):
        f(A, i, j)
    assert float(f(A, 1, 1)) == A[1, 1] * 2  # the same compiled function still works


@pytest.mark.parametrize("backend", BACKENDS)
def test_traced_index_read_from_an_array(backend):
    f = jk.jit(lambda a, idx: a[idx[1]] + a[idx[0], idx[2]], backend=backend)
    idx = np.array([3, -1, 2], np.int32)
    assert_matches_numpy(f(A, idx), A[idx[1]] + A[idx[0], idx[2]])
    with pytest.raises(IndexError):
        f(A, np.array([9, 0, 0], np.int32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_windows_of_a_fori_loop_index(backend):
    def f(a):
        def body(i, acc):
            return acc + a[i:i + 2].sum(axis=0) * a[i + 1, i] - a[i + 3 - 3:i + 1, i]
        return lax.fori_loop(0, 4, body, np.zeros(6))

    acc = np.zeros(6)
    for i in range(4):
        acc = acc + A[i:i + 2].sum(axis=0) * A[i + 1, i] - A[i:i + 1, i]
    assert_matches_numpy(jk.jit(f, backend=backend)(A), acc)


@pytest.mark.usefixtures("no_static_int_fallback")
def test_a_slice_whose_length_has_no_proved_range_is_a_clear_error():
    def f(a, k):  # k is an argument: its range is not known, NumPy would clamp a[0, :k]
        return lax.fori_loop(0, 5, lambda i, c: c + a[i, :k].sum(), 0.0)
    with pytest.raises(UnsupportedOperationError, match=r"depends on a traced value.*range.*not known.*"
                                                      r"test_dynamic_index.py:\d+"):
        jk.jit(f)(A, 3)


def test_a_window_that_numpy_would_clamp_has_a_data_dependent_length():
    def f(a):  # i + 2 reaches 6 > 5 rows: NumPy returns a shorter slice on the last step
        return lax.fori_loop(0, 5, lambda i, c: c + a[i:i + 2].sum(), 0.0)
    expected = sum(A[i:i + 2].sum() for i in range(5))  # (numpy/_datadep.py window)
    np.testing.assert_allclose(jk.jit(f)(A), expected)


def test_a_traced_slice_bound_without_a_known_range_has_a_data_dependent_length():
    f = jk.jit(lambda a, i: a[i:i + 2])
    for i in (1, 4, -1, 7):
        np.testing.assert_array_equal(f(A, i), A[i:i + 2])


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_update_is_functional_and_follows_numpy(backend):
    def f(a, i, j, row):
        b = dynamic_update(a, (i,), row)          # a[i] = row
        c = dynamic_update(b, (j, slice(1, 3)), 7)  # b[j, 1:3] = 7 (Python int cast to float64)
        return a, c

    row = np.linspace(0, 1, 6)
    for i, j in ((0, 4), (-1, 2), (3, -5)):
        expected = A.copy()
        expected[i] = row
        expected[j, 1:3] = 7
        a, c = jk.jit(f, backend=backend)(A, i, j, row)
        assert_matches_numpy(a, A)  # the input is not changed
        assert_matches_numpy(c, expected)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        jk.jit(f, backend=backend)(A, 5, 0, row)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_update_in_a_loop_builds_a_triangle(backend):
    def f(n_rows):
        def body(i, m):
            return dynamic_update(m, (i, i), 1.0 + i)
        return lax.fori_loop(0, 4, body, np.zeros((4, 4)))
    expected = np.zeros((4, 4))
    for i in range(4):
        expected[i, i] = 1.0 + i
    assert_matches_numpy(jk.jit(f, backend=backend)(4), expected)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       data=st.data(), backend=st.sampled_from(DRAWN_BACKENDS))
def test_random_traced_integer_indices_match_numpy(shape, data, backend):
    x = np.arange(int(np.prod(shape)), dtype=np.int16).reshape(shape)
    n = data.draw(st.integers(1, len(shape)))
    index = [data.draw(st.integers(-shape[d] - 1, shape[d])) for d in range(n)]
    traced = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if not any(traced):
        traced[0] = True
    static = {d: index[d] for d in range(n) if not traced[d]}
    dyn = [index[d] for d in range(n) if traced[d]]

    def f(x, *values):
        it = iter(values)
        return x[tuple(static[d] if d in static else next(it) for d in range(n))]

    try:
        expected = x[tuple(index)]
    except IndexError as e:
        with pytest.raises(IndexError, match=str(e)):
            jk.jit(f, backend=backend)(x, *dyn)
        return
    assert_matches_numpy(jk.jit(f, backend=backend)(x, *dyn), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unread_out_of_bounds_index_still_raises(backend):
    def f(a, i):
        unused = a[i]  # noqa: F841 - NumPy evaluates it and raises
        inside = lax.fori_loop(0, 2, lambda k, c: (a[i + k], c + 1)[1], 0)  # noqa: F841
        return a.sum()
    assert_matches_numpy(jk.jit(f, backend=backend)(A, 2), A.sum())
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        jk.jit(f, backend=backend)(A, 7)
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        jk.jit(f, backend=backend)(A, 4)  # a[4] is fine, the loop's a[4 + 1] is not


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_index_in_the_branch_not_taken_does_not_raise(backend):
    table = np.arange(4.0)

    def f(table, k):
        return lax.cond(k < 4, lambda: table[k] + table[2], lambda: -1.0)
    for k in (0, 3, 4, 100):
        assert float(jk.jit(f, backend=backend)(table, k)) == (table[k] + 2.0 if k < 4 else -1.0)


@pytest.mark.usefixtures("no_static_int_fallback")
def test_indexing_a_numpy_constant_by_a_traced_value_says_what_to_do():
    table = np.arange(4.0)
    with pytest.raises(jk.TracerArrayConversionError, match="pass that array as an argument"):
        jk.jit(lambda k: table[k])(1)


# ----------------------------------------------------------------------------- strided slices with traced bounds
# `x[i*i::i] = False` (a sieve), `x[-i::-i]`, `x[a:b:k].sum()`: the slice's length and stride
# depend on a traced value. Writes are a `where` over the axis and reads a data-dependent
# selection, so a loop over them compiles as one loop (it used to be unrolled, or refused).

def _sieve(flags):
    for i in range(2, 100):
        if flags[i]:
            flags[i * i::i] = False
    return flags


def test_a_sieve_with_strided_writes_is_one_native_loop():
    flags = np.ones(10001, bool)
    assert [e.prim for e in jk.make_ir(_sieve)(flags).eqns] == ["fori_loop"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sieve_with_strided_writes_matches_numpy(backend):
    flags = np.ones(1000, bool)
    flags[:2] = False
    assert_matches_numpy(jk.jit(_sieve, backend=backend)(flags.copy()), _sieve(flags.copy()))


def _strided_forms(a, b, k):
    for i in range(1, 5):
        a[-i::-i] = i  # negative step from the end
        b[i % 4, i::2] += a[i::i].sum()
        b[1, i - 1:i + 3:2] = a[:2]  # an array value: its length must match at run time
    return a, b, a[k::k].sum(), a[2::k].max(), b[k % 4, ::k]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [1, 3, -2, -20, 20])
def test_strided_slices_with_traced_bounds_match_numpy(backend, k):
    args = (np.arange(12.0), np.arange(24.0).reshape(4, 6), k)  # k = 20: a[2::k].max() is empty, ValueError
    _same_outcome(_strided_forms, args, backend)


def _same_outcome(f, args, backend, src=""):
    from helpers import run_on_copies
    expected, got = run_on_copies(f, *args), run_on_copies(jk.jit(f, backend=backend), *args)
    assert got[0] == expected[0], (src, got, expected)
    if got[0] == "raise":
        assert issubclass(got[1], expected[1]), (src, got, expected)
        return
    for x, y in zip(got[1], expected[1]):
        assert_matches_numpy(x, y)
    for x, y in zip(got[2], expected[2]):  # the arrays' final contents
        if isinstance(y, np.ndarray):
            assert_matches_numpy(x, y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_zero_traced_step_and_a_value_of_the_wrong_length_raise_numpys_value_error(backend):
    def zero_step(a, k):
        a[::k] = 1
        return a

    def wrong_length(a, v):
        for i in range(1, 4):
            a[i::2] = v
        return a
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        jk.jit(zero_step, backend=backend)(np.zeros(5), 0)
    with pytest.raises(ValueError, match="could not broadcast"):
        jk.jit(wrong_length, backend=backend)(np.zeros(12), np.arange(3.0))


def _augmented_strided(a, A, k):
    for i in range(1, 6):
        a[::i] += 1  # reads the slice (a selection), writes it back
        a[-1::-i] *= 2
        A[i % 3::k] -= A[i % 3::k] * 0.5
        if a[i % 12] > 20:
            break  # (a while loop)
    return a, A


@pytest.mark.parametrize("backend", HOST_BACKENDS)  # (the CUDA renderer has no selection step)
@pytest.mark.parametrize("k", [1, 2, -1, -3])
def test_augmented_assignment_to_strided_slices_with_traced_bounds(backend, k):
    _same_outcome(_augmented_strided, (np.arange(12.0) % 5, np.arange(12.0).reshape(4, 3), k), backend)


_BOUNDS = ["", "i", "-i", "2 * i", "i * i", "i + 1", "n - i", "-1", "3", "-(i + 2)"]
_STEPS = ["i", "-i", "2", "-1", "i + 1", "-(i + 1)", "3 - i", "1"]


@st.composite
def strided_loop_programs(draw):
    """A loop (over a static range, or a traced one `range(1, n)`) whose body reads and writes
    slices whose start, stop and step are expressions of the loop index, some under an `if` on
    an array value, maybe with a `break`."""
    def sl():
        return f"{draw(st.sampled_from(_BOUNDS))}:{draw(st.sampled_from(_BOUNDS))}:{draw(st.sampled_from(_STEPS))}"
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["write", "write_row", "read", "read_rows", "add"]))
        line = {"write": f"a[{sl()}] = {draw(st.sampled_from(['7', 'i', 'a[0]', '-a[i % 12]']))}",
                "write_row": f"b[i % 4, {sl()}] = s",
                "read": f"s = s + a[{sl()}].sum()",
                "read_rows": f"s = s + (b[{sl()}] * 2).sum()",
                "add": f"a[{sl()}] += 1"}[kind]
        if draw(st.booleans()):
            lines += [f"if a[i % 12] > {draw(st.integers(0, 8))}:", "    " + line]
        else:
            lines.append(line)
    if draw(st.booleans()):  # an early exit: the loop is a while loop
        lines.append(f"if a[i % 12] > {draw(st.integers(2, 9))}:")
        lines.append("    break")
    loop = draw(st.sampled_from(["for i in range(1, n):", "for i in range(1, 6):"]))
    body = "\n".join(f"        {line}" for line in lines)
    return f"def f(a, b, n):\n    s = 0.0\n    {loop}\n{body}\n    return a, b, s\n"


@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(src=strided_loop_programs(), n=st.integers(0, 7), backend=st.sampled_from(DRAWN_BACKENDS))
def test_random_loops_over_strided_slices_with_traced_bounds_match_numpy(tmp_path_factory, src, n, backend):
    from helpers import load
    f = load(tmp_path_factory.mktemp("strided"), src)
    _same_outcome(f, (np.arange(12.0) % 5, np.arange(24.0).reshape(4, 6), n), backend, src)
