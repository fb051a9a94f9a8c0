"""The third translator of backends/semantic_rules.py: NumPy's per-primitive decisions (integer
division by zero, shifts by the bit width, float maximum's NaN and signed-zero rules, integer
power, sign, integer reciprocal) turned into `jax.lax` operations.

The rule itself is not re-decided here: `semantic_rules.rule_for(prim, dtype)` returns it and
`LaxOps` translates each generic operation into one lax call, as the LLVM and C translators
do. `set_status` records a flag that the lowering turns into NumPy's exception after the call
(backends/tpu/checks.py).

>>> import numpy as np, jax.numpy as jnp
>>> from jitkernel.backends.semantic_rules import rule_for
>>> g = LaxOps(np.dtype(np.int8), checks=None)
>>> rule_for("floor_divide", g.dtype)(g, jnp.array([7, -128, -7], jnp.int8), jnp.array([0, -1, 2], jnp.int8)).tolist()
[0, -128, -4]
"""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

_COMPARE = {"==": lax.eq, "!=": lax.ne, "<": lax.lt, "<=": lax.le, ">": lax.gt, ">=": lax.ge}


class LaxOps:
    """The generic operations of semantic_rules on jax arrays of one dtype. float16 operands are
    computed in float32 and rounded by the caller, as the CPU and CUDA translators do."""

    def __init__(self, dtype: np.dtype, checks: Any) -> None:
        self.dtype = np.dtype(dtype)
        self.signed = self.dtype.kind == "i"
        self.width = 8 * self.dtype.itemsize
        self.compute = np.dtype(np.float32) if self.dtype == np.float16 else self.dtype
        self.checks = checks  # the lowering's Checks (set_status), None where no rule sets one

    def const(self, v: object) -> Any:
        if self.compute.kind == "f":
            return jnp.asarray(v, self.compute)
        return jnp.asarray(np.array(int(v) & ((1 << self.width) - 1), np.uint64).astype(self.dtype))

    def _unsigned(self, a: Any) -> Any:
        return lax.bitcast_convert_type(a, jnp.dtype(f"uint{self.width}")) if self.signed else a

    def select(self, c: Any, a: Any, b: Any) -> Any:
        return lax.select(*jnp.broadcast_arrays(c, a, b))

    def cmp(self, op: str, a: Any, b: Any) -> Any:
        return _COMPARE[op](*jnp.broadcast_arrays(a, b))

    def cmp_unsigned(self, op: str, a: Any, b: Any) -> Any:
        return self.cmp(op, self._unsigned(jnp.asarray(a, self.dtype)), self._unsigned(jnp.asarray(b, self.dtype)))

    def cmp_unordered(self, op: str, a: Any, b: Any) -> Any:
        either_nan = jnp.isnan(a) | jnp.isnan(b)
        return either_nan if op == "uno" else either_nan | self.cmp(op, a, b)

    def and_(self, a: Any, b: Any) -> Any:
        return a & b

    def or_(self, a: Any, b: Any) -> Any:
        return a | b

    def xor(self, a: Any, b: Any) -> Any:
        return a ^ b

    def from_bool(self, c: Any) -> Any:
        return jnp.asarray(c).astype(self.dtype)

    def add(self, a: Any, b: Any) -> Any:
        return a + b

    def sub(self, a: Any, b: Any) -> Any:
        return a - b

    def mul(self, a: Any, b: Any) -> Any:
        return a * b

    def div(self, a: Any, b: Any) -> Any:
        return lax.div(*jnp.broadcast_arrays(a, b))  # integers truncate, as C does

    def rem(self, a: Any, b: Any) -> Any:
        return lax.rem(*jnp.broadcast_arrays(a, b))  # C's sign rule (the dividend's sign)

    def shl(self, a: Any, n: Any) -> Any:
        return lax.shift_left(*jnp.broadcast_arrays(a, jnp.asarray(n, self.dtype)))

    def shr(self, a: Any, n: Any) -> Any:
        shift = lax.shift_right_arithmetic if self.signed else lax.shift_right_logical
        return shift(*jnp.broadcast_arrays(a, jnp.asarray(n, self.dtype)))

    def bit(self, a: Any, k: int) -> Any:
        return (lax.shift_right_logical(self._unsigned(a), jnp.asarray(k, self._unsigned(a).dtype)) & 1) == 1

    def math(self, name: str, *args: Any) -> Any:
        if name == "floor":
            return jnp.floor(args[0])
        if name == "copysign":
            return jnp.copysign(*args)
        if name == "fmod":
            return lax.rem(*jnp.broadcast_arrays(*args))  # C's fmod for floats
        if name in ("maximum", "minimum"):  # NaN when either operand is NaN
            a, b = args
            picked = lax.max(a, b) if name == "maximum" else lax.min(a, b)
            return jnp.where(jnp.isnan(a) | jnp.isnan(b), a + b, picked)
        if name in ("fmax", "fmin"):  # the other operand when one is NaN
            a, b = args
            picked = lax.max(a, b) if name == "fmax" else lax.min(a, b)
            return jnp.where(jnp.isnan(a), b, jnp.where(jnp.isnan(b), a, picked))
        raise KeyError(f"LaxOps has no math function {name!r}")

    def set_status(self, c: Any, code: int) -> None:
        self.checks.status(c, code)
