"""Dead-code elimination: drop equations and constants nothing reads."""
from __future__ import annotations

import dataclasses

from ..ir import Program, live_variables


def dce(program: Program) -> Program:
    live = live_variables(program.eqns, program.outvars)
    kept = [eqn for eqn in program.eqns if any(o in live for o in eqn.outputs)]
    pairs = [(v, c) for v, c in zip(program.constvars, program.consts) if v in live]
    return dataclasses.replace(program, constvars=[v for v, _ in pairs], consts=[c for _, c in pairs], eqns=kept)
