"""Elementwise primitives as C expressions with NumPy's semantics per dtype: the CUDA
counterpart of backends/cpu/ops.py. Shared decisions come from ir/semantics.py (tables) and
backends/semantic_rules.py (division, shifts, power, sign, ...: helper functions of the
translation unit written by semantic_c.py).

Each primitive's rule is an entry of a table keyed by primitive name: SPECIAL (any dtype, any
arity: casts, selects, fma, index checks), INT_UNARY / FLOAT_UNARY (one operand, by the kind of
its register), LOGICAL and COMPARISONS (two operands, any dtype), BOOL_BINARY, FLOAT_BINARY and
INT_BINARY; float functions not in them are libm calls (ir/semantics.py MATH_UNARY, MATH_BINARY).

Every function returns a C expression of the register type of the result dtype (ctype.reg);
float16 results are rounded to float16 (jk_rh) after every operation, as NumPy's loops do.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...errors import UnsupportedOperationError
from ...ir import semantics
from ..status import STATUS_INDEX, STATUS_INDEX_DETAIL
from . import ctype, semantic_c

# The status word is the CPU runtime's (runtime.StatusWord): flags, then the first bad index's
# value, axis and axis length as int64s, which jk_index_check writes as detail[1..3].
assert STATUS_INDEX_DETAIL == (8, 16, 24)

COMPARISONS = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}
_ARITH = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
_BITS = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}
LOGICAL = {"logical_and": "&&", "logical_or": "||", "logical_xor": "!="}
# bool operands are 0 or 1: these arithmetic and bitwise primitives are logical operators on them
BOOL_BINARY = {"add": "||", "maximum": "||", "fmax": "||", "bitwise_or": "||",
               "multiply": "&&", "minimum": "&&", "fmin": "&&", "bitwise_and": "&&", "bitwise_xor": "!="}


def _unsupported(prim: str, dt: np.dtype) -> UnsupportedOperationError:
    return UnsupportedOperationError(f"numpy.{prim} on {dt} is not supported by the CUDA backend yet")


def _fname(base: str, dt: np.dtype) -> str:
    """libm name for the register type of float dtype `dt` (float16 computes in float32)."""
    return base if dt.itemsize == 8 else base + "f"


def _round(dt: np.dtype, e: str) -> str:
    """A float expression computed in the register type, rounded to `dt` if it is float16."""
    return f"jk_rh({e})" if ctype.is_half(dt) else e


def _rule(prim: str, dt: np.dtype, args: list[str]) -> str:
    """A call of `prim`'s shared rule (backends/semantic_rules.py, as C by semantic_c.py);
    float16 operands are float registers and the result is rounded to float16."""
    return _round(dt, semantic_c.call(prim, dt, args)) if dt.kind == "f" else semantic_c.call(prim, dt, args)


def truthy(x: str, dt: np.dtype) -> str:
    if dt.kind == "b":
        return x
    return f"({x} != 0)"  # a float NaN is true (NaN != 0), as in NumPy


def convert(x: str, src: np.dtype, dst: np.dtype) -> str:
    """NumPy's cast of a register value from `src` to `dst` (backends/cpu/ops.py convert)."""
    if src == dst:
        return x
    if dst.kind == "b":
        return truthy(x, src)
    rdst = ctype.reg(dst)
    if src.kind in "biu" and dst.kind in "biu":
        return f"(({rdst}){x})"  # C's integer conversions are NumPy's: truncate, extend by sign
    if dst.kind == "f":
        if src.kind in "biu":
            # float16 through float32: exact below 2**24; above, both round to inf.
            return _round(dst, f"(({rdst}){x})")
        if ctype.is_half(dst):
            return f"jk_rh_d({x})" if src.itemsize == 8 else f"jk_rh({x})"
        return f"(({rdst}){x})"
    # float -> integer: the plan of ir/semantics.py, as the CPU renders it
    plan = semantics.float_to_int_plan(src, dst)
    fsrc = np.dtype(np.float32) if src.itemsize == 2 else src  # half registers are floats
    if plan[0] == "u64":
        split = ctype.literal(2.0 ** 63, fsrc)
        high = f"((unsigned long long){_signed_conversion(f'(({x}) - {split})', fsrc, 64)} ^ 0x8000000000000000ULL)"
        return f"(({x}) >= {split} ? {high} : (unsigned long long){_signed_conversion(x, fsrc, 64)})"
    return f"(({rdst}){_signed_conversion(x, fsrc, plan[1])})"


