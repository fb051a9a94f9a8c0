"""Lowering of elementwise primitives to LLVM instructions, with NumPy's semantics per dtype:
integer wraparound, NumPy's integer division by zero (0), Python-style floor division and
remainder, NaN-propagating maximum/minimum, float16 computed in float32 and rounded per op."""
from __future__ import annotations

from typing import Callable

import llvmlite.ir as ir
import numpy as np

from ...errors import UnsupportedOperationError
from ...ir import semantics
from .. import semantic_rules
from ..status import STATUS_INDEX, STATUS_INDEX_DETAIL
from .semantic_llvm import LLVMOps
from .types import F32, I1, I8, I32, I64, is_float, is_signed, reg_type

# NumPy ufunc -> (llvm intrinsic or None, libm base name): float math functions. Which libm
# function a ufunc is comes from ir/semantics.py (shared with the CUDA renderer); the
# ones LLVM has an intrinsic for use it instead.
_INTRINSIC = {
    "sqrt": "llvm.sqrt", "exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log", "log2": "llvm.log2",
    "log10": "llvm.log10", "sin": "llvm.sin", "cos": "llvm.cos", "floor": "llvm.floor", "ceil": "llvm.ceil",
    "trunc": "llvm.trunc", "rint": "llvm.roundeven", "absolute": "llvm.fabs",
    "power": "llvm.pow", "maximum": "llvm.maximum", "minimum": "llvm.minimum", "fmax": "llvm.maxnum",
    "fmin": "llvm.minnum", "copysign": "llvm.copysign",
}
_MATH = {p: (_INTRINSIC[p], None) if p in _INTRINSIC else (None, base) for p, base in semantics.MATH_UNARY.items()}
_MATH2 = {p: (_INTRINSIC[p], None) if p in _INTRINSIC else (None, base)
          for p, base in {**semantics.MATH_BINARY, "maximum": None, "minimum": None}.items()}
_FCMP = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}


