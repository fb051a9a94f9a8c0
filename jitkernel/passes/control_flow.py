"""Passes and control flow: the sub-programs of `cond`, `while_loop`, `fori_loop` and `scan`
are optimised as programs of their own (their signature, the loop's carry, never changes).

Each pass is otherwise safe on a control-flow equation as it is: DCE drops a loop only when
none of its outputs is read (the loop is pure), CSE merges two equal equations (same inputs,
the same sub-program objects), `fold_constants` never runs a loop at compile time and
`simplify` only rewrites movement primitives.
"""
from __future__ import annotations

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
        if sub_programs(eqn.params):
            params = {k: _optimized(v, optimize) for k, v in eqn.params.items()}
            eqn = Eqn(eqn.prim, eqn.inputs, eqn.outputs, params)
        eqns.append(eqn)
    out = Program(program.invars, program.constvars, program.consts, eqns, program.outvars, program.name,
                  program.int_arg_bounds, program.byteorder_sources)
    return out


def _optimized(value: object, optimize: Callable[[Program], Program]) -> object:
    if isinstance(value, Program):
        return optimize(value)
    if isinstance(value, tuple) and any(isinstance(v, Program) for v in value):
        return tuple(optimize(v) if isinstance(v, Program) else v for v in value)
    return value
