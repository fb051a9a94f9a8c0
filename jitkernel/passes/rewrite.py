"""A helper for passes: rebuild a Program equation by equation with variable substitution."""
from __future__ import annotations

from typing import Callable

from ..ir import Eqn, Program, Var


def substitute(program: Program, visit: Callable[[Eqn, Callable[[Var], Var]], Eqn | dict[Var, Var] | None]) -> Program:
    """Call `visit(eqn, resolve)` for each equation (inputs already resolved through earlier
    substitutions). Return an Eqn to keep (possibly new), a dict mapping its outputs to existing
    vars to drop it, or None to drop it without substitutes. Consts may be appended by `visit`
    through the returned program's constvars (see fold)."""
    subst: dict[Var, Var] = {}

    def resolve(v: Var) -> Var:
        while v in subst:
            v = subst[v]
        return v

    eqns: list[Eqn] = []
    for eqn in program.eqns:
        eqn = Eqn(eqn.prim, [resolve(v) for v in eqn.inputs], eqn.outputs, eqn.params)
        result = visit(eqn, resolve)
        if isinstance(result, Eqn):
            eqns.append(result)
        elif isinstance(result, dict):
            subst.update(result)
    return Program(program.invars, program.constvars, program.consts, eqns,
                   [resolve(v) for v in program.outvars], program.name)
