"""Constant folding: equations whose inputs are all constants run now, with the reference
implementation, when the result is small (large results stay computed in a kernel)."""
from __future__ import annotations

import numpy as np

from ..ir import Eqn, Program, Var, primitives
from ..ir.control_flow import CONTROL_FLOW_PRIMITIVES

MAX_FOLDED_ELEMENTS = 4096


def fold_constants(program: Program) -> Program:
    values: dict[Var, np.ndarray] = dict(zip(program.constvars, program.consts))
    constvars, consts = list(program.constvars), list(program.consts)
    eqns: list[Eqn] = []
    for eqn in program.eqns:
        # Loops are never folded: a constant trip count can still be 10**6 iterations.
        # Nor a step that may raise: its IndexError belongs to the run (and to the branch taken).
        foldable = (eqn.prim not in CONTROL_FLOW_PRIMITIVES and primitives.get(eqn.prim).unread != "step" and all(v in values for v in eqn.inputs) and eqn.inputs
                    and all(o.aval.size <= MAX_FOLDED_ELEMENTS for o in eqn.outputs))
        if foldable:
            outs = primitives.evaluate(eqn.prim, [values[v] for v in eqn.inputs], eqn.params)
            for o, val in zip(eqn.outputs, outs):
                val = np.array(np.asarray(val, dtype=o.aval.dtype).reshape(o.aval.shape), order="C")
                values[o] = val
                constvars.append(o)
                consts.append(val)
        else:
            eqns.append(eqn)
    return Program(program.invars, constvars, consts, eqns, program.outvars, program.name)
