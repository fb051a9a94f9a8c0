"""Differentiation rules of the control-flow primitives: `cond`, `scan`, `fori_loop` (both modes)
and `while_loop` (forward mode; reverse mode raises JAX's error). See docs/transformations.md,
"Control flow under grad".

Every rule builds new sub-programs by tracing a Python function with `core.trace_leaves` inside
the active trace; that function runs `ad.jvp_eval` / `ad.vjp_eval` on the primitive's own
sub-program, so a body's equations get their rules exactly as top-level ones do, and the new
control-flow equation is bound with the new sub-programs. Values the traced function reads from
the enclosing trace are *captured*: they become extra operands (consts) of the new equation.

- cond: tangents (cotangents) flow through the branch the index chooses; each new branch
  computes its own primal outputs and tangents (or recomputes its forward pass and applies its
  reverse rules). The index is an integer: no derivative.
- scan: forward mode is a scan carrying tangents (the set of carries with a tangent is found by
  a fixed point: a carry whose tangent is zero at entry may get one from a const). Reverse mode
  is a forward scan that stacks the carry entering every step, then a scan in the opposite
  direction that recomputes each step's forward pass from the stacked carry and applies the
  body's reverse rules; cotangents of consts are summed in its carry.
- fori_loop: forward mode like scan; reverse mode when the bounds are constants of the program
  (the trip count is static): the loop is differentiated as a scan over `arange(lower, upper)`.
  Dynamic bounds raise JAX's error, as does reverse mode of a while_loop.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import AType, Program, Var
from ..ir import primitives as _prims
from ..ir.debug_prims import without_effects
from ..trace.tracer import Tracer
from . import ops
from .ad import VJP_WANTS_ACTIVE, differentiable, jvp_eval, register_jvp, register_vjp, vjp_eval
from .core import bind_program, trace_leaves

WHILE_REVERSE_MESSAGE = ("Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
                         "dynamic start/stop values. Try using lax.scan, or using fori_loop with static start/stop.")


class LoopGradientError(UnsupportedOperationError, ValueError):
    """Reverse-mode differentiation of a loop whose trip count is not known at trace time
    (JAX raises ValueError with the same message)."""


# ----------------------------------------------------------------------------- helpers


class _Input:
    """The type of one input of a sub-program being traced (what trace_leaves reads)."""

    def __init__(self, aval: AType) -> None:
        self.aval = aval
        self.weak = None


def trace_sub(fun: Callable[[list[Tracer]], list[Tracer]], avals: Sequence[AType], name: str
              ) -> tuple[Program, list[Tracer]]:
    """`fun` traced into a closed sub-program of the active trace: (program, captured), the
    program's inputs being the captured values (Tracers of the active trace) then one per aval."""
    traced = trace_leaves(lambda ins: list(fun(list(ins))), [_Input(a) for a in avals], name)
    return traced.program, list(traced.captured)


def _or_zeros(t: Tracer | None, aval: AType) -> Tracer:
    return t if t is not None else ops.zeros_like(aval)


def _take(seq: Sequence[Any], sizes: Sequence[int]) -> list[list[Any]]:
    """`seq` cut into consecutive pieces of the given sizes."""
    out, k = [], 0
    for n in sizes:
        out.append(list(seq[k:k + n]))
        k += n
    if k != len(seq):
        raise AssertionError(f"internal error: {len(seq)} values cut into pieces of {list(sizes)}")
    return out


def _place(n: int, positions: Sequence[int], values: Sequence[Any]) -> list[Any]:
    out: list[Any] = [None] * n
    for k, v in zip(positions, values):
        out[k] = v
    return out


def _index_first(program: Program, ncaptured: int) -> Program:
    """A traced fori_loop body has inputs [captured, i, ...]; the IR wants [i, captured, ...]."""
    inv = program.invars
    program.invars = inv[ncaptured:ncaptured + 1] + inv[:ncaptured] + inv[ncaptured + 1:]
    return program


