"""Common-subexpression elimination: identical primitive applications are computed once, and a
region update that repeats the one it updates (same window, same value) is dropped."""
from __future__ import annotations

from ..ir import Eqn, Program, Var, primitives
from .rewrite import substitute

REGION_UPDATES = ("dynamic_update_slice", "update_slice")


def cse(program: Program) -> Program:
    seen: dict[tuple, Eqn] = {}
    producer: dict[Var, Eqn] = {}
    scalar_consts = {id(v): c.item() for v, c in zip(program.constvars, program.consts)
                     if getattr(c, "ndim", None) == 0 and c.dtype.kind in "iu"}

    def visit(eqn: Eqn, resolve) -> Eqn | dict:
        if primitives.get(eqn.prim).effect:
            return eqn  # two equal prints both print (Primitive.effect)
        if eqn.prim in REGION_UPDATES and repeated_update(eqn, producer.get(eqn.inputs[0]), scalar_consts):
            return {eqn.outputs[0]: eqn.inputs[0]}
        try:
            key = (eqn.prim, tuple(eqn.inputs), tuple(sorted(eqn.params.items())))
            hash(key)
        except TypeError:
            return eqn
        if key in seen:
            return dict(zip(eqn.outputs, seen[key].outputs))
        seen[key] = eqn
        for o in eqn.outputs:
            producer[o] = eqn
        return eqn

    return substitute(program, visit)


def repeated_update(eqn: Eqn, prev: Eqn | None, scalar_consts: dict[int, object]) -> bool:
    """Does region update `eqn` write the window that `prev`, its operand's producer, has just
    written, with the same value? NumPy's `A[:, j] -= x` is such a pair: the in-place subtract
    writes A's window through the view, then `__setitem__` stores the view's (same) values
    again. The second write changes nothing; as the second link of an update chain in a loop
    body it kept the carry from being updated in place (its value, fused, would read the window
    the first link had already written: fusion/dynamic.py `can_update_in_place`)."""
    if prev is None or prev.prim != eqn.prim or prev.inputs[1] is not eqn.inputs[1] or prev.params != eqn.params:
        return False
    if len(prev.inputs) != len(eqn.inputs):
        return False

    def same(a: Var, b: Var) -> bool:  # the same start: one Var, or two integer constants of one value
        return a is b or (id(a) in scalar_consts and id(b) in scalar_consts and scalar_consts[id(a)] == scalar_consts[id(b)])
    return all(same(a, b) for a, b in zip(prev.inputs[2:], eqn.inputs[2:]))
