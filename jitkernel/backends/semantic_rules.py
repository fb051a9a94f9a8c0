"""NumPy's per-primitive decisions written once, over generic operations each backend translates.

A rule is a Python function of an `Ops` (the backend's translator for one operand dtype) and the
operands; it builds its result from a handful of generic operations: constants, `select`,
comparisons, integer/float arithmetic, bit operations, shifts, a few math calls and setting a
bit of the status word. The CPU backend's translator (backends/cpu/semantic_llvm.py) turns each
operation into one llvmlite builder call, in the order the rule makes them, so the LLVM IR is
the one the hand-written lowering produced before; the CUDA translator
(backends/cuda/semantic_c.py) turns them into the statements of a C helper function. The rule
itself, what NumPy answers for `x // 0` or `int8(-128) // -1` or `nan % 2.0`, lives only here;
a new backend only translates the operations.

The operations (`g` is an Ops for operand dtype `g.dtype`; float16 operands are held in float32
registers and the backend rounds the rule's result to float16, as NumPy's loops do):
- `g.const(v)`: a constant of the operand type; `g.width`: its bit width.
- `g.select(c, a, b)`; `g.cmp(op, a, b)` (signed or unsigned by the dtype, ordered for floats),
  `g.cmp_unsigned(op, a, b)`, `g.cmp_unordered(op, a, b)` (op "uno": either is NaN).
- `g.and_/or_/xor(a, b)` (on booleans or integers), `g.from_bool(c)` (0 or 1).
- `g.add/sub/mul/div/rem(a, b)`: integers wrap around and divide truncating (the divisor is
  never 0 nor a MIN / -1 pair: the rules make it safe first), floats are IEEE without
  fast-math; `g.shl/shr(a, n)` (arithmetic for signed) for 0 <= n < width; `g.bit(a, k)`.
- `g.math(name, *args)`: "floor", "copysign", "fmod" of the float type, "maximum" /
  "minimum": NaN when either operand is NaN, else the larger (smaller); of equal values either;
  "fmax" / "fmin": the other operand when one is NaN, else as maximum / minimum.
- `g.set_status(c, code)`: OR `code` into the status word when `c` holds (the runtime raises
  backends.cpu.ops.STATUS_MESSAGES[code] after the run).

>>> import numpy as np
>>> from jitkernel.backends.semantic_rules import PythonOps, int_divmod
>>> g = PythonOps(np.dtype(np.int8))
>>> [int(int_divmod(g, "floor_divide", g.const(x), g.const(y))) for x, y in [(7, 0), (-128, -1), (-7, 2)]]
[0, -128, -4]
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ir import semantics
from .status import STATUS_NEGATIVE_POWER  # `integer ** negative`: NumPy's ValueError


def int_divmod(g: Any, prim: str, x: Any, y: Any) -> Any:
    """Integer floor_divide, remainder (Python's sign rule: the remainder has the divisor's sign)
    and fmod (C's: the dividend's sign). NumPy: x // 0 == x % 0 == 0 (it warns), MIN // -1
    wraps around to MIN and MIN % -1 is 0."""
    zero, one = g.const(0), g.const(1)
    is_zero = g.cmp_unsigned("==", y, zero)
    if g.signed:
        overflow = g.and_(g.cmp("==", x, g.const(-(1 << (g.width - 1)))), g.cmp("==", y, g.const(-1)))
        safe = g.select(g.or_(is_zero, overflow), one, y)
        q, r = g.div(x, safe), g.rem(x, safe)
        q = g.select(overflow, x, q)
        r = g.select(overflow, zero, r)
        if prim != "fmod":
            fix = g.and_(g.cmp("!=", r, zero), g.xor(g.cmp("<", r, zero), g.cmp("<", y, zero)))
            q = g.select(fix, g.sub(q, one), q)
            r = g.select(fix, g.add(r, y), r)
    else:
        safe = g.select(is_zero, one, y)
        q, r = g.div(x, safe), g.rem(x, safe)
    return g.select(is_zero, zero, q if prim == "floor_divide" else r)


def float_divmod(g: Any, prim: str, a: Any, c: Any) -> Any:
    """NumPy's npy_divmod for floats (floor_divide and remainder): Python semantics, the
    remainder has the divisor's sign and a zero remainder the divisor's sign of zero;
    x % 0 is NaN (fmod's), x // 0 is x / 0 (inf or NaN); the quotient is rounded to the
    nearest integer of (a - fmod(a, c)) / c, with NumPy's signed zero."""
    zero = g.const(0.0)
    fmod = g.math("fmod", a, c)
    if prim == "remainder":
        nonzero = g.cmp_unordered("!=", fmod, zero)
        differ = g.xor(g.cmp("<", c, zero), g.cmp("<", fmod, zero))
        adjusted = g.select(g.and_(nonzero, differ), g.add(fmod, c), fmod)
        result = g.select(g.cmp("==", fmod, zero), g.math("copysign", zero, c), adjusted)
        return g.select(g.cmp("==", c, zero), fmod, result)
    div = g.div(g.sub(a, fmod), c)
    nonzero = g.cmp_unordered("!=", fmod, zero)
    differ = g.xor(g.cmp("<", c, zero), g.cmp("<", fmod, zero))
    div = g.select(g.and_(nonzero, differ), g.sub(div, g.const(1.0)), div)
    floor = g.math("floor", div)
    floor = g.select(g.cmp(">", g.sub(div, floor), g.const(0.5)), g.add(floor, g.const(1.0)), floor)
    floor = g.select(g.cmp("==", div, zero), g.math("copysign", zero, g.div(a, c)), floor)
    return g.select(g.cmp("==", c, zero), g.div(a, c), floor)


def float_max_min(g: Any, prim: str, a: Any, b: Any) -> Any:
    """NumPy's float maximum / minimum: NaN propagates (`g.math`), and of two equal values
    (0.0 and -0.0) the float16 loop keeps the first operand, the float32/float64 loops the
    second (semantics.max_min_tie_keeps_first)."""
    r = g.math(prim, a, b)
    tie = g.cmp("==", a, b)
    return g.select(tie, a if semantics.max_min_tie_keeps_first(g.dtype) else b, r)


def float_fmax_fmin(g: Any, prim: str, a: Any, b: Any) -> Any:
    """NumPy's float fmax / fmin: a NaN operand is ignored (`g.math`: C's fmax, LLVM's maxnum),
    and of two equal values (0.0 and -0.0) the same operand as maximum / minimum keeps: those
    functions may return either zero, and the GPU's and the host's differ."""
    r = g.math(prim, a, b)
    tie = g.cmp("==", a, b)
    return g.select(tie, a if semantics.max_min_tie_keeps_first(g.dtype) else b, r)


def shift(g: Any, prim: str, x: Any, y: Any) -> Any:
    """left_shift / right_shift: NumPy gives 0 for a shift by >= the bit width or by a
    negative amount (compared unsigned, so negative amounts are huge), and -1 for a right
    shift of a negative value by such an amount."""
    zero = g.const(0)
    in_range = g.cmp_unsigned("<", y, g.const(g.width))
    amount = g.select(in_range, y, zero)
    if prim == "left_shift":
        return g.select(in_range, g.shl(x, amount), zero)
    shifted = g.shr(x, amount)
    fill = g.select(g.cmp("<", x, zero), g.const(-1), zero) if g.signed else zero
    return g.select(in_range, shifted, fill)


def int_sign(g: Any, x: Any) -> Any:
    """sign of an integer: -1, 0 or 1 (0 or 1 for unsigned types)."""
    zero = g.const(0)
    if not g.signed:
        return g.from_bool(g.cmp("!=", x, zero))
    return g.sub(g.from_bool(g.cmp(">", x, zero)), g.from_bool(g.cmp("<", x, zero)))


def float_sign(g: Any, x: Any) -> Any:
    """sign of a float: 1.0, -1.0, or 0.0 for both zeros (a positive zero), NaN for NaN."""
    zero, one = g.const(0.0), g.const(1.0)
    s = g.select(g.cmp(">", x, zero), one, g.select(g.cmp("<", x, zero), g.const(-1.0), zero))
    return g.select(g.cmp_unordered("uno", x, x), x, s)


def int_reciprocal(g: Any, x: Any) -> Any:
    """NumPy's integer reciprocal is (int)(1.0 / x): 1 -> 1, -1 -> -1, others -> 0; 1 / 0 converts
    inf, which x86 turns into the minimum for 32/64-bit signed types and 0 for the others."""
    r = g.select(g.cmp_unsigned("==", x, g.const(1)), g.const(1), g.const(0))
    if g.signed:
        r = g.select(g.cmp("==", x, g.const(-1)), g.const(-1), r)
        if g.width >= 32:
            r = g.select(g.cmp("==", x, g.const(0)), g.const(-(1 << (g.width - 1))), r)
    return r


def int_power(g: Any, x: Any, y: Any) -> Any:
    """Integer power by squaring over every bit of the exponent (wraps around as NumPy's loop
    does); a negative exponent of a signed type raises NumPy's ValueError through the status
    word ("Integers to negative integer powers are not allowed.")."""
    if g.signed:
        g.set_status(g.cmp("<", y, g.const(0)), STATUS_NEGATIVE_POWER)
    result, base = g.const(1), x
    for k in range(g.width):
        result = g.select(g.bit(y, k), g.mul(result, base), result)
        base = g.mul(base, base)
    return result


# The shared rules by primitive, for integer and float operands: (rule, takes `prim`).
INT_RULES: dict[str, tuple[Callable[..., Any], bool]] = {
    "floor_divide": (int_divmod, True), "remainder": (int_divmod, True), "fmod": (int_divmod, True),
    "left_shift": (shift, True), "right_shift": (shift, True), "power": (int_power, False),
    "sign": (int_sign, False), "reciprocal": (int_reciprocal, False),
}
FLOAT_RULES: dict[str, tuple[Callable[..., Any], bool]] = {
    "floor_divide": (float_divmod, True), "remainder": (float_divmod, True), "sign": (float_sign, False),
    "maximum": (float_max_min, True), "minimum": (float_max_min, True),
    "fmax": (float_fmax_fmin, True), "fmin": (float_fmax_fmin, True),
}


def rule_for(prim: str, dt: np.dtype) -> Callable[..., Any] | None:
    """The shared rule of `prim` on operands of `dt` as a function (g, *args), or None when the
    backends translate `prim` directly (plain arithmetic, comparisons, math calls)."""
    table = FLOAT_RULES if dt.kind == "f" else INT_RULES if dt.kind in "iu" else {}
    if prim not in table:
        return None
    # looked up in the module at call time, so that a rule replaced here reaches every backend
    fn, takes_prim = table[prim]
    rule = globals()[fn.__name__]
    return (lambda g, *args: rule(g, prim, *args)) if takes_prim else rule


class PythonOps:
    """The generic operations on NumPy scalars of one dtype: runs a rule in Python (a reference
    and a readable check of a rule; the backends' translators are the ones compiled).

    >>> int(shift(PythonOps(np.dtype(np.int16)), "right_shift", np.int16(-5), np.int16(99)))
    -1
    """

    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = np.dtype(dtype)
        self.signed = self.dtype.kind == "i"
        self.width = 8 * self.dtype.itemsize
        self.status = 0
        # float16 computes in float32 (the caller rounds the result), as the backends do
        self.float_type = np.float32 if self.dtype == np.float16 else self.dtype.type

    def const(self, v: object) -> Any:
        if self.dtype.kind == "f":
            return self.float_type(v)
        return np.array(int(v) & ((1 << self.width) - 1), dtype=np.uint64).astype(self.dtype)[()]

    def _u(self, a: Any) -> int:
        return int(a) & ((1 << self.width) - 1)

    def _wrap(self, v: int) -> Any:
        return self.const(v)

    def select(self, c: bool, a: Any, b: Any) -> Any:
        return a if c else b

    def cmp(self, op: str, a: Any, b: Any) -> bool:
        return bool({"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])

    def cmp_unsigned(self, op: str, a: Any, b: Any) -> bool:
        return self.cmp(op, self._u(a), self._u(b))

    def cmp_unordered(self, op: str, a: Any, b: Any) -> bool:
        if np.isnan(a) or np.isnan(b):
            return True
        return op != "uno" and self.cmp(op, a, b)

    def and_(self, a: Any, b: Any) -> Any:
        return a and b if isinstance(a, bool) else self._wrap(int(a) & int(b))

    def or_(self, a: Any, b: Any) -> Any:
        return a or b if isinstance(a, bool) else self._wrap(int(a) | int(b))

    def xor(self, a: Any, b: Any) -> Any:
        return a != b if isinstance(a, bool) else self._wrap(int(a) ^ int(b))

    def from_bool(self, c: bool) -> Any:
        return self.const(int(c))

    def _int_or_float(self, a: Any, b: Any, int_op: Callable[[int, int], int], float_op: Callable) -> Any:
        if self.dtype.kind == "f":
            with np.errstate(all="ignore"):
                return self.float_type(float_op(self.float_type(a), self.float_type(b)))
        return self._wrap(int_op(int(a), int(b)))

    def add(self, a: Any, b: Any) -> Any:
        return self._int_or_float(a, b, lambda p, q: p + q, lambda p, q: p + q)

    def sub(self, a: Any, b: Any) -> Any:
        return self._int_or_float(a, b, lambda p, q: p - q, lambda p, q: p - q)

    def mul(self, a: Any, b: Any) -> Any:
        return self._int_or_float(a, b, lambda p, q: p * q, lambda p, q: p * q)

    def div(self, a: Any, b: Any) -> Any:
        truncating = lambda p, q: abs(p) // abs(q) * (1 if (p < 0) == (q < 0) else -1)  # noqa: E731
        return self._int_or_float(a, b, truncating, lambda p, q: p / q)

    def rem(self, a: Any, b: Any) -> Any:
        return self._wrap(int(a) - int(self.div(a, b)) * int(b))

    def shl(self, a: Any, n: Any) -> Any:
        return self._wrap(int(a) << int(n))

    def shr(self, a: Any, n: Any) -> Any:
        return self._wrap(int(a) >> int(n))

    def bit(self, a: Any, k: int) -> bool:
        return bool((self._u(a) >> k) & 1)

    def math(self, name: str, *args: Any) -> Any:
        fn = {"floor": np.floor, "copysign": np.copysign, "fmod": np.fmod, "maximum": np.maximum,
              "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin}[name]
        with np.errstate(all="ignore"):
            return self.float_type(fn(*(self.float_type(a) for a in args)))

    def set_status(self, c: bool, code: int) -> None:
        if c:
            self.status |= code
