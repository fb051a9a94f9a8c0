"""Algebraic simplifications that never change a value: identity casts and movements, merged
reshapes and transposes, and uniform constants turned into a broadcast scalar."""
from __future__ import annotations

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
    return Program(program.invars, constvars, consts, eqns + program.eqns, program.outvars, program.name)


def simplify(program: Program) -> Program:
    program = _uniform_consts(program)
    producer: dict[Var, Eqn] = {}

    def visit(eqn: Eqn, resolve) -> Eqn | dict:
        if not eqn.outputs:  # a branch or loop kept only because it may raise
            return eqn
        x = eqn.inputs[0] if eqn.inputs else None
        out = eqn.outputs[0]
        if eqn.prim in ("convert", "reshape", "broadcast_in_dim") and x is not None and x.aval == out.aval:
            return {out: x}
        if eqn.prim == "stop_gradient":  # only the transformations read it (ir/transform_prims.py)
            return {out: x}
        if eqn.prim == "transpose" and eqn.params["permutation"] == tuple(range(out.aval.ndim)):
            return {out: x}
        if eqn.prim == "slice" and x.aval == out.aval and all(s == 0 for s in eqn.params["starts"]) \
                and all(s == 1 for s in eqn.params["steps"]):
            return {out: x}
        prev = producer.get(x) if x is not None else None
        if eqn.prim == "reshape" and prev is not None and prev.prim == "reshape":
            eqn = Eqn("reshape", [prev.inputs[0]], eqn.outputs, eqn.params)
            if prev.inputs[0].aval == out.aval:
                return {out: prev.inputs[0]}
        if eqn.prim == "transpose" and prev is not None and prev.prim == "transpose":
            p1, p2 = prev.params["permutation"], eqn.params["permutation"]
            perm = tuple(p1[p] for p in p2)
            if perm == tuple(range(len(perm))):
                return {out: prev.inputs[0]}
            eqn = Eqn("transpose", [prev.inputs[0]], eqn.outputs, {"permutation": perm})
        for o in eqn.outputs:
            producer[o] = eqn
        return eqn

    return substitute(program, visit)
