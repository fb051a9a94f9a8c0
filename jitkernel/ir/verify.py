"""The IR verifier: SSA (each var defined once, before use) and types (every equation's outputs
equal its primitive's shape rule applied to its inputs)."""
from __future__ import annotations

from ..errors import IRVerificationError
from . import control_flow, primitives
from .program import Program, Var


def verify_program(program: Program) -> Program:
    """Raise IRVerificationError naming the first broken invariant; return the program."""
    defined: set[Var] = set()

    def define(v: Var, where: str) -> None:
        if v in defined:
            raise IRVerificationError(f"{program.name}: {v} defined twice ({where})")
        defined.add(v)

    for v in program.invars:
        define(v, "input")
    if len(program.constvars) != len(program.consts):
        raise IRVerificationError(f"{program.name}: {len(program.constvars)} constvars but {len(program.consts)} consts")
    for v, c in zip(program.constvars, program.consts):
        define(v, "const")
        if tuple(c.shape) != v.aval.shape or c.dtype != v.aval.dtype:
            raise IRVerificationError(f"{program.name}: const {v} holds {c.dtype}{list(c.shape)}")
    for i, eqn in enumerate(program.eqns):
        if eqn.prim not in primitives.PRIMITIVES:
            raise IRVerificationError(f"{program.name}: equation {i} uses unknown primitive {eqn.prim!r}")
        for v in eqn.inputs:
            if v not in defined:
                raise IRVerificationError(f"{program.name}: equation {i} ({eqn.prim}) reads {v} before it is defined")
        try:
            expected = primitives.infer_avals(eqn.prim, [v.aval for v in eqn.inputs], eqn.params)
        except (TypeError, ValueError) as e:
            raise IRVerificationError(f"{program.name}: equation {i} ({eqn.prim}) is ill-typed: {e}") from e
        got = [o.aval for o in eqn.outputs]
        if expected != got:
            raise IRVerificationError(f"{program.name}: equation {i} ({eqn.prim}) outputs {got}, rule says {expected}")
        for o in eqn.outputs:
            define(o, f"equation {i}")
        for sub in control_flow.sub_programs(eqn.params):
            verify_program(sub)  # a control-flow body is a program of its own (closed: no outer vars)
    for v in program.outvars:
        if v not in defined:
            raise IRVerificationError(f"{program.name}: output {v} is never defined")
    return program
