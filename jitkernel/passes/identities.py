"""Arithmetic identities that hold bit for bit, which differentiation produces all the time:
the reverse rule of a sum broadcasts the seed cotangent 1.0 and multiplies by it, a subtraction
or negation rule negates twice, a cotangent of zero shows up as an added `-0.0`.

Removed here, for real (non-complex) dtypes, when the result has the other operand's type:

- `x * 1`, `1 * x`, `x / 1` -> `x` (exact in IEEE arithmetic, NaNs and signed zeros included)
- `x + (-0.0)`, `(-0.0) + x`, `x - (+0.0)` -> `x` (`x + (+0.0)` is not: it turns -0.0 into +0.0);
  for integers `x + 0`, `0 + x`, `x - 0`
- `-(-x)` -> `x`

A constant is a 0-d program constant or a `broadcast_in_dim` of one (how uniform constants look
after `simplify`). Complex values are left alone (`x * (1+0j)` is NaN where `x` has an infinite
part).

>>> import numpy as np, jitkernel as jk
>>> from jitkernel.passes import optimize
>>> prog = jk.make_ir(jk.grad(lambda x: np.sum(np.sin(x))))(np.zeros(3))
>>> [e.prim for e in optimize(prog).eqns]
['cos']
"""
from __future__ import annotations

import numpy as np

from ..ir import Eqn, Program, Var
from .rewrite import substitute


def _scalar_constants(program: Program) -> dict[Var, np.ndarray]:
    return {v: c for v, c in zip(program.constvars, program.consts) if c.size == 1}


def _is(value: np.ndarray | None, target: float, negative_zero: bool = False) -> bool:
    if value is None:
        return False
    v = value.reshape(())
    if v.dtype.kind == "b":
        return bool(v) == bool(target)
    if v != target:
        return False
    return v.dtype.kind != "f" or target != 0 or bool(np.signbit(v)) == negative_zero


def _zero(c: np.ndarray | None, integer: bool) -> bool:
    """An identity of addition: -0.0 for floats (x + (+0.0) turns -0.0 into +0.0), 0 for integers."""
    return _is(c, 0, negative_zero=True) or (integer and _is(c, 0))


# Per primitive, from the constants of its two operands (None where not a constant) and whether
# the result is an integer: the operand the result equals (0 or 1), or None.
_KEPT_OPERAND = {
    "multiply": lambda ca, cb, integer: 0 if _is(cb, 1) else 1 if _is(ca, 1) else None,
    "divide": lambda ca, cb, integer: 0 if _is(cb, 1) else None,
    "add": lambda ca, cb, integer: 0 if _zero(cb, integer) else 1 if _zero(ca, integer) else None,
    "subtract": lambda ca, cb, integer: 0 if _is(cb, 0) else None,
}


def identities(program: Program) -> Program:
    constants = _scalar_constants(program)
    negated: dict[Var, Var] = {}  # output of a negative -> its operand

    def visit(eqn: Eqn, resolve) -> Eqn | dict:
        if not eqn.outputs:
            return eqn
        out = eqn.outputs[0]
        if eqn.prim == "broadcast_in_dim" and eqn.inputs[0] in constants:
            constants[out] = constants[eqn.inputs[0]]
            return eqn
        if out.aval.dtype.kind not in "fiub" or len(eqn.inputs) not in (1, 2):
            return eqn
        if eqn.prim == "negative":
            x = eqn.inputs[0]
            if x in negated and negated[x].aval == out.aval:
                return {out: negated[x]}
            negated[out] = x
            return eqn
        if len(eqn.inputs) != 2:
            return eqn
        rule = _KEPT_OPERAND.get(eqn.prim)
        if rule is None:
            return eqn
        k = rule(*(constants.get(v) for v in eqn.inputs), out.aval.dtype.kind in "iub")
        keep = eqn.inputs[k] if k is not None else None
        if keep is not None and keep.aval == out.aval:
            return {out: keep}
        return eqn

    return substitute(program, visit)
