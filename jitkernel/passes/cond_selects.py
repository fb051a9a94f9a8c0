"""A two-way `cond` whose branches are a few elementwise operations becomes a `select`.

`if abs(z) < 1: X = -X` (NPBench contour_integral, in its loop) is a branch on a traced scalar:
a `cond` step, whose result is a fresh array written by whichever branch runs (a copy of `X`
when it does nothing), read again by the code after it. When both branches hold only
elementwise and movement primitives that cannot raise, and few of them, computing both and
selecting by the predicate gives the same values (each output is exactly one branch's, chosen
by the same index: `lax.switch` clamps it, so index >= 1 is the second branch), and the select
fuses with the branches and the code after them: one pass over `X` instead of three.

>>> import numpy as np, jitkernel as jk
>>> from jitkernel.passes import optimize
>>> def f(x, s, n):
...     for i in range(n):
...         if s < i:
...             x = -x
...     return x + 1
>>> loop = optimize(jk.make_ir(f)(np.ones(3), 0.5, 10)).eqns[-2]
>>> prims = [e.prim for e in loop.params["body"].eqns]
>>> "cond" in prims, "select" in prims
(False, True)
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir import AType, Eqn, Program, Var, primitives
from ..ir.primitives import raises_on_data
from .rewrite import inline_copy, inline_each

# Elementwise operations per branch up to which computing both branches costs less than the
# step's own pass over its results (movement is free: index maps).
MAX_BRANCH_OPS = 4


_LOOPS = ("fori_loop", "while_loop", "scan")


def conds_as_selects(program: Program) -> Program:
    """Each small two-way `cond` inside the loops of `program` (at any depth) as its branches and
    selects. Only in loops, where a branch step costs its copies on every trip; a cond outside
    runs once, and stays a branch (which computes one side only)."""
    if not any(e.prim in _LOOPS for e in program.eqns):
        return program
    eqns = [_in_loops(e) if e.prim in _LOOPS else e for e in program.eqns]
    if all(a is b for a, b in zip(eqns, program.eqns)):
        return program
    return dataclasses.replace(program, eqns=eqns)


def _in_loops(eqn: Eqn) -> Eqn:
    """A loop with the small conds of its sub-programs (and of their loops and branches) as selects."""
    params, changed = {}, False
    for key, value in eqn.params.items():
        if isinstance(value, Program):
            new = _selects(value)
            changed |= new is not value
            value = new
        params[key] = value
    return Eqn(eqn.prim, eqn.inputs, eqn.outputs, params) if changed else eqn


def _selects(program: Program) -> Program:
    """`program` (a loop body) with its small conds as selects, recursively."""
    eqns = []
    for e in program.eqns:
        if e.prim in _LOOPS:
            e = _in_loops(e)
        elif e.prim == "cond" and not _small_cond(e):
            branches = tuple(_selects(b) for b in e.params["branches"])
            if any(a is not b for a, b in zip(branches, e.params["branches"])):
                e = Eqn(e.prim, e.inputs, e.outputs, {**e.params, "branches": branches})
        eqns.append(e)
    if any(a is not b for a, b in zip(eqns, program.eqns)):
        program = dataclasses.replace(program, eqns=eqns)
    return _inline_small_conds(program) if any(_small_cond(e) for e in program.eqns) else program


def _inline_small_conds(program: Program) -> Program:
    """Each small two-way `cond` at the top level of `program` as its branches and selects."""

    def expand(eqn: Eqn, inputs: list[Var], constvars: list[Var], consts: list, eqns: list[Eqn]) -> list[Var] | None:
        if not _small_cond(eqn):
            return None
        index, operands = inputs[0], inputs[1:]
        results = [inline_copy(branch, operands, constvars, consts, eqns) for branch in eqn.params["branches"]]
        one = Var(AType((), np.dtype(np.int32)))
        constvars.append(one)
        consts.append(np.asarray(1, np.int32))
        second = Var(AType((), np.dtype(np.bool_)))
        eqns.append(Eqn("greater_equal", [index, one], [second], {}))
        for out, if_first, if_second in zip(eqn.outputs, *results):
            pred = second
            if out.aval.shape:
                pred = Var(AType(out.aval.shape, np.dtype(np.bool_)))
                eqns.append(Eqn("broadcast_in_dim", [second], [pred],
                                {"shape": tuple(out.aval.shape), "broadcast_dimensions": ()}))
            eqns.append(Eqn("select", [pred, if_second, if_first], [out], {}))
        return list(eqn.outputs)

    return inline_each(program, expand)


def _small_cond(eqn: Eqn) -> bool:
    if eqn.prim != "cond" or len(eqn.params["branches"]) != 2:
        return False
    if not all(type(d) is int for o in eqn.outputs for d in o.aval.shape):
        return False
    for branch in eqn.params["branches"]:
        ops = 0
        for e in branch.eqns:
            kind = primitives.PRIMITIVES[e.prim].kind
            if kind not in ("elementwise", "movement") or raises_on_data(e.prim, [o.aval for o in e.outputs]):
                return False
            ops += kind == "elementwise"
        if ops > MAX_BRANCH_OPS:
            return False
    return True
