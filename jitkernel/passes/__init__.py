"""Optimisation passes: pure functions from Program to Program."""
from __future__ import annotations

from ..ir import Program, verify_program
from .control_flow import inline_constant_operands, optimize_sub_programs
from .custom_inline import inline_custom_calls
from .cse import cse
from .dce import dce
from .dot_operands import dot_operands
from .fold import fold_constants
from .identities import identities
from .simplify import simplify

PIPELINE = (fold_constants, simplify, identities, dot_operands, cse, dce)


def optimize(program: Program) -> Program:
    """Run the standard pipeline once and verify the result.

    >>> import numpy as np, jitkernel as jk
    >>> prog = jk.make_ir(lambda x: (x + 0 * 2) * 1)(np.ones(2))
    >>> len(optimize(prog).eqns) <= len(prog.eqns)
    True
    """
    program = inline_custom_calls(program)  # first: no other pass sees custom_jvp/vjp calls
    program = optimize_sub_programs(inline_constant_operands(program), optimize)
    for p in PIPELINE:
        program = p(program)
    return verify_program(program)


__all__ = ["optimize", "fold_constants", "simplify", "identities", "dot_operands", "cse", "dce"]
