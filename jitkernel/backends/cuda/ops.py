"""Elementwise primitives as C expressions with NumPy's semantics per dtype: the CUDA
counterpart of backends/cpu/ops.py. Shared decisions come from ir/semantics.py (tables) and
backends/semantic_rules.py (division, shifts, power, sign, ...: helper functions of the
translation unit written by semantic_c.py).

Every function returns a C expression of the register type of the result dtype (ctype.reg);
float16 results are rounded to float16 (jk_rh) after every operation, as NumPy's loops do.
"""
from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOperationError
from ...ir import semantics
from ..status import STATUS_INDEX, STATUS_INDEX_DETAIL
from . import ctype, semantic_c

# The status word is the CPU runtime's (runtime.StatusWord): flags, then the first bad index's
# value, axis and axis length as int64s, which jk_index_check writes as detail[1..3].
assert STATUS_INDEX_DETAIL == (8, 16, 24)

_CMP = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}
_ARITH = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
_BITS = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}


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
    if plan[0] == "u32":
        split = ctype.literal(2.0 ** 31, fsrc)
        return (f"(({x}) >= {split} ? (unsigned int){_signed_conversion(x, fsrc, 64)} "
                f": (unsigned int){_signed_conversion(x, fsrc, 32)})")
    return f"(({rdst}){_signed_conversion(x, fsrc, plan[1])})"


def _signed_conversion(x: str, src: np.dtype, width: int) -> str:
    """x86's truncating conversion of float `x` to a signed `width`-bit integer: NaN and values
    out of range give the minimum (a CUDA cast would saturate; C leaves them undefined)."""
    low, strict, high = semantics.signed_conversion_bounds(width, src)
    wide = "long long" if width == 64 else "int"
    minimum = "(-9223372036854775807LL - 1)" if width == 64 else "(-2147483647 - 1)"
    return (f"((({x}) {'>' if strict else '>='} {ctype.literal(low, src)} && ({x}) < {ctype.literal(high, src)})"
            f" ? ({wide})({x}) : {minimum})")


def lower(prim: str, args: list[str], in_dts: list[np.dtype], out_dt: np.dtype,
          literal_args: list[object | None]) -> str:
    """The C expression of one elementwise primitive. `literal_args[k]` is the value of
    argument k when it is a literal (power by 2 is a multiply, as on the CPU)."""
    if prim == "convert":
        return convert(args[0], in_dts[0], out_dt)
    if prim in ("select", "pad_fill"):  # pad_fill: a select of a symbolic length's padding (ir/symdim_prims.py)
        return f"({args[0]} ? {args[1]} : {args[2]})"
    if prim == "where_valid":  # x where the mask holds, anything elsewhere (ir/symdim_prims.py)
        return args[1]
    if prim == "fma":
        return f"{_fname('fma', out_dt)}({args[0]}, {args[1]}, {args[2]})"
    if prim == "index_check":
        return f"jk_index_check({', '.join(f'(long long){a}' for a in args)}, jk_status, {STATUS_INDEX}u)"
    if prim in ("conjugate", "real", "imag", "make_complex"):
        raise UnsupportedOperationError(f"primitive {prim!r} is not supported by the CUDA backend yet")
    dt = in_dts[0]
    for d in in_dts:
        ctype.check_dtype(d)
    if len(args) == 1:
        return unary(prim, args[0], dt, out_dt)
    return binary(prim, args[0], args[1], dt, out_dt, literal_args[1])


def unary(prim: str, x: str, dt: np.dtype, out_dt: np.dtype) -> str:
    if prim == "logical_not":
        return f"(!{truthy(x, dt)})"
    if prim in ("isnan", "isinf", "isfinite", "signbit") and dt.kind != "f":
        return "true" if prim == "isfinite" else "false"
    if dt.kind == "f":
        return unary_float(prim, x, dt)
    r, u = ctype.reg(dt), ctype.wide_unsigned(dt)
    if prim in ("floor", "ceil", "trunc", "rint") or (prim == "absolute" and dt.kind in "bu"):
        return x
    if prim == "negative":
        return f"(({r})(0u - ({u}){x}))"
    if prim == "absolute":
        return f"({x} < 0 ? ({r})(0u - ({u}){x}) : {x})"
    if prim == "invert":
        return f"(!{x})" if dt.kind == "b" else f"(({r})~{x})"
    if prim == "square":
        return f"(({r})(({u}){x} * ({u}){x}))"
    if prim in ("reciprocal", "sign") and dt.kind in "iu":
        return _rule(prim, dt, [x])
    raise _unsupported(prim, dt)