# ----------------------------------------------------------------------------- cond


def _unify_branches(traced: list[tuple[Program, list[Tracer]]]) -> tuple[tuple[Program, ...], list[Tracer]]:
    """Branches traced separately capture different values; cond wants one operand list: every
    branch takes its explicit inputs, then every value any branch captured (unused ones get a
    fresh variable)."""
    all_captured: list[Tracer] = []
    seen: set[Var] = set()
    for _, caps in traced:
        for c in caps:
            if c.ir_var not in seen:
                seen.add(c.ir_var)
                all_captured.append(c)
    programs = []
    for prog, caps in traced:
        n = len(caps)
        mine = {c.ir_var: v for c, v in zip(caps, prog.invars[:n])}
        cap_vars = [mine[c.ir_var] if c.ir_var in mine else Var(c.aval) for c in all_captured]
        programs.append(Program(prog.invars[n:] + cap_vars, prog.constvars, prog.consts, prog.eqns,
                                prog.outvars, prog.name))
    return tuple(programs), all_captured


@register_jvp("cond")
def _cond_jvp(primals, tangents, *, branches):
    index, operands, tans = primals[0], list(primals[1:]), list(tangents[1:])
    nz = [k for k, t in enumerate(tans) if t is not None]
    out_avals = branches[0].out_avals
    diff_out = [j for j, a in enumerate(out_avals) if differentiable(a)]
    in_avals = [o.aval for o in operands] + [tans[k].aval for k in nz]

    def branch_jvp(program: Program) -> Callable:
        def fun(ins: list[Tracer]) -> list[Tracer]:
            ps, ts = _take(ins, [len(operands), len(nz)])
            outs, touts = jvp_eval(program, ps, _place(len(operands), nz, ts))
            return list(outs) + [_or_zeros(touts[j], out_avals[j]) for j in diff_out]
        return fun

    traced = [trace_sub(branch_jvp(b), in_avals, f"{b.name}.jvp") for b in branches]
    new_branches, captured = _unify_branches(traced)
    outs = ops.bind("cond", index, *operands, *[tans[k] for k in nz], *captured, branches=new_branches)
    n = len(out_avals)
    return outs[:n], _place(n, diff_out, outs[n:])


@register_vjp("cond")
def _cond_vjp(cts, primals, outs, *, branches, active=None):
    index, operands = primals[0], list(primals[1:])
    wanted = list(active[1:]) if active is not None else [True] * len(operands)
    nzc = [j for j, c in enumerate(cts) if c is not None]
    diff_in = [k for k, o in enumerate(operands) if differentiable(o.aval) and wanted[k]]
    if not diff_in:
        return [None] * len(primals)
    in_avals = [o.aval for o in operands] + [cts[j].aval for j in nzc]
    op_avals = [o.aval for o in operands]
    branches = tuple(without_effects(b) for b in branches)  # recomputed: the forward pass printed

    def branch_vjp(program: Program) -> Callable:
        def fun(ins: list[Tracer]) -> list[Tracer]:
            ps, cs = _take(ins, [len(operands), len(nzc)])
            _, backward = vjp_eval(program, ps, [k in diff_in for k in range(len(op_avals))])
            cin = backward(_place(len(program.outvars), nzc, cs))
            return [_or_zeros(cin[k], op_avals[k]) for k in diff_in]
        return fun

    traced = [trace_sub(branch_vjp(b), in_avals, f"{b.name}.vjp") for b in branches]
    new_branches, captured = _unify_branches(traced)
    res = ops.bind("cond", index, *operands, *[cts[j] for j in nzc], *captured, branches=new_branches)
    return [None] + _place(len(operands), diff_in, res)


# ----------------------------------------------------------------------------- scan


def _fixed_point(trace: Callable[[list[int]], tuple[Any, set[int]]], start: set[int]) -> Any:
    """Trace a loop body with tangents for the carries in `start`, add the carries whose
    tangent the body makes nonzero, until the set is stable; returns the last trace."""
    nz = set(start)
    while True:
        result, carry_out_nz = trace(sorted(nz))
        if carry_out_nz <= nz:
            return result
        nz |= carry_out_nz


