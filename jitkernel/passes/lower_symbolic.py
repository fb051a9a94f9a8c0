"""Symbolic lengths lowered to padded buffers and masks (docs/architecture.md, "Symbolic
dimensions").

A sub-program (a loop body, a branch) may hold values whose avals have `SymDim` lengths
(`a[i, :i]` in a loop over `i`). `lower_symbolic(program)` runs once, right after the
sub-program is traced (trace/subtrace.py `finish`), and returns a program in which every such value is a
buffer of its aval's `max_shape`: the *valid* elements of a symbolic axis of length `L` are the
positions `[offset, offset + L)` of the padded axis, the rest is padding holding anything (NaN
included). Every later pass, fusion, the native loops and the renderers see a static program.

The rules are keyed by primitive in the public registry `LOWERING_RULES` (a module may register
rules for its own primitives with `register_lowering`). A rule receives the `Lowering` and the
equation, and appends equations through `lw.bind`; it reads an input's lowered variable with
`lw.read(v)` and its per-axis offsets with `lw.offsets(v)` (None: every position valid, e.g. a
broadcast axis; otherwise a Dim), and records an output's offsets with `lw.define(v, new, offs)`.
Helpers build what masking needs: `lw.length(dim)` (the run-time value of a SymDim as an int64
0-d), `lw.valid_mask(shape, axis, length, offset)`, `lw.fill_padding(old, axes, identity)`
(a `pad_fill`: padding replaced by a reduction's identity) and `lw.only_valid(new, axes)` (a
`where_valid`: padding nobody reads), ir/symdim_prims.py.

Semantics decided here: reductions replace the padding with the reduction's identity first (a
NaN in the padding never leaks), a dot over a symbolic contracted axis becomes a masked multiply
and sum (it then fuses; a native loop needs no library step), a write of a symbolic window
updates only its valid positions (`select(mask, new, old)`), a read never leaves the array (the
tracer proves the padded window in bounds, aligns it with a static stop, or clamps its start
and keeps the offset of the valid part as a run-time value). A length
whose affine form is negative at run time has an all-false mask: NumPy's empty slice.

>>> import numpy as np, jitkernel as jk
>>> def f(a):
...     return jk.lax.fori_loop(0, 4, lambda i, s: s + a[:i].sum(), 0.0)
>>> float(jk.jit(f, backend="interpret")(np.arange(4.0)))
4.0
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import Eqn, Program, Var
from ..ir.primitives import PRIMITIVES, REDUCE_UFUNCS, infer_avals
from ..ir.symdim import Dim, SymDim, reshape_axis_map
from ..ir.types import AType

Offsets = tuple  # per axis: None (every position valid) or a Dim (first valid position)
LoweringRule = Callable[["Lowering", Eqn], None]
LOWERING_RULES: dict[str, LoweringRule] = {}

INT64 = np.dtype(np.int64)


def register_lowering(prim: str, rule: LoweringRule) -> LoweringRule:
    """Register the lowering of `prim` for equations with a symbolic input or output."""
    if prim in LOWERING_RULES:
        raise ValueError(f"a symbolic-length lowering for {prim!r} is registered twice")
    LOWERING_RULES[prim] = rule
    return rule


def is_symbolic_eqn(eqn: Eqn) -> bool:
    return any(v.aval.is_symbolic for v in eqn.inputs) or any(v.aval.is_symbolic for v in eqn.outputs)


def has_symbolic(program: Program) -> bool:
    return any(is_symbolic_eqn(e) for e in program.eqns)


class Lowering:
    """The state of lowering one program: the new equations, the lowered variable and offsets of
    every symbolic variable, the cache of run-time lengths and masks."""

    def __init__(self, program: Program, where: Mapping[int, str] | None = None) -> None:
        self.program = program
        self.where = where or {}
        self.eqns: list[Eqn] = []
        self.constvars = list(program.constvars)
        self.consts = list(program.consts)
        self._new: dict[Var, Var] = {}
        self._offsets: dict[Var, Offsets] = {}
        self._lengths: dict[Any, Var] = {}
        self._masks: dict[Any, Var] = {}
        self._literals: dict[Any, Var] = {}
        self._clamps: dict[Any, tuple[Var, Var]] = {}
        self.current: Eqn | None = None

    # -- reading and defining -------------------------------------------------------------
    def read(self, v: Var) -> Var:
        return self._new.get(v, v)

    def offsets(self, v: Var) -> Offsets:
        return self._offsets.get(v, (None,) * v.aval.ndim)

    def define(self, old: Var, new: Var, offsets: Offsets) -> None:
        self._new[old] = new
        self._offsets[old] = tuple(offsets)

    def bind(self, prim: str, inputs: Sequence[Var], **params: Any) -> list[Var]:
        outs = [Var(a) for a in infer_avals(prim, [v.aval for v in inputs], params)]
        self.eqns.append(Eqn(prim, list(inputs), outs, dict(params)))
        return outs

    def bind1(self, prim: str, *inputs: Var, **params: Any) -> Var:
        return self.bind(prim, inputs, **params)[0]

    def literal(self, value: Any, dtype: Any) -> Var:
        key = (np.dtype(dtype).str, repr(value))
        v = self._literals.get(key)
        if v is None:
            arr = np.asarray(value, dtype=dtype)
            v = Var(AType((), arr.dtype))
            self.constvars.append(v)
            self.consts.append(arr)
            self._literals[key] = v
        return v

    def clamped_start(self, start: Var, limit: int, key: Any) -> tuple[Var, Var]:
        """(min(start, limit), start - that) as int64 variables, once per start form `key`."""
        if limit < 0:
            raise self.error("a padded window longer than its axis")
        memo = self._clamps.get((key, limit))
        if memo is None:
            s = start if start.aval.dtype == INT64 else self.bind1("convert", start, dtype=INT64)
            clamped = self.bind1("minimum", s, self.literal(limit, INT64))
            memo = (clamped, self.bind1("subtract", s, clamped))
            self._clamps[(key, limit)] = memo
        return memo

    def error(self, why: str) -> UnsupportedOperationError:
        eqn = self.current
        where = self.where.get(id(eqn), "<unknown location>") if eqn is not None else "<unknown location>"
        prim = eqn.prim if eqn is not None else "?"
        return UnsupportedOperationError(f"symbolic lengths: {why} ({prim}), at {where}")

    # -- run-time lengths and masks -------------------------------------------------------
    def length(self, dim: Dim) -> Var:
        """The value of `dim` as an int64 0-d variable (the affine form of its input vars)."""
        if not isinstance(dim, SymDim):
            return self.literal(int(dim), INT64)
        key = (dim.const, dim.terms)
        v = self._lengths.get(key)
        if v is not None:
            return v
        total: Var | None = None
        for var, coef in dim.terms:
            term = var if var.aval.dtype == INT64 else self.bind1("convert", var, dtype=INT64)
            if coef != 1:
                term = self.bind1("multiply", term, self.literal(coef, INT64))
            total = term if total is None else self.bind1("add", total, term)
        if dim.const:
            total = self.bind1("add", total, self.literal(dim.const, INT64))
        self._lengths[key] = total
        return total

    def valid_mask(self, shape: tuple[int, ...], axis: int, length: Dim, offset: Dim) -> Var | None:
        """bool[shape]: `offset <= index < offset + length` along `axis` (None: all valid)."""
        n = shape[axis]
        end = offset + length
        key = (shape, axis, _dim_key(offset), _dim_key(end))
        if key in self._masks:
            return self._masks[key]
        iota = self.bind1("iota", shape=shape, dimension=axis, dtype=INT64)
        mask: Var | None = None
        if not (isinstance(offset, int) and offset <= 0):
            lo = self.bind1("broadcast_in_dim", self.length(offset), shape=shape, broadcast_dimensions=())
            mask = self.bind1("greater_equal", iota, lo)
        if not (isinstance(end, int) and end >= n):
            hi = self.bind1("broadcast_in_dim", self.length(end), shape=shape, broadcast_dimensions=())
            below = self.bind1("less", iota, hi)
            mask = below if mask is None else self.bind1("logical_and", mask, below)
        self._masks[key] = mask
        return mask

    def mask_of(self, old: Var, axes: Sequence[int], shape: tuple[int, ...] | None = None) -> Var | None:
        """The mask of the valid positions of `old` along `axes` (symbolic axes with an offset),
        broadcast to `shape` (default: old's padded shape); None when every position is valid."""
        shape = old.aval.max_shape if shape is None else shape
        mask = None
        for ax in axes:
            dim, off = old.aval.shape[ax], self.offsets(old)[ax]
            if not isinstance(dim, SymDim) or off is None:
                continue
            m = self.valid_mask(shape, ax, dim, off)
            if m is not None:
                mask = m if mask is None else self.bind1("logical_and", mask, m)
        return mask

    def only_valid(self, new: Var, axes: Sequence[tuple[int, Dim, Any]]) -> Var:
        """`where_valid(mask, new)` (ir/symdim_prims.py) over the padding of `axes` ((axis,
        length, offset) of `new`'s padded shape): the padding of a result nobody reads, which
        compiled code may then skip computing (fusion/extents.py)."""
        mask = None
        for ax, dim, off in axes:
            if isinstance(dim, SymDim) and off is not None:
                m = self.valid_mask(new.aval.shape, ax, dim, off)
                if m is not None:
                    mask = m if mask is None else self.bind1("logical_and", mask, m)
        return new if mask is None else self.bind1("where_valid", mask, new)

    def fill_padding(self, old: Var, axes: Sequence[int], fill: Any) -> Var:
        """The lowered `old` with its padding along `axes` replaced by the scalar `fill`."""
        new = self.read(old)
        mask = self.mask_of(old, axes)
        if mask is None:
            return new
        filler = self.bind1("broadcast_in_dim", self.literal(fill, new.aval.dtype),
                            shape=new.aval.shape, broadcast_dimensions=())
        return self.bind1("pad_fill", mask, new, filler)


def _dim_key(d: Dim) -> Any:
    return d if isinstance(d, int) else (d.const, d.terms)


def merge_offsets(lw: Lowering, per_input: Sequence[Offsets]) -> Offsets:
    """Elementwise operands must agree on where the valid positions of each axis are."""
    if not per_input:
        return ()
    out = list(per_input[0])
    for offs in per_input[1:]:
        for ax, o in enumerate(offs):
            if o is None:
                continue
            if out[ax] is None:
                out[ax] = o
            elif out[ax] != o:
                raise lw.error(
                    f"operands of equal symbolic length {o} are windows at different positions "
                    f"(a prefix and a suffix, e.g. x[:i] + y[n - i:]); this is not supported yet")
    return tuple(out)


# ----------------------------------------------------------------------------- the pass


def lowering_rule(prim: str) -> LoweringRule | None:
    rule = LOWERING_RULES.get(prim)
    if rule is None and prim in PRIMITIVES and PRIMITIVES[prim].kind == "elementwise":
        rule = _elementwise  # every elementwise primitive, whichever module registers it
    return rule


def lower_symbolic(program: Program, where: Mapping[int, str] | None = None) -> Program:
    """`program` with no symbolic aval left (unchanged when it has none). `where` maps
    `id(eqn)` to the user's line, for errors."""
    if not has_symbolic(program):
        return program
    for v in list(program.invars) + list(program.outvars):
        if v.aval.is_symbolic:
            raise UnsupportedOperationError(
                f"{program.name}: a value of symbolic shape {v.aval} is an input or a result of a loop body "
                "or branch (a carry, a loop operand or a returned value must have a static shape); "
                "pad it to a static length, e.g. write it into a preallocated array")
    lw = Lowering(program, where)
    targets = {e.inputs[0] for e in program.eqns if e.prim == "dynamic_update_slice" and e.inputs[1].aval.is_symbolic}
    # (a target is read before any symbolic write renames it: inputs of static variables)
    for eqn in program.eqns:
        lw.current = eqn
        if not is_symbolic_eqn(eqn):
            if eqn.prim == "dynamic_slice" and lw.read(eqn.inputs[0]) in targets and _is_element(eqn):
                _materialized_element(lw, eqn)
                continue
            lw.eqns.append(Eqn(eqn.prim, [lw.read(v) for v in eqn.inputs], eqn.outputs, eqn.params))
            continue
        rule = lowering_rule(eqn.prim)
        if rule is None:
            raise lw.error(f"no lowering for the primitive {eqn.prim!r} on a value of symbolic length "
                           f"({', '.join(str(v.aval) for v in eqn.inputs)})")
        rule(lw, eqn)
    lw.current = None
    return dataclasses.replace(program, invars=list(program.invars), constvars=lw.constvars, consts=lw.consts,
                               eqns=lw.eqns, outvars=[lw.read(v) for v in program.outvars])


def _is_element(eqn: Eqn) -> bool:
    return all(k == 1 for k in eqn.params["sizes"]) and eqn.outputs[0].aval.dtype.kind != "c"


def _materialized_element(lw: Lowering, eqn: Eqn) -> None:
    """One element of an array that a window of symbolic length is written into (the pivot
    `L[j, j]` of `L[j+1:, j] = ... / L[j, j]`), read into a value of its own: a 0-d reduction
    (max of one element is that element, NaN and -0.0 included) is computed before the window
    kernel, so the write may update the array in place (fusion/dynamic.py can_update_in_place
    refuses a window kernel that reads the array it writes elsewhere than where it writes)."""
    (out,) = eqn.outputs
    ndim = out.aval.ndim
    window = lw.bind1("dynamic_slice", *[lw.read(v) for v in eqn.inputs], **eqn.params)
    value = lw.bind1("reduce_max", window, axes=tuple(range(ndim)))
    lw.eqns.append(Eqn("reshape", [value], [out], {"new_shape": out.aval.shape}))


# ----------------------------------------------------------------------------- rules


def _same(lw: Lowering, eqn: Eqn, params: dict | None = None) -> list[Var]:
    """Re-bind `eqn` on the lowered inputs (the shape rule then sees padded shapes)."""
    return lw.bind(eqn.prim, [lw.read(v) for v in eqn.inputs], **(eqn.params if params is None else params))


def _elementwise(lw: Lowering, eqn: Eqn) -> None:
    offs = merge_offsets(lw, [lw.offsets(v) for v in eqn.inputs])
    for old, new in zip(eqn.outputs, _same(lw, eqn)):
        lw.define(old, new, offs)


def _broadcast(lw: Lowering, eqn: Eqn) -> None:
    (x,), (out,) = eqn.inputs, eqn.outputs
    shape, dims = eqn.params["shape"], eqn.params["broadcast_dimensions"]
    offs: list = [None] * len(shape)
    for src, dst in enumerate(dims):
        if x.aval.shape[src] == shape[dst]:
            offs[dst] = lw.offsets(x)[src]
    new = lw.bind1("broadcast_in_dim", lw.read(x), shape=AType(shape, x.aval.dtype).max_shape,
                   broadcast_dimensions=dims)
    lw.define(out, new, offs)


def _transpose(lw: Lowering, eqn: Eqn) -> None:
    (x,), (out,) = eqn.inputs, eqn.outputs
    perm = eqn.params["permutation"]
    lw.define(out, _same(lw, eqn)[0], tuple(lw.offsets(x)[p] for p in perm))


def _reshape(lw: Lowering, eqn: Eqn) -> None:
    (x,), (out,) = eqn.inputs, eqn.outputs
    new_shape = eqn.params["new_shape"]
    mapping = reshape_axis_map(x.aval.shape, tuple(new_shape))
    if mapping is None:
        raise lw.error(f"a reshape of {x.aval} to {tuple(new_shape)} mixes a symbolic axis with others")
    offs: list = [None] * len(new_shape)
    for src, dst in mapping.items():
        offs[dst] = lw.offsets(x)[src]
    new = lw.bind1("reshape", lw.read(x), new_shape=AType(tuple(new_shape), x.aval.dtype).max_shape)
    lw.define(out, new, offs)


def reduction_identity(prim: str, dtype: np.dtype) -> Any:
    """The value padding takes before a reduction, so that it changes nothing."""
    dtype = np.dtype(dtype)
    if prim == "reduce_sum" or prim == "reduce_or":
        return False if dtype == np.bool_ else 0
    if prim == "reduce_prod" or prim == "reduce_and":
        return True if dtype == np.bool_ else 1
    big = np.inf if dtype.kind in "fc" else (True if dtype == np.bool_ else np.iinfo(dtype).max)
    small = -np.inf if dtype.kind in "fc" else (False if dtype == np.bool_ else np.iinfo(dtype).min)
    return small if prim == "reduce_max" else big


def _reduce(lw: Lowering, eqn: Eqn) -> None:
    (x,), (out,) = eqn.inputs, eqn.outputs
    axes = eqn.params["axes"]
    if eqn.prim in ("reduce_max", "reduce_min") and any(isinstance(x.aval.shape[a], SymDim) and x.aval.shape[a].lo < 1
                                                        for a in axes):
        raise lw.error(f"{eqn.prim} over a symbolic length that may be 0 (NumPy raises for an empty "
                       "reduction without identity)")
    filled = lw.fill_padding(x, axes, reduction_identity(eqn.prim, x.aval.dtype))
    kept = [d for d in range(x.aval.ndim) if d not in axes]
    filled = lw.only_valid(filled, [(d, x.aval.shape[d], lw.offsets(x)[d]) for d in kept])
    new = lw.bind1(eqn.prim, filled, axes=axes)
    lw.define(out, new, tuple(o for a, o in enumerate(lw.offsets(x)) if a not in axes))


def _arg_reduce(lw: Lowering, eqn: Eqn) -> None:
    """argmin/argmax over a symbolic axis (`i + np.argmin(a[i:])`, a selection sort): the
    extreme value of the valid part first (padding filled with the identity, NaN propagated as
    np.min does), then the first valid position holding it (NaN: the first NaN, NumPy's rule),
    minus the offset of the valid part. Padding never wins a tie."""
    (x,), (out,) = eqn.inputs, eqn.outputs
    ax = eqn.params["axis"]
    dim, dtype = x.aval.shape[ax], x.aval.dtype
    if isinstance(dim, SymDim) and dim.lo < 1:
        raise lw.error(f"{eqn.prim} over a symbolic length that may be 0 (NumPy raises: an empty sequence)")
    if dtype.kind == "c":
        raise lw.error(f"{eqn.prim} of a complex value of symbolic length is not supported yet")
    extreme = "reduce_min" if eqn.prim == "argmin" else "reduce_max"
    filled = lw.fill_padding(x, [ax], reduction_identity(extreme, dtype))
    value = lw.bind1(extreme, filled, axes=(ax,))
    shape = filled.aval.shape
    kept = tuple(d for d in range(len(shape)) if d != ax)
    spread = lw.bind1("broadcast_in_dim", value, shape=shape, broadcast_dimensions=kept)
    hit = lw.bind1("equal", filled, spread)
    if dtype.kind == "f":
        nan = lw.bind1("logical_and", lw.bind1("isnan", filled), lw.bind1("isnan", spread))
        hit = lw.bind1("logical_or", hit, nan)
    mask = lw.mask_of(x, [ax])
    if mask is not None:
        hit = lw.bind1("logical_and", hit, mask)
    position = lw.bind1("argmax", hit, axis=ax)
    offset = lw.offsets(x)[ax]
    if offset is not None and not (isinstance(offset, int) and offset == 0):
        start = lw.length(offset)
        if position.aval.ndim:
            start = lw.bind1("broadcast_in_dim", start, shape=position.aval.shape, broadcast_dimensions=())
        if start.aval.dtype != position.aval.dtype:
            start = lw.bind1("convert", start, dtype=position.aval.dtype)
        position = lw.bind1("subtract", position, start)
    lw.define(out, position, tuple(o for d, o in enumerate(lw.offsets(x)) if d != ax))


def _dot_general(lw: Lowering, eqn: Eqn) -> None:
    """A dot with a symbolic axis: a broadcast multiply, masked on the contracted symbolic axes,
    and a sum (fuses into one reduction kernel; a native loop needs no BLAS step).

    The product's axes are (batch, lfree, rfree, contract), or (batch, contract, lfree, rfree)
    when the right operand holds its contracted axes before its free ones (`v @ B[:, i:]`,
    `A[i, :i] @ A[:i, i:]`): then the kernel walks B's rows in memory order and accumulates
    into the output, as BLAS's gemv does, instead of reading B's columns with a stride."""
    (a, b), (out,) = eqn.inputs, eqn.outputs
    (lc, rc), (lb, rb) = eqn.params["contracting"], eqn.params["batch"]
    if a.aval.dtype == np.bool_:
        raise lw.error("a bool dot over a symbolic length is not supported yet")
    lfree = [d for d in range(a.aval.ndim) if d not in lc and d not in lb]
    rfree = [d for d in range(b.aval.ndim) if d not in rc and d not in rb]
    nb, nl, nr, nc = len(lb), len(lfree), len(rfree), len(lc)
    contract_first = bool(rfree) and bool(rc) and max(rc) < min(rfree)
    # the position in the product of each operand axis
    c_pos = list(range(nb, nb + nc)) if contract_first else list(range(nb + nl + nr, nb + nl + nr + nc))
    l_pos = [p + (nc if contract_first else 0) for p in range(nb, nb + nl)]
    r_pos = [p + (nc if contract_first else 0) for p in range(nb + nl, nb + nl + nr)]
    a_pos = {**dict(zip(lb, range(nb))), **dict(zip(lfree, l_pos)), **dict(zip(lc, c_pos))}
    b_pos = {**dict(zip(rb, range(nb))), **dict(zip(rfree, r_pos)), **dict(zip(rc, c_pos))}
    a_order = sorted(a_pos, key=a_pos.get)
    b_order = sorted(b_pos, key=b_pos.get)
    sym_shape: list = [None] * (nb + nl + nr + nc)
    for d, p in a_pos.items():
        sym_shape[p] = a.aval.shape[d]
    for d in rfree:
        sym_shape[b_pos[d]] = b.aval.shape[d]
    a_sym = AType(tuple(sym_shape), a.aval.dtype)
    shape = a_sym.max_shape
    a_offs, b_offs = lw.offsets(a), list(lw.offsets(b))
    b_new = lw.read(b)
    for da, db in zip(lc, rc):
        # windows of one length at different positions (`x[:i] @ y[n - i:]`): b's valid part is
        # moved to a's, so that the products pair NumPy's elements
        if a_offs[da] is not None and b_offs[db] is not None and a_offs[da] != b_offs[db]:
            b_new = shifted(lw, b_new, db, b_offs[db] - a_offs[da])
            b_offs[db] = a_offs[da]
    at = lw.bind1("transpose", lw.read(a), permutation=tuple(a_order))
    bt = lw.bind1("transpose", b_new, permutation=tuple(b_order))
    ab = lw.bind1("broadcast_in_dim", at, shape=shape, broadcast_dimensions=tuple(a_pos[d] for d in a_order))
    bb = lw.bind1("broadcast_in_dim", bt, shape=shape, broadcast_dimensions=tuple(b_pos[d] for d in b_order))
    prod = lw.bind1("multiply", ab, bb)
    mask = None
    prod_offs: list = [None] * len(shape)
    for k in range(nb):
        prod_offs[k] = merge_offsets(lw, [(a_offs[lb[k]],), (b_offs[rb[k]],)])[0]
    for d in lfree:
        prod_offs[a_pos[d]] = a_offs[d]
    for d in rfree:
        prod_offs[b_pos[d]] = b_offs[d]
    for da, db in zip(lc, rc):
        ax = a_pos[da]
        dim = a_sym.shape[ax]
        if not isinstance(dim, SymDim):
            continue
        for off in {_dim_key(o): o for o in (a_offs[da], b_offs[db]) if o is not None}.values():
            m = lw.valid_mask(shape, ax, dim, off)
            if m is not None:
                mask = m if mask is None else lw.bind1("logical_and", mask, m)
    if mask is not None:
        zero = lw.bind1("broadcast_in_dim", lw.literal(0, prod.aval.dtype), shape=shape, broadcast_dimensions=())
        prod = lw.bind1("pad_fill", mask, prod, zero)
    free = [p for p in range(len(shape)) if p not in c_pos]
    prod = lw.only_valid(prod, [(ax, a_sym.shape[ax], prod_offs[ax]) for ax in free])
    new = lw.bind1("dot_sum", prod, axes=tuple(c_pos)) if c_pos else prod
    lw.define(out, new, tuple(prod_offs[p] for p in free))


def window_layout(lw: Lowering, x: Var, sizes: tuple, layout: tuple, starts: Sequence[Var]) -> tuple[list, list, list]:
    """Per axis of `x`: the padded window's size, the offset of its valid part, and its start.
    Layout "start": the padded window starts at the slice's start (the tracer proved it in
    bounds); ("end", c): it ends at the slice's static stop c (`x[s:]`, `x[s:c]`), so the valid
    part is its last `length` positions; ("clamp", key): both bounds traced, the window starts at
    min(start, n - hi) and the valid part at the run-time offset start - that (one variable per
    start form `key`, so that windows with equal bounds agree)."""
    max_sizes, offs, padded = [], [], []
    for d, (k, lay, s, n) in enumerate(zip(sizes, layout, starts, x.aval.shape)):
        if not isinstance(k, SymDim):
            max_sizes.append(k)
            offs.append(None)
            padded.append(s)
        elif lay == "start":
            max_sizes.append(k.hi)
            offs.append(0)
            padded.append(s)
        elif isinstance(lay, tuple) and lay[0] == "end" and 0 <= lay[1] - k.hi:
            max_sizes.append(k.hi)
            offs.append(k.hi - k)
            padded.append(lw.literal(lay[1] - k.hi, INT64))
        elif isinstance(lay, tuple) and lay[0] == "clamp" and k.hi <= n:
            start, offset = lw.clamped_start(s, n - k.hi, lay[1])
            max_sizes.append(k.hi)
            offs.append(SymDim.of(offset, 0, n - k.hi))
            padded.append(start)
        else:
            raise lw.error(f"the window of symbolic length {k} on axis {d} of {x.aval} may leave the array")
    return max_sizes, offs, padded


def _dynamic_slice(lw: Lowering, eqn: Eqn) -> None:
    x, starts, (out,) = eqn.inputs[0], eqn.inputs[1:], eqn.outputs
    if x.aval.is_symbolic:
        raise lw.error(f"a traced-bound slice of a value of symbolic shape {x.aval}")
    sizes, layout = eqn.params["sizes"], eqn.params["layout"]
    max_sizes, offs, padded_starts = window_layout(lw, x, sizes, layout, starts)
    new = lw.bind1("dynamic_slice", lw.read(x), *padded_starts, sizes=tuple(max_sizes))
    lw.define(out, new, offs)


def _dynamic_update_slice(lw: Lowering, eqn: Eqn) -> None:
    x, upd, starts, (out,) = eqn.inputs[0], eqn.inputs[1], eqn.inputs[2:], eqn.outputs
    if x.aval.is_symbolic:
        raise lw.error(f"an assignment into a value of symbolic shape {x.aval}")
    sizes, layout = upd.aval.shape, eqn.params["layout"]
    max_sizes, offs, padded_starts = window_layout(lw, x, sizes, layout, starts)
    merge_offsets(lw, [lw.offsets(upd), tuple(offs)])  # the value's valid part is where it is written
    new_val = lw.read(upd)
    mask = None
    for ax, (k, off) in enumerate(zip(sizes, offs)):
        if isinstance(k, SymDim):
            m = lw.valid_mask(tuple(max_sizes), ax, k, off)
            if m is not None:
                mask = m if mask is None else lw.bind1("logical_and", mask, m)
    if mask is not None:
        old = lw.bind1("dynamic_slice", lw.read(x), *padded_starts, sizes=tuple(max_sizes))
        new_val = lw.bind1("select", mask, new_val, old)
    new = lw.bind1("dynamic_update_slice", lw.read(x), new_val, *padded_starts)
    lw.define(out, new, (None,) * x.aval.ndim)


def _slice(lw: Lowering, eqn: Eqn) -> None:
    """A static slice of a value of symbolic shape: static axes as they are; a symbolic axis is
    taken whole (tracer convention, ir/primitives.py), forwards or reversed. A reversed valid
    part stays where it was (same offset, so it meets the windows it came from: `np.dot(
    np.flip(r[:k]), y[:k])`): out[j] = x[2 * offset + length - 1 - j] for the valid j, read from
    the reversed buffer shifted by `hi - 2 * offset - length` (in [-hi, hi]) through a buffer
    padded by `hi` on both sides, so the window never leaves it."""
    (x,), (out,) = eqn.inputs, eqn.outputs
    starts, steps, shape = eqn.params["starts"], eqn.params["steps"], eqn.params["shape"]
    static = [d for d, n in enumerate(x.aval.shape) if not isinstance(n, SymDim)]
    new = lw.read(x)
    padded = new.aval.shape
    new = lw.bind1("slice", new, starts=tuple(starts[d] if d in static else (padded[d] - 1 if steps[d] < 0 else 0)
                                              for d in range(len(padded))),
                   steps=tuple(steps),
                   shape=tuple(shape[d] if d in static else padded[d] for d in range(len(padded))))
    offs = lw.offsets(x)
    for d, n in enumerate(x.aval.shape):
        if not isinstance(n, SymDim) or steps[d] > 0 or offs[d] is None:
            continue  # (an axis valid everywhere, None, is a broadcast one: equal along it)
        new = shifted(lw, new, d, padded[d] - 2 * offs[d] - n)
    lw.define(out, new, tuple(offs[d] for d in range(len(shape))))


def shifted(lw: Lowering, new: Var, axis: int, shift: Dim) -> Var:
    """The lowered buffer `new` moved along `axis` by the run-time amount `shift` (a Dim in
    [-n, n] wherever the valid part is not empty, n the padded length): out[j] = new[j + shift]
    where that lies in the buffer, zero elsewhere. Read through a copy padded by n zeros on both sides, so the window (a
    dynamic_slice, which would clamp a start that leaves the buffer) stays inside."""
    n = new.aval.shape[axis]
    zeros = lw.bind1("broadcast_in_dim", lw.literal(0, new.aval.dtype),
                     shape=tuple(n if k == axis else m for k, m in enumerate(new.aval.shape)),
                     broadcast_dimensions=())
    wide = lw.bind1("concatenate", zeros, new, zeros, axis=axis)
    zero = lw.literal(0, INT64)
    # (clamped: a length whose affine form is negative, an empty slice, may push the start out)
    start = lw.bind1("maximum", lw.bind1("minimum", lw.length(n + shift), lw.literal(2 * n, INT64)), zero)
    return lw.bind1("dynamic_slice", wide, *[start if k == axis else zero for k in range(new.aval.ndim)],
                    sizes=tuple(new.aval.shape))


def _register_builtin_rules() -> None:
    for name in REDUCE_UFUNCS:
        register_lowering(name, _reduce)
    register_lowering("broadcast_in_dim", _broadcast)
    register_lowering("transpose", _transpose)
    register_lowering("reshape", _reshape)
    register_lowering("dot_general", _dot_general)
    register_lowering("argmin", _arg_reduce)
    register_lowering("argmax", _arg_reduce)
    register_lowering("dynamic_slice", _dynamic_slice)
    register_lowering("slice", _slice)
    register_lowering("dynamic_update_slice", _dynamic_update_slice)


_register_builtin_rules()

__all__ = ["lowering_rule", "LOWERING_RULES", "Lowering", "LoweringRule", "register_lowering", "lower_symbolic",
           "has_symbolic", "is_symbolic_eqn", "merge_offsets", "reduction_identity", "reshape_axis_map"]