class OpLowering:
    """Emits one elementwise primitive at the builder's position."""

    def __init__(self, module: ir.Module, builder: ir.IRBuilder, status: ir.Value, fastmath: bool) -> None:
        self.module, self.b, self.status = module, builder, status
        self.flags = ("fast",) if fastmath else ()

    # -- helpers -------------------------------------------------------------------------
    def intrinsic(self, name: str, ty: ir.Type, nargs: int) -> ir.Function:
        return self.module.declare_intrinsic(name, [ty], ir.FunctionType(ty, [ty] * nargs))

    def libm(self, base: str, ty: ir.Type, nargs: int) -> ir.Function:
        name = base + ("f" if ty == F32 else "")
        if name in self.module.globals:
            return self.module.globals[name]
        fn = ir.Function(self.module, ir.FunctionType(ty, [ty] * nargs), name)
        # Pure math (errno is never read): without readnone LLVM cannot widen the call to its
        # libmvec variant and scalarises it inside vector loops.
        for attr in ("nounwind", "readnone"):
            fn.attributes.add(attr)
        return fn

    def call_math(self, spec: tuple, ty: ir.Type, args: list[ir.Value]) -> ir.Value:
        intrinsic, base = spec
        if base == "fmod":
            # LLVM's `frem`, not a call to libm's fmod: LLVM 22's optimiser folds
            # isnan(fmod(select(c, NaN, y), x)) to false (the NaN through fmod is lost: NumPy's
            # `nan % 1e300` came out not-NaN). frem has fmod's semantics and lowers to the
            # same library call, but its NaN propagation is modelled correctly.
            return self.b.frem(args[0], args[1], flags=self.flags)
        fn = self.intrinsic(intrinsic, ty, len(args)) if intrinsic else self.libm(base, ty, len(args))
        return self.b.call(fn, args, fastmath=self.flags)

    def in_float(self, dt: np.dtype, args: list[ir.Value], fn: Callable[[list[ir.Value], ir.Type], ir.Value],
                 result_float: bool = True) -> ir.Value:
        """Run `fn` on float args; float16 is widened to float32 and the result rounded back,
        as NumPy's float16 loops do."""
        if dt.itemsize != 2:
            return fn(args, reg_type(dt))
        wide = [self.b.fpext(a, F32) for a in args]
        r = fn(wide, F32)
        return self.b.fptrunc(r, reg_type(dt)) if result_float else r

    def rule(self, prim: str, dt: np.dtype, args: list[ir.Value]) -> ir.Value | None:
        """`prim` by its shared rule (backends/semantic_rules.py), or None when it has none;
        float16 operands run the rule in float32 and round the result, as NumPy's loops do."""
        rule = semantic_rules.rule_for(prim, dt)
        if rule is None:
            return None
        if dt.kind == "f":
            return self.in_float(dt, args, lambda a, ty: rule(LLVMOps(self, dt, ty), *a))
        return rule(LLVMOps(self, dt, args[0].type), *args)

    def truthy(self, v: ir.Value, dt: np.dtype) -> ir.Value:
        if dt.kind == "b":
            return v
        if is_float(dt):
            return self.b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))  # NaN is true
        return self.b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))

    def raise_flag(self, cond: ir.Value, code: int) -> None:
        """OR an error code into the status word when `cond` holds (checked after the run)."""
        old = self.b.load(self.status, typ=I32)
        flag = self.b.select(cond, ir.Constant(I32, code), ir.Constant(I32, 0))
        self.b.store(self.b.or_(old, flag), self.status)

    def index_check(self, s: ir.Value, n: ir.Value, limit: ir.Value, axis: ir.Value) -> ir.Value:
        """A run-time start (int64): wrapped when negative (NumPy), then 0 <= s <= limit, or the
        IndexError flag is set (the first failure also records s, the axis and n) and 0 is
        returned, so no access leaves the array. Check kernels (domain ()) use it for dynamic starts,
        and gathers for each element's index (fusion/schedule.py), where the branch is rarely taken."""
        b = self.b
        zero = ir.Constant(I64, 0)
        w = b.select(b.icmp_signed("<", s, zero), b.add(s, n), s)
        ok = b.and_(b.icmp_signed(">=", w, zero), b.icmp_signed("<=", w, limit))
        with b.if_then(b.not_(ok), likely=False):
            old = b.load(self.status, typ=I32)
            with b.if_then(b.icmp_unsigned("==", b.and_(old, ir.Constant(I32, STATUS_INDEX)), ir.Constant(I32, 0))):
                for offset, v in zip(STATUS_INDEX_DETAIL, (s, axis, n)):
                    slot = b.gep(self.status, [ir.Constant(I64, offset)], inbounds=True, source_etype=I8)
                    b.store(v, slot)
                b.store(b.or_(old, ir.Constant(I32, STATUS_INDEX)), self.status)
        return b.select(ok, w, zero)

    # -- entry point ---------------------------------------------------------------------
    def lower(self, prim: str, args: list[ir.Value], in_dts: list[np.dtype], out_dt: np.dtype) -> ir.Value:
        special = _SPECIAL.get(prim)
        if special is not None:
            return special(self, args, in_dts, out_dt)
        dt = in_dts[0]
        if len(args) == 1:
            return self.unary(prim, args[0], dt, out_dt)
        return self.binary(prim, args[0], args[1], dt, out_dt)

    # -- casts ---------------------------------------------------------------------------
    def convert(self, v: ir.Value, src: np.dtype, dst: np.dtype) -> ir.Value:
        b = self.b
        if src == dst:
            return v
        dt_ = reg_type(dst)
        if dst.kind == "b":
            return self.truthy(v, src)
        if src.kind == "b":
            return b.uitofp(v, dt_) if is_float(dst) else b.zext(v, dt_)
        if src.kind in "iu" and dst.kind in "iu":
            if dst.itemsize < src.itemsize:
                return b.trunc(v, dt_)
            if dst.itemsize > src.itemsize:
                return b.sext(v, dt_) if is_signed(src) else b.zext(v, dt_)
            return v
        if src.kind in "iu":
            return b.sitofp(v, dt_) if is_signed(src) else b.uitofp(v, dt_)
        if dst.kind == "f":
            if dst.itemsize > src.itemsize:
                return b.fpext(v, dt_)
            if src.itemsize == 8 and dst.itemsize == 2:
                return b.fptrunc(self.round_to_odd_f32(v), dt_)
            return b.fptrunc(v, dt_)
        # float -> int: NumPy (C casts on x86) goes through a 32- or 64-bit conversion and
        # truncates; out-of-range values are undefined in NumPy too (it warns); we only
        # store such a value, never branch or index on it.
        plan = semantics.float_to_int_plan(src, dst)
        if src.itemsize == 2:
            v = b.fpext(v, F32)  # exact; keeps the constants below representable
            src = np.dtype(np.float32)
        if plan[0] == "u64":
            two63 = ir.Constant(v.type, 2.0 ** 63)
            high = b.xor(self.signed_conversion(b.fsub(v, two63), src, 64), ir.Constant(I64, 1 << 63))
            r = b.select(b.fcmp_ordered(">=", v, two63), high, self.signed_conversion(v, src, 64))
        else:
            r = self.signed_conversion(v, src, plan[1])
        return b.trunc(r, dt_) if r.type.width > dt_.width else r

    def signed_conversion(self, v: ir.Value, src: np.dtype, width: int) -> ir.Value:
        """x86's truncating conversion to a signed `width`-bit integer: NaN and values outside
        the range give its minimum. LLVM's fptosi makes those poison, which later folds may turn
        into anything, so the range is tested first (semantics.float_to_int_plan)."""
        b = self.b
        low, strict, high = semantics.signed_conversion_bounds(width, src)
        ok = b.and_(b.fcmp_ordered(">" if strict else ">=", v, ir.Constant(v.type, low)),
                    b.fcmp_ordered("<", v, ir.Constant(v.type, high)))
        ity = ir.IntType(width)
        return b.select(ok, b.fptosi(v, ity), ir.Constant(ity, -(1 << (width - 1))))

    def round_to_odd_f32(self, v: ir.Value) -> ir.Value:
        """double -> float rounded to odd, so that a second rounding to half is correct
        (a direct double -> half conversion needs compiler-rt's __truncdfhf2, absent here)."""
        b = self.b
        r = b.fptrunc(v, F32)
        back = b.fpext(r, v.type)
        bits = b.bitcast(r, I32)
        mag_r = b.call(self.intrinsic("llvm.fabs", v.type, 1), [back])
        mag_v = b.call(self.intrinsic("llvm.fabs", v.type, 1), [v])
        toward_zero = b.select(b.fcmp_ordered(">", mag_r, mag_v), b.sub(bits, ir.Constant(I32, 1)), bits)
        inexact = b.fcmp_ordered("one", back, v)
        odd = b.select(inexact, b.or_(toward_zero, ir.Constant(I32, 1)), toward_zero)
        return b.bitcast(odd, F32)

    # -- unary ---------------------------------------------------------------------------
    def unary(self, prim: str, x: ir.Value, dt: np.dtype, out_dt: np.dtype) -> ir.Value:
        if is_float(dt):
            return self.unary_float(prim, x, dt)
        lower = _UNARY_INT.get(prim)  # integers and bool
        if lower is not None:
            return lower(self, x, dt)
        r = self.rule(prim, dt, [x])  # reciprocal, sign
        if r is not None:
            return r
        raise UnsupportedOperationError(f"numpy.{prim} on {dt} is not supported by the CPU backend")

    def unary_float(self, prim: str, x: ir.Value, dt: np.dtype) -> ir.Value:
        lower = _UNARY_FLOAT.get(prim)
        if lower is not None:
            return lower(self, x, dt)
        spec = _MATH.get(prim)
        if spec is not None:
            return self.in_float(dt, [x], lambda a, ty: self.call_math(spec, ty, a))
        raise UnsupportedOperationError(f"numpy.{prim} on {dt} is not supported by the CPU backend")

    def isnan(self, x: ir.Value, dt: np.dtype) -> ir.Value:
        return self.in_float(dt, [x], lambda a, ty: self.b.fcmp_unordered("uno", a[0], a[0]), result_float=False)

    def compare_magnitude_with_inf(self, op: str, x: ir.Value, dt: np.dtype) -> ir.Value:
        """|x| `op` inf: isinf (==), isfinite (<); an i1."""
        b = self.b

        def test(a: list[ir.Value], ty: ir.Type) -> ir.Value:
            mag = b.call(self.intrinsic("llvm.fabs", ty, 1), [a[0]])
            inf = ir.Constant(ty, float("inf"))
            return b.fcmp_ordered(op, mag, inf)
        return self.in_float(dt, [x], test, result_float=False)

    def signbit(self, x: ir.Value, dt: np.dtype) -> ir.Value:
        bits = self.b.bitcast(x, ir.IntType(dt.itemsize * 8))
        return self.b.icmp_signed("<", bits, ir.Constant(bits.type, 0))

    def int_absolute(self, x: ir.Value, dt: np.dtype) -> ir.Value:
        if dt.kind in "bu":
            return x
        b = self.b
        return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.neg(x), x)

    # -- binary --------------------------------------------------------------------------
    def binary(self, prim: str, x: ir.Value, y: ir.Value, dt: np.dtype, out_dt: np.dtype) -> ir.Value:
        b = self.b
        logical = _LOGICAL.get(prim)
        if logical is not None:
            tx, ty_ = self.truthy(x, dt), self.truthy(y, dt)
            return getattr(b, logical)(tx, ty_)
        if is_float(dt):
            return self.binary_float(prim, x, y, dt)
        op = _FCMP.get(prim)
        if op is not None:
            cmp = b.icmp_signed if is_signed(dt) else b.icmp_unsigned
            return cmp(op, x, y)
        bool_op = _BOOL_BINARY.get(prim) if dt.kind == "b" else None
        if bool_op is not None:
            return getattr(b, bool_op)(x, y)
        return self.binary_int(prim, x, y, dt)

    def binary_float(self, prim: str, x: ir.Value, y: ir.Value, dt: np.dtype) -> ir.Value:
        b = self.b
        op = _FCMP.get(prim)
        if op is not None:
            return self.in_float(dt, [x, y], lambda a, ty: (b.fcmp_unordered(op, a[0], a[1]) if op == "!="
                                                           else b.fcmp_ordered(op, a[0], a[1])), result_float=False)
        lower = _BINARY_FLOAT.get(prim)
        if lower is not None:
            return lower(self, prim, x, y, dt)
        return self.float_math2(prim, x, y, dt)

    def float_arithmetic(self, prim: str, x: ir.Value, y: ir.Value, dt: np.dtype) -> ir.Value:
        op = getattr(self.b, _FLOAT_ARITHMETIC[prim])
        return self.in_float(dt, [x, y], lambda a, ty: op(a[0], a[1], flags=self.flags))

    def float_power(self, prim: str, x: ir.Value, y: ir.Value, dt: np.dtype) -> ir.Value:
        if isinstance(y, ir.Constant) and y.constant == 2.0:
            return self.in_float(dt, [x], lambda a, ty: self.b.fmul(a[0], a[0], flags=self.flags))
        return self.float_math2(prim, x, y, dt)

    def float_math2(self, prim: str, x: ir.Value, y: ir.Value, dt: np.dtype) -> ir.Value:
        spec = _MATH2.get(prim)
        if spec is not None:
            return self.in_float(dt, [x, y], lambda a, ty: self.call_math(spec, ty, a))
        raise UnsupportedOperationError(f"numpy.{prim} on {dt} is not supported by the CPU backend")

    def binary_int(self, prim: str, x: ir.Value, y: ir.Value, dt: np.dtype) -> ir.Value:
        b = self.b
        method = _INT_ARITHMETIC.get(prim)
        if method is not None:
            return getattr(b, method)(x, y)
        extremum = _INT_EXTREMUM.get(prim)
        if extremum is not None:
            signed_name, unsigned_name = extremum
            return b.call(self.intrinsic(signed_name if is_signed(dt) else unsigned_name, x.type, 2), [x, y])
        r = self.rule(prim, dt, [x, y])  # floor_divide, remainder, fmod, shifts, power
        if r is not None:
            return r
        raise UnsupportedOperationError(f"numpy.{prim} on {dt} is not supported by the CPU backend")


