"""Checks that value ranges prove never fire are dropped: a `raise_if` whose condition is false
for every value its operands can hold.

A Python int traced through jit is checked for int64 overflow where Python's unbounded int would
differ (trace/python_int.py): `crc = (~crc & 0xFFFF) << 8` gets `raise_if(result, crc' < -2**55
or crc' > 2**55 - 1)`. The check is a library step, and a library step between two native
segments costs a Python round trip per call (NPBench crc16: 16 us against Numba's 12). Here an
interval per integer or bool value (the smallest and largest value any element can hold) is
computed forward through the program; `x & 0xFFFF` lies in [0, 65535], so the comparison is
false, and the check goes.

The intervals are sound, never tight by guesswork: a value whose rule is not listed here (an
argument, a loop's result, a float converted to int) can hold anything its dtype holds, and an
arithmetic result that might leave its dtype (wrap) is widened to the dtype's whole range. The
rewrite depends on constants' values, so shape-generic compiles leave it out (passes/__init__.py:
a size-derived constant that proves a check at two sizes may not at a third).

>>> import numpy as np, jitkernel as jk
>>> from jitkernel.passes import optimize
>>> def f(crc):  # a Python int argument
...     return (~crc & 0xFFFF) << 8
>>> prog = optimize(jk.make_ir(f)(5))
>>> "raise_if" in [e.prim for e in prog.eqns]
False
"""
from __future__ import annotations

import numpy as np

from ..ir import Eqn, Program, Var
from .rewrite import substitute

Interval = tuple[int, int]

# Primitives whose result holds only values of their first operand (a subset of its elements).
_SUBSET_OF_OPERAND = frozenset({"broadcast_in_dim", "reshape", "transpose", "slice", "dynamic_slice", "rev", "copy"})
_COMPARISONS = frozenset({"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"})


def _dtype_range(dtype: np.dtype) -> Interval | None:
    if dtype.kind == "b":
        return 0, 1
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return int(info.min), int(info.max)
    return None


def _within(dtype: np.dtype, lo: int, hi: int) -> Interval:
    """[lo, hi] where `dtype` holds it; the dtype's whole range where a value may wrap."""
    full = _dtype_range(dtype)
    return (lo, hi) if full[0] <= lo and hi <= full[1] else full


def _compare(prim: str, a: Interval, b: Interval) -> Interval:
    """[0, 0] (always false), [1, 1] (always true) or [0, 1]."""
    always, never = {
        "less": (a[1] < b[0], a[0] >= b[1]),
        "less_equal": (a[1] <= b[0], a[0] > b[1]),
        "greater": (a[0] > b[1], a[1] <= b[0]),
        "greater_equal": (a[0] >= b[1], a[1] < b[0]),
        "equal": (a[0] == a[1] == b[0] == b[1], a[1] < b[0] or b[1] < a[0]),
        "not_equal": (a[1] < b[0] or b[1] < a[0], a[0] == a[1] == b[0] == b[1]),
    }[prim]
    return (1, 1) if always else (0, 0) if never else (0, 1)


def _shift_amount(s: Interval, dtype: np.dtype) -> int | None:
    bits = dtype.itemsize * 8
    return s[0] if s[0] == s[1] and 0 <= s[0] < bits else None


