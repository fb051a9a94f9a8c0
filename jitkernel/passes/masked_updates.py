"""`x[mask] = f(a[mask], b[mask], s)` with `f` elementwise becomes `where(mask, f(a, b, s), x)`.

NumPy code updates the selected elements of an array this way (NPBench mandelbrot1:
`Z[I] = Z[I]**2 + C[I]` in its iteration loop). Traced as written it is data-dependent: each
`a[mask]` is a `mask_select` step (a padded buffer and a count), and the assignment a
`setitem` step, all NumPy library calls, so a loop around them is driven from Python. When
every selection uses the same mask as the assignment, over arrays of the mask's shape, and
the value is computed from them (and 0-d values) by elementwise primitives that cannot raise,
the value at each selected position is `f` of the elements at that position: computing `f` on
whole arrays and selecting by the mask gives exactly NumPy's array (the same operation on the
same operands per element; the unselected results are discarded). The rewrite leaves only
elementwise primitives, which fuse, and the loop can run natively.

>>> import numpy as np, jitkernel as jk
>>> from jitkernel.passes import optimize
>>> def f(z, c):
...     m = abs(z) < 2
...     z[m] = z[m] ** 2 + c[m]
...     return z
>>> prog = optimize(jk.make_ir(f)(np.zeros(4, complex), np.ones(4, complex)))
>>> any(e.prim.startswith("datadep") for e in prog.eqns)
False
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir import AType, Eqn, Program, Var, primitives
from ..ir.primitives import raises_on_data
from .same_value import SameValue

_MASK_INDEX = (("index", (("array", 0),)),)  # the keyword of `x[mask] = value`


def masked_updates_as_selects(program: Program) -> Program:
    """Each `x[mask] = f(...)` of `program` (not its sub-programs: `optimize` runs on those
    first) that the module docstring describes, as a select."""
    if not any(_is_masked_setitem(e) for e in program.eqns):
        return program
    same = SameValue(program)
    producer = same.producer
    consts = dict(zip(program.constvars, program.consts))
    new_consts: dict[Var, np.ndarray] = {}
    eqns: list[Eqn] = []
    changed = False
    for eqn in program.eqns:
        if _is_masked_setitem(eqn):
            x, value, mask = eqn.inputs[1:4]
            mask = _canonical_mask(mask, program.eqns, same)
            built: list[Eqn] = []
            full = _whole(value, mask, producer, built, {}, (consts, new_consts))
            if full is not None and full.aval.dtype == x.aval.dtype:
                eqns += built
                eqns.append(Eqn("select", [mask, full, x], list(eqn.outputs), {}))
                changed = True
                continue
        eqns.append(eqn)
    if not changed:
        return program
    return dataclasses.replace(program, eqns=eqns, constvars=list(program.constvars) + list(new_consts),
                               consts=list(program.consts) + list(new_consts.values()))


def _is_masked_setitem(eqn: Eqn) -> bool:
    if eqn.prim != "datadep_call" or eqn.params.get("fn") != "setitem" or len(eqn.inputs) != 4:
        return False
    p = eqn.params
    if p["ncounts"] != 1 or tuple(p["layout"]) != (-1, 0, -1) or tuple(p["kw"]) != _MASK_INDEX:
        return False
    x, value, mask = eqn.inputs[1:4]
    return mask.aval.dtype.kind == "b" and mask.aval.shape == x.aval.shape and value.aval.ndim == 1


def _canonical_mask(mask: Var, eqns: list[Eqn], same: SameValue) -> Var:
    """The first Var of `eqns` computing the same mask as `mask`: `x[x > 0] = x[x > 0] ** -1.5`
    traces `x > 0` twice, and `_whole` matches selections by their mask Var."""
    return next((o for e in eqns for o in e.outputs if same(o, mask)), mask)


def _whole(v: Var, mask: Var, producer: dict, built: list[Eqn], memo: dict, consts: tuple) -> Var | None:
    """The whole-array counterpart (shape of `mask`) of the selected value `v`, its equations
    appended to `built` (and its new 0-d constants to `consts[1]`); None when `v` is not such a
    value."""
    if v in memo:
        return memo[v]
    eqn = producer.get(v)
    shape = tuple(mask.aval.shape)
    out = None
    known, new = consts
    if eqn is None:
        c = known.get(v)
        if c is None or c.size == 0 or not np.all(c.reshape(-1) == c.reshape(-1)[0]) or np.isnan(c).any():
            return None  # an argument, or a constant that is not one value everywhere
        scalar = Var(AType((), v.aval.dtype))
        new[scalar] = np.array(c.reshape(-1)[0])
        out = Var(AType(shape, v.aval.dtype))
        built.append(Eqn("broadcast_in_dim", [scalar], [out], {"shape": shape, "broadcast_dimensions": ()}))
        memo[v] = out
        return out
    if (eqn.prim == "datadep_pure" and eqn.params.get("fn") == "mask_select" and eqn.params["ncounts"] == 0
            and len(eqn.inputs) == 2 and eqn.inputs[1] is mask and tuple(eqn.inputs[0].aval.shape) == shape):
        out = eqn.inputs[0]
    elif eqn.prim == "broadcast_in_dim" and eqn.inputs[0].aval.shape == ():
        out = Var(AType(shape, v.aval.dtype))
        built.append(Eqn("broadcast_in_dim", [eqn.inputs[0]], [out], {"shape": shape, "broadcast_dimensions": ()}))
    elif (primitives.PRIMITIVES[eqn.prim].kind == "elementwise" and len(eqn.outputs) == 1
          and not raises_on_data(eqn.prim, [o.aval for o in eqn.outputs])):
        args = [_whole(a, mask, producer, built, memo, consts) for a in eqn.inputs]
        if any(a is None for a in args):
            return None
        out = Var(AType(shape, v.aval.dtype))
        built.append(Eqn(eqn.prim, args, [out], eqn.params))
    memo[v] = out
    return out
