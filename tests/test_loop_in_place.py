"""Arrays updated in place inside native loops and branches: a
slice assignment in a loop body (a stencil) and a DP cell written in either branch of an `if`
on array values reuse the carry's buffer instead of copying the whole array per iteration.
Correctness first: whenever the new value reads the old array at other elements, the update
must not be in place. Each case runs converted Python (autograph) against NumPy running the same
function, on both backends."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import HOST_BACKENDS, load
from test_inplace import same_as_numpy

STENCIL = """
def f(A, B, T):
    for t in range(T):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
    return A.sum()
"""

LCS = """
def f(a, b):
    n, m = a.shape[0], b.shape[0]
    D = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                D[i, j] = D[i - 1, j - 1] + 1
            else:
                D[i, j] = max(D[i - 1, j], D[i, j - 1])
    return D
"""

# The new value reads the array it replaces at other elements: NumPy reads the right-hand
# side first, so an in-place loop would see half-updated values.
SELF_READING_SLICE = """
def f(A, T):
    for t in range(T):
        A[1:-1] = A[:-2] + A[2:]
    return A
"""


def _loop_kernels(fn, *args) -> str:
    return jk.jit(fn).lower(*args).as_text("kernels")


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_stencil_updates_its_carries_in_place(tmp_path, backend):
    f = load(tmp_path, STENCIL)
    rng = np.random.default_rng(0)
    same_as_numpy(f, rng.random((12, 9)), rng.random((12, 9)), 7, backend=backend)
    text = _loop_kernels(f, np.ones((12, 9)), np.ones((12, 9)), 3)
    assert "[native]" in text and "update_copy" not in text, text
    assert text.count("in place)") == 2, text


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_dp_cell_written_in_both_branches_is_updated_in_place(tmp_path, backend):
    f = load(tmp_path, LCS)
    rng = np.random.default_rng(1)
    same_as_numpy(f, rng.integers(0, 3, 17), rng.integers(0, 3, 13), backend=backend)
    text = _loop_kernels(f, np.zeros(5, np.int64), np.zeros(6, np.int64))
    assert "update_copy" not in text, text  # no copy of the table per cell


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_a_slice_update_reading_its_own_array_is_not_in_place(tmp_path, backend):
    f = load(tmp_path, SELF_READING_SLICE)
    same_as_numpy(f, np.arange(10.0) ** 1.5, 5, backend=backend)


_BRANCH_WRITES = ["D[i, j] = D[i - 1, j - 1] + 1", "D[i, j] = max(D[i - 1, j], D[i, j - 1])",
                  "D[i, :] = D[i - 1, :] + 1", "D[i, j] = D[i, j] * 2", "D[:, j] = D[:, j - 1]",
                  "D[i - 1, j - 1] = D[i, j]", "pass", "s = s + D[i, j - 1]",
                  "D[1:, j] = D[:-1, j] + 1", "D[i, j - 1] = D[i - 1, j] - D[i, j]"]
_CONDITIONS = ["a[i - 1] == b[j - 1]", "a[i - 1] > b[j - 1]", "D[i - 1, j] > D[i, j - 1]", "s > 3"]


@st.composite
def dp_programs(draw):
    """Nested loops over a table with an `if` whose branches each write the table (or not),
    reading it at the same or at other elements: the class of branch updates made in place."""
    cond = draw(st.sampled_from(_CONDITIONS))
    then = draw(st.sampled_from(_BRANCH_WRITES))
    other = draw(st.sampled_from(_BRANCH_WRITES))
    after = draw(st.sampled_from(["", "        s = s + D[i, j]\n", "        D[0, 0] = D[i, j]\n"]))
    return ("def f(a, b):\n"
            "    D = np.zeros((a.shape[0] + 1, b.shape[0] + 1), dtype=np.int64)\n"
            "    D[0, :] = np.arange(b.shape[0] + 1)\n"
            "    s = 0\n"
            "    for i in range(1, a.shape[0] + 1):\n"
            "        for j in range(1, b.shape[0] + 1):\n"
            f"            if {cond}:\n                {then}\n"
            f"            else:\n                {other}\n"
            f"{after.replace('        ', '            ', 1) if after else ''}"
            "    return D, s\n")


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(src=dp_programs(), backend=st.sampled_from(HOST_BACKENDS))
def test_random_branch_updates_in_loops_match_numpy(tmp_path_factory, src, backend):
    f = load(tmp_path_factory.mktemp("dp"), src)
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, 3, 6), rng.integers(0, 3, 7)
    try:
        same_as_numpy(f, a, b, backend=backend)
    except AssertionError as e:
        raise AssertionError(f"{src}\n{e}") from None


def test_constant_offsets_inside_branches_are_proved_in_bounds(tmp_path):
    """A literal closed over by an `if` inside a loop (`D[i - 1, j]`) is a constant of the
    branch, so the index range proof removes the bounds check (it was a run-time operand)."""
    f = load(tmp_path, LCS)
    text = _loop_kernels(f, np.zeros(5, np.int64), np.zeros(6, np.int64))
    assert "index_check" not in text, text


OUT_OF_BOUNDS_IN_BRANCH = """
def f(a):
    s = 0.0
    for i in range(a.shape[0]):
        if a[i] > 0:
            s = s + a[i + 1]
    return s
