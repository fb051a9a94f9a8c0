"""Unread values: a statement NumPy executes still raises when its value is never read (dead-code
elimination may not drop it), and hidden outputs never reach the caller."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from helpers import assert_identical, HOST_BACKENDS


# An unread value whose computation raises in NumPy (integer power, negative exponent) must still
# raise: dead-code elimination may not drop a statement NumPy executes.
_UNREAD_STATEMENTS = [
    "u = a ** b",
    "u = (a ** b) * 2",
    "u = np.power(a, b).sum()",
    "u = a ** b; w = u + 1",
    "u = (a ** b)[1:]",
]
_RETURNS = ["a + 1", "a * b", "(a ** 2).sum()", "a"]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(stmt=st.sampled_from(_UNREAD_STATEMENTS), ret=st.sampled_from(_RETURNS),
       dtype=st.sampled_from([np.int8, np.int32, np.int64, np.uint8, np.uint64]),
       exps=st.lists(st.integers(-2, 3), min_size=3, max_size=3),
       backend=st.sampled_from(HOST_BACKENDS))
def test_unread_integer_powers_still_raise(stmt, ret, dtype, exps, backend):
    ns: dict = {"np": np}
    exec(f"def f(a, b):\n    {stmt}\n    return {ret}\n", ns)
    f = ns["f"]
    a = np.array([3, 1, 2], dtype)
    b = np.array(exps).astype(dtype) if np.dtype(dtype).kind == "i" else np.array([abs(e) for e in exps], dtype)
    try:
        want = f(a, b)
    except ValueError as e:
        with pytest.raises(ValueError, match="negative integer powers"):
            jk.jit(f, backend=backend)(a, b)
        assert "negative integer powers" in str(e)
        return
    got = jk.jit(f, backend=backend)(a, b)
    assert_identical(got, want) if np.asarray(want).dtype.kind == "f" else np.testing.assert_array_equal(got, want)


def test_hidden_outputs_never_reach_the_caller():
    f = jk.jit(lambda a: (a ** a, a)[1])
    out = f(np.array([1, 2], np.int64))
    assert isinstance(out, np.ndarray) and out.tolist() == [1, 2]
    g = jk.jit(lambda a: {"x": a + 1} if (a ** a) is not None else None)
    assert list(g(np.array([1, 2]))) == ["x"]
