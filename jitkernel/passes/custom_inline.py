"""Inline `custom_jvp_call` / `custom_vjp_call` (ir/custom_prims.py): once the transformations
have run, such an equation is just a call of its function, so its equations replace it before
any other pass (the fusion and every backend then see ordinary primitives). Sub-programs are
inlined when `optimize` reaches them (it starts with this pass)."""
from __future__ import annotations

from ..ir import Eqn, Program, Var
from ..ir.custom_prims import CUSTOM_PRIMITIVES, fun_operands
from .rewrite import inline_copy


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
    rename: dict[Var, Var] = {}
    constvars, consts = list(program.constvars), list(program.consts)
    eqns: list[Eqn] = []

    def look(v: Var) -> Var:
        return rename.get(v, v)

    for eqn in program.eqns:
        inputs = [look(v) for v in eqn.inputs]
        if eqn.prim not in CUSTOM_PRIMITIVES:
            eqns.append(eqn if inputs == eqn.inputs else Eqn(eqn.prim, inputs, eqn.outputs, eqn.params))
            continue
        fun = inline_custom_calls(eqn.params["fun"])
        results = inline_copy(fun, fun_operands(eqn.prim, eqn.params, inputs), constvars, consts, eqns)
        rename.update(zip(eqn.outputs, results))
    out = Program(program.invars, constvars, consts, eqns, [look(v) for v in program.outvars], program.name,
                  program.int_arg_bounds, program.byteorder_sources, program.written_args, program.written_names,
                  program.trimmed_outputs)
    return out
