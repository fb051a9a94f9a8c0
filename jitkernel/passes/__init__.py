"""Optimisation passes: pure functions from Program to Program."""
from __future__ import annotations

from ..ir import Program, verify_program
from .control_flow import inline_constant_operands, optimize_sub_programs
from .custom_inline import inline_custom_calls
from .cond_selects import conds_as_selects
from .cse import cse
from .dce import dce
from .equal_state import equal_state
from .dot_operands import dot_operands
from .fold import fold_constants
from .identities import identities
from .int_ranges import drop_proved_checks
from .masked_updates import masked_updates_as_selects
from .selected_scatters import selected_scatters
from .simplify import simplify
from .sink_effects import sink_effects


# equal_state optimises loop bodies again under the equalities it assumes, with the pipeline
# of the compile under way (passed in: it is one of the pipeline's passes).
def _equal_state(program: Program) -> Program:
    return equal_state(program, optimize)


def _equal_state_size_generic(program: Program) -> Program:
    return equal_state(program, lambda sub: optimize(sub, size_generic=True))


PIPELINE = (fold_constants, simplify, identities, drop_proved_checks, dot_operands, masked_updates_as_selects,
            selected_scatters, conds_as_selects, cse, _equal_state, dce, sink_effects)

# A shape-generic compile compares the kernel programs of two sizes and turns the constants
# that differ into run-time parameters: a rewrite that depends on a constant's value would make
# the two structures differ wherever a size-derived constant hits its identity (`x / (n - 1)`
# is `x` at n = 2; `var(ddof=1)` first called on 2 elements then recompiled for every size).
# `drop_proved_checks` too: a check a size-derived constant proves at two sizes may fire at a
# third, which would then reuse the program compiled without it.
SIZE_GENERIC_PIPELINE = tuple(_equal_state_size_generic if p is _equal_state else p
                              for p in PIPELINE if p not in (identities, drop_proved_checks))


def optimize(program: Program, *, size_generic: bool = False) -> Program:
    """Run the standard pipeline once and verify the result. `size_generic`: for a compile whose
    constants may become run-time parameters, leave out the rewrites that depend on a constant's
    value (`identities`).

    >>> import numpy as np, jitkernel as jk
    >>> prog = jk.make_ir(lambda x: (x + 0 * 2) * 1)(np.ones(2))
    >>> len(optimize(prog).eqns) <= len(prog.eqns)
    True
    """
    program = inline_custom_calls(program)  # first: no other pass sees custom_jvp/vjp calls
    program = optimize_sub_programs(inline_constant_operands(program),
                                   lambda sub: optimize(sub, size_generic=size_generic))
    for p in SIZE_GENERIC_PIPELINE if size_generic else PIPELINE:
        program = p(program)
    return verify_program(program)


__all__ = ["optimize", "fold_constants", "simplify", "identities", "dot_operands", "cse", "dce", "sink_effects"]
