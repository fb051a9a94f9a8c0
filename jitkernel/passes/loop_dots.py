"""Small matrix products inside loop bodies become fused reductions, so the loop runs natively.

A CPU native loop holds kernels only (`native_ok`): one `dot_general` in its body, even a dot
product of two 70-element columns (`np.dot(Q[:, k], A[:, j])` in Gram-Schmidt), made the whole
loop run as lax's Python-driven loop, one library call per step and tens of microseconds per
trip. When every product in a body is small, each is rewritten as `reduce_sum(lhs * rhs)` over
its contracting axes (operands broadcast to batch + lhs free + rhs free + contracting), which
fuses into the body's kernels; the loop is kept as it was unless the rewrite makes it native.
Products with more than `MAX_WORK` multiply-adds stay library calls: BLAS beats a fused loop
there by more than a trip's overhead.

>>> import numpy as np, jitkernel as jk
>>> def f(A):
...     s = 0.0
...     for j in range(A.shape[1]):
...         s = s + np.dot(A[:, 0], A[:, j])
...     return s
>>> from jitkernel.passes import optimize
>>> prog = dots_in_loops_as_reductions(optimize(jk.make_ir(f)(np.ones((70, 60)))))
>>> [e.prim for e in prog.eqns if e.prim == "fori_loop"] and native_ok(prog.eqns[-1])
True
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from ..ir import AType, Eqn, Program
from .control_flow import map_sub_programs
from .dot_operands import _Emitter, free_dims
from .loops import candidate_fori
from .native_loops import CONTROL_FLOW, native_ok

# Multiply-adds of one product (output size x contracted size) up to which a fused reduction
# inside a native loop is cheaper than a library call per trip (a 70-element dot product is 70).
MAX_WORK = 1 << 16

_REWRITTEN_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.int64))


def dots_in_loops_as_reductions(program: Program) -> Program:
    """Each loop or branch (recursively) that is not native only because of small products
    gets them as fused reductions; any other stays as it is."""
    return rewrite_loops_to_native(program, _small_dots_as_reductions)


def rewrite_loops_to_native(program: Program, rewrite_body: Callable[[Program], Program | None]) -> Program:
    """Each loop or branch of `program` (inner ones first) that is not native gets its bodies
    rewritten by `rewrite_body`, kept only where the loop then is native (a rewrite that does
    not make the loop native would only slow its Python-driven trips)."""
    if not any(e.prim in CONTROL_FLOW or e.prim == "scan" for e in program.eqns):
        return program
    eqns = []
    for eqn in program.eqns:
        if eqn.prim in CONTROL_FLOW or eqn.prim == "scan":
            eqn = map_sub_programs(eqn, lambda sub: rewrite_loops_to_native(sub, rewrite_body))
            if not _native(eqn):
                rewritten = map_sub_programs(eqn, rewrite_body)
                if rewritten is not None and _native(rewritten):
                    eqn = rewritten
        eqns.append(eqn)
    return dataclasses.replace(program, eqns=eqns)


def _native(eqn: Eqn) -> bool:
    if eqn.prim == "scan":  # scans_to_fori makes a native loop of a scan whose body is one
        return native_ok(candidate_fori(eqn.params["body"]))
    return native_ok(eqn)


def _small(eqn: Eqn) -> bool:
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0].aval
    if not (lhs.aval.dtype == rhs.aval.dtype == out.dtype) or out.dtype not in _REWRITTEN_DTYPES:
        return False
    return small_dot(eqn)


def small_dot(eqn: Eqn) -> bool:
    """A `dot_general` of static shapes with at most `MAX_WORK` multiply-adds (any dtype: the
    complex lowering asks too)."""
    lhs, rhs = eqn.inputs
    if not all(type(d) is int for d in lhs.aval.shape + rhs.aval.shape):
        return False
    contracted = int(np.prod([lhs.aval.shape[d] for d in eqn.params["contracting"][0]], dtype=np.int64))
    return int(np.prod(eqn.outputs[0].aval.shape, dtype=np.int64)) * contracted <= MAX_WORK


def _small_dots_as_reductions(body: Program) -> Program | None:
    """`body` with every dot_general as a reduction; None when one of them is not small."""
    dots = [e for e in body.eqns if e.prim == "dot_general"]
    if not dots:
        return body
    if not all(_small(e) for e in dots):
        return None
    em = _Emitter(body)
    for eqn in body.eqns:
        if eqn.prim == "dot_general":
            _dot_as_reduction(eqn, em)
        else:
            em.eqns.append(eqn)
    return em.rebuilt(body)


def _dot_as_reduction(eqn: Eqn, em: _Emitter) -> None:
    """Emit `out = reduce_sum(lhs * rhs)`: both operands broadcast to (batch, lhs free, rhs free,
    contracting), the product summed over the contracting axes."""
    lhs, rhs = eqn.inputs
    (lc, rc), (lb, rb) = eqn.params["contracting"], eqn.params["batch"]
    out = eqn.outputs[0].aval
    lfree, rfree = free_dims(lhs.aval.ndim, lc, lb), free_dims(rhs.aval.ndim, rc, rb)
    nb, nl, nr, nc = len(lb), len(lfree), len(rfree), len(lc)
    shape = tuple(out.shape) + tuple(lhs.aval.shape[d] for d in lc)
    full = AType(shape, out.dtype)
    contract_axes = list(range(nb + nl + nr, nb + nl + nr + nc))
    a = em.placed(lhs, list(lb) + lfree + list(lc), full, list(range(nb + nl)) + contract_axes)
    b = em.placed(rhs, list(rb) + rfree + list(rc), full, list(range(nb)) + list(range(nb + nl, nb + nl + nr))
                  + contract_axes)
    if not nc:
        em.eqns.append(Eqn("multiply", [a, b], eqn.outputs, {}))
        return
    product = em.emit("multiply", [a, b], full)
    em.eqns.append(Eqn("reduce_sum", [product], eqn.outputs, {"axes": tuple(contract_axes)}))