# -- one lowering per primitive -----------------------------------------------------------------
Lower = Callable[..., ir.Value]

# Primitives lowered whatever their operands' dtype: (lowering, args, in_dts, out_dt) -> value.
_SPECIAL: dict[str, Lower] = {
    "convert": lambda o, args, in_dts, out_dt: o.convert(args[0], in_dts[0], out_dt),
    "select": lambda o, args, in_dts, out_dt: o.b.select(args[0], args[1], args[2]),
    # pad_fill: a select of padding; where_valid: x where the mask holds, anything elsewhere
    # (both ir/symdim_prims.py)
    "pad_fill": lambda o, args, in_dts, out_dt: o.b.select(args[0], args[1], args[2]),
    "where_valid": lambda o, args, in_dts, out_dt: args[1],
    "index_check": lambda o, args, in_dts, out_dt: o.index_check(*args),
    # complex multiply/absolute after lowering (passes/complex_lower.py)
    "fma": lambda o, args, in_dts, out_dt: o.b.call(o.intrinsic("llvm.fma", args[0].type, 3), args),
}


def _logical_not(o: OpLowering, x: ir.Value, dt: np.dtype) -> ir.Value:
    return o.b.not_(o.truthy(x, dt))


def _same(o: OpLowering, x: ir.Value, dt: np.dtype) -> ir.Value:
    return x