@register_jvp("scan")
def _scan_jvp(primals, tangents, *, body, nconsts, ncarry, length, reverse):
    body = without_effects(body)  # the forward pass printed already: no print when recomputing it
    nx = len(primals) - nconsts - ncarry
    consts, init, xs = _take(primals, [nconsts, ncarry, nx])
    tc, ti, tx = _take(tangents, [nconsts, ncarry, nx])
    nz_c = [k for k, t in enumerate(tc) if t is not None]
    nz_x = [k for k, t in enumerate(tx) if t is not None]
    carry_avals = [a.aval for a in init]
    ny = len(body.outvars) - ncarry

    def trace(nz_carry: list[int]):
        box: dict[str, Any] = {}

        def fun(ins: list[Tracer]) -> list[Tracer]:
            c, tcs, carry, tcarry, x, txs = _take(ins, [nconsts, len(nz_c), ncarry, len(nz_carry), nx, len(nz_x)])
            t_in = _place(nconsts, nz_c, tcs) + _place(ncarry, nz_carry, tcarry) + _place(nx, nz_x, txs)
            outs, touts = jvp_eval(body, c + carry + x, t_in)
            box["carry_nz"] = {k for k in range(ncarry) if touts[k] is not None}
            box["ys_nz"] = ys_nz = [j for j in range(ny) if touts[ncarry + j] is not None]
            return (list(outs[:ncarry]) + [_or_zeros(touts[k], carry_avals[k]) for k in nz_carry]
                    + list(outs[ncarry:]) + [touts[ncarry + j] for j in ys_nz])

        avals = ([a.aval for a in consts] + [tc[k].aval for k in nz_c] + carry_avals
                 + [carry_avals[k] for k in nz_carry]
                 + [AType(a.aval.shape[1:], a.dtype) for a in xs] + [AType(tx[k].aval.shape[1:], tx[k].dtype) for k in nz_x])
        prog, caps = trace_sub(fun, avals, f"{body.name}.jvp")
        return (prog, caps, nz_carry, box["ys_nz"]), box["carry_nz"]

    prog, caps, nz_carry, ys_nz = _fixed_point(trace, {k for k, t in enumerate(ti) if t is not None})
    operands = (caps + consts + [tc[k] for k in nz_c] + init + [_or_zeros(ti[k], carry_avals[k]) for k in nz_carry]
                + xs + [tx[k] for k in nz_x])
    outs = ops.bind("scan", *operands, body=prog, nconsts=len(caps) + nconsts + len(nz_c),
                    ncarry=ncarry + len(nz_carry), length=length, reverse=reverse)
    carry_out, tcarry_out, ys, tys = _take(outs, [ncarry, len(nz_carry), ny, len(ys_nz)])
    return carry_out + ys, _place(ncarry, nz_carry, tcarry_out) + _place(ny, ys_nz, tys)


