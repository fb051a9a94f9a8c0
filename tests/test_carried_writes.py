"""In-place writes that reach a loop's or a branch's carry must reach the caller's arrays: a
helper that writes its argument and returns it, called in a loop that stays a loop (numpy-100's
game of life run for 100 steps lost every write to the caller's board). The generator
(carried_writes_programs.py) covers loops (`for`, `while`, `jk.lax.fori_loop`,
`jk.lax.while_loop`), routes into the write (helpers, a dict, a method, inline, conditional
rebinding) and what is written (the argument, a view of it, another name for it), and compares
the result and the argument after the call with Python's on every backend."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import jitkernel as jk
from carried_writes_programs import assert_same_as_python, programs, source
from helpers import load

CUDA_EMULATOR_SUITE = True  # the generated programs on cuda-emulator too (tests/emulator_suite.py)
TPU_SUITE = True  # and on tpu-interpret (tests/tpu_suite.py); tests/tpu runs them on the chip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(programs())
def test_generated_loops_write_the_callers_array(tmp_path, backend, program):
    assert_same_as_python(tmp_path, program, [backend])


@pytest.mark.parametrize("loop", ["for", "while", "fori_loop", "while_loop"])
@pytest.mark.parametrize("route", ["helper", "dict", "method"])
def test_each_loop_and_route(tmp_path, loop, route):
    """The routes no reading of the source sees (a dict, a method) and a helper rebinding the name,
    on every loop kind: each once, on the fastest backends."""
    assert_same_as_python(tmp_path, (source(loop, route, "whole", "argument"), 9, f"{loop}/{route}"),
                          ["interpret", "cpu"])


def test_game_of_life_leaves_the_board_where_numpy_does(tmp_path):
    """numpy-100 #88 run for 100 steps (the caller's board was left unchanged): the board after the call."""
    f = load(tmp_path, '''
def iterate(Z):
    N = (Z[0:-2, 0:-2] + Z[0:-2, 1:-1] + Z[0:-2, 2:] + Z[1:-1, 0:-2] + Z[1:-1, 2:]
         + Z[2:, 0:-2] + Z[2:, 1:-1] + Z[2:, 2:])
    birth = (N == 3) & (Z[1:-1, 1:-1] == 0)
    survive = ((N == 2) | (N == 3)) & (Z[1:-1, 1:-1] == 1)
    Z[...] = 0
    Z[1:-1, 1:-1][birth | survive] = 1
    return Z

def f(Z):
    for i in range(100):
        Z = iterate(Z)
    return Z
''')
    board = np.random.default_rng(0).integers(0, 2, (50, 50))
    want = board.copy()
    f(want)
    for backend in ["interpret", "cpu"]:
        got = board.copy()
        result = jk.jit(f, backend=backend)(got)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(result, want)


def test_lax_cond_branch_writes_its_operand(tmp_path):
    """A branch of jk.lax.cond that writes its operand in place writes the caller's array when it
    is taken, and the cond returns that array itself."""
    def f(x, p):
        def grow(a):
            a[0] += 10
            return a
        y = jk.lax.cond(p > 0, grow, lambda a: a, x)
        y[1] = -1.0  # the same array as x in both branches: NumPy writes x
        return y.sum()
    for p in (1, 0):
        want_x = np.arange(4.0)
        want = f(want_x, p)  # (outside a trace jk.lax.cond runs the branch Python picks)
        for backend in ["interpret", "cpu"]:
            got_x = np.arange(4.0)
            got = jk.jit(f, backend=backend)(got_x, p)
            np.testing.assert_array_equal(got_x, want_x)
            assert float(got) == float(want)


def test_a_carry_written_and_not_returned_is_refused():
    """A jk.lax body that writes its carry and returns another array: Python writes the caller's
    array on the first trip only, which one compiled loop does not express: a clear error."""
    def f(x, n):
        def body(i, a):
            a[0] += 1
            return a * 1
        return jk.lax.fori_loop(0, n, body, x)
    with pytest.raises(jk.UnsupportedOperationError, match="writes in place into carry"):
        jk.jit(f)(np.zeros(3), 5)


def test_a_local_constant_array_written_in_a_loop(tmp_path):
    """NPBench's correlation: an array the function makes (a NumPy constant of the trace until it is
    written) filled by a chained slice assignment in a loop. A write into such an array that the
    loop then carries is no write the caller could see, so it is never refused."""
    f = load(tmp_path, '''
def f(data, M):
    corr = np.eye(M, dtype=data.dtype)
    for i in range(M - 1):
        corr[i + 1:M, i] = corr[i, i + 1:M] = data[:, i] @ data[:, i + 1:M]
    return corr
''')
    data = np.random.default_rng(1).random((7, 9))
    for backend in ["interpret", "cpu"]:
        np.testing.assert_allclose(jk.jit(f, backend=backend, static_argnums=1)(data, 9), f(data, 9), rtol=1e-12)