def _interval(eqn: Eqn, args: list[Interval | None]) -> Interval | None:
    """The interval of `eqn`'s (single) result from its operands' intervals; None: unknown
    (the caller takes the dtype's whole range)."""
    out = eqn.outputs[0].aval.dtype
    prim = eqn.prim
    if _dtype_range(out) is None:
        return None
    if prim in _SUBSET_OF_OPERAND:
        return args[0]
    if any(a is None for a in args):
        return None
    if prim == "convert":
        return _within(out, *args[0])
    if prim in _COMPARISONS:
        if eqn.inputs[0] is eqn.inputs[1] and eqn.inputs[0].aval.dtype.kind in "biu":
            # a value against itself (two counts merged into one, passes/equal_state.py)
            return (1, 1) if prim in ("equal", "less_equal", "greater_equal") else (0, 0)
        return _compare(prim, args[0], args[1])
    if prim in ("logical_and", "logical_or"):
        (alo, ahi), (blo, bhi) = args
        return (alo & blo, ahi & bhi) if prim == "logical_and" else (alo | blo, ahi | bhi)
    if prim == "logical_not":
        return 1 - args[0][1], 1 - args[0][0]
    if prim == "select":  # either branch
        (_, _), (alo, ahi), (blo, bhi) = args
        return min(alo, blo), max(ahi, bhi)
    if prim in ("maximum", "minimum"):
        pick = max if prim == "maximum" else min
        return pick(args[0][0], args[1][0]), pick(args[0][1], args[1][1])
    if out.kind == "b":
        return None
    if prim in ("add", "subtract", "multiply"):
        (alo, ahi), (blo, bhi) = args
        if prim == "add":
            return _within(out, alo + blo, ahi + bhi)
        if prim == "subtract":
            return _within(out, alo - bhi, ahi - blo)
        products = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
        return _within(out, min(products), max(products))
    if prim == "negative":
        return _within(out, -args[0][1], -args[0][0])
    if prim == "bitwise_and":
        nonneg = [hi for lo, hi in args if lo >= 0]
        return (0, min(nonneg)) if nonneg else None
    if prim in ("bitwise_or", "bitwise_xor"):
        if all(lo >= 0 for lo, _ in args):
            top = (1 << max(hi for _, hi in args).bit_length()) - 1
            return _within(out, max(lo for lo, _ in args) if prim == "bitwise_or" else 0, top)
        return None
    if prim == "invert" and out.kind == "i":
        return ~args[0][1], ~args[0][0]
    if prim in ("left_shift", "right_shift"):
        s = _shift_amount(args[1], out)
        (lo, hi) = args[0]
        if s is None:
            return None
        if prim == "right_shift":  # arithmetic for signed dtypes: floor(x / 2**s), monotonic
            return lo >> s, hi >> s
        return _within(out, lo << s, hi << s) if lo >= 0 else None
    if prim == "remainder":  # NumPy's and Python's: the sign of the divisor
        (blo, bhi) = args[1]
        if blo > 0:
            return 0, bhi - 1
        return None
    return None


def value_intervals(program: Program) -> dict[Var, Interval]:
    """[smallest, largest] value any element of each integer or bool Var of `program` (its top
    level) can hold; a Var missing here may hold anything its dtype holds."""
    found: dict[Var, Interval] = {}
    for v, c in zip(program.constvars, program.consts):
        c = np.asarray(c)
        if c.size and _dtype_range(c.dtype) is not None:
            found[v] = int(c.min()), int(c.max())
    for eqn in program.eqns:
        if len(eqn.outputs) != 1:
            continue
        interval = _interval(eqn, [found.get(v, _dtype_range(v.aval.dtype)) for v in eqn.inputs])
        if interval is not None:
            found[eqn.outputs[0]] = interval
    return found


def drop_proved_checks(program: Program) -> Program:
    """`program` without the `raise_if` steps whose condition its value intervals prove false
    (to a fixed point: a dropped check passes its value through, which can prove the next one,
    `raise_if(c, c != raise_if(c, ...))`)."""
    while any(e.prim == "raise_if" for e in program.eqns):
        dropped = _drop_once(program)
        if len(dropped.eqns) == len(program.eqns):
            break
        program = dropped
    return program


def _drop_once(program: Program) -> Program:
    intervals = value_intervals(program)

    def visit(eqn: Eqn, resolve) -> Eqn | dict:
        if eqn.prim == "raise_if" and intervals.get(eqn.inputs[1]) == (0, 0):
            return {eqn.outputs[0]: resolve(eqn.inputs[0])}
        return eqn

    return substitute(program, visit)
