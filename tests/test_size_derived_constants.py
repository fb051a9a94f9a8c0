"""Constants computed from a size (`n - ddof`, `len(x) - k`, a mean's count) are run-time
parameters of shape-generic code: a function called on sizes s, s+1, s+2, ... compiles at most
twice (README, "Recompilation") whatever value such a constant takes at the first sizes, and
gives NumPy's answer at every size.

The class this guards: a rewrite that depends on a constant's value (`x / 1 -> x`) made the
kernel programs of two sizes differ wherever a size-derived constant hit 1 or 0, so
`x.var(ddof=1)` first called on 2 elements recompiled for every later size."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from helpers import assert_matches_numpy, compile_events, outcome

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True, database=None, print_blob=False)


def _term(kind: str, k: int):
    """One use of a size-derived constant `n - k` (n: the argument's length)."""
    return {
        "var": lambda x: x.var(ddof=k),
        "std_keepdims": lambda x: np.std(x, ddof=k, keepdims=True),
        "divide": lambda x: x / (x.shape[0] - k),
        "multiply": lambda x: x * (len(x) - k),
        "add": lambda x: x + (x.shape[0] - k),
        "subtract": lambda x: (x.shape[0] - k) - x,
        "power": lambda x: x ** (x.shape[0] - k),
        "mean_times": lambda x: x.mean() * (x.size - k),
        "where": lambda x: np.where(x > 2, x, x.shape[0] - k),
        "int_add": lambda x: x.astype(np.int64) + (x.shape[0] - k),
        "int_multiply": lambda x: x.astype(np.int64) * (x.shape[0] - k),
    }[kind]


KINDS = ["var", "std_keepdims", "divide", "multiply", "add", "subtract", "power", "mean_times", "where",
         "int_add", "int_multiply"]


@SETTINGS
@given(kind=st.sampled_from(KINDS), k=st.integers(0, 3), first=st.integers(1, 4),
       dtype=st.sampled_from([np.float64, np.float32]))
def test_consecutive_sizes_compile_at_most_twice(kind, k, first, dtype):
    fn = _term(kind, k)
    f = jk.jit(fn, backend="cpu", disk_cache=False)
    with compile_events() as seen:
        for n in range(first, first + 5):
            x = (np.arange(n, dtype=dtype) + 1) / 3
            got, expected = outcome(f, x), outcome(fn, x)
            assert got[0] == expected[0], (n, got, expected)
            if expected[0] == "ok":
                assert_matches_numpy(got[1], expected[1])
            else:
                assert got[1] == expected[1]
    # NumPy's own power takes fast paths for the exponents -1, 0, 1, 2 (reciprocal, ones,
    # copy, square): traced as those functions, each such size is a program of its own.
    fast_paths = sum(n - k in (-1, 0, 1, 2) for n in range(first, first + 5)) if kind == "power" else 0
    # var's count is NumPy's max(n - ddof, 0): 0 at the first two sizes when ddof > first, a
    # constant equal in both compared programs, which stays one (docs/recompilation.md): one
    # compile more when it starts to vary.
    clamped = kind in ("var", "std_keepdims") and k >= first + 1
    assert len(seen) <= 2 + fast_paths + clamped, [str(r) for r in f.recompilations()]


def test_var_with_ddof_first_called_on_ddof_plus_one_elements_reuses_its_code():
    """The reproducer: sizes 2..8 of var(ddof=1) compiled 7 times."""
    f = jk.jit(lambda x: x.var(ddof=1), backend="cpu", disk_cache=False)
    for n in range(2, 9):
        x = np.arange(n, dtype=np.float64)
        assert_matches_numpy(f(x), x.var(ddof=1))
    assert len(f.recompilations()) == 1
    assert "is now dynamic" in " ".join(f.recompilations()[0].reasons)


@pytest.mark.parametrize("fn", [lambda a: np.sum(a == a, axis=0),
                                lambda a: (np.sum(np.clip(a == a, -5, 9) <= 7), a.shape[0] * 2.0),
                                lambda a: np.full(3, a.shape[0])])
def test_programs_that_fold_to_a_size_dependent_constant_stay_shape_generic(fn, compiles):
    # The folded constant is an output stored as a literal; its unread buffer used to key the
    # kernel structure, so each size compiled again (soak seed 0, program 3954).
    f = jk.jit(fn)
    for n in range(1, 6):
        a = np.arange(n, dtype=np.uint16)
        got, want = f(a), fn(a)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(g, w)
            assert np.asarray(g).dtype == np.asarray(w).dtype
    assert len(compiles) <= 2
