"""Inline `custom_jvp_call` / `custom_vjp_call` (ir/custom_prims.py): once the transformations
have run, such an equation is just a call of its function, so its equations replace it before
any other pass (the fusion and every backend then see ordinary primitives). Sub-programs are
inlined when `optimize` reaches them (it starts with this pass)."""
from __future__ import annotations

from ..ir import Eqn, Program, Var
from ..ir.custom_prims import CUSTOM_PRIMITIVES, fun_operands
from .rewrite import inline_copy, inline_each


def inline_custom_calls(program: Program) -> Program:
    """`program` with every custom-derivative call at its top level replaced by its function's
    equations (fresh variables, so one sub-program may be inlined any number of times).

    >>> import numpy as np, jitkernel as jk
    >>> f = jk.custom_jvp(lambda x: np.sin(x))
    >>> f.defjvp(lambda p, t: (np.sin(p[0]), np.cos(p[0]) * t[0]))  # doctest: +ELLIPSIS
    <function ...>
    >>> prog = jk.make_ir(f)(np.ones(2))
    >>> [e.prim for e in inline_custom_calls(prog).eqns]
    ['sin']
    """
    if not any(e.prim in CUSTOM_PRIMITIVES for e in program.eqns):
        return program

    def expand(eqn: Eqn, inputs: list[Var], constvars: list[Var], consts: list, eqns: list[Eqn]) -> list[Var] | None:
        if eqn.prim not in CUSTOM_PRIMITIVES:
            return None
        fun = inline_custom_calls(eqn.params["fun"])
        return inline_copy(fun, fun_operands(eqn.prim, eqn.params, inputs), constvars, consts, eqns)

    return inline_each(program, expand)