def _signed_conversion(x: str, src: np.dtype, width: int) -> str:
    """x86's truncating conversion of float `x` to a signed `width`-bit integer: NaN and values
    out of range give the minimum (a CUDA cast would saturate; C leaves them undefined)."""
    low, strict, high = semantics.signed_conversion_bounds(width, src)
    wide = "long long" if width == 64 else "int"
    minimum = "(-9223372036854775807LL - 1)" if width == 64 else "(-2147483647 - 1)"
    return (f"((({x}) {'>' if strict else '>='} {ctype.literal(low, src)} && ({x}) < {ctype.literal(high, src)})"
            f" ? ({wide})({x}) : {minimum})")


# -- any dtype, any arity: rule(prim, args, in_dts, out_dt) -------------------------------------

def _convert(prim: str, args: list[str], in_dts: list[np.dtype], out_dt: np.dtype) -> str:
    return convert(args[0], in_dts[0], out_dt)


def _select(prim: str, args: list[str], in_dts: list[np.dtype], out_dt: np.dtype) -> str:
    return f"({args[0]} ? {args[1]} : {args[2]})"


def _where_valid(prim: str, args: list[str], in_dts: list[np.dtype], out_dt: np.dtype) -> str:
    return args[1]  # x where the mask holds, anything elsewhere (ir/symdim_prims.py)


def _fma(prim: str, args: list[str], in_dts: list[np.dtype], out_dt: np.dtype) -> str:
    return f"{_fname('fma', out_dt)}({args[0]}, {args[1]}, {args[2]})"


def _index_check(prim: str, args: list[str], in_dts: list[np.dtype], out_dt: np.dtype) -> str:
    return f"jk_index_check({', '.join(f'(long long){a}' for a in args)}, jk_status, {STATUS_INDEX}u)"


def _complex_part(prim: str, args: list[str], in_dts: list[np.dtype], out_dt: np.dtype) -> str:
    raise UnsupportedOperationError(f"primitive {prim!r} is not supported by the CUDA backend yet")


SpecialRule = Callable[[str, list[str], list[np.dtype], np.dtype], str]
SPECIAL: dict[str, SpecialRule] = {
    "convert": _convert,
    "select": _select, "pad_fill": _select,  # pad_fill: a select of a symbolic length's padding (ir/symdim_prims.py)
    "where_valid": _where_valid, "fma": _fma, "index_check": _index_check,
    # complex values reach the renderer as float pairs (complex_ops.py): these never should
    **dict.fromkeys(("conjugate", "real", "imag", "make_complex"), _complex_part),
}


def lower(prim: str, args: list[str], in_dts: list[np.dtype], out_dt: np.dtype,
          literal_args: list[object | None]) -> str:
    """The C expression of one elementwise primitive. `literal_args[k]` is the value of
    argument k when it is a literal (power by 2 is a multiply, as on the CPU)."""
    special = SPECIAL.get(prim)
    if special is not None:
        return special(prim, args, in_dts, out_dt)
    dt = in_dts[0]
    for d in in_dts:
        ctype.check_dtype(d)
    if len(args) == 1:
        return unary(prim, args[0], dt, out_dt)
    return binary(prim, args[0], args[1], dt, out_dt, literal_args[1])


# -- one operand: rule(prim, x, dt) ---------------------------------------------------------------

UnaryRule = Callable[[str, str, np.dtype], str]


def _logical_not(prim: str, x: str, dt: np.dtype) -> str:
    return f"(!{truthy(x, dt)})"


def _false(prim: str, x: str, dt: np.dtype) -> str:
    return "false"


def _true(prim: str, x: str, dt: np.dtype) -> str:
    return "true"


def _same(prim: str, x: str, dt: np.dtype) -> str:
    return x


