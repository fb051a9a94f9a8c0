"""The reference interpreter: evaluates a Program equation by equation with each primitive's
NumPy implementation. It is the oracle of the tests and the `interpret` backend."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .ir import Program, primitives
from .ir.verify import check_array_matches


def eval_program(program: Program, args: Sequence[np.ndarray], check: bool = True) -> list[np.ndarray]:
    """Evaluate `program` on arrays that match its input types.

    >>> import numpy as np, jitkernel as jk
    >>> prog = jk.make_ir(lambda x: np.sin(x) * 2)(np.zeros(3, np.float32))
    >>> eval_program(prog, [np.ones(3, np.float32)])[0].dtype
    dtype('float32')
    """
    env: dict = {}
    for v, a in zip(program.invars, args):
        env[v] = np.asarray(a)
    for v, c in zip(program.constvars, program.consts):
        env[v] = c
    for eqn in program.eqns:
        outs = primitives.evaluate(eqn.prim, [env[v] for v in eqn.inputs], eqn.params)
        for o, val in zip(eqn.outputs, outs):
            val = np.asarray(val)
            if check:
                check_array_matches(val, o)
            env[o] = val
    return [env[v] for v in program.outvars]
