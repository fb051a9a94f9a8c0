"""The generic operations of backends/semantic_rules.py as C: each shared rule, for one dtype,
becomes a helper function of the translation unit (`jk_floor_divide_int8(x, y)`), one
statement per operation.

`call(prim, dt, args)` returns the call expression and records the helper;
`definitions_for(text)` returns the definitions of the helpers `text` calls, each behind an
include guard (the emulator may compile the kernels of many programs as one unit).

>>> import numpy as np
>>> call("floor_divide", np.dtype(np.int8), ["a", "b"])
'jk_floor_divide_int8(a, b)'
>>> print(definitions_for("jk_floor_divide_int8(a, b)").splitlines()[2])
JK_DEV signed char jk_floor_divide_int8(signed char x, signed char y) {
"""
from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from .. import semantic_rules
from . import ctype

_CMP_OPS = ("==", "!=", "<", "<=", ">", ">=")
_UNSIGNED = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}


class _V:
    """A C value: its text (a name or a literal) and whether it is a bool or of the operand type."""

    def __init__(self, text: str, is_bool: bool = False) -> None:
        self.text, self.is_bool = text, is_bool

    def __str__(self) -> str:
        return self.text


class COps:
    """Translates a rule for operands of `dtype` into C statements (float16 in float registers)."""

    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = dtype
        self.is_float = dtype.kind == "f"
        self.signed = dtype.kind == "i"
        self.width = 8 * dtype.itemsize  # float16 computes in float: math calls are the float ones
        self.t = ctype.reg(dtype)
        self.u = ctype.wide_unsigned(dtype)  # integer arithmetic wraps in it (no C overflow)
        self.lines: list[str] = []
        self.uses_status = False

    def _bind(self, expr: str, is_bool: bool = False) -> _V:
        name = f"v{len(self.lines)}"
        self.lines.append(f"  const {'bool' if is_bool else self.t} {name} = {expr};")
        return _V(name, is_bool)

    def _wrap(self, expr: str) -> str:
        return f"({self.t})({expr})"

    def const(self, v: object) -> _V:
        return _V(ctype.literal(v, self.dtype))

    def select(self, c: _V, a: _V, b: _V) -> _V:
        return self._bind(f"{c} ? {a} : {b}", a.is_bool)

    def cmp(self, op: str, a: _V, b: _V) -> _V:
        assert op in _CMP_OPS, op
        if self.is_float and op == "!=":  # the ordered "not equal" (C's != is true on NaN)
            return self._bind(f"{a} < {b} || {a} > {b}", True)
        return self._bind(f"{a} {op} {b}", True)  # C's float comparisons are the ordered ones but !=

    def cmp_unsigned(self, op: str, a: _V, b: _V) -> _V:
        if op in ("==", "!=") or not self.signed:
            return self.cmp(op, a, b)
        u = _UNSIGNED[self.dtype.itemsize]
        return self._bind(f"({u}){a} {op} ({u}){b}", True)

    def cmp_unordered(self, op: str, a: _V, b: _V) -> _V:
        if op == "uno":
            return self._bind(f"{a} != {a} || {b} != {b}" if a.text != b.text else f"{a} != {a}", True)
        assert op == "!=", f"unordered {op} has no C operator here"
        return self._bind(f"{a} != {b}", True)

    def _logic(self, a: _V, b: _V, bool_op: str, int_op: str) -> _V:
        if a.is_bool:
            return self._bind(f"{a} {bool_op} {b}", True)
        return self._bind(self._wrap(f"{a} {int_op} {b}"))

    def and_(self, a: _V, b: _V) -> _V:
        return self._logic(a, b, "&&", "&")

    def or_(self, a: _V, b: _V) -> _V:
        return self._logic(a, b, "||", "|")

    def xor(self, a: _V, b: _V) -> _V:
        return self._logic(a, b, "!=", "^")

    def from_bool(self, c: _V) -> _V:
        return self._bind(self._wrap(str(c)))

    def _arith(self, op: str, a: _V, b: _V) -> _V:
        if self.is_float:
            return self._bind(f"{a} {op} {b}")
        return self._bind(self._wrap(f"({self.u}){a} {op} ({self.u}){b}"))

    def add(self, a: _V, b: _V) -> _V:
        return self._arith("+", a, b)

    def sub(self, a: _V, b: _V) -> _V:
        return self._arith("-", a, b)

    def mul(self, a: _V, b: _V) -> _V:
        if self.is_float:  # never contracted into an FMA (NumPy rounds the product)
            return self._bind(f"{'__dmul_rn' if self.width == 64 else '__fmul_rn'}({a}, {b})")
        return self._arith("*", a, b)

    def div(self, a: _V, b: _V) -> _V:
        return self._bind(f"{a} / {b}" if self.is_float else self._wrap(f"{a} / {b}"))  # C truncates, as LLVM

    def rem(self, a: _V, b: _V) -> _V:
        return self._bind(self._wrap(f"{a} % {b}"))

    def shl(self, a: _V, n: _V) -> _V:
        return self._bind(self._wrap(f"({self.u}){a} << (int){n}"))

    def shr(self, a: _V, n: _V) -> _V:
        return self._bind(self._wrap(f"{a} >> (int){n}"))  # arithmetic for signed types (C++20)

    def bit(self, a: _V, k: int) -> _V:
        return self._bind(f"((({_UNSIGNED[self.dtype.itemsize]}){a} >> {k}) & 1u) != 0", True)

    def math(self, name: str, *args: _V) -> _V:
        if name in ("maximum", "minimum"):  # NaN-propagating (C's fmax/fmin drop NaNs)
            a, b = args
            op = ">" if name == "maximum" else "<"
            return self._bind(f"{a} != {a} ? {a} : ({b} != {b} ? {b} : ({a} {op} {b} ? {a} : {b}))")
        fn = name if self.width == 64 else name + "f"
        return self._bind(f"{fn}({', '.join(map(str, args))})")

    def set_status(self, c: _V, code: int) -> None:
        self.uses_status = True
        self.lines.append(f"  if ({c}) jk_status_or(jk_status, {code}u);")