def scan_transpose(cts: Sequence[Tracer | None], primals: Sequence[Tracer], body: Program, nconsts: int,
                   ncarry: int, length: int, reverse: bool, active: Sequence[bool] | None = None
                   ) -> list[Tracer | None]:
    """The cotangents of a scan's inputs `[*consts, *init, *xs]` given those of its outputs
    `[*carry, *ys]`: a forward scan stacking the carry entering each step, then a scan in the
    opposite direction applying the body's reverse rules at each step. `active` (per input):
    whether its cotangent is wanted; consts and xs that are not get none (every float carry
    keeps one: a carry that starts constant may depend on a wanted const later)."""
    body = without_effects(body)  # the forward pass printed already: no print when recomputing it
    nx = len(primals) - nconsts - ncarry
    consts, init, xs = _take(primals, [nconsts, ncarry, nx])
    wanted = list(active) if active is not None else [True] * len(primals)
    ny = len(body.outvars) - ncarry
    ct_carry, ct_ys = list(cts[:ncarry]), list(cts[ncarry:])
    diff_c = [k for k, a in enumerate(consts) if differentiable(a.aval) and wanted[k]]
    diff_carry = [k for k, a in enumerate(init) if differentiable(a.aval)]
    diff_x = [k for k, a in enumerate(xs) if differentiable(a.aval) and wanted[nconsts + ncarry + k]]
    nz_y = [j for j, c in enumerate(ct_ys) if c is not None]
    carry_avals = [a.aval for a in init]
    const_avals = [a.aval for a in consts]
    slice_avals = [AType(a.aval.shape[1:], a.dtype) for a in xs]
    if length == 0:
        return ([None] * nconsts + [_or_zeros(ct_carry[k], carry_avals[k]) if k in diff_carry else None
                                    for k in range(ncarry)]
                + [ops.zeros_like(a.aval) if k in diff_x else None for k, a in enumerate(xs)])

    # 1. the carry entering every step, stacked (an extra y of a copy of the forward scan)
    stacked: list[Tracer] = []
    if ncarry:
        def forward(ins: list[Tracer]) -> list[Tracer]:
            outs = bind_program(body, ins)
            return list(outs) + list(ins[nconsts:nconsts + ncarry])
        fprog, fcaps = trace_sub(forward, const_avals + carry_avals + slice_avals, f"{body.name}.stack")
        fouts = ops.bind("scan", *fcaps, *consts, *init, *xs, body=fprog, nconsts=len(fcaps) + nconsts,
                         ncarry=ncarry, length=length, reverse=reverse)
        stacked = list(fouts[ncarry + ny:])

    # 2. the backward scan: carry = (cotangents of the carry, sums of the consts' cotangents)
    y_avals = body.out_avals[ncarry:]

    def backward_step(ins: list[Tracer]) -> list[Tracer]:
        c, ctc, acc, x, carry_t, cty = _take(ins, [nconsts, len(diff_carry), len(diff_c), nx, ncarry, len(nz_y)])
        body_active = ([k in diff_c for k in range(nconsts)] + [differentiable(a) for a in carry_avals]
                       + [k in diff_x for k in range(nx)])
        _, back = vjp_eval(body, c + carry_t + x, body_active)
        cin = back(_place(ncarry, diff_carry, ctc) + _place(ny, nz_y, cty))
        new_ctc = [_or_zeros(cin[nconsts + k], carry_avals[k]) for k in diff_carry]
        new_acc = [_or_zeros(ops.add_any(a, cin[k]), const_avals[k]) for a, k in zip(acc, diff_c)]
        ct_x = [_or_zeros(cin[nconsts + ncarry + k], slice_avals[k]) for k in diff_x]
        return new_ctc + new_acc + ct_x

    avals = (const_avals + [carry_avals[k] for k in diff_carry] + [const_avals[k] for k in diff_c]
             + slice_avals + carry_avals + [y_avals[j] for j in nz_y])
    bprog, bcaps = trace_sub(backward_step, avals, f"{body.name}.vjp")
    operands = (bcaps + consts + [_or_zeros(ct_carry[k], carry_avals[k]) for k in diff_carry]
                + [ops.zeros_like(const_avals[k]) for k in diff_c] + xs + stacked + [ct_ys[j] for j in nz_y])
    bouts = ops.bind("scan", *operands, body=bprog, nconsts=len(bcaps) + nconsts,
                     ncarry=len(diff_carry) + len(diff_c), length=length, reverse=not reverse)
    ct_init, ct_consts, ct_xs = _take(bouts, [len(diff_carry), len(diff_c), len(diff_x)])
    return _place(nconsts, diff_c, ct_consts) + _place(ncarry, diff_carry, ct_init) + _place(nx, diff_x, ct_xs)


@register_vjp("scan")
def _scan_vjp(cts, primals, outs, *, body, nconsts, ncarry, length, reverse, active=None):
    return scan_transpose(cts, primals, body, nconsts, ncarry, length, reverse, active)