# Unary primitives on integers and bool: (lowering, x, dtype) -> value (the others: a shared rule).
_UNARY_INT: dict[str, Lower] = {
    "logical_not": _logical_not,
    "isnan": lambda o, x, dt: ir.Constant(I1, 0),
    "isinf": lambda o, x, dt: ir.Constant(I1, 0),
    "isfinite": lambda o, x, dt: ir.Constant(I1, 1),
    "signbit": lambda o, x, dt: ir.Constant(I1, 0),
    "floor": _same, "ceil": _same, "trunc": _same, "rint": _same,
    "negative": lambda o, x, dt: o.b.neg(x),
    "absolute": OpLowering.int_absolute,
    "invert": lambda o, x, dt: o.b.not_(x),
    "square": lambda o, x, dt: o.b.mul(x, x),
}

# Unary primitives on floats: (lowering, x, dtype) -> value (the others: _MATH).
_UNARY_FLOAT: dict[str, Lower] = {
    "logical_not": _logical_not,
    "isnan": OpLowering.isnan,
    "isinf": lambda o, x, dt: o.compare_magnitude_with_inf("==", x, dt),
    "isfinite": lambda o, x, dt: o.compare_magnitude_with_inf("<", x, dt),
    "signbit": OpLowering.signbit,
    "negative": lambda o, x, dt: o.b.fneg(x, flags=o.flags),
    "square": lambda o, x, dt: o.in_float(dt, [x], lambda a, ty: o.b.fmul(a[0], a[0], flags=o.flags)),
    "reciprocal": lambda o, x, dt: o.in_float(dt, [x], lambda a, ty: o.b.fdiv(ir.Constant(ty, 1.0), a[0],
                                                                               flags=o.flags)),
    "sign": lambda o, x, dt: o.rule("sign", dt, [x]),
}

