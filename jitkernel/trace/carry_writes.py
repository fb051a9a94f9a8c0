"""In-place writes a jk.lax sub-function makes into its own inputs, carried to the caller's arrays.

Python's reference for a loop is `val = init; for i in range(n): val = body(i, val)`: the body
is handed the caller's array itself, so a body that writes into its carry and returns it
(`x[0] += 1; return x`, or `a = step(a)` with a helper that writes its argument) changes the
caller's array, and the loop returns that very array. A branch of `cond` likewise writes into
the operand it was handed. A traced sub-function gets a fresh input per leaf, so such a write
would stay inside the loop or branch and the caller's array would keep its old value (a silent
wrong argument). `InputWatch` notices the write (the input's value moved while the sub-function
ran) and jk.lax writes the statement's result back into the array the caller passed
(`init[...] = result`), returning that array itself where the sub-function returned its input.

>>> import numpy as np, jitkernel as jk
>>> def body(i, x):
...     x[0] += 1
...     return x
>>> a = np.zeros(3)
>>> _ = jk.jit(lambda a, n: jk.lax.fori_loop(0, n, body, a))(a, 4)
>>> a
array([4., 0., 0.])
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import UnsupportedOperationError
from .tracer import Tracer


def writable_array(x: Any) -> bool:
    """A traced array that can be written in place: not a Python scalar (weak) and not a NumPy
    scalar (a 0-d result of a ufunc or an index), which `x += 1` rebinds."""
    return isinstance(x, Tracer) and x.weak is None and not (x.ndim == 0 and x.scalar)


def seen_elsewhere(x: Any) -> bool:
    """Whether the array from before the statement can be seen after it: an argument (the
    caller sees it), a view or an array with views or writes. A fresh array (`_mem` None) that
    the statement alone holds cannot: a write into it that is then lost is lost in Python too.
    Nor can a NumPy array: a constant of the trace, such as the zeros autograph carries for a
    name the loop binds first (NPBench's correlation writes one and rebinds it)."""
    return isinstance(x, Tracer) and x._mem is not None


class InputWatch:
    """The explicit inputs of one sub-trace (carry leaves, branch operands) and the value each
    held when the sub-function started: after it ran, `written()` tells which it wrote in place."""

    def __init__(self, inputs: Sequence[Tracer]) -> None:
        self.inputs = list(inputs)
        self.starts = [t.ir_var for t in self.inputs]

    def written(self) -> list[int]:
        return [k for k, (t, v) in enumerate(zip(self.inputs, self.starts)) if t.ir_var is not v]


def write_back_carry(who: str, fun_name: str, paths: Sequence[str], init_leaves: Sequence[Any],
                     results: list[Any], watch: InputWatch, out_leaves: Sequence[Any]) -> list[Any]:
    """The loop's result leaves, where the body returned its own carry input: the caller's array
    itself, with the loop's result written into it if the body wrote that input in place (as
    Python's loop leaves it). A written input the body does not return is refused when the
    caller's array can be seen after the loop: Python writes it on the first trip only."""
    written = set(watch.written())
    results = list(results)
    for k, (init, inp) in enumerate(zip(init_leaves, watch.inputs)):
        if out_leaves[k] is inp and writable_array(init):
            if k in written:
                init[...] = results[k]
            results[k] = init
        elif k in written and seen_elsewhere(init):
            _refuse_lost_write(who, fun_name, paths[k], init,
                               f"returns a new array as {paths[k]}, so only the first trip would write the "
                               "array the caller passed")
    return results


def written_operands(watches: Sequence[InputWatch]) -> list[int]:
    """The operand leaves some branch wrote in place, in order."""
    return sorted({k for w in watches for k in w.written()})


def write_back_operands(who: str, paths: Sequence[str], op_leaves: Sequence[Any], written: Sequence[int],
                        finals: Sequence[Any], results: list[Any], watches: Sequence[InputWatch],
                        branch_leaves: Sequence[Sequence[Any]]) -> list[Any]:
    """After a `cond` whose branches wrote operands `written` in place (their values at the end
    of the taken branch are `finals`): write them into the caller's arrays, and return the
    caller's array itself for a result every branch returned as that very operand."""
    results = list(results)
    for k, final in zip(written, finals):
        op = op_leaves[k]
        if not writable_array(op):
            _refuse_lost_write(who, "a branch", paths[k], op, "is not an array jitkernel traces")
        op[...] = final
    for j in range(len(results)):
        for k in written:
            if all(leaves[j] is w.inputs[k] for leaves, w in zip(branch_leaves, watches)):
                results[j] = op_leaves[k]
                break
    return results


def _refuse_lost_write(who: str, fun_name: str, path: str, init: Any, why: str) -> None:
    kind = "a NumPy array the trace holds as a constant" if isinstance(init, np.ndarray) else \
        "an array the caller or another name sees"
    raise UnsupportedOperationError(
        f"{who}: {fun_name} writes in place into {path}, {kind}, and {why}; return the written array itself "
        "(`x[...] = ...; return x`), or write into a copy (`x = x.copy()` first)")


__all__ = ["InputWatch", "seen_elsewhere", "writable_array", "write_back_carry", "write_back_operands",
           "written_operands"]
