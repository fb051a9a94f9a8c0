"""A `dynamic_slice` whose starts fold to constants inside the array is a static `slice`
(passes/fold.py): an index map that cannot raise, so a loop body's padded window of a loop
constant (durbin's `np.flip(r[:k])`) is invariant and leaves the loop instead of being rebuilt
on every trip. Starts outside the array keep the step and NumPy's IndexError."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.ir import AType, Eqn, Program, Var
from jitkernel.ir.evaluate import eval_program
from jitkernel.passes import optimize
from helpers import HOST_BACKENDS
from test_symbolic_lengths import durbin  # PolyBench durbin as NPBench writes it


def _window_program(n: int, m: int, starts: tuple[int, int], sizes: tuple[int, int]) -> Program:
    x = Var(AType((n, m), np.dtype(np.float64)))
    consts = [Var(AType((), np.dtype(np.int64))) for _ in starts]
    out = Var(AType(sizes, np.dtype(np.float64)))
    return Program([x], consts, [np.asarray(s, np.int64) for s in starts],
                   [Eqn("dynamic_slice", [x, *consts], [out], {"sizes": sizes})], [out])


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(n=st.integers(1, 6), m=st.integers(1, 6), data=st.data())
def test_constant_starts_become_a_static_slice_with_the_same_answer(n, m, data):
    sizes = (data.draw(st.integers(1, n)), data.draw(st.integers(1, m)))
    starts = (data.draw(st.integers(-n - 2, n + 2)), data.draw(st.integers(-m - 2, m + 2)))
    program = _window_program(n, m, starts, sizes)
    x = np.arange(n * m, dtype=np.float64).reshape(n, m)
    optimized = optimize(program)
    try:
        want = eval_program(program, [x])
    except IndexError as e:
        assert [q.prim for q in optimized.eqns] == ["dynamic_slice"]  # kept: it raises at run time
        with pytest.raises(IndexError, match=str(e).split(" is out")[0]):
            eval_program(optimized, [x])
        return
    assert "dynamic_slice" not in [q.prim for q in optimized.eqns]
    np.testing.assert_array_equal(eval_program(optimized, [x])[0], want[0])


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_a_reversed_window_of_a_loop_constant_is_built_once(backend):
    r = np.random.default_rng(3).random(40) * 0.1
    f = jk.jit(durbin, backend=backend)
    np.testing.assert_allclose(f(r), durbin(r), rtol=1e-12)
    if backend == "cpu":
        text = f.lower(r).as_text("kernels")
        loop_at = text.index("loop ")
        # r's padded reversed copy is built before the loop (y's, a carry, inside it)
        assert "concatenate->" in text[:loop_at]