"""


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_a_constant_offset_past_the_end_inside_a_branch_still_raises(tmp_path, backend):
    f = load(tmp_path, OUT_OF_BOUNDS_IN_BRANCH)
    same_as_numpy(f, np.array([1.0, -1.0, 2.0]), backend=backend)  # a[3]: IndexError in NumPy
    same_as_numpy(f, np.array([1.0, -1.0, -2.0]), backend=backend)  # never reaches a[3]


RECURRENCE = """
def f(y, x, a, b):
    for j in range(2, y.shape[1]):
        y[:, j] = a * x[:, j] + b * y[:, j - 1] - y[:, j - 2]
    for i in range(y.shape[0] - 3, -1, -1):
        y[i, :] = y[i + 1, :] * a + b * y[i + 2, :]
    return y
"""


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_a_recurrence_reading_other_windows_of_its_array_is_in_place(tmp_path, backend):
    # deriche's recurrences: the column (row) written is never one the update reads, so no
    # copy of the whole array per iteration.
    f = load(tmp_path, RECURRENCE)
    rng = np.random.default_rng(4)
    same_as_numpy(f, rng.random((9, 11)), rng.random((9, 11)), 0.5, 0.25, backend=backend)
    text = _loop_kernels(f, np.ones((9, 11)), np.ones((9, 11)), 0.5, 0.25)
    assert "[native]" in text and "update_copy" not in text, text


_WINDOW_WRITES = ["y[:, j] = y[:, j - 1] + 1", "y[:, j] = y[:, j - 1] + y[:, j + 1]",
                  "y[:, j] = y[:, j - 4] * 2", "y[:, j] = y[:, j - 5] + 1", "y[:, j] = y[:, j] + y[:, j - 1]",
                  "y[:, j:j + 2] = y[:, j - 1:j + 1] + 1", "y[:, j:j + 2] = y[:, j - 2:j] + 1",
                  "y[:, j:j + 2] = y[:, j + 2:j + 4] + 1", "y[j, :] = y[j - 1, :] + y[j - 1, 0]",
                  "y[1:, j] = y[:-1, j - 1] + 1", "y[:, j] = y[:, 2] + 1", "y[:, 2] = y[:, j] + 1",
                  "y[j - 1, j] = y[j, j - 1] + 1", "y[:, j] = y[:, j - 1] + 1\n        y[:, j - 1] = y[:, j] * 2"]


def _window_loop_matches_numpy(tmp_path_factory, write: str, start: int, backend: str, y: np.ndarray) -> None:
    """`write` in the body of a loop over the columns of `y` from `start`: NumPy's result."""
    src = f"def f(y):\n    for j in range({start}, y.shape[1] - 3):\n        {write}\n    return y\n"
    f = load(tmp_path_factory.mktemp("win"), src)
    try:
        same_as_numpy(f, y, backend=backend)
    except AssertionError as e:
        raise AssertionError(f"{src}\n{e}") from None


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(write=st.sampled_from(_WINDOW_WRITES), start=st.sampled_from([0, 1, 2]),
       backend=st.sampled_from(HOST_BACKENDS))
