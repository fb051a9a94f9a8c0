"""Dead-code elimination: drop equations and constants nothing reads."""
from __future__ import annotations

from ..ir import Program


def dce(program: Program) -> Program:
    live = set(program.outvars)
    kept = []
    for eqn in reversed(program.eqns):
        if any(o in live for o in eqn.outputs):
            kept.append(eqn)
            live.update(eqn.inputs)
    pairs = [(v, c) for v, c in zip(program.constvars, program.consts) if v in live]
    return Program(program.invars, [v for v, _ in pairs], [c for _, c in pairs], kept[::-1],
                   program.outvars, program.name)
