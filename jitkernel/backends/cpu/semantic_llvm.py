"""The generic operations of backends/semantic_rules.py as llvmlite builder calls: one call per
operation, in the order the rule makes them (so the IR is exactly what a hand-written lowering
of the rule emits)."""
from __future__ import annotations

from typing import Any

import llvmlite.ir as ir
import numpy as np

from .types import I1


class LLVMOps:
    """Translates a rule for operands of `dtype` held in registers of type `ty` (float32 for
    float16 operands). `lowering` is the OpLowering that owns the builder and status word."""

    def __init__(self, lowering: Any, dtype: np.dtype, ty: ir.Type) -> None:
        self.low, self.b, self.ty = lowering, lowering.b, ty
        self.dtype = dtype
        self.is_float = dtype.kind == "f"
        self.signed = dtype.kind == "i"
        self.width = ty.width if isinstance(ty, ir.IntType) else 8 * dtype.itemsize

    def const(self, v: object) -> ir.Value:
        return ir.Constant(self.ty, float(v) if self.is_float else int(v))

    def select(self, c: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.select(c, a, b)

    def cmp(self, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
        if self.is_float:
            return self.b.fcmp_ordered(op, a, b)
        return (self.b.icmp_signed if self.signed else self.b.icmp_unsigned)(op, a, b)

    def cmp_unsigned(self, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.icmp_unsigned(op, a, b)

    def cmp_unordered(self, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_unordered(op, a, b)

    def and_(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.and_(a, b)

    def or_(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.or_(a, b)

    def xor(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.xor(a, b)

    def from_bool(self, c: ir.Value) -> ir.Value:
        return self.b.zext(c, self.ty)

    def add(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return (self.b.fadd if self.is_float else self.b.add)(a, b)

    def sub(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return (self.b.fsub if self.is_float else self.b.sub)(a, b)

    def mul(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return (self.b.fmul if self.is_float else self.b.mul)(a, b)

    def div(self, a: ir.Value, b: ir.Value) -> ir.Value:
        if self.is_float:
            return self.b.fdiv(a, b)
        return (self.b.sdiv if self.signed else self.b.udiv)(a, b)

    def rem(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return (self.b.srem if self.signed else self.b.urem)(a, b)

    def shl(self, a: ir.Value, n: ir.Value) -> ir.Value:
        return self.b.shl(a, n)

    def shr(self, a: ir.Value, n: ir.Value) -> ir.Value:
        return (self.b.ashr if self.signed else self.b.lshr)(a, n)

    def bit(self, a: ir.Value, k: int) -> ir.Value:
        return self.b.trunc(self.b.lshr(a, ir.Constant(self.ty, k)), I1)

    def math(self, name: str, *args: ir.Value) -> ir.Value:
        if name == "fmod":
            return self.low.call_math((None, "fmod"), self.ty, list(args))  # frem (see call_math)
        if name in ("maximum", "minimum"):  # NaN-propagating; with the function's fast-math flags
            return self.low.call_math((f"llvm.{name}", None), self.ty, list(args))
        if name in ("fmax", "fmin"):  # NaN-ignoring: LLVM's maxnum / minnum
            return self.low.call_math(({"fmax": "llvm.maxnum", "fmin": "llvm.minnum"}[name], None), self.ty, list(args))
        return self.b.call(self.low.intrinsic(f"llvm.{name}", self.ty, len(args)), list(args))

    def set_status(self, c: ir.Value, code: int) -> None:
        self.low.raise_flag(c, code)

