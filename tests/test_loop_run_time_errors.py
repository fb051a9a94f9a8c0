"""A run-time error inside a while loop stops the loop and raises NumPy's (or Python's) error.

Two ways a loop that NumPy stops with an exception ran on instead:

- a traced index out of bounds in the condition or the body (`while x[i] > 0: i += 1` once i
  passes the end) only set the status word, which is read after the call: the clamped element
  read kept the loop going, forever when it kept the condition true (CPU native loops, the
  CUDA step loop and the TPU lowering; the interpreter raised);
- a check of Python-int arithmetic in the condition (`while k * k * k < n`, past int64) was
  dropped: the wrapped product kept the loop going and the result was wrong.

Each program below has one structure (one compile per backend); hypothesis draws the data, so
the same compiled loop meets in-bounds runs, runs off either end and overflowing products.
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import assert_matches_numpy, outcome

CUDA_EMULATOR_SUITE = True  # the backend fixture adds "cuda-emulator" (tests/emulator_suite.py)
TPU_SUITE = True  # and tpu-interpret (tests/tpu_suite.py)

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


def scan_until_sign_change(x, i, step):
    """Walks from i while the sign stays positive: off the end when every element is."""
    while x[i] > 0:
        i += step
    return i


def follow_links(x, links, i):
    """Follows links[i] while x[i] is positive: a link past the end fails in the body."""
    total = 0.0
    while x[i] > 0:
        total += x[i]
        x[i] = -x[i]  # visited: a cycle ends
        i = links[i]
    return total, i


def smallest_cube_root_above(x, n, step):
    """Python ints: k * k * k leaves int64 for large k (Python's ints do not)."""
    k = 1
    while k * k * k < n:
        k += step
    return x + k


def _same(fn, backend, *args):
    want = outcome(fn, *(a.copy() if isinstance(a, np.ndarray) else a for a in args))
    got = outcome(jk.jit(fn, backend=backend), *(a.copy() if isinstance(a, np.ndarray) else a for a in args))
    assert got[0] == want[0], (fn.__name__, args, want, got)
    if want[0] == "raise":
        assert issubclass(got[1], want[1]), (fn.__name__, args, want, got)
    else:
        assert_matches_numpy(got[1], want[1])


def test_while_loops_stop_at_run_time_errors(backend):
    @SETTINGS
    @given(signs=st.lists(st.booleans(), min_size=6, max_size=6), start=st.integers(-6, 5),
           step=st.sampled_from([1, 2, -1, -3]), links=st.lists(st.integers(-7, 7), min_size=6, max_size=6),
           n=st.sampled_from([0, 27, 10**12, 2**62, 2**63 - 1]), jump=st.sampled_from([2**19, 2**20, 2**40]))
    def run(signs, start, step, links, n, jump):
        x = np.where(signs, 1.5, -0.5)
        _same(scan_until_sign_change, backend, x, start, step)
        _same(follow_links, backend, x, np.array(links), start)
        _cube_roots_as_python_would(backend, n, jump)
    run()


def _cube_roots_as_python_would(backend, n, jump):
    """Python's answer where every k * k * k fits int64; else jitkernel's OverflowError (compiled
    code cannot hold the product; docs/numpy-support.md), never a wrapped product."""
    k = 1
    while k * k * k < n:
        k += jump
    overflows = any(j ** 3 > 2**63 - 1 for j in range(1, k + 1, jump))
    got = outcome(jk.jit(smallest_cube_root_above, backend=backend), np.zeros(2), n, jump)
    if overflows:
        assert got[0] == "raise" and issubclass(got[1], OverflowError), (n, jump, got)
    else:
        assert got[0] == "ok", (n, jump, got)
        assert_matches_numpy(got[1], np.zeros(2) + k)
