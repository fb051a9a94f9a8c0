"""Primitives of user-defined derivatives (`jk.custom_jvp`, `jk.custom_vjp`,
jitkernel/transforms/custom.py), each carrying the traced function (a sub-Program) and the rules in its params.

IR format: inputs `[*fun_consts, *args]` (the values of enclosing traces the function reads,
then its argument leaves); params `fun: Program` (all inputs -> outs), `fun_nconsts`, `name`,
and `rule`: the user's rules as a Python object (transforms/custom.py `JvpRule` / `VjpRule`,
hashable by identity), called by the transformations when they reach the equation. Rules are
not traced at the call: a jvp rule or fwd that calls the function itself (the usual style)
would otherwise recurse.

The outputs are `fun`'s. The reference implementation runs `fun` with the interpreter; the
pipeline inlines `fun` before any other pass (passes/custom_inline.py), so no backend sees them.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .evaluate import eval_program
from .primitives import Primitive, register
from .program import WITH_SUB_PROGRAMS, Program
from .types import AType

CUSTOM_PRIMITIVES = ("custom_jvp_call", "custom_vjp_call")
WITH_SUB_PROGRAMS.update(CUSTOM_PRIMITIVES)


def fun_operands(prim: str, params: dict, inputs: Sequence) -> list:
    """The inputs of the equation that `fun` takes (all of them)."""
    return list(inputs)


def _rule(prim: str):
    def rule(in_avals: list[AType], **params) -> list[AType]:
        fun: Program = params["fun"]
        got = fun_operands(prim, params, in_avals)
        if list(got) != list(fun.in_avals):
            raise TypeError(f"{prim}: operand types {got} differ from the function's inputs {fun.in_avals}")
        return list(fun.out_avals)
    return rule


def _impl(prim: str):
    def impl(*args: np.ndarray, **params) -> list[np.ndarray]:
        return eval_program(params["fun"], fun_operands(prim, params, args))
    return impl


for _prim in CUSTOM_PRIMITIVES:
    register(Primitive(_prim, "library", _rule(_prim), _impl(_prim)))
