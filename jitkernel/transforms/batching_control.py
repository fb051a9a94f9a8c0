"""Batching rules of control flow (cond, while_loop, fori_loop, scan) and `loop_per_example`,
the fallback that runs a step once per example in a fori_loop.

Sub-programs are batched by tracing `batch_eval` of them into a sub-trace of the active trace
(`core.trace_leaves`); the control-flow primitive is then bound with the batched sub-programs.

- cond, unbatched index: one cond whose branches are batched (an output is batched when it is
  in any branch; the other branches broadcast it). Batched index: every branch runs on the whole
  batch and each example selects its branch's result (JAX's rule), unless a branch can raise
  (an index out of bounds, a singular matrix): then each example runs its own branch in a loop,
  so that no example raises for a branch it does not take.
- while_loop: the carry's batchedness is iterated to a fixed point (a carry unbatched at the
  input but batched by the body is batched). A batched predicate runs the loop until every
  example is done; a finished example keeps its carry (select), as JAX does. A body that can
  raise then runs per example instead (a finished example's carry must not reach it again).
- fori_loop: batched bounds become that masked while loop; unbatched bounds keep the fori_loop.
- scan: batched xs and ys carry the batch axis second inside the scan (the scanned axis is
  first); the carry reaches a fixed point as in while_loop.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..ir import AType, Program, Var
from ..ir.control_flow import sub_programs
from ..ir.primitives import infer_avals, raises_on_data
from ..trace.context import current_context
from ..trace.tracer import Tracer
from . import ops
from .batching import batch_eval, broadcast_batch, register_batch
from .core import Traced, trace_leaves

_I64 = np.dtype(np.int64)

def may_raise(program: Program) -> bool:
    """Whether running `program` on some data can raise (so running it for an example that would
    not run it changes the outcome)."""
    for eqn in program.eqns:
        if raises_on_data(eqn.prim, [o.aval for o in eqn.outputs]):
            return True
        if any(may_raise(p) for p in sub_programs(eqn.params)):
            return True
    return False


def _placeholder(aval: AType, weak: Any = None) -> Tracer:
    """A Tracer that only describes an input of a sub-trace (trace_leaves reads aval and weak)."""
    return Tracer(current_context(), Var(aval), weak)


def _batched_aval(aval: AType, size: int) -> AType:
    return AType((size,) + tuple(aval.shape), aval.dtype)


def _ensure(x: Tracer, b: bool, size: int) -> Tracer:
    return x if b else broadcast_batch(x, size)


def _trace(fun: Callable[[list[Tracer]], list[Tracer]], avals: Sequence[AType], name: str) -> Traced:
    return trace_leaves(fun, [_placeholder(a) for a in avals], name)


def _inputs_reordered(traced: Traced, lead: int) -> Program:
    """The traced program with its first `lead` explicit inputs before the captured ones (a
    fori_loop body takes the index first)."""
    p, n = traced.program, traced.ncaptured
    invars = p.invars[n:n + lead] + p.invars[:n] + p.invars[n + lead:]
    return Program(invars, p.constvars, p.consts, p.eqns, p.outvars, p.name)


def batch_subprogram(program: Program, in_batched: Sequence[bool], size: int,
                     force_out: Sequence[bool] | None = None) -> tuple[Traced, list[bool]]:
    """`program` batched (inputs batched per `in_batched`) as a closed sub-program of the active
    trace; outputs in `force_out` are batched even where the program leaves them unbatched."""
    avals = [_batched_aval(a, size) if b else a for a, b in zip(program.in_avals, in_batched)]
    box: dict[str, list[bool]] = {}

    def fun(ts: list[Tracer]) -> list[Tracer]:
        outs, bouts = batch_eval(program, ts, in_batched, size)
        if force_out is not None:
            outs = [_ensure(o, b, size) if f else o for o, b, f in zip(outs, bouts, force_out)]
            bouts = [b or bool(f) for b, f in zip(bouts, force_out)]
        box["out"] = list(bouts)
        return list(outs)

    traced = _trace(fun, avals, f"vmap({program.name})")
    return traced, box["out"]


def _out_batched(program: Program, in_batched: Sequence[bool], size: int) -> list[bool]:
    return batch_subprogram(program, in_batched, size)[1]


# ----------------------------------------------------------------------------- per example


def _example(x: Tracer, i: Tracer) -> Tracer:
    """Example i of a batched value."""
    zero = ops.const(0, i.dtype)
    window = ops.bind1("dynamic_slice", x, i, *([zero] * (x.ndim - 1)), sizes=(1,) + tuple(x.shape[1:]))
    return ops.reshape(window, tuple(x.shape[1:]))


def loop_per_example(prim: str, args: Sequence[Tracer], batched: Sequence[bool], size: int,
                     params: dict) -> tuple[list[Tracer], list[bool]]:
    """`prim` applied to each example in turn, in a fori_loop writing example i of every output:
    for steps that have no batched formulation, and for cond / while_loop whose per-example
    evaluation must not run code that another example needs (it could raise)."""
    ex_avals = [AType(a.shape[1:], a.dtype) if b else a.aval for a, b in zip(args, batched)]
    out_avals = infer_avals(prim, ex_avals, params)
    init = [ops.zeros_like(_batched_aval(a, size)) for a in out_avals]
    nargs = len(args)

    def body(ts: list[Tracer]) -> list[Tracer]:
        i, xs, acc = ts[0], ts[1:1 + nargs], ts[1 + nargs:]
        per = [_example(x, i) if b else x for x, b in zip(xs, batched)]
        outs = ops.bind(prim, *per, **params)
        zero = ops.const(0, i.dtype)
        return [ops.bind1("dynamic_update_slice", a, ops.reshape(o, (1,) + tuple(o.shape)), i,
                          *([zero] * o.ndim)) for a, o in zip(acc, outs)]

    traced = _trace(body, [AType((), _I64)] + [a.aval for a in args] + [a.aval for a in init],
                    f"vmap({prim}).per_example")
    program = _inputs_reordered(traced, 1)
    lower, upper = ops.const(0, _I64), ops.const(size, _I64)
    outs = ops.bind("fori_loop", lower, upper, *traced.captured, *args, *init, body=program,
                    nconsts=traced.ncaptured + nargs)
    return outs, [True] * len(outs)


# ----------------------------------------------------------------------------- cond


def _no_captures(traced: Traced, what: str) -> None:
    if traced.ncaptured:
        raise AssertionError(f"internal error: the batched {what} reads values of the enclosing trace")


@register_batch("cond")
def _cond(args, batched, size, *, branches):
    index, operands = args[0], list(args[1:])
    ib, ob = batched[0], list(batched[1:])
    if ib:
        return _cond_batched_index(index, operands, ob, size, branches)
    results = [batch_subprogram(br, ob, size) for br in branches]
    out_b = [any(r[1][j] for r in results) for j in range(len(branches[0].outvars))]
    if any(r[1] != out_b for r in results):
        results = [batch_subprogram(br, ob, size, force_out=out_b) for br in branches]
    for traced, _ in results:
        _no_captures(traced, "cond branch")
    outs = ops.bind("cond", index, *operands, branches=tuple(t.program for t, _ in results))
    return outs, out_b


def _cond_batched_index(index, operands, ob, size, branches):
    if any(may_raise(br) for br in branches):
        return loop_per_example("cond", [index] + operands, [True] + ob, size, {"branches": branches})
    n = len(branches)
    idx = ops.bind1("minimum", ops.bind1("maximum", index, ops.scalar_like(index, 0)), ops.scalar_like(index, n - 1))
    per_branch = []
    for br in branches:
        outs, bouts = batch_eval(br, operands, ob, size)
        per_branch.append([_ensure(o, b, size) for o, b in zip(outs, bouts)])
    results = []
    for j in range(len(branches[0].outvars)):
        res = per_branch[0][j]
        for k in range(1, n):
            take = ops.bind1("equal", idx, ops.scalar_like(idx, k))
            pred = ops.broadcast_in_dim(take, tuple(res.shape), (0,))
            res = ops.select(pred, per_branch[k][j], res)
        results.append(res)
    return results, [True] * len(results)


# ----------------------------------------------------------------------------- while_loop


def _carry_fixed_point(step: Callable[[list[bool]], list[bool]], carry_b: list[bool]) -> list[bool]:
    """The least batchedness of the carry that the body keeps (at most one round per carry)."""
    carry_b = list(carry_b)
    for _ in range(len(carry_b) + 1):
        new = [a or b for a, b in zip(carry_b, step(carry_b))]
        if new == carry_b:
            return carry_b
        carry_b = new
    return carry_b


def _any(pred: Tracer) -> Tracer:
    return ops.bind1("reduce_or", pred, axes=(0,))


def _select_carry(active: Tracer, new: Sequence[Tracer], old: Sequence[Tracer]) -> list[Tracer]:
    """Per example: the body's new carry where the example is still running, its old one else."""
    return [ops.select(ops.broadcast_in_dim(active, tuple(o.shape), (0,)), n, o) for n, o in zip(new, old)]


