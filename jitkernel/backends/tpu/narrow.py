"""float32 arithmetic that NumPy writes through float64, computed in float32 for the TPU, exactly.

NumPy computes `x.mean()` of a float32 array as `true_divide(sum, count)` with `count` a NumPy
int64: the division runs in float64 and the result is cast back to float32, and tracing records
exactly that (`convert(divide(convert_f64(s), 8.0))`). On the TPU float64 is emulated (and a
program holding float64 runs on the host, backend.py), so such a program would leave the chip.

The rewrite: `convert_f32(op(a, b))` where `op` is add, subtract, multiply or divide (or sqrt of
one operand) of float64 values that are float32 values widened (`convert` from float32) or
constants exactly representable in float32, and the float64 result has no other reader, becomes
`op` in float32. This is exact, not an approximation: rounding the exact result to float64 and
then to float32 equals rounding it to float32 directly for these operations, because float64
carries more than 2 * 24 + 2 significant bits (double rounding is innocuous when p' >= 2p + 2;
S. Figueroa, "When is double rounding innocuous?", 1995).

>>> import numpy as np, jitkernel as jk
>>> from jitkernel.passes import optimize
>>> prog = optimize(jk.make_ir(lambda x: x.mean(axis=1))(np.ones((2, 3), np.float32)))
>>> "f64" in str(prog), "f64" in str(narrow_float64(prog))
(True, False)
"""
from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np

from ...ir import Eqn, Program, Var
from ...ir.types import AType
from ...passes.control_flow import optimize_sub_programs
from ...passes.dce import dce

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_EXACT_OPS = ("add", "subtract", "multiply", "divide", "sqrt")


def narrow_float64(program: Program) -> Program:
    """`program` with every float32 operation written through float64 computed in float32."""
    program = optimize_sub_programs(program, narrow_float64)
    producers = {o: e for e in program.eqns for o in e.outputs}
    readers = Counter(v for e in program.eqns for v in e.inputs)
    readers.update(program.outvars)
    consts = dict(zip(program.constvars, program.consts))
    new_consts: dict[Var, np.ndarray] = {}
    replaced: dict[int, Eqn] = {}  # id of a convert equation -> its float32 replacement
    prelude: dict[int, list[Eqn]] = {}  # equations to emit before a replacement (f32 constants)

    def as_float32(v: Var, before: list[Eqn]) -> Var | None:
        """A float32 Var holding exactly the float64 value of `v`, or None."""
        source = producers.get(v)
        if source is not None and source.prim == "convert" and source.inputs[0].aval.dtype == _F32:
            return source.inputs[0]
        broadcast = source if source is not None and source.prim == "broadcast_in_dim" else None
        const = broadcast.inputs[0] if broadcast is not None else v
        value = consts.get(const)
        if value is None or np.asarray(value).dtype != _F64:
            return None
        value = np.asarray(value)
        if not np.array_equal(value.astype(_F32).astype(_F64), value, equal_nan=True):
            return None
        c = Var(AType(value.shape, _F32))
        new_consts[c] = value.astype(_F32)
        if broadcast is None:
            return c
        out = Var(AType(v.aval.shape, _F32))
        before.append(Eqn("broadcast_in_dim", [c], [out], dict(broadcast.params)))
        return out

    for e in program.eqns:
        if e.prim != "convert" or e.params.get("dtype") != _F32 or e.inputs[0].aval.dtype != _F64:
            continue
        op = producers.get(e.inputs[0])
        if op is None or op.prim not in _EXACT_OPS or readers[e.inputs[0]] != 1:
            continue
        before: list[Eqn] = []
        operands = [as_float32(v, before) for v in op.inputs]
        if any(o is None for o in operands):
            continue
        replaced[id(e)] = Eqn(op.prim, operands, list(e.outputs), {})
        prelude[id(e)] = before

    if not replaced:
        return program
    eqns: list[Eqn] = []
    for e in program.eqns:
        if id(e) in replaced:
            eqns += prelude[id(e)] + [replaced[id(e)]]
        else:
            eqns.append(e)
    return dce(dataclasses.replace(program, constvars=program.constvars + list(new_consts),
                                   consts=program.consts + list(new_consts.values()), eqns=eqns))
