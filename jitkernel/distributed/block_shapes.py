"""Programs rebuilt at one block's shapes: the shape params a block rewrites (`SHAPE_PARAMS`) and
the sub-Programs of a blockwise control-flow equation (`specialize_params`), shared by the
block program (worker.py) and the control-flow rule's sub-Program rebuild (control_flow.py).

A sub-Program variable carries the letters of the enclosing segment (`Segment.sub_vars`,
control_flow.py); its block shape is the block size of each letter. Every equation's shape rule
runs again at those shapes, and a mismatch with the letters is an internal error, never a wrong
answer.
"""
from __future__ import annotations

from ..errors import JitError
from ..ir import AType, Program
from ..ir.control_flow import CONTROL_FLOW_PRIMITIVES
from ..ir.primitives import infer_avals
from ..ir.program import Eqn, Var

# Which params of a primitive hold its output shape (rewritten to the block's shape).
SHAPE_PARAMS = {"broadcast_in_dim": "shape", "slice": "shape", "reshape": "new_shape"}

# The params of each control-flow primitive that hold sub-Programs (`branches`: a tuple of them).
SUB_PROGRAM_PARAMS = {"cond": ("branches",), "while_loop": ("cond", "body"), "fori_loop": ("body",),
                       "scan": ("body",)}


class PartitionInternalError(JitError):
    """A block program whose shapes do not agree with its partition: a bug in partition.py."""


def sub_programs(prim: str, params: dict) -> list[Program]:
    """The sub-Programs of a control-flow equation, in `SUB_PROGRAM_PARAMS` order."""
    found: list[Program] = []
    for name in SUB_PROGRAM_PARAMS[prim]:
        value = params[name]
        found.extend(value if isinstance(value, tuple) else [value])
    return found


def specialize_params(prim: str, params: dict, sub_letters: dict[Var, tuple[int, ...]],
                      sizes: dict[int, int]) -> dict:
    """`params` of a control-flow equation with every sub-Program rebuilt at the block sizes. An
    equation the partition put in one block (the fallback) has no letters: it runs as traced."""
    programs = [v for v in params.values() if isinstance(v, Program)] + list(params.get("branches", ()))
    if not any(v in sub_letters for prog in programs for v in prog.invars + prog.outvars):
        return params
    rebuilt = {}
    for name in SUB_PROGRAM_PARAMS[prim]:
        value = params[name]
        rebuilt[name] = tuple(_specialize(b, sub_letters, sizes) for b in value) if isinstance(value, tuple) \
            else _specialize(value, sub_letters, sizes)
    return dict(params, **rebuilt)


def _specialize(program: Program, sub_letters: dict, sizes: dict[int, int]) -> Program:
    def shape(v: Var) -> tuple[int, ...]:
        if v not in sub_letters:
            raise PartitionInternalError(f"{program.name}: {v} has no letters in the block program "
                                         "(please report this)")
        return tuple(sizes[a] for a in sub_letters[v])
    new: dict[Var, Var] = {}
    for v in program.invars:
        new[v] = Var(AType(shape(v), v.aval.dtype))
    for v in program.constvars:
        new[v] = Var(v.aval)
    eqns = []
    for eqn in program.eqns:
        expected = [shape(o) for o in eqn.outputs]
        params = eqn.params
        if eqn.prim in SHAPE_PARAMS:
            params = dict(params, **{SHAPE_PARAMS[eqn.prim]: expected[0]})
        if eqn.prim in CONTROL_FLOW_PRIMITIVES:
            params = specialize_params(eqn.prim, params, sub_letters, sizes)
        inputs = [new[v] for v in eqn.inputs]
        avals = infer_avals(eqn.prim, [v.aval for v in inputs], params)
        if [a.shape for a in avals] != expected:
            raise PartitionInternalError(f"{program.name}: {eqn.prim} in a loop gives {[a.shape for a in avals]}, "
                                         f"the partition expects {expected} (please report this)")
        outs = [Var(a) for a in avals]
        eqns.append(Eqn(eqn.prim, inputs, outs, params))
        new.update(zip(eqn.outputs, outs))
    return Program([new[v] for v in program.invars], [new[v] for v in program.constvars], list(program.consts),
                   eqns, [new[v] for v in program.outvars], name=program.name)