@register_batch("while_loop")
def _while(args, batched, size, *, cond, body, cond_nconsts, body_nconsts):
    cn, bn = cond_nconsts, body_nconsts
    cc, bc, init = list(args[:cn]), list(args[cn:cn + bn]), list(args[cn + bn:])
    ccb, bcb, ib = list(batched[:cn]), list(batched[cn:cn + bn]), list(batched[cn + bn:])
    carry_b = _carry_fixed_point(lambda cb: _out_batched(body, bcb + cb, size), ib)
    pred_b = _out_batched(cond, ccb + carry_b, size)[0]
    if pred_b:
        if may_raise(body) or may_raise(cond):
            params = {"cond": cond, "body": body, "cond_nconsts": cn, "body_nconsts": bn}
            return loop_per_example("while_loop", args, batched, size, params)
        return _masked_while(cond, body, cc, ccb, bc, bcb, init, ib, size)
    cond_t, _ = batch_subprogram(cond, ccb + carry_b, size)
    body_t, _ = batch_subprogram(body, bcb + carry_b, size, force_out=carry_b)
    init = [_ensure(x, b, size) if c else x for x, b, c in zip(init, ib, carry_b)]
    outs = ops.bind("while_loop", *cond_t.captured, *cc, *body_t.captured, *bc, *init, cond=cond_t.program,
                    body=body_t.program, cond_nconsts=cond_t.ncaptured + cn, body_nconsts=body_t.ncaptured + bn)
    return outs, carry_b


