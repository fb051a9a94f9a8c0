"""The evaluator behind the reference interpreter (jitkernel/interpreter.py): runs a Program
equation by equation with each primitive's NumPy implementation. It lives below the primitive
definitions whose reference implementations run sub-programs (control flow, custom derivatives),
so they import it directly, and it imports none of them: it reads the registry only."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import IRVerificationError
from . import primitives
from .program import Program, Var


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
    padded: dict = {}  # pad_fill output var -> (mask, x): a value of symbolic length and its padding
    for eqn in program.eqns:
        if eqn.prim == "pad_fill":
            padded[eqn.outputs[0]] = (env[eqn.inputs[0]], env[eqn.inputs[1]])
        exact = _sum_of_valid_prefix(eqn, padded) if eqn.prim == "reduce_sum" else None
        outs = exact if exact is not None else primitives.evaluate(eqn.prim, [env[v] for v in eqn.inputs], eqn.params)
        for o, val in zip(eqn.outputs, outs):
            val = np.asarray(val)
            if check:
                check_array_matches(val, o)
            env[o] = val
    return [env[v] for v in program.outvars]


def check_array_matches(value: np.ndarray, v: Var) -> None:
    if tuple(value.shape) != v.aval.shape or value.dtype != v.aval.dtype:
        raise IRVerificationError(f"value {value.dtype}{list(value.shape)} does not match {v.aval}")


def _sum_of_valid_prefix(eqn, padded: dict) -> list[np.ndarray] | None:
    """NumPy's sum of `x[:V]` for a sum over a padded value `pad_fill(index < V, x, 0)` (a slice
    of symbolic length, passes/lower_symbolic.py): NumPy sums the V elements themselves, and
    its pairwise grouping of V elements is not that of the padded length with zeros appended
    (x[:i + 200].sum() in a loop differed in the last bits). None when the mask is not a box of
    prefixes along the reduced axes (the padded sum is then the program's own meaning)."""
    found = padded.get(eqn.inputs[0])
    if found is None:
        return None
    mask, x = found
    if x.dtype.kind not in "fc":
        return None  # integer sums are exact in any order
    box = _prefix_box(np.broadcast_to(mask, x.shape), eqn.params["axes"])
    if box is None:
        return None
    return primitives.evaluate("reduce_sum", [x[box]], eqn.params)


def _prefix_box(mask: np.ndarray, axes: tuple[int, ...]) -> tuple | None:
    """The index `x[..., :V, ...]` (prefixes along the reduced axes) that `mask` is exactly, or None."""
    box = [slice(None)] * mask.ndim
    for ax in axes:
        along = mask.any(axis=tuple(a for a in range(mask.ndim) if a != ax))
        length = int(along.sum())
        if not along[:length].all():
            return None
        box[ax] = slice(0, length)
    expect = np.zeros(mask.shape, bool)
    expect[tuple(box)] = True
    return tuple(box) if np.array_equal(mask, expect) else None