# ----------------------------------------------------------------------------- fori_loop


@register_jvp("fori_loop")
def _fori_jvp(primals, tangents, *, body, nconsts):
    lower, upper = primals[:2]
    ncarry = len(primals) - 2 - nconsts
    consts, init = _take(primals[2:], [nconsts, ncarry])
    tc, ti = _take(tangents[2:], [nconsts, ncarry])
    nz_c = [k for k, t in enumerate(tc) if t is not None]
    carry_avals = [a.aval for a in init]

    def trace(nz_carry: list[int]):
        box: dict[str, Any] = {}

        def fun(ins: list[Tracer]) -> list[Tracer]:
            (i,), c, tcs, carry, tcarry = _take(ins, [1, nconsts, len(nz_c), ncarry, len(nz_carry)])
            t_in = [None] + _place(nconsts, nz_c, tcs) + _place(ncarry, nz_carry, tcarry)
            outs, touts = jvp_eval(body, [i] + c + carry, t_in)
            box["carry_nz"] = {k for k in range(ncarry) if touts[k] is not None}
            return list(outs) + [_or_zeros(touts[k], carry_avals[k]) for k in nz_carry]

        avals = ([lower.aval] + [a.aval for a in consts] + [tc[k].aval for k in nz_c] + carry_avals
                 + [carry_avals[k] for k in nz_carry])
        prog, caps = trace_sub(fun, avals, f"{body.name}.jvp")
        return (_index_first(prog, len(caps)), caps, nz_carry), box["carry_nz"]

    prog, caps, nz_carry = _fixed_point(trace, {k for k, t in enumerate(ti) if t is not None})
    operands = ([lower, upper] + caps + consts + [tc[k] for k in nz_c] + init
                + [_or_zeros(ti[k], carry_avals[k]) for k in nz_carry])
    outs = ops.bind("fori_loop", *operands, body=prog, nconsts=len(caps) + nconsts + len(nz_c))
    return outs[:ncarry], _place(ncarry, nz_carry, outs[ncarry:])


_FOLDABLE_KINDS = ("elementwise",)
_MAX_FOLD_DEPTH = 16


def static_value(t: Tracer) -> np.ndarray | None:
    """The value of `t` when it is known at trace time: a constant of its trace, a captured
    constant of an enclosing trace, or an elementwise function of such values (`n - 1`)."""
    return _static(t._ctx, t.ir_var, _MAX_FOLD_DEPTH)


def _static(ctx: Any, v: Var, depth: int) -> np.ndarray | None:
    if depth <= 0 or ctx is None:
        return None
    for cv, value in zip(ctx.constvars, ctx.consts):
        if cv is v:
            return value
    outer = getattr(ctx, "outer_var", None)
    if outer is not None and (ov := outer(v)) is not None:
        return _static(ctx.parent, ov, depth - 1)
    for eqn in reversed(ctx.eqns):
        if any(o is v for o in eqn.outputs):
            if _prims.PRIMITIVES[eqn.prim].kind not in _FOLDABLE_KINDS and eqn.prim != "convert":
                return None
            args = [_static(ctx, u, depth - 1) for u in eqn.inputs]
            if any(a is None for a in args):
                return None
            outs = _prims.evaluate(eqn.prim, args, eqn.params)
            return np.asarray(outs[[o is v for o in eqn.outputs].index(True)])
    return None


def _loop_error(kind: str, body: Program) -> LoopGradientError:
    return LoopGradientError(f"{WHILE_REVERSE_MESSAGE} (reverse-mode differentiation of the {kind} whose body "
                             f"is {body.name!r})")