def _masked_while(cond, body, cc, ccb, bc, bcb, init, ib, size):
    """A while loop with a batched predicate: it runs while any example runs; every carry is
    batched, and a finished example keeps its carry."""
    init = [_ensure(x, b, size) for x, b in zip(init, ib)]
    ncarry, ncc, nbc = len(init), len(cc), len(bc)
    all_b = [True] * ncarry

    def pred_of(consts: list[Tracer], carry: list[Tracer]) -> Tracer:
        (p,), (pb,) = batch_eval(cond, consts + carry, ccb + all_b, size)
        return _ensure(p, pb, size)

    def new_cond(ts: list[Tracer]) -> list[Tracer]:
        return [_any(pred_of(ts[:ncc], ts[ncc:]))]

    def new_body(ts: list[Tracer]) -> list[Tracer]:
        c_consts, b_consts, carry = ts[:ncc], ts[ncc:ncc + nbc], ts[ncc + nbc:]
        active = pred_of(c_consts, carry)
        outs, bouts = batch_eval(body, b_consts + carry, bcb + all_b, size)
        return _select_carry(active, [_ensure(o, b, size) for o, b in zip(outs, bouts)], carry)

    carry_avals = [x.aval for x in init]
    cond_t = _trace(new_cond, [x.aval for x in cc] + carry_avals, f"vmap({cond.name})")
    body_t = _trace(new_body, [x.aval for x in cc + bc] + carry_avals, f"vmap({body.name})")
    outs = ops.bind("while_loop", *cond_t.captured, *cc, *body_t.captured, *cc, *bc, *init,
                    cond=cond_t.program, body=body_t.program, cond_nconsts=cond_t.ncaptured + ncc,
                    body_nconsts=body_t.ncaptured + ncc + nbc)
    return outs, all_b


# ----------------------------------------------------------------------------- fori_loop


