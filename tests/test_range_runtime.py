"""`for i in range(...)` whose bounds are run-time values (jitkernel/autograph/runtime.py
_range_bounds): the trip count, the loop index and its value after the loop, and Python's
exceptions (a zero step is ValueError at run time, a float is TypeError), compared with plain
Python over drawn (start, stop, step) including 0, negative steps and int64 extremes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
import emulator_suite

CUDA_EMULATOR_SUITE = True  # the `backend` fixture also runs cuda-emulator (tests/emulator_suite.py)
TPU_SUITE = True  # and on tpu-interpret (tests/tpu_suite.py)

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
MAX_TRIPS = 64  # drawn ranges are kept short: the loop runs on every example


def loop3(start, stop, step):
    i = -7  # bound before the loop: a range with no iteration leaves it, as Python does
    count = 0
    total = 0
    for i in range(start, stop, step):
        count += 1
        total += i
    return count, total, i


def loop2(start, stop):
    i = -7
    count = 0
    total = 0
    for i in range(start, stop):
        count += 1
        total += i
    return count, total, i


def loop1(stop):
    i = -7
    count = 0
    total = 0
    for i in range(stop):
        count += 1
        total += i
    return count, total, i


def unread_loop(x, start, stop, step):
    for i in range(start, stop, step):
        pass
    return x + 1


def nested_unread_loop(x, step):
    total = 0
    for j in range(3):
        for i in range(0, 4, step):
            pass
        total += j
    return x + total


LOOPS = {1: loop1, 2: loop2, 3: loop3}


def _partial_sums_leave_int64(args) -> bool:
    """Whether `total += i` passes int64 on some trip: Python's int does not, jitkernel's Python
    ints raise OverflowError there, inside compiled loops as outside (docs/numpy-support.md)."""
    total = 0
    try:
        for i in range(*[int(a) for a in args]):
            total += i
            if not INT64_MIN <= total <= INT64_MAX:
                return True
    except ValueError:  # a zero step: range() raises first
        return False
    return False


def _python(fn, args):
    if _partial_sums_leave_int64(args):
        return None, OverflowError
    try:
        return fn(*[int(a) for a in args]), None
    except Exception as e:  # the exception type is part of the comparison
        return None, type(e)


def _assert_like_python(fn, args, backend: str) -> None:
    expected, error = _python(fn, args)
    if error is not None:
        with pytest.raises(error):
            jk.jit(fn, backend=backend)(*args)
        return
    count, total, last = jk.jit(fn, backend=backend)(*args)
    assert (int(count), int(total), int(last)) == expected, args


_bound = st.one_of(st.integers(-12, 12), st.integers(INT64_MIN, INT64_MAX),
                   st.sampled_from([INT64_MIN, INT64_MIN + 1, INT64_MAX - 1, INT64_MAX, 0]))
_step = st.one_of(st.integers(-5, 5), st.integers(INT64_MIN, INT64_MAX),
                  st.sampled_from([0, 1, -1, INT64_MIN, INT64_MAX, 2**62, -2**62]))
_kind = st.sampled_from([int, np.int64, np.int32])


def _trips(values: list[int]) -> int:
    """len(range(*values)) without len()'s OverflowError past sys.maxsize."""
    start, stop, step = ([0] + values + [1])[:3] if len(values) == 1 else (values + [1])[:3]
    return max(0, (stop - start + step - (1 if step > 0 else -1)) // step)


@st.composite
def range_arguments(draw):
    """(number of range() arguments, the arguments): any bounds and steps, 0 and negative steps
    included, as Python ints or NumPy scalars, with at most MAX_TRIPS iterations."""
    nargs = draw(st.sampled_from([1, 2, 3]))
    values = [draw(_bound) for _ in range(nargs)]
    if nargs == 3:
        values[2] = draw(_step)
    if not (nargs == 3 and values[2] == 0) and _trips(values) > MAX_TRIPS:
        # a long range: move the stop near the start, keeping the direction
        if nargs == 1:
            values[0] = draw(st.integers(0, MAX_TRIPS))
        else:
            step = values[2] if nargs == 3 else 1
            values[1] = max(INT64_MIN, min(INT64_MAX, values[0] + step * draw(st.integers(0, MAX_TRIPS))))
    kind = draw(_kind)
    if kind is np.int32 and not all(np.iinfo(np.int32).min <= v <= np.iinfo(np.int32).max for v in values):
        kind = np.int64
    return nargs, tuple(kind(v) for v in values)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(range_arguments(), st.sampled_from(emulator_suite.DRAWN_BACKENDS))
def test_run_time_range_matches_python(drawn, backend):
    nargs, args = drawn
    _assert_like_python(LOOPS[nargs], args, backend)


@pytest.mark.parametrize("args", [(0, 10, 0), (5, -5, 0), (0, 0, 0), (np.int64(3), np.int64(9), np.int64(0))])
def test_a_zero_run_time_step_raises_value_error(backend, args):
    with pytest.raises(ValueError, match="range\\(\\) arg 3 must not be zero"):
        jk.jit(loop3, backend=backend)(*args)


@pytest.mark.parametrize("args", [(0, 10, 3), (10, 0, -3), (10, 0, 3), (0, 10, -3), (-7, 8, 1), (8, -7, -1),
                                  (-2**62, 2**62, 2**62), (2**62, -2**62, -2**62), (INT64_MIN, INT64_MAX, 2**62),
                                  (INT64_MAX, INT64_MIN, INT64_MIN), (INT64_MIN, INT64_MAX, INT64_MAX)])
def test_run_time_steps_of_either_sign_and_extreme_bounds(backend, args):
    _assert_like_python(loop3, args, backend)


def test_a_zero_step_raises_even_when_the_loop_is_never_read(backend):
    """Python raises at range(); the loop's result being unused must not drop the check."""
    with pytest.raises(ValueError, match="must not be zero"):
        jk.jit(unread_loop, backend=backend)(np.zeros(2), 0, 3, 0)
    with pytest.raises(ValueError, match="must not be zero"):
        jk.jit(nested_unread_loop, backend=backend)(np.zeros(2), 0)
    np.testing.assert_array_equal(jk.jit(unread_loop, backend=backend)(np.zeros(2), 0, 3, 1), np.ones(2))
    np.testing.assert_array_equal(jk.jit(nested_unread_loop, backend=backend)(np.zeros(2), 2), np.full(2, 3.0))


@pytest.mark.parametrize("args", [(0, 10, 2.0), (0.0, 10, 1), (0, 10.5, 1), (0, np.float32(4), 1),
                                  (0, np.array([3]), 1), (0, 3, 1j)])
def test_non_integer_run_time_range_arguments_raise_type_error(backend, args):
    with pytest.raises(TypeError):
        loop3(*args)
    with pytest.raises(TypeError, match="range\\(\\) of a traced .* at .*test_range_runtime.py:\\d+"):
        jk.jit(loop3, backend=backend)(*args)


@pytest.mark.parametrize("n", [3.0, np.float64(3.0), np.array(3.0)])
def test_range_of_a_traced_float_raises_type_error(backend, n):
    with pytest.raises(TypeError):
        loop1(n)
    with pytest.raises(TypeError, match="cannot be interpreted as an integer|only integer scalar arrays"):
        jk.jit(loop1, backend=backend)(n)


def test_a_uint64_bound_past_int64_raises_instead_of_wrapping(backend):
    big = np.uint64(2**63 + 5)
    with pytest.raises(OverflowError, match="2\\*\\*63 - 1"):
        jk.jit(loop2, backend=backend)(big, big + np.uint64(3))
    count, total, last = jk.jit(loop2, backend=backend)(np.uint64(3), np.uint64(6))
    assert (int(count), int(total), int(last)) == (3, 12, 5)


def test_a_check_on_data_raises_even_when_its_result_is_unread(backend):
    """raise_if is kept alive by dead-code elimination (ir/arrayfn_prims.py): NumPy evaluates
    `np.average` and raises although the function never reads the average."""
    def unread_average(a, w):
        np.average(a, weights=w)
        return a + 1

    with pytest.raises(ZeroDivisionError):
        jk.jit(unread_average, backend=backend)(np.arange(3.0), np.zeros(3))


def literal_steps(start, stop):
    i = -7
    count = 0
    total = 0
    for i in range(start, stop, 3):
        count += 1
        total += i
    for i in range(stop, start, -2**62):
        count += 1
        total += i
    return count, total, i


@pytest.mark.parametrize("args", [(0, 10), (10, 0), (-5, 5), (INT64_MIN, INT64_MIN + 7), (INT64_MAX - 7, INT64_MAX),
                                  (INT64_MIN, INT64_MAX), (1, INT64_MIN), (INT64_MAX, -1)])
def test_literal_steps_with_run_time_bounds(backend, args):
    a, b = args
    if len(range(a, b, 3)) > MAX_TRIPS:
        b = a + 3 * 5
    _assert_like_python(literal_steps, (a, b), backend)
