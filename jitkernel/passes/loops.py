"""Graph passes (Program -> Program) that prepare loops for native lowering; fusion's `schedule`
runs them, `scans_to_fori` first, on the complex-lowered program.

- `scans_to_fori`: each `scan` whose body fuses into kernels becomes the equivalent `fori_loop`
  (slices of the xs read and rows of the ys written at the trip index), so it runs as a native
  loop; a body with library steps keeps lax's Python-driven scan.
- `hoist_loop_invariants`: loop-invariant code motion: the equations of fori_loop/while_loop
  bodies that read neither the carry nor the index move out to the enclosing program (innermost
  loops first), except movement ops nothing hoisted needs and anything that may raise at run time.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..ir import AType, Eqn, Program, Var, primitives
from ..ir.program import may_raise
from .native_loops import CONTROL_FLOW, LOOP_PRIMS, native_ok


# -- loop-invariant code motion -----------------------------------------------------------

def _movement(eqn: Eqn) -> bool:
    return primitives.get(eqn.prim).kind in ("movement", "creation") or eqn.prim == "iota"


def _may_raise(eqn: Eqn) -> bool:
    """An equation that may raise on the data (Primitive.may_raise, integer power) or holds one:
    never hoisted out of a loop, which would raise for a loop that runs zero times."""
    return (eqn.prim in CONTROL_FLOW or may_raise(eqn)
            or primitives.raises_on_data(eqn.prim, [o.aval for o in eqn.outputs]))


def hoist_loop_invariants(program: Program) -> Program:
    """Move the equations of fori_loop/while_loop bodies that read neither the carry nor the
    index out of the loop (innermost loops first), as new loop constants. Movement ops stay in
    the body unless a hoisted equation needs them (they are free index maps there), and nothing
    that may raise at run time moves (a zero-trip loop must not raise).

    >>> import numpy as np
    >>> hoist_loop_invariants(Program([], [], [], [], [])).eqns
    []
    """
    if not any(e.prim in LOOP_PRIMS for e in program.eqns):
        return program
    eqns: list[Eqn] = []
    consts: list[tuple[Var, Any]] = []
    for eqn in program.eqns:
        if eqn.prim in LOOP_PRIMS:
            new, new_consts = (_hoist_fori if eqn.prim == "fori_loop" else _hoist_while)(eqn)
            eqns += new
            consts += new_consts
        else:
            eqns.append(eqn)
    return replace(program, eqns=eqns, constvars=program.constvars + [v for v, _ in consts],
                   consts=program.consts + [c for _, c in consts])


_INDEX_COMPARISONS = frozenset({"less", "less_equal", "greater", "greater_equal"})


def _index_mask(eqn: Eqn, producer: dict) -> bool:
    """`iota(n) >= i` (through broadcasts and reshapes) against a 0-d value: the mask of a
    window of loop-index length (`A[i + 1:, i] @ B[i + 1:, j]`). Left in the body, where it
    costs one compare per element and fusion turns it into the bound of the kernel's loop
    (fusion/extents.py); hoisted, it would be a buffer read in full on every trip."""
    if eqn.prim not in _INDEX_COMPARISONS or len(eqn.inputs) != 2:
        return False
    found_iota = False
    for v in eqn.inputs:
        e = producer.get(v)
        while e is not None and e.prim in ("broadcast_in_dim", "reshape", "transpose") and len(e.inputs) == 1:
            if e.inputs[0].aval.ndim == 0:
                break
            e = producer.get(e.inputs[0])
        if e is not None and e.prim == "iota":
            found_iota = True
    return found_iota


def _split_invariant(body: Program, invariant_in: set[Var]) -> tuple[list[Eqn], list[Eqn]]:
    inv = set(invariant_in) | set(body.constvars)
    body_producer = {o: e for e in body.eqns for o in e.outputs}
    candidates = []
    for e in body.eqns:
        if all(v in inv for v in e.inputs) and not _may_raise(e) and not _index_mask(e, body_producer):
            inv.update(e.outputs)
            candidates.append(e)
    producer = {o: e for e in candidates for o in e.outputs}
    hoist: set[int] = set()
    stack = [e for e in candidates if not _movement(e)]
    while stack:
        e = stack.pop()
        if id(e) in hoist:
            continue
        hoist.add(id(e))
        stack.extend(producer[v] for v in e.inputs if v in producer)
    moved = [e for e in body.eqns if id(e) in hoist]
    kept = [e for e in body.eqns if id(e) not in hoist]
    return moved, kept


def _rehome(body: Program, moved: list[Eqn], kept: list[Eqn], outer_of: dict[Var, Var],
            n_lead: int) -> tuple[list[Eqn], Program, list[Var]]:
    """Outer copies of `moved` (body invars replaced by the outer values), the body without them
    and with the hoisted values it still reads as new invars after the first `n_lead` ones, and
    the outer values to pass for them."""
    sub = dict(outer_of)
    new_consts = []
    used = {v for e in moved for v in e.inputs}
    for v, c in zip(body.constvars, body.consts):
        if v in used:  # a body constant read by a hoisted equation: an outer constant too
            sub[v] = Var(v.aval)
            new_consts.append((sub[v], c))
    outer_eqns = []
    for e in moved:
        outs = [Var(o.aval) for o in e.outputs]
        outer_eqns.append(Eqn(e.prim, [sub[v] for v in e.inputs], outs, dict(e.params)))
        sub.update(zip(e.outputs, outs))
    produced = {o for e in moved for o in e.outputs}
    needed: list[Var] = []
    for e in kept:
        needed += [v for v in e.inputs if v in produced and v not in needed]
    needed += [v for v in body.outvars if v in produced and v not in needed]
    new_invars = [Var(v.aval) for v in needed]
    rename = dict(zip(needed, new_invars))
    kept = [Eqn(e.prim, [rename.get(v, v) for v in e.inputs], e.outputs, e.params) for e in kept]
    outvars = [rename.get(v, v) for v in body.outvars]
    invars = body.invars[:n_lead] + new_invars + body.invars[n_lead:]
    new_body = replace(body, invars=invars, eqns=kept, outvars=outvars)
    return outer_eqns, new_body, [sub[v] for v in needed], new_consts


def _hoist_fori(eqn: Eqn) -> list[Eqn]:
    body = hoist_loop_invariants(eqn.params["body"])
    nconsts = eqn.params["nconsts"]
    consts = eqn.inputs[2:2 + nconsts]
    body_consts = body.invars[1:1 + nconsts]
    moved, kept = _split_invariant(body, set(body_consts))
    if not moved:
        return [replace_eqn(eqn, body=body)], []
    outer_eqns, new_body, extra, new_consts = _rehome(body, moved, kept, dict(zip(body_consts, consts)), 1 + nconsts)
    inputs = eqn.inputs[:2 + nconsts] + extra + eqn.inputs[2 + nconsts:]
    return outer_eqns + [Eqn(eqn.prim, inputs, eqn.outputs, {**eqn.params, "body": new_body,
                                                              "nconsts": nconsts + len(extra)})], new_consts


def _hoist_while(eqn: Eqn) -> list[Eqn]:
    body = hoist_loop_invariants(eqn.params["body"])
    cn, bn = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
    consts = eqn.inputs[cn:cn + bn]
    body_consts = body.invars[:bn]
    moved, kept = _split_invariant(body, set(body_consts))
    if not moved:
        return [replace_eqn(eqn, body=body)], []
    outer_eqns, new_body, extra, new_consts = _rehome(body, moved, kept, dict(zip(body_consts, consts)), bn)
    inputs = eqn.inputs[:cn + bn] + extra + eqn.inputs[cn + bn:]
    return outer_eqns + [Eqn(eqn.prim, inputs, eqn.outputs, {**eqn.params, "body": new_body,
                                                              "body_nconsts": bn + len(extra)})], new_consts


def replace_eqn(eqn: Eqn, **params: Any) -> Eqn:
    return Eqn(eqn.prim, eqn.inputs, eqn.outputs, {**eqn.params, **params})


# -- scan as a native loop --------------------------------------------------------------------

def scans_to_fori(program: Program) -> Program:
    """Each `scan` whose body fuses into kernels becomes the equivalent `fori_loop` (recursively,
    inside sub-programs too), so it runs as a native loop: the x slices are dynamic slices at
    the trip index `t` (`length - 1 - i` when reversed), the ys are carries written with
    dynamic_update_slice at `t`, in place. The interpreter keeps running `scan` itself.

    >>> scans_to_fori(Program([], [], [], [], [])).eqns
    []
    """
    if not any(e.prim == "scan" or e.prim in CONTROL_FLOW for e in program.eqns):
        return program
    eqns: list[Eqn] = []
    consts: list[tuple[Var, Any]] = []
    for eqn in program.eqns:
        if eqn.prim in CONTROL_FLOW:
            params = {k: (scans_to_fori(v) if isinstance(v, Program) else
                          tuple(scans_to_fori(p) for p in v) if isinstance(v, tuple) and v and isinstance(v[0], Program)
                          else v) for k, v in eqn.params.items()}
            eqns.append(Eqn(eqn.prim, eqn.inputs, eqn.outputs, params))
        elif eqn.prim == "scan":
            fori, new_consts = _scan_as_fori(eqn)
            eqns.append(fori)
            consts += new_consts
        else:
            eqns.append(eqn)
    return replace(program, eqns=eqns, constvars=program.constvars + [v for v, _ in consts],
                   consts=program.consts + [c for _, c in consts])


def _scan_as_fori(eqn: Eqn) -> tuple[Eqn, list[tuple[Var, Any]]]:
    p = eqn.params
    body: Program = scans_to_fori(p["body"])
    nconsts, ncarry, length, reverse = p["nconsts"], p["ncarry"], p["length"], p["reverse"]
    if not native_ok(candidate_fori(body)):
        return eqn, []  # a body with library steps keeps lax's Python-driven scan
    i64 = np.dtype(np.int64)

    def const(value: Any, dtype: Any) -> tuple[Var, Any]:
        arr = np.asarray(value, dtype)
        return Var(AType(arr.shape, arr.dtype)), arr

    body_consts = body.invars[:nconsts]
    body_carry = body.invars[nconsts:nconsts + ncarry]
    body_x = body.invars[nconsts + ncarry:]
    ys_out = body.outvars[ncarry:]
    i = Var(AType((), i64))
    xs_v = [Var(x.aval) for x in eqn.inputs[nconsts + ncarry:]]
    ys_v = [Var(AType((length,) + y.aval.shape, y.aval.dtype)) for y in ys_out]
    inner_consts: list[tuple[Var, Any]] = []
    eqns: list[Eqn] = []
    if reverse:
        last = const(length - 1, i64)
        inner_consts.append(last)
        t = Var(AType((), i64))
        eqns.append(Eqn("subtract", [last[0], i], [t]))
    else:
        t = i
    zero = const(0, i64)
    inner_consts.append(zero)
    for xv, xb in zip(xs_v, body_x):
        window = Var(AType((1,) + xb.aval.shape, xb.aval.dtype))
        eqns.append(Eqn("dynamic_slice", [xv, t] + [zero[0]] * xb.aval.ndim, [window],
                        {"sizes": (1,) + xb.aval.shape}))
        eqns.append(Eqn("reshape", [window], [xb], {"new_shape": xb.aval.shape}))
    eqns += body.eqns
    new_ys = []
    for yv, y in zip(ys_v, ys_out):
        row = Var(AType((1,) + y.aval.shape, y.aval.dtype))
        new = Var(yv.aval)
        eqns.append(Eqn("reshape", [y], [row], {"new_shape": (1,) + y.aval.shape}))
        eqns.append(Eqn("dynamic_update_slice", [yv, row, t] + [zero[0]] * y.aval.ndim, [new]))
        new_ys.append(new)
    new_body = Program([i] + body_consts + xs_v + body_carry + ys_v,
                       body.constvars + [v for v, _ in inner_consts], body.consts + [c for _, c in inner_consts],
                       eqns, body.outvars[:ncarry] + new_ys, body.name)
    lo, hi = const(0, i64), const(length, i64)
    ys_init = [const(np.zeros(v.aval.shape, v.aval.dtype), v.aval.dtype) for v in ys_v]
    consts_in, init_in, xs_in = (eqn.inputs[:nconsts], eqn.inputs[nconsts:nconsts + ncarry],
                                 eqn.inputs[nconsts + ncarry:])
    inputs = [lo[0], hi[0]] + consts_in + xs_in + init_in + [v for v, _ in ys_init]
    fori = Eqn("fori_loop", inputs, eqn.outputs, {"body": new_body, "nconsts": nconsts + len(xs_in)})
    return fori, [lo, hi] + ys_init


def candidate_fori(body: Program) -> Eqn:
    """A stand-in fori_loop over `body`, for native_ok (which only looks at sub-programs)."""
    return Eqn("fori_loop", [], [], {"body": body, "nconsts": 0})