def test_random_window_updates_in_loops_match_numpy(tmp_path_factory, write, start, backend):
    """Window updates whose value reads other windows of the same array, with starts that wrap
    (`y[:, j - 5]` of 5 columns at j = 0 is the column written) and windows that overlap the one
    written: in place only where no element read is written."""
    _window_loop_matches_numpy(tmp_path_factory, write, start, backend, np.arange(35.0).reshape(5, 7) ** 1.5)


THOMAS = """
def f(c, d, w):
    t = w[:, 0] * 0.0
    for k in range(1, c.shape[1]):
        c[:, k] = w[:, k] * 0.5
        t = 1.0 / (3.0 - c[:, k] - c[:, k - 1])
        c[:, k] = c[:, k] * t
        d[:, k] = (d[:, k] - d[:, k - 1]) * t
    return c, d, t
"""


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_a_value_kept_as_loop_state_is_read_from_its_buffer_after_the_update(tmp_path, backend):
    # NPBench vadv's Thomas sweep: `t` (its `divided`) is computed from columns of c before c's
    # second update, kept as loop state, and read by d's update after it. As loop state it has
    # a buffer written before c's update, so c is still updated in place (no copy per trip).
    f = load(tmp_path, THOMAS)
    rng = np.random.default_rng(5)
    same_as_numpy(f, rng.random((6, 9)), rng.random((6, 9)), rng.random((6, 9)), backend=backend)
    text = _loop_kernels(f, np.ones((6, 9)), np.ones((6, 9)), np.ones((6, 9)))
    assert "[native]" in text and "update_copy" not in text, text


_STATE_READS = ["t", "t + c[:, k]", "t * c[:, k - 1]", "c[:, k] + 0 * t", "u"]


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(read=st.sampled_from(_STATE_READS), kept=st.booleans(), write=st.sampled_from(["c[:, k] * t", "t", "c[:, k - 1] + t"]),
       backend=st.sampled_from(HOST_BACKENDS))
def test_random_values_of_a_window_read_after_its_update_match_numpy(tmp_path_factory, read, kept, write, backend):
    """A value `t` computed from c's windows, then c's window updated, then another update
    reading `t` (kept as loop state or not), c's new window, or a value computed from it."""
    ret = "c, d, t" if kept else "c, d"
    src = (f"def f(c, d):\n    t = c[:, 0] * 0.0\n    for k in range(1, c.shape[1]):\n"
           f"        t = 2.0 - c[:, k] * c[:, k - 1]\n        c[:, k] = {write}\n        u = c[:, k] * 2.0\n"
           f"        d[:, k] = d[:, k - 1] + {read}\n    return {ret}\n")
    f = load(tmp_path_factory.mktemp("state"), src)
    try:
        same_as_numpy(f, np.arange(35.0).reshape(5, 7) ** 0.5, np.arange(35.0).reshape(5, 7) * 0.25, backend=backend)
    except AssertionError as e:
        raise AssertionError(f"{src}\n{e}") from None


WRAPPED_READ = """
def f(y):
    for j in range(0, y.shape[1] - 3):
        y[:, j:j + 2] = (y[:, j - 40] * 2.0)[:, None] + 1
    return y
"""


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_a_read_that_wraps_onto_the_window_written_is_not_in_place(tmp_path, backend):
    # y[:, j - 40] of 40 columns is column j (a negative index wraps): the window written,
    # [j, j + 2), holds it, so the second column must see the old value, not the new one.
    f = load(tmp_path, WRAPPED_READ)
    same_as_numpy(f, np.arange(200.0).reshape(5, 40) ** 1.5, backend=backend)


