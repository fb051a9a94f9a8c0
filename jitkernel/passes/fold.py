"""Constant folding: equations whose inputs are all constants run now, with the reference
implementation, when the result is small (large results stay computed in a kernel)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir import Eqn, Program, Var, primitives
from ..ir.control_flow import CONTROL_FLOW_PRIMITIVES
from ..ir.dynamic_slice import normalize_start

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
            eqns.append(_static_window(eqn, values) or eqn)
    return dataclasses.replace(program, constvars=constvars, consts=consts, eqns=eqns)


def _static_window(eqn: Eqn, values: dict[Var, np.ndarray]) -> Eqn | None:
    """A `dynamic_slice` whose starts are constants inside the array is a static `slice`: a
    free index map that cannot raise, so a loop body's window of a loop constant (`r[:k]`
    padded to its largest length starts at 0) is invariant and moves out of the loop
    (passes/loops.py), where a dynamic_slice, which may raise IndexError, stays."""
    if eqn.prim != "dynamic_slice" or eqn.params.get("layout") is not None:
        return None
    x, starts, sizes = eqn.inputs[0], eqn.inputs[1:], eqn.params["sizes"]
    if not all(v in values for v in starts) or not all(isinstance(n, int) for n in (*x.aval.shape, *sizes)):
        return None
    try:
        begin = [normalize_start(int(values[v]), n, k, d) for d, (v, n, k) in enumerate(zip(starts, x.aval.shape, sizes))]
    except IndexError:
        return None  # NumPy's IndexError stays with the step, at run time
    return Eqn("slice", [x], list(eqn.outputs), {"starts": tuple(begin), "steps": (1,) * len(begin),
                                                  "shape": tuple(sizes)})
