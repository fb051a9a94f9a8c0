"""`y[a[m], b[m]] = v[m]`: a scatter through selections by a mask, one step instead of one per
selection.

NumPy code records which of its shrinking points finished by scattering through the selected
coordinates (NPBench mandelbrot2: `N_[Xi[I], Yi[I]] = i + 1; Z_[Xi[I], Yi[I]] = Z[I]`). Traced
as written, every selection `a[m]` is a data-dependent step of its own (numpy/_datadep.py): NumPy's
boolean indexing into a padded buffer as long as the largest selection, zeroed, plus its count,
and the assignment a `setitem` step that trims each padded operand to its count again. When a
selection is read by nothing but one such `setitem`, it is computed inside that step instead
(`datadep_call` "setitem_selected"): the step trims `a` and `m` to their counts, computes `a[m]`
with NumPy and assigns, so the padded copy, its zeroing and one library call per selection are
gone. Values, casts, duplicates (last write wins), negative and out-of-bounds indices and the
error when a mask's length differs from the array's are NumPy's, since NumPy runs the same
calls on the same trimmed operands.

Order of errors: each selection is computed in the step in the order the program computed it,
before the assignment, as before. The selections move later, to the assignment, so every
equation between the first of them and the assignment must be one that cannot raise
(`raises_on_data`; no library step, no control flow); else nothing is rewritten.

A selection produced outside a loop (`mask_select`, no count of its own: the program's count
of it is `sum(m)` in int64) is taken only when the assignment trims it by that very sum.

>>> import numpy as np, jitkernel as jk
>>> from jitkernel.passes import optimize
>>> def f(y, a, b, v):
...     m = v > 0
...     y[a[m], b[m]] = v[m]
...     return y
>>> prog = optimize(jk.make_ir(f)(np.zeros((3, 3)), np.arange(3), np.arange(3), np.ones(3)))
>>> sorted(e.params["fn"] for e in prog.eqns if e.prim.startswith("datadep"))
['setitem_selected']
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir import Eqn, Program, Var, primitives
from ..ir.control_flow import sub_programs
from ..ir.primitives import raises_on_data
from .same_value import SameValue

_DATADEP = ("datadep_call", "datadep_pure")
_MASK_INDEX = (("index", (("array", 0),)),)


def selected_scatters(program: Program) -> Program:
    """Each `setitem` of `program` (not its sub-programs: `optimize` runs on those first) whose
    value or index arrays are selections read by nothing else, with those selections computed
    inside it (module docstring)."""
    if not any(_is_setitem(e) for e in program.eqns):
        return program
    users = program.consumers()
    outvars = set(program.outvars)
    position = {id(e): k for k, e in enumerate(program.eqns)}
    same = SameValue(program)
    producer = same.producer
    replaced: dict[int, Eqn] = {}  # id(setitem) -> its fused form
    dropped: set[int] = set()  # id(selection) now computed inside a fused step
    for eqn in program.eqns:
        if not _is_setitem(eqn):
            continue
        fused = _fuse(eqn, producer, users, outvars, same, position)
        if fused is None:
            continue
        new, selections = fused
        first = min(position[id(g)] for g in selections)
        between = program.eqns[first:position[id(eqn)]]
        chosen = {id(g) for g in selections}
        if any(id(e) not in chosen and not _quiet(e) for e in between) or chosen & dropped:
            continue
        replaced[id(eqn)] = new
        dropped |= chosen
    if not replaced:
        return program
    eqns = [replaced.get(id(e), e) for e in program.eqns if id(e) not in dropped]
    return dataclasses.replace(program, eqns=eqns)


def _is_setitem(eqn: Eqn) -> bool:
    return eqn.prim in _DATADEP and eqn.params.get("fn") == "setitem" and len(eqn.outputs) == 1


def _quiet(eqn: Eqn) -> bool:
    """Can the equation never raise nor have an effect, so a selection may move past it?"""
    prim = primitives.get(eqn.prim)
    return (prim.kind != "library" and not prim.effect and not sub_programs(eqn.params)
            and not raises_on_data(eqn.prim, [o.aval for o in eqn.outputs]))


def _selection(v: Var, producer: dict, users: dict, outvars: set) -> Eqn | None:
    """The equation computing `v = a[m]` (1-D `a`, 1-D bool `m`) when nothing but one
    equation reads its results, else None."""
    g = producer.get(v)
    if g is None or g.prim not in _DATADEP or g.outputs[0] is not v:
        return None
    p = g.params
    kinds = tuple(kind for kind, _, _ in p["outs"])
    if p["fn"] == "getitem":
        if tuple(p["kw"]) != _MASK_INDEX or kinds not in (("pad",), ("pad", "len")):
            return None
    elif p["fn"] != "mask_select" or p["ncounts"] != 0 or kinds != ("pad",):
        return None
    a, m = g.inputs[p["ncounts"]:]
    if a.aval.ndim != 1 or m.aval.ndim != 1 or m.aval.dtype != np.dtype(bool):
        return None
    readers = {id(e) for o in g.outputs for e in users.get(o, [])}
    if len(readers) != 1 or any(o in outvars for o in g.outputs):
        return None
    return g


def _is_sum_of(count: Var, m: Var, producer: dict, same: SameValue) -> bool:
    """Is `count` `sum(m)` in int64 (how numpy/_datadep.py counts a mask)?"""
    e = producer.get(count)
    if e is None or e.prim != "reduce_sum" or tuple(e.params.get("axes", ())) != (0,):
        return False
    c = producer.get(e.inputs[0])
    return (c is not None and c.prim == "convert" and np.dtype(c.params.get("dtype")) == np.dtype(np.int64)
            and count.aval.dtype == np.dtype(np.int64) and same(c.inputs[0], m))


def _fuse(s: Eqn, producer: dict, users: dict, outvars: set, same: SameValue,
          position: dict[int, int]) -> tuple[Eqn, list[Eqn]] | None:
    """The `setitem_selected` form of the setitem `s` and the selections it takes in, or None
    when it takes none."""
    p = s.params
    ncounts = p["ncounts"]
    counts, operands, layout = list(s.inputs[:ncounts]), s.inputs[ncounts:], tuple(p["layout"])
    new_counts: list[Var] = []

    def count_slot(v: Var | None) -> int:
        if v is None:
            return -1
        for k, c in enumerate(new_counts):
            if c is v:
                return k
        new_counts.append(v)
        return len(new_counts) - 1

    new_ops = [operands[0]]
    new_layout = [count_slot(counts[layout[0]] if layout[0] >= 0 else None)]
    parts: list = []
    selections: list[Eqn] = []
    for v, k in zip(operands[1:], layout[1:]):
        g = _selection(v, producer, users, outvars) if k >= 0 else None
        if g is not None:
            gp = g.params
            if gp["fn"] == "getitem":
                ok = len(g.outputs) == 2 and counts[k] is g.outputs[1]
            else:
                ok = _is_sum_of(counts[k], g.inputs[1], producer, same)
            if ok and g not in selections:
                selections.append(g)
            if ok:
                gc, glayout = g.inputs[:gp["ncounts"]], tuple(gp["layout"])
                for operand, j in zip(g.inputs[gp["ncounts"]:], glayout):
                    new_ops.append(operand)
                    new_layout.append(count_slot(gc[j] if j >= 0 else None))
                parts.append(("sel", selections.index(g)))
                continue
        new_ops.append(v)
        new_layout.append(count_slot(counts[k] if k >= 0 else None))
        parts.append("plain")
    if not selections:
        return None
    # The selections run in the program's order (ranks by position in `selections`, which
    # follows the setitem's operands): sort them by where the program computed them.
    order = sorted(range(len(selections)), key=lambda r: position[id(selections[r])])
    rank = {r: order.index(r) for r in range(len(selections))}
    parts = [part if part == "plain" else ("sel", rank[part[1]]) for part in parts]
    kw = tuple(p["kw"]) + (("parts", tuple(parts)),)
    params = dict(p, fn="setitem_selected", kw=kw, ncounts=len(new_counts), layout=tuple(new_layout))
    return Eqn("datadep_call", new_counts + new_ops, list(s.outputs), params), selections

