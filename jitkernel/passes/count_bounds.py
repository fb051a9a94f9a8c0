"""Elementwise work bounded by the count of the data-dependent values it feeds.

A value of data-dependent length (`z = z[mask]`, docs/architecture.md "Data-dependent shapes")
is a padded buffer and a count; the steps that consume it as such (`datadep_call`, and the
native loops passes/native_selections.py makes of them) read only the rows below its count
(`a[:count]`, ir/datadep_prims.py). An elementwise function of such values (`z * z + c`,
`abs(z) > 2` in NPBench's mandelbrot2) computes every row of the padded buffer, where NumPy's
arrays hold only the live rows: 40,000 points on every trip of mandelbrot2's loop where NumPy's
arrays shrink to a few thousand.

`bound_by_counts(program)` finds, in each program and sub-program, the elementwise equations
whose every reader (transitively through other such equations) reads only the rows below one
count `c`, and marks their results `where_valid(iota(axis 0) < c, x)` (ir/symdim_prims.py: the
rows outside the mask are padding nobody reads). The fusion then bounds the loops of the
kernels storing them by `c` (fusion/extents.py), so a trip costs its live rows. Rows past the
count hold whatever the buffer held (never read: the padding of a data-dependent value holds
anything), and an error an elementwise function would raise there (an integer power with a
negative exponent) is no longer raised for rows NumPy does not have.

A reader that is not such a step or such an equation (a loop, a branch, a program output, a
reduction, a movement) reads every row: its operands keep their work.

A data-dependent step's padded output whose every reader is a data-dependent step (each trims
it to its count: `data[mask].mean()` in NPBench's azimint_naive, a selection then sorted) is
marked `unread_padding`: the runtime then leaves its padding as allocated instead of zeroing a
whole buffer per call, which was a third of azimint_naive's time (1000 trips, a 3.2 MB buffer
each). A padded output that a kernel, a loop, a branch or the caller reads keeps its zeros.

Both only for backends that run no library steps in loop bodies (the CPU, which bounds loops
at run time); elsewhere `where_valid` would be computed and not used.

>>> import numpy as np, jitkernel as jk
>>> def f(x, n):
...     for i in range(n):
...         x = x * 0.5 + 1.0
...         x = x[x > 2.0]
...     return x
>>> jk.jit(f)(np.arange(8.0), 3), f(np.arange(8.0), 3)
(array([2.125, 2.25 , 2.375, 2.5  , 2.625]), array([2.125, 2.25 , 2.375, 2.5  , 2.625]))
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir import AType, Eqn, Program, Var, primitives
from ..ir.control_flow import sub_programs
from ..ir.datadep_prims import DATADEP_PRIMITIVES
from .control_flow import map_sub_programs
from .native_loops import body_library_prims

INT64 = np.dtype(np.int64)
_ALL = "all"  # a demand: every row is read


def bound_by_counts(program: Program) -> Program:
    """`program` with the elementwise results of the module docstring marked `where_valid`;
    unchanged on backends that run library steps in loop bodies."""
    if body_library_prims():
        return program
    return _bound(program)


def _bound(program: Program, unread: frozenset = frozenset()) -> Program:
    """`unread`: positions of the program's outputs nobody reads (a branch's result the
    enclosing program drops, such as a mask the loop state keeps from its last trip)."""
    read = {v for e in program.eqns for v in e.inputs}
    read.update(v for k, v in enumerate(program.outvars) if k not in unread)
    eqns = []
    for eqn in program.eqns:
        if not sub_programs(eqn.params):
            eqns.append(eqn)
            continue
        dead = frozenset(k for k, o in enumerate(eqn.outputs) if o not in read) if eqn.prim == "cond" else frozenset()
        eqns.append(map_sub_programs(eqn, lambda sub, dead=dead: _bound(sub, dead)))
    if not any(e.prim in DATADEP_PRIMITIVES for e in eqns):
        return program if all(a is b for a, b in zip(eqns, program.eqns)) else dataclasses.replace(program, eqns=eqns)
    demand = _demands(program, eqns, unread)
    defined = set(program.invars) | set(program.constvars)
    out: list[Eqn] = []
    masks: dict[tuple, Var] = {}
    for eqn in eqns:
        count = demand.get(eqn.outputs[0]) if len(eqn.outputs) == 1 else None
        if _elementwise(eqn) and isinstance(count, Var) and count in defined and eqn.outputs[0].aval.ndim >= 1:
            y = eqn.outputs[0]
            raw = Var(y.aval)
            out.append(Eqn(eqn.prim, eqn.inputs, [raw], eqn.params))
            mask = _mask(out, masks, y.aval.shape, count)
            out.append(Eqn("where_valid", [mask, raw], [y], {}))
        else:
            out.append(eqn)
        defined.update(eqn.outputs)
    return dataclasses.replace(program, eqns=_unread_padding(out, program.outvars))


def _unread_padding(eqns: list[Eqn], outvars: list[Var]) -> list[Eqn]:
    """The selections (and other data-dependent steps) whose padded outputs are read only by
    data-dependent steps, which trim them to their count, marked `unread_padding`: the runtime
    then does not zero a whole padded buffer per call (per trip, in a loop)."""
    trimmed: set[Var] = set()  # read by a data-dependent step, below its count
    whole = set(outvars)  # read some other way (or returned)
    for eqn in eqns:
        if eqn.prim in DATADEP_PRIMITIVES:
            p = eqn.params
            whole.update(eqn.inputs[:p["ncounts"]])
            for v, slot in zip(eqn.inputs[p["ncounts"]:], p["layout"]):
                (trimmed if slot >= 0 else whole).add(v)
        else:
            whole.update(eqn.inputs)
    marked = []
    for eqn in eqns:
        if eqn.prim in DATADEP_PRIMITIVES:
            unread = tuple(k for k, (o, (kind, _, dtype)) in enumerate(zip(eqn.outputs, eqn.params["outs"]))
                           if kind == "pad" and np.dtype(dtype).kind != "c" and o in trimmed and o not in whole)
            if unread:
                eqn = Eqn(eqn.prim, eqn.inputs, eqn.outputs, {**eqn.params, "unread_padding": unread})
        marked.append(eqn)
    return marked


def _elementwise(eqn: Eqn) -> bool:
    return (eqn.prim in primitives.PRIMITIVES and primitives.get(eqn.prim).kind == "elementwise"
            and eqn.prim not in ("where_valid", "pad_fill"))


def _demands(program: Program, eqns: list[Eqn], unread: frozenset) -> dict[Var, object]:
    """Per variable: the count Var below which its readers read it, or _ALL."""
    demand: dict[Var, object] = {}

    def need(v: Var, d: object) -> None:
        old = demand.get(v)
        demand[v] = d if old is None or old is d else _ALL

    for k, v in enumerate(program.outvars):
        if k not in unread:
            need(v, _ALL)
    for eqn in reversed(eqns):
        if eqn.prim in DATADEP_PRIMITIVES:
            p = eqn.params
            counts, operands = eqn.inputs[:p["ncounts"]], eqn.inputs[p["ncounts"]:]
            for v in counts:
                need(v, _ALL)
            for v, slot in zip(operands, p["layout"]):
                need(v, counts[slot] if slot >= 0 and v.aval.ndim >= 1 else _ALL)
            continue
        if _elementwise(eqn) and len(eqn.outputs) == 1:
            d = demand.get(eqn.outputs[0])
            for v in eqn.inputs:
                same_rows = v.aval.shape == eqn.outputs[0].aval.shape
                need(v, d if same_rows and isinstance(d, Var) else _ALL)
            continue
        for v in eqn.inputs:
            need(v, _ALL)
    return demand


def _mask(out: list[Eqn], masks: dict[tuple, Var], shape: tuple, count: Var) -> Var:
    """bool[shape]: `iota(axis 0) < count`, made once per shape and count."""
    key = (shape, id(count))
    if key not in masks:
        iota = Var(AType(shape, INT64))
        out.append(Eqn("iota", [], [iota], {"shape": shape, "dimension": 0, "dtype": INT64}))
        c = count
        if count.aval.dtype != INT64:
            c = Var(AType((), INT64))
            out.append(Eqn("convert", [count], [c], {"dtype": INT64}))
        wide = Var(AType(shape, INT64))
        out.append(Eqn("broadcast_in_dim", [c], [wide], {"shape": shape, "broadcast_dimensions": ()}))
        mask = Var(AType(shape, np.dtype(bool)))
        out.append(Eqn("less", [iota, wide], [mask], {}))
        masks[key] = mask
    return masks[key]
