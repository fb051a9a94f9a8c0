"""Common-subexpression elimination: identical primitive applications are computed once."""
from __future__ import annotations

from ..ir import Eqn, Program, primitives
from .rewrite import substitute


def cse(program: Program) -> Program:
    seen: dict[tuple, Eqn] = {}

    def visit(eqn: Eqn, resolve) -> Eqn | dict:
        if primitives.get(eqn.prim).effect:
            return eqn  # two equal prints both print (Primitive.effect)
        try:
            key = (eqn.prim, tuple(eqn.inputs), tuple(sorted(eqn.params.items())))
            hash(key)
        except TypeError:
            return eqn
        if key in seen:
            return dict(zip(eqn.outputs, seen[key].outputs))
        seen[key] = eqn
        return eqn

    return substitute(program, visit)
