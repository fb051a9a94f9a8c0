"""Algebraic simplifications that never change a value: identity casts and movements, merged
reshapes and transposes, and uniform constants turned into a broadcast scalar."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir import AType, Eqn, Program, Var
from .rewrite import substitute


def _all_same_bits(c: np.ndarray) -> bool:
    """Every element has the first one's bit pattern: exact for NaNs (payload and sign
    included) and signed zeros, where `==` is not (a folded NaN constant stayed an array whose
    size changes with the input's, so such programs could never become shape-generic)."""
    rows = np.ascontiguousarray(c).view(np.uint8).reshape(c.size, c.dtype.itemsize)
    return bool((rows == rows[0]).all())


def _uniform_consts(program: Program) -> Program:
    """A constant whose elements are all equal becomes broadcast(scalar): kernels then use a
    literal instead of reading memory."""
    constvars, consts, eqns = [], [], []
    for v, c in zip(program.constvars, program.consts):
        if c.size > 1 and c.size <= 1 << 22 and _all_same_bits(c):
            scalar = Var(AType((), c.dtype))
            constvars.append(scalar)
            consts.append(np.asarray(c.flat[0], dtype=c.dtype).reshape(()))
            eqns.append(Eqn("broadcast_in_dim", [scalar], [v], {"shape": c.shape, "broadcast_dimensions": ()}))
        else:
            constvars.append(v)
            consts.append(c)
    return dataclasses.replace(program, constvars=constvars, consts=consts, eqns=eqns + program.eqns)


# Each rule: (eqn, its first operand, its output, the operand's producer or None) -> the equation
# (perhaps rewritten) or {output: the value it equals}.
def _same_type(eqn: Eqn, x: Var, out: Var, prev: Eqn | None) -> Eqn | dict:
    """An identity cast, reshape or broadcast: the operand itself."""
    return {out: x} if x.aval == out.aval else eqn


def _reshape(eqn: Eqn, x: Var, out: Var, prev: Eqn | None) -> Eqn | dict:
    """A reshape of a reshape reads the first one's operand (the operand itself if same type)."""
    if x.aval == out.aval:
        return {out: x}
    if prev is not None and prev.prim == "reshape":
        if prev.inputs[0].aval == out.aval:
            return {out: prev.inputs[0]}
        return Eqn("reshape", [prev.inputs[0]], eqn.outputs, eqn.params)
    return eqn


def _transpose(eqn: Eqn, x: Var, out: Var, prev: Eqn | None) -> Eqn | dict:
    """The identity permutation is the operand; two transposes compose into one."""
    if eqn.params["permutation"] == tuple(range(out.aval.ndim)):
        return {out: x}
    if prev is not None and prev.prim == "transpose":
        p1, p2 = prev.params["permutation"], eqn.params["permutation"]
        perm = tuple(p1[p] for p in p2)
        if perm == tuple(range(len(perm))):
            return {out: prev.inputs[0]}
        return Eqn("transpose", [prev.inputs[0]], eqn.outputs, {"permutation": perm})
    return eqn


def _slice(eqn: Eqn, x: Var, out: Var, prev: Eqn | None) -> Eqn | dict:
    """A slice of everything, in order, is the operand."""
    whole = x.aval == out.aval and all(s == 0 for s in eqn.params["starts"]) and all(s == 1 for s in eqn.params["steps"])
    return {out: x} if whole else eqn


_RULES = {
    "convert": _same_type, "broadcast_in_dim": _same_type, "reshape": _reshape, "transpose": _transpose,
    "slice": _slice,
    "stop_gradient": lambda eqn, x, out, prev: {out: x},  # only the transformations read it (ir/transform_prims.py)
}


def simplify(program: Program) -> Program:
    program = _uniform_consts(program)
    producer: dict[Var, Eqn] = {}

    def visit(eqn: Eqn, resolve) -> Eqn | dict:
        if not eqn.outputs:  # a branch or loop kept only because it may raise
            return eqn
        rule = _RULES.get(eqn.prim)
        if rule is not None:
            x = eqn.inputs[0]
            result = rule(eqn, x, eqn.outputs[0], producer.get(x))
            if isinstance(result, dict):
                return result
            eqn = result
        for o in eqn.outputs:
            producer[o] = eqn
        return eqn

    return substitute(program, visit)