AUGMENTED_COLUMN = """
def f(A, q):
    for j in range(1, A.shape[1]):
        A[:, j] -= q * A[0, j - 1]
    return A
"""


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_an_augmented_assignment_to_a_column_is_one_update_in_place(tmp_path, backend):
    # `A[:, j] -= x` writes the window twice (through the view, then __setitem__ with the same
    # values); the repeated write is dropped (passes/cse.py), so the carry is updated in place.
    f = load(tmp_path, AUGMENTED_COLUMN)
    rng = np.random.default_rng(5)
    same_as_numpy(f, rng.random((7, 9)), rng.random(7), backend=backend)
    text = _loop_kernels(f, np.ones((7, 9)), np.ones(7))
    assert "[native]" in text and "update_copy" not in text, text


TRIANGLE_ROWS = """
def f(alpha, beta, C, A):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]
    return C
"""


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_a_masked_row_update_of_loop_index_length_is_in_place(tmp_path, backend):
    # syrk: `C[i, :i + 1] *= beta` is a masked write of the whole row that reads the row itself
    # at the same elements; its starts are two constants 0 that are different Vars.
    f = load(tmp_path, TRIANGLE_ROWS)
    rng = np.random.default_rng(6)
    same_as_numpy(f, 1.5, 1.2, rng.random((9, 9)), rng.random((9, 5)), backend=backend)
    text = _loop_kernels(f, 1.5, 1.2, np.ones((9, 9)), np.ones((9, 5)))
    assert "[native]" in text and "update_copy" not in text, text


SEIDEL_ROWS = """
def f(T, A):
    for t in range(T):
        for i in range(1, A.shape[0] - 1):
            A[i, 1:-1] += (A[i - 1, :-2] + A[i - 1, 1:-1] + A[i - 1, 2:] + A[i, 2:] + A[i + 1, :-2])
            for j in range(1, A.shape[1] - 1):
                A[i, j] += A[i, j - 1]
                A[i, j] /= 9.0
    return A
"""


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_a_row_update_reading_its_own_row_elsewhere_is_staged_and_in_place(tmp_path, backend):
    # seidel_2d: `A[i, 1:-1] += (... + A[i, 2:] + ...)` reads the row it writes one column
    # ahead, and NumPy evaluates the whole right-hand side first: the new row goes to a buffer
    # of its own (one row), then into A in place; before, all of A was copied for every row.
    f = load(tmp_path, SEIDEL_ROWS)
    rng = np.random.default_rng(8)
    same_as_numpy(f, 3, rng.random((9, 7)), backend=backend)
    text = _loop_kernels(f, 3, np.ones((9, 7)))
    assert "[native]" in text and "update_copy" not in text, text


_OVERLAPPING_WRITES = ["y[j, 1:-1] += y[j, 2:] + y[j - 1, :-2]", "y[j, 1:] = y[j, :-1] * 2",
                       "y[j, :-1] = y[j, 1:] - y[j, :-1]", "y[j, 1:-1] = y[j, ::-1][1:-1] + 1",
                       "y[:, j:j + 3] = y[:, j + 1:j + 4] * y[:, j:j + 3]", "y[j, 1:] = y[j, :-1]\n        y[j, :-1] += y[j, 1:]",
                       "if y[j, 0] > 3:\n            y[j, 1:] = y[j, :-1] + 1", "y[j - 1:j + 1, 1:] = y[j - 1:j + 1, :-1].T.T - 1",
                       "y[j, 2:] = np.sqrt(y[j, :-2] + y[j, 1:-1])"]


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(write=st.sampled_from(_OVERLAPPING_WRITES), start=st.sampled_from([0, 1, 2]),
       backend=st.sampled_from(HOST_BACKENDS))
def test_random_overlapping_window_updates_in_loops_match_numpy(tmp_path_factory, write, start, backend):
    """Window updates whose value reads the window's own array at overlapping, shifted or
    reversed positions, in loops and branches: staged, then written in place, always NumPy's
    result (the whole right-hand side before the write)."""
    _window_loop_matches_numpy(tmp_path_factory, write, start, backend, np.arange(42.0).reshape(6, 7) ** 1.5)
