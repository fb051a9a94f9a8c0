"""Python int arguments out of an array's range follow NumPy per operation (raise or compare by
value)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import jit_or_error, numpy_or_error


SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))


INT_OPS = {
    "add": lambda a, s: a + s, "rsub": lambda a, s: s - a, "mul": lambda a, s: a * s,
    "floordiv": lambda a, s: a // s, "mod": lambda a, s: a % s, "and": lambda a, s: a & s,
    "or": lambda a, s: a | s, "lshift": lambda a, s: a << s, "rshift": lambda a, s: a >> s,
    "lt": lambda a, s: a < s, "le": lambda a, s: a <= s, "eq": lambda a, s: a == s,
    "ne": lambda a, s: a != s, "rgt": lambda a, s: s > a, "rge": lambda a, s: s >= a,
    "np.less": lambda a, s: np.less(a, s), "np.equal": lambda a, s: np.equal(s, a),
    "maximum": lambda a, s: np.maximum(a, s), "minimum": lambda a, s: np.minimum(s, a),
    "where": lambda a, s: np.where(a > 1, a, s), "where_first": lambda a, s: np.where(a > 1, s, a),
    "clip_lo": lambda a, s: np.clip(a, s, None), "clip_hi": lambda a, s: np.clip(a, None, s),
    "truediv": lambda a, s: a / s, "logical_and": lambda a, s: np.logical_and(a, s),
}
INTS = [np.dtype(n) for n in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")]


def _near_bounds(dtype: np.dtype) -> list[int]:
    info = np.iinfo(dtype)
    values = {info.min - 1, info.min, info.min + 1, info.max - 1, info.max, info.max + 1, 0, 1, -1, 1000,
              -1000, 2**40, -(2**40), 2**63 - 1, -(2**63)}
    return sorted(v for v in values if -(2**63) <= v < 2**63)


def _same_outcome(got, expected) -> bool:
    if isinstance(expected, type) or isinstance(got, type):
        return got is expected
    g, e = np.asarray(got), np.asarray(expected)
    return g.dtype == e.dtype and g.shape == e.shape and np.array_equal(g, e, equal_nan=e.dtype.kind == "f")


@SETTINGS
@given(dtype=st.sampled_from(INTS), op=st.sampled_from(sorted(INT_OPS)), data=st.data())
def test_python_int_bounds_follow_numpy_per_operation(dtype, op, data):
    """Comparisons are by value whatever the Python int; arithmetic, bitwise ops, shifts and
    maximum/minimum raise OverflowError outside the dtype's range; np.where casts unsafely;
    np.clip only checks the side that can clip. As a traced argument and as a constant."""
    s = data.draw(st.sampled_from(_near_bounds(dtype)))
    f = INT_OPS[op]
    info = np.iinfo(dtype)
    x = np.array([0, 1, 2, info.max, info.min], dtype)
    expected = numpy_or_error(f, x, s)
    assert _same_outcome(jit_or_error(f, x, s), expected), ("argument", s)
    assert _same_outcome(jit_or_error(lambda a: f(a, s), x), expected), ("constant", s)


def test_comparison_with_out_of_range_argument_examples():
    f = jk.jit(lambda x, s: x < s)
    assert f(np.arange(3, dtype=np.int8), 1000).tolist() == [True, True, True]
    assert f(np.arange(3, dtype=np.uint8), -1).tolist() == [False, False, False]
    with pytest.raises(OverflowError):
        jk.jit(lambda x, s: x + s)(np.arange(3, dtype=np.int8), 1000)