def unary_float(prim: str, x: str, dt: np.dtype) -> str:
    if prim == "isnan":
        return f"({x} != {x})"
    if prim in ("isinf", "isfinite"):
        inf = ctype.literal(float("inf"), dt)
        return f"({_fname('fabs', dt)}({x}) {'==' if prim == 'isinf' else '<'} {inf})"
    if prim == "signbit":
        return f"jk_signbit({x})"
    if prim == "negative":
        return f"(-{x})"
    if prim == "square":
        return _round(dt, _mul(x, x, dt))
    if prim == "reciprocal":
        return _round(dt, f"({ctype.literal(1.0, dt)} / {x})")
    if prim == "sign":
        return _rule(prim, dt, [x])
    if prim in semantics.MATH_UNARY:
        return _round(dt, f"{_fname(semantics.MATH_UNARY[prim], dt)}({x})")
    raise _unsupported(prim, dt)


def _mul(x: str, y: str, dt: np.dtype) -> str:
    """A float multiply nvcc never contracts into an FMA with a following add (NumPy rounds
    the product; the emulator's shim defines the same names as plain products)."""
    return f"__dmul_rn({x}, {y})" if dt.itemsize == 8 else f"__fmul_rn({x}, {y})"


def binary(prim: str, x: str, y: str, dt: np.dtype, out_dt: np.dtype, y_literal: object) -> str:
    if prim in ("logical_and", "logical_or", "logical_xor"):
        op = {"logical_and": "&&", "logical_or": "||", "logical_xor": "!="}[prim]
        return f"({truthy(x, dt)} {op} {truthy(y, dt)})"
    if prim in _CMP:
        return f"({x} {_CMP[prim]} {y})"  # C's float comparisons are IEEE's: only != is true on NaN
    if dt.kind == "f":
        return binary_float(prim, x, y, dt, y_literal)
    if dt.kind == "b":
        if prim in ("add", "maximum", "fmax", "bitwise_or"):
            return f"({x} || {y})"
        if prim in ("multiply", "minimum", "fmin", "bitwise_and"):
            return f"({x} && {y})"
        if prim == "bitwise_xor":
            return f"({x} != {y})"
    return binary_int(prim, x, y, dt)


def binary_float(prim: str, x: str, y: str, dt: np.dtype, y_literal: object) -> str:
    if prim == "multiply" or (prim == "power" and y_literal is not None and float(y_literal) == 2.0):
        return _round(dt, _mul(x, x if prim == "power" else y, dt))
    if prim in _ARITH:
        return _round(dt, f"({x} {_ARITH[prim]} {y})")
    if prim in ("floor_divide", "remainder", "maximum", "minimum", "fmax", "fmin"):
        return _rule(prim, dt, [x, y])
    if prim in semantics.MATH_BINARY:
        return _round(dt, f"{_fname(semantics.MATH_BINARY[prim], dt)}({x}, {y})")
    raise _unsupported(prim, dt)


def binary_int(prim: str, x: str, y: str, dt: np.dtype) -> str:
    r, u = ctype.reg(dt), ctype.wide_unsigned(dt)
    if prim in ("add", "subtract", "multiply"):
        op = _ARITH[prim]
        return f"(({r})(({u}){x} {op} ({u}){y}))"
    if prim in _BITS:
        return f"(({r})({x} {_BITS[prim]} {y}))"
    if prim in ("maximum", "fmax"):
        return f"({x} > {y} ? {x} : {y})"
    if prim in ("minimum", "fmin"):
        return f"({x} < {y} ? {x} : {y})"
    if prim in ("floor_divide", "remainder", "fmod", "left_shift", "right_shift", "power"):
        return _rule(prim, dt, [x, y])
    raise _unsupported(prim, dt)