# Binary primitives on the operands' truth values (any dtype): the IRBuilder method.
_LOGICAL = {"logical_and": "and_", "logical_or": "or_", "logical_xor": "xor"}

# Binary primitives on bool operands that are one logical instruction: the IRBuilder method.
_BOOL_BINARY = {"add": "or_", "maximum": "or_", "fmax": "or_", "bitwise_or": "or_",
                "multiply": "and_", "minimum": "and_", "fmin": "and_", "bitwise_and": "and_",
                "bitwise_xor": "xor", "not_equal": "xor"}

# Binary primitives on floats: (lowering, prim, x, y, dtype) -> value (the others: _MATH2).
_FLOAT_ARITHMETIC = {"add": "fadd", "subtract": "fsub", "multiply": "fmul", "divide": "fdiv"}
_BINARY_FLOAT: dict[str, Lower] = {
    **{p: OpLowering.float_arithmetic for p in _FLOAT_ARITHMETIC},
    "power": OpLowering.float_power,  # x ** 2 is x * x
    **{p: lambda o, prim, x, y, dt: o.rule(prim, dt, [x, y])  # the shared rules (semantic_rules.py)
       for p in ("floor_divide", "remainder", "maximum", "minimum", "fmax", "fmin")},
}

# Binary primitives on integers that are one instruction: the IRBuilder method.
_INT_ARITHMETIC = {"add": "add", "subtract": "sub", "multiply": "mul", "bitwise_and": "and_",
                   "bitwise_or": "or_", "bitwise_xor": "xor"}
# Integer maximum and minimum: the LLVM intrinsic for (signed, unsigned) operands.
_INT_EXTREMUM = {"maximum": ("llvm.smax", "llvm.umax"), "fmax": ("llvm.smax", "llvm.umax"),
                 "minimum": ("llvm.smin", "llvm.umin"), "fmin": ("llvm.smin", "llvm.umin")}