def helper_name(prim: str, dt: np.dtype) -> str:
    return f"jk_{prim}_{dt.name}"


def call(prim: str, dt: np.dtype, args: list[str]) -> str:
    """The C call of `prim`'s shared rule on operands of register dtype `dt` (float16 operands:
    call with float32 and round the result)."""
    _, uses_status = _definition(prim, dt.str)
    return f"{helper_name(prim, dt)}({', '.join(args + (['jk_status'] if uses_status else []))})"


@lru_cache(maxsize=None)
def _definition(prim: str, dtype_str: str) -> tuple[str, bool]:
    dt = np.dtype(dtype_str)
    rule = semantic_rules.rule_for(prim, dt)
    if rule is None:
        raise KeyError(f"no shared rule for {prim} on {dt}")
    g = COps(dt)
    params = [_V(n) for n in ("x", "y")[: _arity(prim)]]
    result = rule(g, *params)
    name = helper_name(prim, dt)
    status = ", unsigned int* jk_status" if g.uses_status else ""
    guard = f"JK_HAVE_{name.upper()}"
    text = "\n".join([f"#ifndef {guard}", f"#define {guard}",
                      f"JK_DEV {g.t} {name}({', '.join(f'{g.t} {p}' for p in params)}{status}) {{",
                      f"  /* NumPy's {prim} on {dt} (backends/semantic_rules.py) */",
                      *g.lines, f"  return {result};", "}", "#endif", ""])
    _KNOWN[name] = (prim, dtype_str)
    return text, g.uses_status


def _arity(prim: str) -> int:
    return 1 if prim in ("sign", "reciprocal") else 2


_KNOWN: dict[str, tuple[str, str]] = {}  # helper name -> (prim, dtype), filled by _definition


def definitions_for(text: str) -> str:
    """The definitions of the shared-rule helpers `text` calls, in a stable order."""
    used = sorted(set(re.findall(r"\b(jk_[a-z_]+_(?:u?int\d+|float\d+))\(", text)) & _KNOWN.keys())
    return "".join(_definition(*_KNOWN[name])[0] for name in used)
