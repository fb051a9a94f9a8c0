"""Loop and branch state that is one value carried several times becomes one value.

A loop whose state shrinks by one mask each trip (NPBench mandelbrot2: `Z = Z[I]; C = C[I];
Xi, Yi = Xi[I], Yi[I]`) carries each selection as its padded buffer and its count
(autograph/runtime.py), so the four counts, equal on entry and equal after every trip, are four
carries; the body cannot see that they are equal, so it checks them against each other where
the selections meet (`raise_if`, NumPy's ValueError for different lengths) and every selection
step trims by two counts. Three rewrites make such state one value:

- `selection_lengths`: the length output of a selection `a[m]` (a `getitem` step by one 1-D bool
  mask) is `count_nonzero(m[:c])`, whatever `a` is (a step whose `a` has another length raises
  instead of giving a length); a later selection by the same mask and mask count takes the first
  one's length (the first has run, and succeeded, before it);
- `cond` operands that are the same variable are one input of each branch (the branches are
  optimised again), and results that every branch returns as the same variable are one result;
- `while_loop` / `fori_loop` carries with the same initial variable are merged optimistically:
  the body is rewritten with each group of them read from one input and optimised; the groups
  whose members the body then returns as one variable are kept, the others split by the
  variable returned, until nothing splits. Sound by induction: equal on entry, and the body
  maps equal values to equal values. The body kept is the one optimised under that equality
  (its count checks are then proved, passes/int_ranges.py: `c != c` is false).

>>> import numpy as np, jitkernel as jk
>>> from jitkernel.passes import optimize
>>> def f(x, n):
...     a = x + 1
...     a, b = jk.lax.fori_loop(0, n, lambda i, ab: (ab[0] * 2, ab[1] * 2), (a, a))
...     return a, b
>>> prog = optimize(jk.make_ir(f)(np.ones(3), 4))
>>> [len(e.outputs) for e in prog.eqns if e.prim == "fori_loop"]
[1]
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from ..ir import Eqn, Program, Var
from .same_value import SameValue

_MASK_INDEX = (("index", (("array", 0),)),)


def equal_state(program: Program, optimize: Callable[[Program], Program]) -> Program:
    """The three rewrites of the module docstring over `program`'s top level (its sub-programs
    are optimised before it: passes/__init__.py); `optimize` optimises a body again under the
    equalities found (the pipeline's own, passed in: this module is one of its passes)."""
    program = selection_lengths(program)
    if not any(e.prim in ("cond", "while_loop", "fori_loop") for e in program.eqns):
        return program

    out_subst: dict[Var, Var] = {}  # results dropped by a rewrite -> the result they equal

    def r(v: Var) -> Var:
        while v in out_subst:
            v = out_subst[v]
        return v

    eqns = []
    for eqn in program.eqns:
        eqn = Eqn(eqn.prim, [r(v) for v in eqn.inputs], eqn.outputs, eqn.params)
        if eqn.prim == "cond":
            eqn = _cond(eqn, optimize, out_subst)
        elif eqn.prim in ("while_loop", "fori_loop"):
            eqn = _loop(eqn, optimize, out_subst)
        eqns.append(eqn)
    if not out_subst and all(a is b for a, b in zip(eqns, program.eqns)):
        return program
    return dataclasses.replace(program, eqns=eqns, outvars=[r(v) for v in program.outvars])


def _renamed_uses(program: Program, subst: dict[Var, Var]) -> Program:
    def r(v: Var) -> Var:
        while v in subst:
            v = subst[v]
        return v
    eqns = [Eqn(e.prim, [r(v) for v in e.inputs], e.outputs, e.params) for e in program.eqns]
    return dataclasses.replace(program, eqns=eqns, outvars=[r(v) for v in program.outvars])


# -- lengths of selections by one mask ------------------------------------------------------------

def _selection_key(eqn: Eqn, same_mask: Callable[[Var], Var], same_count: Callable[[Var], Var]) -> tuple | None:
    p = eqn.params
    if eqn.prim not in ("datadep_call", "datadep_pure") or p.get("fn") != "getitem" or tuple(p["kw"]) != _MASK_INDEX:
        return None
    if tuple(kind for kind, _, _ in p["outs"]) != ("pad", "len"):
        return None
    ncounts = p["ncounts"]
    a, m = eqn.inputs[ncounts:]
    k = tuple(p["layout"])[1]
    if a.aval.ndim < 1 or m.aval.ndim != 1 or m.aval.dtype != np.dtype(bool) or k < 0:
        return None
    return (same_mask(m), same_count(eqn.inputs[k]))


def selection_lengths(program: Program) -> Program:
    """Each selection's length taken from the first selection by the same mask and mask count."""
    if not any(e.prim in ("datadep_call", "datadep_pure") for e in program.eqns):
        return program
    same = SameValue(program)
    canonical: list[Var] = []

    def first_equal(v: Var) -> Var:
        for c in canonical:
            if same(c, v):
                return c
        canonical.append(v)
        return v

    first: dict[tuple, Var] = {}
    subst: dict[Var, Var] = {}
    for eqn in program.eqns:
        key = _selection_key(eqn, first_equal, first_equal)
        if key is None:
            continue
        if key in first:
            subst[eqn.outputs[1]] = first[key]
        else:
            first[key] = eqn.outputs[1]
    return _renamed_uses(program, subst) if subst else program


# -- branches ------------------------------------------------------------------------------------

def _rename_inputs(prog: Program, keep: list[int], rename: dict[int, int]) -> Program:
    """`prog` reading input `rename[l]` wherever it read input `l`, with only the inputs `keep`."""
    subst = {prog.invars[l]: prog.invars[k] for l, k in rename.items()}
    renamed = _renamed_uses(prog, subst)
    return dataclasses.replace(renamed, invars=[prog.invars[k] for k in keep])


def _cond(eqn: Eqn, optimize: Callable[[Program], Program], out_subst: dict[Var, Var]) -> Eqn:
    index, operands = eqn.inputs[0], eqn.inputs[1:]
    branches = list(eqn.params["branches"])
    rename = {l: next(k for k in range(l) if operands[k] is operands[l])
              for l in range(len(operands)) if any(operands[k] is operands[l] for k in range(l))}
    if rename:
        keep = [k for k in range(len(operands)) if k not in rename]
        branches = [optimize(_rename_inputs(b, keep, rename)) for b in branches]
        operands = [operands[k] for k in keep]
    outs = list(eqn.outputs)
    sames = [SameValue(b) for b in branches]

    def equal(k: int, l: int) -> bool:
        return all(same(b.outvars[k], b.outvars[l]) for b, same in zip(branches, sames))

    dup = {l: next(k for k in range(l) if equal(k, l)) for l in range(len(outs)) if any(equal(k, l) for k in range(l))}
    if dup:
        keep_out = [k for k in range(len(outs)) if k not in dup]
        for l, k in dup.items():
            out_subst[outs[l]] = outs[k]
        branches = [dataclasses.replace(b, outvars=[b.outvars[k] for k in keep_out]) for b in branches]
        outs = [outs[k] for k in keep_out]
    if not rename and not dup:
        return eqn
    return Eqn("cond", [index] + operands, outs, dict(eqn.params, branches=tuple(branches)))


# -- loops ---------------------------------------------------------------------------------------

def _loop(eqn: Eqn, optimize: Callable[[Program], Program], out_subst: dict[Var, Var]) -> Eqn:
    p = eqn.params
    if eqn.prim == "while_loop":
        nc, nb = p["cond_nconsts"], p["body_nconsts"]
        lead, body_lead = nc + nb, nb
    else:
        nc, nb = 0, p["nconsts"]
        lead, body_lead = 2 + nb, 1 + nb
    init = eqn.inputs[lead:]
    n = len(init)
    rep = [next(k for k in range(n) if init[k] is init[j]) for j in range(n)]  # optimistic classes
    if all(rep[j] == j for j in range(n)):
        return eqn
    body = p["body"]
    while True:
        rename = {body_lead + j: body_lead + rep[j] for j in range(n) if rep[j] != j}
        keep = [k for k in range(len(body.invars)) if k not in rename]
        merged = optimize(_rename_inputs(body, keep, rename))
        outs, same = merged.outvars, SameValue(merged)
        # split each class by the value the merged body returns for its members
        new_rep = [next(k for k in range(n) if rep[k] == rep[j] and same(outs[k], outs[j]))
                   for j in range(n)]
        if new_rep == rep:
            break
        rep = new_rep
        if all(rep[j] == j for j in range(n)):
            return eqn
    dropped = [j for j in range(n) if rep[j] != j]
    kept = [j for j in range(n) if rep[j] == j]
    # the merged body (optimised under the equalities) returns the kept carries only
    new_body = dataclasses.replace(merged, outvars=[merged.outvars[j] for j in kept])
    params = dict(p, body=new_body)
    if eqn.prim == "while_loop":
        cond = p["cond"]
        cond_keep = list(range(nc)) + [nc + j for j in kept]
        params["cond"] = optimize(_rename_inputs(cond, cond_keep, {nc + j: nc + rep[j] for j in dropped}))
    for j in dropped:
        out_subst[eqn.outputs[j]] = eqn.outputs[rep[j]]
    inputs = list(eqn.inputs[:lead]) + [init[j] for j in kept]
    return Eqn(eqn.prim, inputs, [eqn.outputs[j] for j in kept], params)
