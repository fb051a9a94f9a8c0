"""Prints over Dask arrays (`jk.debug.print`, docs/debugging.md "Dask"): the tokens of the
effects become inputs of what follows them, so that the Dask graph runs every print, in
program order.

Dask computes only what the requested arrays depend on, and nothing reads a print's token: a
print planned into a task of its own (partition.py closes a segment after each print, so that it
runs once per compute, not once per block) would be a task no result needs, never run; and two
prints in independent tasks would run in Dask's order. So each print's first value `v` becomes
`select(token of the previous print, v, v)`, and the first output `o` becomes `select(token of
the last print, o, o)` (the token broadcast): the same values, now reading the tokens. The block
programs' own optimisation folds those selects away again, while the Dask tasks keep the
dependencies. A program without an effect is returned unchanged.
"""
from __future__ import annotations

import dataclasses

from ..ir import AType, Eqn, Program, Var, primitives


def _tied(value: Var, token: Var, eqns: list[Eqn]) -> Var:
    """`value`, read through a select on `token` (appended to `eqns`)."""
    pred = Var(AType(value.aval.shape, token.aval.dtype))
    eqns.append(Eqn("broadcast_in_dim", [token], [pred], {"shape": tuple(value.aval.shape), "broadcast_dimensions": ()}))
    out = Var(value.aval)
    eqns.append(Eqn("select", [pred, value, value], [out], {}))
    return out


def tie_effects_to_outputs(program: Program) -> Program:
    if not any(primitives.get(e.prim).effect for e in program.eqns) or not program.outvars:
        return program
    eqns: list[Eqn] = []
    token = None
    for eqn in program.eqns:
        if primitives.get(eqn.prim).effect:
            if token is not None and eqn.inputs:  # after the previous print
                eqn = Eqn(eqn.prim, [_tied(eqn.inputs[0], token, eqns)] + eqn.inputs[1:], eqn.outputs, eqn.params)
            token = eqn.outputs[0]
        eqns.append(eqn)
    first = _tied(program.outvars[0], token, eqns)
    return dataclasses.replace(program, eqns=eqns, outvars=[first] + program.outvars[1:])