@register_batch("fori_loop")
def _fori(args, batched, size, *, body, nconsts):
    lower, upper = args[0], args[1]
    consts, init = list(args[2:2 + nconsts]), list(args[2 + nconsts:])
    lb, ub = batched[0], batched[1]
    cb, ib = list(batched[2:2 + nconsts]), list(batched[2 + nconsts:])
    if lb or ub:
        if may_raise(body):
            return loop_per_example("fori_loop", args, batched, size, {"body": body, "nconsts": nconsts})
        return _fori_batched_bounds(lower, lb, upper, ub, consts, cb, init, ib, body, size)
    carry_b = _carry_fixed_point(lambda c: _out_batched(body, [False] + cb + c, size), ib)
    body_t, _ = batch_subprogram(body, [False] + cb + carry_b, size, force_out=carry_b)
    init = [_ensure(x, b, size) if c else x for x, b, c in zip(init, ib, carry_b)]
    outs = ops.bind("fori_loop", lower, upper, *body_t.captured, *consts, *init, body=_inputs_reordered(body_t, 1),
                    nconsts=body_t.ncaptured + nconsts)
    return outs, carry_b


def _fori_batched_bounds(lower, lb, upper, ub, consts, cb, init, ib, body, size):
    """fori_loop with per-example bounds: a while loop over (i, carry) per example, running
    while any example has i < upper; an example past its upper bound keeps its carry."""
    i0, upper = _ensure(lower, lb, size), _ensure(upper, ub, size)
    init = [_ensure(x, b, size) for x, b in zip(init, ib)]
    ncarry, nc = len(init), len(consts)
    all_b = [True] * ncarry

    def new_cond(ts: list[Tracer]) -> list[Tracer]:
        up, i = ts[0], ts[1]
        return [_any(ops.bind1("less", i, up))]

    def new_body(ts: list[Tracer]) -> list[Tracer]:
        up, cs, i, carry = ts[0], ts[1:1 + nc], ts[1 + nc], ts[2 + nc:]
        active = ops.bind1("less", i, up)
        outs, bouts = batch_eval(body, [i] + cs + carry, [True] + cb + all_b, size)
        new = _select_carry(active, [_ensure(o, b, size) for o, b in zip(outs, bouts)], carry)
        return [ops.add(i, ops.scalar_like(i, 1))] + new

    carry_avals = [i0.aval] + [x.aval for x in init]
    cond_t = _trace(new_cond, [upper.aval] + carry_avals, f"vmap({body.name}).cond")
    body_t = _trace(new_body, [upper.aval] + [c.aval for c in consts] + carry_avals, f"vmap({body.name})")
    outs = ops.bind("while_loop", *cond_t.captured, upper, *body_t.captured, upper, *consts, i0, *init,
                    cond=cond_t.program, body=body_t.program, cond_nconsts=cond_t.ncaptured + 1,
                    body_nconsts=body_t.ncaptured + 1 + nc)
    return outs[1:], all_b


# ----------------------------------------------------------------------------- scan


@register_batch("scan")
def _scan(args, batched, size, *, body, nconsts, ncarry, length, reverse):
    consts, init, xs = list(args[:nconsts]), list(args[nconsts:nconsts + ncarry]), list(args[nconsts + ncarry:])
    cb, ib, xb = (list(batched[:nconsts]), list(batched[nconsts:nconsts + ncarry]),
                  list(batched[nconsts + ncarry:]))
    carry_b = _carry_fixed_point(lambda c: _out_batched(body, cb + c + xb, size)[:ncarry], ib)
    nys = len(body.outvars) - ncarry
    body_t, out_b = batch_subprogram(body, cb + carry_b + xb, size, force_out=carry_b + [False] * nys)
    init = [_ensure(x, b, size) if c else x for x, b, c in zip(init, ib, carry_b)]
    xs = [ops.moveaxis(x, 0, 1) if b else x for x, b in zip(xs, xb)]  # the scanned axis first
    outs = ops.bind("scan", *body_t.captured, *consts, *init, *xs, body=body_t.program,
                    nconsts=body_t.ncaptured + nconsts, ncarry=ncarry, length=length, reverse=reverse)
    ys = [ops.moveaxis(y, 1, 0) if b else y for y, b in zip(outs[ncarry:], out_b[ncarry:])]
    return list(outs[:ncarry]) + ys, carry_b + out_b[ncarry:]
