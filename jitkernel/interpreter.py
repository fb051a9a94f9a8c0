"""The reference interpreter: evaluates a Program equation by equation with each primitive's
NumPy implementation. It is the oracle of the tests and the `interpret` backend.

The evaluator itself is `ir/evaluate.py`, below the primitive definitions: control flow and
custom derivatives run their sub-programs with it, and it reads only the registry.

>>> import numpy as np, jitkernel as jk
>>> prog = jk.make_ir(lambda x: np.cos(x) + 1)(np.zeros(2, np.float64))
>>> eval_program(prog, [np.zeros(2)])[0].tolist()
[2.0, 2.0]
"""
from __future__ import annotations

from .ir.evaluate import eval_program

__all__ = ["eval_program"]
