"""`dot_general` in the form its library step runs best, without changing a value.

Two rewrites, both common in transformed programs (the reverse rule of a matmul contracts a
transposed operand; a matmul under `vmap` of a per-example gradient becomes an outer product)
and in NumPy programs as written (`x.T @ y`, `np.outer`, `a[:, :, None] @ b[:, None, :]`):

1. **Transposed operands fold into the dimension numbers.** `dot_general(transpose(x, p), y)`
   contracts `x` directly, with its contracting and batch dimensions renamed through `p`. The
   library step hands BLAS a transposed view (as NumPy does for `x.T @ y`) instead of a copy
   that a kernel wrote first. Done only when `p` keeps the order of the free dimensions, so
   the result's layout is unchanged.
2. **Products with nothing to sum become multiplies.** A `dot_general` of real floats whose
   contracting dimensions all have size 1 (or that has none) computes `lhs * rhs` per output
   element; as a broadcast multiply it fuses into one kernel that writes the result, instead of
   a batched GEMM with k=1 (about twice as slow here for the per-example gradient of a dense
   layer). BLAS computes `0 + a*b`, so the multiply adds `+0.0`: `-0.0` becomes `+0.0` exactly
   as in `np.matmul`, every other value (inf, NaN included) is unchanged.

>>> import numpy as np, jitkernel as jk
>>> from jitkernel.passes import optimize
>>> prog = jk.make_ir(lambda x, y: x.T @ y)(np.ones((3, 2)), np.ones((3, 4)))
>>> [e.prim for e in optimize(prog).eqns]
['dot_general']
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from ..ir import AType, Eqn, Program, Var

_REAL_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def free_dims(ndim: int, contracting: tuple, batch: tuple) -> list[int]:
    return [d for d in range(ndim) if d not in contracting and d not in batch]


def _fold_transpose(operand: Var, contracting: tuple, batch: tuple, producer: dict[Var, Eqn]
                    ) -> tuple[Var, tuple, tuple] | None:
    """(the transpose's input, contracting, batch renamed into its dimensions) when `operand` is
    a transpose whose free dimensions stay in order, else None."""
    eqn = producer.get(operand)
    if eqn is None or eqn.prim != "transpose":
        return None
    perm = eqn.params["permutation"]  # operand dim i is input dim perm[i]
    free = [perm[d] for d in free_dims(len(perm), contracting, batch)]
    if free != sorted(free):
        return None
    return eqn.inputs[0], tuple(perm[d] for d in contracting), tuple(perm[d] for d in batch)


def fold_operand_transposes(eqn: Eqn, producer: dict[Var, Eqn]) -> Eqn:
    (lc, rc), (lb, rb) = eqn.params["contracting"], eqn.params["batch"]
    lhs, rhs = eqn.inputs
    folded = _fold_transpose(lhs, lc, lb, producer)
    if folded is not None:
        lhs, lc, lb = folded
    folded = _fold_transpose(rhs, rc, rb, producer)
    if folded is not None:
        rhs, rc, rb = folded
    if lhs is eqn.inputs[0] and rhs is eqn.inputs[1]:
        return eqn
    return Eqn("dot_general", [lhs, rhs], eqn.outputs, {"contracting": (lc, rc), "batch": (lb, rb)})


def _is_outer_product(eqn: Eqn) -> bool:
    lhs, rhs = eqn.inputs
    (lc, _), _ = eqn.params["contracting"], eqn.params["batch"]
    if lhs.aval.dtype not in _REAL_FLOATS or rhs.aval.dtype != lhs.aval.dtype:
        return False
    return all(type(lhs.aval.shape[d]) is int and lhs.aval.shape[d] == 1 for d in lc)


class _Emitter:
    """Appends equations (and constants) while a pass rebuilds a program."""

    def __init__(self, program: Program) -> None:
        self.eqns: list[Eqn] = []
        self.constvars, self.consts = list(program.constvars), list(program.consts)

    def emit(self, prim: str, inputs: list[Var], aval: AType, **params) -> Var:
        out = Var(aval)
        self.eqns.append(Eqn(prim, inputs, [out], params))
        return out

    def const(self, value: np.ndarray) -> Var:
        v = Var(AType(value.shape, value.dtype))
        self.constvars.append(v)
        self.consts.append(value)
        return v

    def placed(self, x: Var, order: list[int], out: AType, dims: list[int]) -> Var:
        """`x`'s dimensions `order` (the rest have size 1 and are dropped), broadcast into `out`
        at `dims`."""
        return placed(x, order, out.shape, dims, lambda prim, v, out_shape, **p: self.emit(prim, [v], AType(out_shape, v.aval.dtype), **p))

    def rebuilt(self, program: Program) -> Program:
        """`program` with the emitted equations and constants, its bookkeeping kept."""
        return dataclasses.replace(program, eqns=self.eqns, constvars=self.constvars, consts=self.consts)


Emit = Callable[..., Var]  # emit(prim, operand, result shape, **params) -> the result


def placed(x: Var, order: list[int], shape: tuple, dims: list[int], emit: Emit) -> Var:
    """`x`'s dimensions `order` (the rest have size 1 and are dropped), broadcast into `shape`
    at `dims`: the operand of a product written as a multiply and a reduction, through `emit`
    (the pass rebuilding the program)."""
    if order != sorted(order):
        perm = tuple(order) + tuple(d for d in range(x.aval.ndim) if d not in order)
        x = emit("transpose", x, tuple(x.aval.shape[d] for d in perm), permutation=perm)
        order = list(range(len(order)))
    kept = tuple(x.aval.shape[d] for d in order)
    if kept != tuple(x.aval.shape):
        x = emit("reshape", x, kept, new_shape=kept)
    if tuple(x.aval.shape) == tuple(shape) and dims == list(range(len(shape))):
        return x
    return emit("broadcast_in_dim", x, tuple(shape), shape=tuple(shape), broadcast_dimensions=tuple(dims))


def outer_product_as_multiply(eqn: Eqn, em: _Emitter) -> None:
    """Emit `out = broadcast(lhs) * broadcast(rhs) + 0.0` for an `_is_outer_product` equation."""
    lhs, rhs = eqn.inputs
    (lc, rc), (lb, rb) = eqn.params["contracting"], eqn.params["batch"]
    out = eqn.outputs[0].aval
    lfree = free_dims(lhs.aval.ndim, lc, lb)
    rfree = free_dims(rhs.aval.ndim, rc, rb)
    nb, nl = len(lb), len(lfree)
    a = em.placed(lhs, list(lb) + lfree, out, list(range(nb + nl)))
    b = em.placed(rhs, list(rb) + rfree, out, list(range(nb)) + list(range(nb + nl, out.ndim)))
    product = em.emit("multiply", [a, b], out)
    zero = em.const(np.zeros((), out.dtype))
    if out.shape != ():
        zero = em.emit("broadcast_in_dim", [zero], out, shape=tuple(out.shape), broadcast_dimensions=())
    em.eqns.append(Eqn("add", [product, zero], eqn.outputs, {}))


def dot_operands(program: Program) -> Program:
    """Fold operand transposes into every dot_general and turn outer products into multiplies."""
    if not any(e.prim == "dot_general" for e in program.eqns):
        return program
    producer: dict[Var, Eqn] = {}
    em = _Emitter(program)
    for eqn in program.eqns:
        if eqn.prim == "dot_general":
            eqn = fold_operand_transposes(eqn, producer)
            if _is_outer_product(eqn):
                outer_product_as_multiply(eqn, em)
                continue
        em.eqns.append(eqn)
        for o in eqn.outputs:
            producer[o] = eqn
    return em.rebuilt(program)