def _int_negative(prim: str, x: str, dt: np.dtype) -> str:
    return f"(({ctype.reg(dt)})(0u - ({ctype.wide_unsigned(dt)}){x}))"


def _int_absolute(prim: str, x: str, dt: np.dtype) -> str:
    if dt.kind in "bu":
        return x
    return f"({x} < 0 ? ({ctype.reg(dt)})(0u - ({ctype.wide_unsigned(dt)}){x}) : {x})"


def _int_invert(prim: str, x: str, dt: np.dtype) -> str:
    return f"(!{x})" if dt.kind == "b" else f"(({ctype.reg(dt)})~{x})"


def _int_square(prim: str, x: str, dt: np.dtype) -> str:
    u = ctype.wide_unsigned(dt)
    return f"(({ctype.reg(dt)})(({u}){x} * ({u}){x}))"


def _int_shared_rule(prim: str, x: str, dt: np.dtype) -> str:
    if dt.kind not in "iu":
        raise _unsupported(prim, dt)
    return _rule(prim, dt, [x])


# bool and integer operands (an integer's isnan, isinf, isfinite and signbit are constants)
INT_UNARY: dict[str, UnaryRule] = {
    "logical_not": _logical_not,
    "isnan": _false, "isinf": _false, "signbit": _false, "isfinite": _true,
    "floor": _same, "ceil": _same, "trunc": _same, "rint": _same,
    "negative": _int_negative, "absolute": _int_absolute, "invert": _int_invert, "square": _int_square,
    "reciprocal": _int_shared_rule, "sign": _int_shared_rule,
}


def _isnan(prim: str, x: str, dt: np.dtype) -> str:
    return f"({x} != {x})"


def _isinf(prim: str, x: str, dt: np.dtype) -> str:
    return f"({_fname('fabs', dt)}({x}) == {ctype.literal(float('inf'), dt)})"


def _isfinite(prim: str, x: str, dt: np.dtype) -> str:
    return f"({_fname('fabs', dt)}({x}) < {ctype.literal(float('inf'), dt)})"


def _signbit(prim: str, x: str, dt: np.dtype) -> str:
    return f"jk_signbit({x})"


def _float_negative(prim: str, x: str, dt: np.dtype) -> str:
    return f"(-{x})"


def _float_square(prim: str, x: str, dt: np.dtype) -> str:
    return _round(dt, _mul(x, x, dt))


def _float_reciprocal(prim: str, x: str, dt: np.dtype) -> str:
    return _round(dt, f"({ctype.literal(1.0, dt)} / {x})")


def _float_shared_rule(prim: str, x: str, dt: np.dtype) -> str:
    return _rule(prim, dt, [x])


# float operands, before the libm functions of MATH_UNARY
FLOAT_UNARY: dict[str, UnaryRule] = {
    "logical_not": _logical_not,
    "isnan": _isnan, "isinf": _isinf, "isfinite": _isfinite, "signbit": _signbit,
    "negative": _float_negative, "square": _float_square, "reciprocal": _float_reciprocal,
    "sign": _float_shared_rule,
}


def unary(prim: str, x: str, dt: np.dtype, out_dt: np.dtype) -> str:
    if dt.kind == "f":
        return unary_float(prim, x, dt)
    rule = INT_UNARY.get(prim)
    if rule is None:
        raise _unsupported(prim, dt)
    return rule(prim, x, dt)


def unary_float(prim: str, x: str, dt: np.dtype) -> str:
    rule = FLOAT_UNARY.get(prim)
    if rule is not None:
        return rule(prim, x, dt)
    libm = semantics.MATH_UNARY.get(prim)
    if libm is None:
        raise _unsupported(prim, dt)
    return _round(dt, f"{_fname(libm, dt)}({x})")


def _mul(x: str, y: str, dt: np.dtype) -> str:
    """A float multiply nvcc never contracts into an FMA with a following add (NumPy rounds
    the product; the emulator's shim defines the same names as plain products)."""
    return f"__dmul_rn({x}, {y})" if dt.itemsize == 8 else f"__fmul_rn({x}, {y})"


# -- two operands ---------------------------------------------------------------------------------

