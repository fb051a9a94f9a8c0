"""Integer comparisons by value: unsigned against signed, uint64 examples."""
from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import emulator_suite
import jitkernel as jk
from helpers import HOST_BACKENDS


SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))


BACKENDS = HOST_BACKENDS + emulator_suite.emulator_backends()  # cuda-emulator where g++ is


COMPARISONS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
               np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal]
UNSIGNED = [np.dtype(n) for n in ("uint8", "uint16", "uint32", "uint64")]
SIGNED = [np.dtype(n) for n in ("int8", "int16", "int32", "int64")]


def _extremes(dtype: np.dtype) -> list[int]:
    info = np.iinfo(dtype)
    return sorted({info.min, info.min + 1, -1, 0, 1, 2, info.max // 2, info.max - 1, info.max} & set(
        range(info.min, info.max + 1)) if info.bits <= 8 else {info.min, info.min + 1, -1 if info.min < 0 else 0,
                                                                  0, 1, 2, info.max // 2, info.max - 1, info.max})


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(u=st.sampled_from(UNSIGNED), s=st.sampled_from(SIGNED), cmp=st.sampled_from(COMPARISONS),
       swap=st.booleans(), data=st.data())
def test_unsigned_against_signed_compares_by_value(backend, u, s, cmp, swap, data):
    a = np.array(data.draw(st.lists(st.sampled_from(_extremes(u)), min_size=1, max_size=6)), u)
    b = np.array(data.draw(st.lists(st.sampled_from(_extremes(s)), min_size=len(a), max_size=len(a))), s)
    args = (b, a) if swap else (a, b)
    expected = cmp(*args)
    got = jk.jit(lambda x, y: cmp(x, y), backend=backend)(*args)
    assert got.dtype == expected.dtype and np.array_equal(got, expected), (args, got, expected)


def test_uint64_comparison_examples():
    a, b = np.array([7, 2**64 - 1], np.uint64), np.array([-2, -1])
    assert jk.jit(lambda x, y: x < y)(a, b).tolist() == [False, False]
    assert jk.jit(lambda x, y: x == y)(a, b).tolist() == [False, False]
    assert jk.jit(lambda x, s: x > s)(a, -1).tolist() == [True, True]  # a Python int argument
