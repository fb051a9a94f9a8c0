"""Whether two variables of a program hold the same value without running it.

Tracing writes one NumPy expression twice as two sets of equations (`x[x > 0] = x[x > 0] ** 2`
computes `x > 0` twice, each against a constant 0 of its own); `cse` merges only equations
whose inputs are the same Vars. Rewrites that must know that two masks or two counts are one
value (passes/masked_updates.py, passes/loop_gathers.py) compare them structurally here.

>>> import numpy as np, jitkernel as jk
>>> prog = jk.make_ir(lambda x: (x > 0, x > 0))(np.ones(3))
>>> a, b = prog.outvars
>>> a is b, SameValue(prog)(a, b)
(False, True)
"""
from __future__ import annotations

import numpy as np

from ..ir import Program, Var, primitives

_DATADEP = ("datadep_call", "datadep_pure")


class SameValue:
    """Whether two variables of `program` hold the same value: the same Var, constants of one
    value, or the same pure primitive with the same params applied to inputs that hold the
    same values. Data-dependent steps and effects are never equal (two prints both print)."""

    def __init__(self, program: Program) -> None:
        self.producer = program.producers()
        self.const = {v: np.asarray(c) for v, c in zip(program.constvars, program.consts)}
        self.memo: dict[tuple[int, int], bool] = {}

    def __call__(self, a: Var, b: Var, depth: int = 0) -> bool:
        if a is b:
            return True
        if a.aval != b.aval or depth > 64:
            return False
        key = (id(a), id(b))
        if key not in self.memo:
            self.memo[key] = self._compare(a, b, depth)
        return self.memo[key]

    def _compare(self, a: Var, b: Var, depth: int) -> bool:
        if a in self.const and b in self.const:
            ca, cb = self.const[a], self.const[b]
            return ca.shape == cb.shape and ca.dtype == cb.dtype and ca.tobytes() == cb.tobytes()
        ea, eb = self.producer.get(a), self.producer.get(b)
        if ea is None or eb is None or ea.prim != eb.prim or ea.params != eb.params:
            return False
        if ea.prim in _DATADEP or primitives.get(ea.prim).effect:
            return False
        if len(ea.inputs) != len(eb.inputs) or ea.outputs.index(a) != eb.outputs.index(b):
            return False
        return all(self(x, y, depth + 1) for x, y in zip(ea.inputs, eb.inputs))
