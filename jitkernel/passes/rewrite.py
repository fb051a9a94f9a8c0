"""A helper for passes: rebuild a Program equation by equation with variable substitution."""
from __future__ import annotations

import dataclasses
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
    return dataclasses.replace(program, eqns=eqns, outvars=[resolve(v) for v in program.outvars])


def inline_copy(sub: Program, operands: list[Var], constvars: list[Var], consts: list, eqns: list[Eqn]) -> list[Var]:
    """Append a copy of `sub`'s equations applied to `operands` to `eqns` (fresh Vars; `sub`'s
    constants appended to `constvars` / `consts`) and return the Vars of its results: a call
    or a branch inlined into the program being built."""
    env: dict[Var, Var] = dict(zip(sub.invars, operands))
    for v, c in zip(sub.constvars, sub.consts):
        env[v] = Var(v.aval)
        constvars.append(env[v])
        consts.append(c)
    for inner in sub.eqns:
        outs = [Var(o.aval) for o in inner.outputs]
        env.update(zip(inner.outputs, outs))
        eqns.append(Eqn(inner.prim, [env[v] for v in inner.inputs], outs, inner.params))
    return [env[v] for v in sub.outvars]


Expand = Callable[[Eqn, list[Var], list[Var], list, list[Eqn]], "list[Var] | None"]


def inline_each(program: Program, expand: Expand) -> Program:
    """`program` with equations replaced by others: `expand(eqn, inputs, constvars, consts,
    eqns)` (inputs renamed through earlier replacements) appends the replacement to `eqns` (and
    constants to `constvars` / `consts`, `inline_copy`) and returns the Vars that stand for the
    equation's outputs, or None to keep the equation."""
    rename: dict[Var, Var] = {}
    constvars, consts = list(program.constvars), list(program.consts)
    eqns: list[Eqn] = []
    for eqn in program.eqns:
        inputs = [rename.get(v, v) for v in eqn.inputs]
        results = expand(eqn, inputs, constvars, consts, eqns)
        if results is None:
            eqns.append(eqn if inputs == eqn.inputs else Eqn(eqn.prim, inputs, eqn.outputs, eqn.params))
        else:
            rename.update(zip(eqn.outputs, results))
    return dataclasses.replace(program, constvars=constvars, consts=consts, eqns=eqns,
                               outvars=[rename.get(v, v) for v in program.outvars])
