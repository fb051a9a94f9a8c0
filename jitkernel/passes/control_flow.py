"""Passes and control flow: the sub-programs of `cond`, `while_loop`, `fori_loop` and `scan`
are optimised as programs of their own (their signature, the loop's carry, never changes).

Each pass is otherwise safe on a control-flow equation as it is: DCE drops a loop only when
none of its outputs is read (the loop is pure), CSE merges two equal equations (same inputs,
the same sub-program objects), `fold_constants` never runs a loop at compile time and
`simplify` only rewrites movement primitives.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from ..ir import Eqn, Program
from ..ir.control_flow import sub_programs


def optimize_sub_programs(program: Program, optimize: Callable[[Program], Program]) -> Program:
    """`program` with `optimize` applied to every sub-program of its equations (recursively,
    since `optimize` calls this again); the program itself is returned when it has none."""
    if not any(sub_programs(eqn.params) for eqn in program.eqns):
        return program
    eqns = []
    for eqn in program.eqns:
        eqns.append(map_sub_programs(eqn, optimize) if sub_programs(eqn.params) else eqn)
    return dataclasses.replace(program, eqns=eqns)


def map_sub_programs(eqn: Eqn, fn: Callable[[Program], Program | None]) -> Eqn | None:
    """`eqn` with `fn` applied to each of its sub-programs (a Program parameter, or the Programs
    of a tuple parameter: a cond's branches); None when `fn` gives None for one; `eqn` itself
    when `fn` returns every one unchanged."""
    params, changed = {}, False
    for key, value in eqn.params.items():
        if isinstance(value, Program):
            new = fn(value)
        elif isinstance(value, tuple) and any(isinstance(v, Program) for v in value):
            new = tuple(fn(v) if isinstance(v, Program) else v for v in value)
            if any(v is None for v in new):
                return None
            changed |= any(a is not b for a, b in zip(new, value))
            params[key] = new
            continue
        else:
            new = value
        if new is None:
            return None
        changed |= new is not value
        params[key] = new
    return Eqn(eqn.prim, eqn.inputs, eqn.outputs, params) if changed else eqn


def inline_constant_operands(program: Program) -> Program:
    """Scalar constants a `cond`, `fori_loop` or `while_loop` receives as operands (a closed-over
    literal: the `1` of `D[i - 1, j]` inside an `if`) become constants of the sub-programs.
    As operands they were run-time values there: nothing folded them, and the index-range proofs
    of traced indices (fusion/dynamic.py) could not see `i - 1` as the index minus a constant,
    so every such access kept a bounds check."""
    const_value = {v: c for v, c in zip(program.constvars, program.consts) if c.size == 1}
    if not const_value or not any(e.prim in _OPERAND_LAYOUT for e in program.eqns):
        return program
    eqns = [_inline_operands(e, const_value) if e.prim in _OPERAND_LAYOUT else e for e in program.eqns]
    return dataclasses.replace(program, eqns=eqns)


def _with_constants(sub: Program, moved: dict[int, object]) -> Program:
    """`sub` with its inputs at the positions of `moved` turned into constants of those values."""
    invars = [v for i, v in enumerate(sub.invars) if i not in moved]
    extra = [sub.invars[i] for i in moved]
    return Program(invars, list(sub.constvars) + extra, list(sub.consts) + list(moved.values()), sub.eqns,
                   sub.outvars, sub.name)


def _inline_operands(eqn: Eqn, const_value: dict) -> Eqn:
    """One equation with its scalar-constant operands moved into its sub-programs."""
    p = dict(eqn.params)
    if eqn.prim == "cond":
        moved = {k - 1: const_value[v] for k, v in enumerate(eqn.inputs) if k and v in const_value}
        if not moved:
            return eqn
        p["branches"] = tuple(_with_constants(b, moved) for b in p["branches"])
        inputs = [v for k, v in enumerate(eqn.inputs) if not (k and k - 1 in moved)]
        return Eqn(eqn.prim, inputs, eqn.outputs, p)
    if eqn.prim == "fori_loop":
        n = p["nconsts"]
        consts = eqn.inputs[2:2 + n]
        moved = {1 + k: const_value[v] for k, v in enumerate(consts) if v in const_value}
        if not moved:
            return eqn
        p["body"] = _with_constants(p["body"], moved)
        p["nconsts"] = n - len(moved)
        kept = [v for k, v in enumerate(consts) if 1 + k not in moved]
        return Eqn(eqn.prim, eqn.inputs[:2] + kept + eqn.inputs[2 + n:], eqn.outputs, p)
    # while_loop
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    cconsts, bconsts = eqn.inputs[:cn], eqn.inputs[cn:cn + bn]
    cmoved = {k: const_value[v] for k, v in enumerate(cconsts) if v in const_value}
    bmoved = {k: const_value[v] for k, v in enumerate(bconsts) if v in const_value}
    if not cmoved and not bmoved:
        return eqn
    p["cond"], p["body"] = _with_constants(p["cond"], cmoved), _with_constants(p["body"], bmoved)
    p["cond_nconsts"], p["body_nconsts"] = cn - len(cmoved), bn - len(bmoved)
    inputs = ([v for k, v in enumerate(cconsts) if k not in cmoved] + [v for k, v in enumerate(bconsts) if k not in bmoved]
              + eqn.inputs[cn + bn:])
    return Eqn(eqn.prim, inputs, eqn.outputs, p)


_OPERAND_LAYOUT = ("cond", "fori_loop", "while_loop")