def binary(prim: str, x: str, y: str, dt: np.dtype, out_dt: np.dtype, y_literal: object) -> str:
    op = LOGICAL.get(prim)
    if op is not None:
        return f"({truthy(x, dt)} {op} {truthy(y, dt)})"
    op = COMPARISONS.get(prim)
    if op is not None:
        return f"({x} {op} {y})"  # C's float comparisons are IEEE's: only != is true on NaN
    if dt.kind == "f":
        return binary_float(prim, x, y, dt, y_literal)
    op = BOOL_BINARY.get(prim) if dt.kind == "b" else None
    if op is not None:
        return f"({x} {op} {y})"
    return binary_int(prim, x, y, dt)


FloatBinaryRule = Callable[[str, str, str, np.dtype, object], str]


def _float_multiply(prim: str, x: str, y: str, dt: np.dtype, y_literal: object) -> str:
    return _round(dt, _mul(x, y, dt))


def _float_arith(prim: str, x: str, y: str, dt: np.dtype, y_literal: object) -> str:
    return _round(dt, f"({x} {_ARITH[prim]} {y})")


def _float_power(prim: str, x: str, y: str, dt: np.dtype, y_literal: object) -> str:
    """x ** 2 is x * x, as on the CPU; any other power is libm's pow."""
    if y_literal is not None and float(y_literal) == 2.0:
        return _round(dt, _mul(x, x, dt))
    return _float_libm(prim, x, y, dt, y_literal)


def _float_shared_binary(prim: str, x: str, y: str, dt: np.dtype, y_literal: object) -> str:
    return _rule(prim, dt, [x, y])


def _float_libm(prim: str, x: str, y: str, dt: np.dtype, y_literal: object) -> str:
    libm = semantics.MATH_BINARY.get(prim)
    if libm is None:
        raise _unsupported(prim, dt)
    return _round(dt, f"{_fname(libm, dt)}({x}, {y})")


# float operands, before the libm functions of MATH_BINARY
FLOAT_BINARY: dict[str, FloatBinaryRule] = {
    "multiply": _float_multiply, "power": _float_power,
    "add": _float_arith, "subtract": _float_arith, "divide": _float_arith,
    **dict.fromkeys(("floor_divide", "remainder", "maximum", "minimum", "fmax", "fmin"), _float_shared_binary),
}


def binary_float(prim: str, x: str, y: str, dt: np.dtype, y_literal: object) -> str:
    return FLOAT_BINARY.get(prim, _float_libm)(prim, x, y, dt, y_literal)


IntBinaryRule = Callable[[str, str, str, np.dtype], str]


def _int_arith(prim: str, x: str, y: str, dt: np.dtype) -> str:
    u = ctype.wide_unsigned(dt)
    return f"(({ctype.reg(dt)})(({u}){x} {_ARITH[prim]} ({u}){y}))"


def _int_bits(prim: str, x: str, y: str, dt: np.dtype) -> str:
    return f"(({ctype.reg(dt)})({x} {_BITS[prim]} {y}))"


def _int_maximum(prim: str, x: str, y: str, dt: np.dtype) -> str:
    return f"({x} > {y} ? {x} : {y})"


def _int_minimum(prim: str, x: str, y: str, dt: np.dtype) -> str:
    return f"({x} < {y} ? {x} : {y})"


def _int_shared_binary(prim: str, x: str, y: str, dt: np.dtype) -> str:
    return _rule(prim, dt, [x, y])


# bool and integer operands (bool ones first through BOOL_BINARY)
INT_BINARY: dict[str, IntBinaryRule] = {
    "add": _int_arith, "subtract": _int_arith, "multiply": _int_arith,
    **dict.fromkeys(_BITS, _int_bits),
    "maximum": _int_maximum, "fmax": _int_maximum, "minimum": _int_minimum, "fmin": _int_minimum,
    **dict.fromkeys(("floor_divide", "remainder", "fmod", "left_shift", "right_shift", "power"), _int_shared_binary),
}


def binary_int(prim: str, x: str, y: str, dt: np.dtype) -> str:
    rule = INT_BINARY.get(prim)
    if rule is None:
        raise _unsupported(prim, dt)
    return rule(prim, x, y, dt)
