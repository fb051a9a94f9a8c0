"""Value intervals of integer and bool values (passes/int_ranges.py) are sound: on generated
programs of integer operations (NumPy's wrapping arithmetic, shifts, bitwise operations,
remainders, casts, comparisons), every element of every intermediate value, for inputs that
include the dtype's extremes, lies inside the interval computed for it. The checks they drop are
the Python-int overflow checks they prove cannot fire; the ones that can still raise
(tests/test_python_int_overflow.py)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.ir.evaluate import eval_program
from jitkernel.passes import optimize
from jitkernel.passes.int_ranges import value_intervals

DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
OPS = ["and", "or", "xor", "invert", "add", "subtract", "multiply", "left_shift", "right_shift",
       "remainder", "maximum", "minimum", "where", "cast", "less", "equal", "and_bools", "negative"]


def _const(c: int, dtype) -> np.ndarray:
    return np.asarray(c).astype(dtype)  # wraps into the dtype, as NumPy's casts do


def _apply(op: str, x, y, c: int, cast_to):
    bits = x.dtype.itemsize * 8
    k = _const(c, x.dtype)
    if op == "and":
        return x & k
    if op == "or":
        return x | k
    if op == "xor":
        return x ^ y.astype(x.dtype)
    if op == "invert":
        return ~x
    if op in ("add", "subtract", "multiply"):
        return getattr(np, op)(x, y.astype(x.dtype))
    if op == "negative":
        return np.negative(x)
    if op in ("left_shift", "right_shift"):
        return getattr(np, op)(x, _const(abs(c) % (bits + 2), x.dtype))
    if op == "remainder":
        return np.remainder(x, _const(abs(c) % 50 + 1, x.dtype))
    if op in ("maximum", "minimum"):
        return getattr(np, op)(x, k)
    if op == "where":
        return np.where(x > k, x, y.astype(x.dtype))
    if op == "cast":
        return x.astype(cast_to)
    if op == "less":
        return x < k
    if op == "equal":
        return x == k
    return (x > k) & (y.astype(x.dtype) < k)  # and_bools


def _program(dtype, steps):
    def fn(a, b):
        values = [a, b]
        for op, i, j, c, cast_to in steps:
            x, y = values[i % len(values)], values[j % len(values)]
            if x.dtype == np.bool_:
                x = x.astype(dtype)
            if y.dtype == np.bool_:
                y = y.astype(dtype)
            values.append(_apply(op, x, y, c, cast_to))
        return tuple(values[2:])
    return fn


def _inputs(dtype, seed: int) -> list[np.ndarray]:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    edges = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1], dtype=dtype)
    return [np.concatenate([edges, rng.integers(info.min, info.max, 10, dtype=dtype, endpoint=True)])
            for _ in range(2)]


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(dtype=st.sampled_from(DTYPES),
       steps=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 8), st.integers(0, 8),
                                st.integers(-300, 70000), st.sampled_from(DTYPES)), min_size=1, max_size=6),
       seed=st.integers(0, 100))
def test_every_value_lies_in_its_interval(dtype, steps, seed):
    a, b = _inputs(dtype, seed)
    with np.errstate(all="ignore"):
        program = jk.make_ir(_program(dtype, steps))(a, b)
    for prog in (program, optimize(program)):
        intervals = value_intervals(prog)
        watched = [v for v in intervals if v not in prog.constvars]
        everything = dataclasses.replace(prog, outvars=watched)
        for args in (_inputs(dtype, seed), _inputs(dtype, seed + 1)):
            with np.errstate(all="ignore"):
                values = eval_program(everything, args, check=False)
            for v, val in zip(watched, values):
                lo, hi = intervals[v]
                if val.size:
                    assert lo <= int(val.min()) and int(val.max()) <= hi, (v, val, (lo, hi), prog)


def test_a_check_the_ranges_prove_is_dropped_and_one_they_do_not_stays():
    def masked(crc):  # within [0, 65535] before the shift: never past int64
        return (~crc & 0xFFFF) << 8

    def unmasked(crc):
        return crc << 8
    assert "raise_if" not in [e.prim for e in optimize(jk.make_ir(masked)(5)).eqns]
    assert "raise_if" in [e.prim for e in optimize(jk.make_ir(unmasked)(5)).eqns]
    assert jk.jit(masked)(2**62) == masked(2**62)
    with pytest.raises(OverflowError, match="went past int64"):
        jk.jit(unmasked)(2**62)


def test_crc16_as_written_is_one_native_segment():
    """NPBench's crc16: the final `(crc << 8) | ...` check was a library step between the loop
    and the last kernel."""
    def crc16(data, poly=0x8408):
        crc = 0xFFFF
        for b in data:
            cur_byte = 0xFF & b
            for _ in range(0, 8):
                if (crc & 0x0001) ^ (cur_byte & 0x0001):
                    crc = (crc >> 1) ^ poly
                else:
                    crc >>= 1
                cur_byte >>= 1
        crc = (~crc & 0xFFFF)
        crc = (crc << 8) | ((crc >> 8) & 0xFF)
        return crc & 0xFFFF
    data = np.random.default_rng(0).integers(0, 256, 300, dtype=np.uint8)
    f = jk.jit(crc16)
    assert f(data) == crc16(data)
    assert "library" not in f.lower(data).as_text("kernels")