@register_vjp("fori_loop")
def _fori_vjp(cts, primals, outs, *, body, nconsts, active=None):
    lower, upper = primals[:2]
    lo, hi = static_value(lower), static_value(upper)
    if lo is None or hi is None:
        raise _loop_error("fori_loop with dynamic start/stop values", body)
    lo, hi = int(lo), int(hi)
    ncarry = len(primals) - 2 - nconsts
    consts, init = _take(primals[2:], [nconsts, ncarry])
    if hi <= lo:  # no trip: the result is the initial carry
        return [None, None] + [None] * nconsts + [c if differentiable(a.aval) else None for c, a in zip(cts, init)]

    def step(ins: list[Tracer]) -> list[Tracer]:  # a scan body: (consts, carry, i) -> carry
        c, carry, (i,) = _take(ins, [nconsts, ncarry, 1])
        return bind_program(body, [i] + c + carry)

    prog, caps = trace_sub(step, [a.aval for a in consts] + [a.aval for a in init] + [lower.aval],
                           f"{body.name}.as_scan")
    indices = ops.const(np.arange(lo, hi, dtype=lower.dtype), lower.dtype)
    wanted = list(active[2:]) if active is not None else [True] * (nconsts + ncarry)
    ct_in = scan_transpose(list(cts), caps + consts + init + [indices], prog, len(caps) + nconsts, ncarry,
                           hi - lo, False, [False] * len(caps) + wanted + [False])
    return [None, None] + ct_in[len(caps):len(caps) + nconsts + ncarry]


# ----------------------------------------------------------------------------- while_loop


@register_jvp("while_loop")
def _while_jvp(primals, tangents, *, cond, body, cond_nconsts, body_nconsts):
    ncarry = len(primals) - cond_nconsts - body_nconsts
    cc, bc, init = _take(primals, [cond_nconsts, body_nconsts, ncarry])
    _, tbc, ti = _take(tangents, [cond_nconsts, body_nconsts, ncarry])
    nz_b = [k for k, t in enumerate(tbc) if t is not None]
    carry_avals = [a.aval for a in init]

    def trace(nz_carry: list[int]):
        box: dict[str, Any] = {}

        def fun(ins: list[Tracer]) -> list[Tracer]:
            c, tcs, carry, tcarry = _take(ins, [body_nconsts, len(nz_b), ncarry, len(nz_carry)])
            outs, touts = jvp_eval(body, c + carry, _place(body_nconsts, nz_b, tcs) + _place(ncarry, nz_carry, tcarry))
            box["carry_nz"] = {k for k in range(ncarry) if touts[k] is not None}
            return list(outs) + [_or_zeros(touts[k], carry_avals[k]) for k in nz_carry]

        avals = [a.aval for a in bc] + [tbc[k].aval for k in nz_b] + carry_avals + [carry_avals[k] for k in nz_carry]
        prog, caps = trace_sub(fun, avals, f"{body.name}.jvp")
        return (prog, caps, nz_carry), box["carry_nz"]

    bprog, bcaps, nz_carry = _fixed_point(trace, {k for k, t in enumerate(ti) if t is not None})

    def cond_fun(ins: list[Tracer]) -> list[Tracer]:
        c, carry, _ = _take(ins, [cond_nconsts, ncarry, len(nz_carry)])
        return bind_program(cond, c + carry)

    cprog, ccaps = trace_sub(cond_fun, [a.aval for a in cc] + carry_avals + [carry_avals[k] for k in nz_carry],
                             f"{cond.name}.jvp")
    operands = (ccaps + cc + bcaps + bc + [tbc[k] for k in nz_b] + init
                + [_or_zeros(ti[k], carry_avals[k]) for k in nz_carry])
    outs = ops.bind("while_loop", *operands, cond=cprog, body=bprog, cond_nconsts=len(ccaps) + cond_nconsts,
                    body_nconsts=len(bcaps) + body_nconsts + len(nz_b))
    return outs[:ncarry], _place(ncarry, nz_carry, outs[ncarry:])


@register_vjp("while_loop")
def _while_vjp(cts, primals, outs, *, cond, body, cond_nconsts, body_nconsts):
    raise _loop_error("while_loop", body)


VJP_WANTS_ACTIVE.update({"cond", "scan", "fori_loop"})
