"""Sink `jk.debug.print` steps (`Primitive.effect`) as late as they may go: past every following
equation up to the next one that may raise, holds sub-programs, is another effect or reads the
print's token.

Nothing reads a print's result, so moving it later breaks no dependency, and it still runs
before any error a later step raises (the print a user adds to find that error is shown) and
in order with the other prints. Moved out of the way, it no longer sits between kernels that
fusion merges only when they are consecutive (`y = sin(x); s = x.sum()` is one loop with two
stores with or without a print of `s`): the print costs only the materialisation of its values.
A program without prints is returned unchanged.

>>> import numpy as np, jitkernel as jk
>>> def f(x):
...     s = x.sum()
...     jk.debug.print("{}", s)
...     return np.sin(x), s
>>> [e.prim for e in sink_effects(jk.make_ir(f)(np.ones(3))).eqns]
['reduce_sum', 'sin', 'debug_callback']
"""
from __future__ import annotations

import dataclasses

from ..ir import Eqn, Program, primitives
from ..ir.program import WITH_SUB_PROGRAMS, may_raise


def _barrier(eqn: Eqn) -> bool:
    """An equation a print must not move past: one that may raise, runs sub-programs, or is an
    effect itself."""
    return (primitives.get(eqn.prim).effect or eqn.prim in WITH_SUB_PROGRAMS or may_raise(eqn)
            or primitives.raises_on_data(eqn.prim, [o.aval for o in eqn.outputs]))


def sink_effects(program: Program) -> Program:
    if not any(primitives.get(e.prim).effect for e in program.eqns):
        return program
    out: list[Eqn] = []
    pending: list[Eqn] = []  # prints waiting for the next barrier, in program order
    tokens: set = set()  # their results (read by nothing, except the Dask path's tie, distributed/effects.py)
    for eqn in program.eqns:
        if primitives.get(eqn.prim).effect:
            pending.append(eqn)
            tokens.update(eqn.outputs)
            continue
        if pending and (_barrier(eqn) or any(v in tokens for v in eqn.inputs)):
            out += pending
            pending, tokens = [], set()
        out.append(eqn)
    out += pending
    return dataclasses.replace(program, eqns=out)
