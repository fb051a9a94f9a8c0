"""Run-time extents of reduced loops: a reduction over a padded axis whose padding is masked out
runs only over the valid prefix.

A dot or a sum over a slice of symbolic length (`L[i, :i] @ x[:i]`) is lowered to a reduction
over the padded axis with the padding replaced by the identity (passes/lower_symbolic.py): its
kernel stores `reduce(pad_fill(index(d) < V and ..., x, identity))` where `d` is a reduced loop and
`V` a value that does not change inside the kernel (the loop index of an enclosing native loop,
a length computed from it). Such a store gives the same result when loop `d` stops at `V`
instead (the skipped points add the identity), without the mask: `loop_limits` finds the
pattern, and the renderer bounds the loop by `min(extent, max(V, 0))`. For float sums that
follow NumPy's pairwise order (Store.block), only a block that is exactly loop `d` qualifies:
the pairwise sum then runs over the valid elements, which is NumPy's own order for `x[:i].sum()`.

Two more patterns bound loops the same way (lower bounds `index(d) >= V` too): a store of
`where_valid(mask, x)` (the padding of a value nobody reads, ir/symdim_prims.py) skips the kept
points outside the mask, and an in-place masked write `x[p] = select(mask, new, x[p])` skips the
points that would store the value they hold.

>>> from jitkernel.fusion import index as ix
>>> from jitkernel.fusion.kernel_ir import Compute, IndexValue, Kernel, Literal, Load, Store
>>> import numpy as np
>>> i64, f64, b = np.dtype("int64"), np.dtype("float64"), np.dtype("bool")
>>> mask = Compute("less", (IndexValue(ix.var(0), i64), Load(7, ix.const(0), i64)), (), b)
>>> value = Compute("pad_fill", (mask, Load(1, ix.var(0), f64), Literal(0.0, f64)), (), f64)
>>> k, limits = loop_limits(Kernel("k", (299,), 1, [Store(2, ix.const(0), value, "sum", None, "free")]))
>>> list(limits), list(limits[0]), type(k.stores[0].value).__name__
([0], ['hi'], 'Load')
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .kernel_ir import Compute, IndexValue, Kernel, Literal, Load, Node, follows_numpy_blocks, postorder


def _identity(op: str, dtype: np.dtype) -> Any:
    if op in ("sum", "or"):
        return 0
    if op in ("prod", "and"):
        return 1
    big = op == "min"
    if dtype.kind == "f":
        return float("inf") if big else float("-inf")
    if dtype.kind == "b":
        return 1 if big else 0
    info = np.iinfo(dtype)
    return info.max if big else info.min


def _is_identity(nd: Node, op: str, dtype: np.dtype) -> bool:
    if not isinstance(nd, Literal):
        return False
    want = _identity(op, dtype)
    try:
        return float(nd.value) == float(want) if dtype.kind == "f" else int(nd.value) == int(want)
    except (TypeError, ValueError, OverflowError):
        return False


def _invariant(nd: Node) -> bool:
    """Does `nd` have one value for the whole kernel (no loop index, no load that moves)?"""
    for x in postorder([nd]):
        if isinstance(x, IndexValue):
            return False
        if isinstance(x, Load) and (x.offset.loop_vars() or x.buffer < 0):
            return False
    return True


def _conjuncts(nd: Node) -> list[Node]:
    if isinstance(nd, Compute) and nd.prim == "logical_and":
        return _conjuncts(nd.args[0]) + _conjuncts(nd.args[1])
    return [nd]


def _bound(cond: Node, loops: range) -> tuple[int, str, Node] | None:
    """`index(d) < V` ("hi") or `index(d) >= V` ("lo") for a loop d in `loops` and an
    invariant integer V."""
    if not (isinstance(cond, Compute) and cond.prim in ("less", "greater_equal")):
        return None
    i, v = cond.args
    if not isinstance(i, IndexValue) or i.index.const or len(i.index.terms) != 1:
        return None
    (atom, coef), = i.index.terms
    if atom[0] != "i" or coef != 1 or atom[1] not in loops:
        return None
    if v.dtype.kind not in "iu" or not _invariant(v):
        return None
    return atom[1], ("hi" if cond.prim == "less" else "lo"), v


def _bounds_of(cond: Node, loops: range) -> tuple[dict, list[Node]]:
    """The loop bounds among the conjuncts of `cond` ({d: {"lo"|"hi": V}}), and the others."""
    found: dict = {}
    rest: list[Node] = []
    for c in _conjuncts(cond):
        b = _bound(c, loops)
        if b is not None and b[1] not in found.get(b[0], {}):
            found.setdefault(b[0], {})[b[1]] = b[2]
        else:
            rest.append(c)
    return found, rest


def _and(conds: list[Node]) -> Node:
    out = conds[0]
    for c in conds[1:]:
        out = Compute("logical_and", (out, c), (), out.dtype)
    return out


def _store_bounds(kernel: Kernel, st: Any) -> tuple[dict, Node] | None:
    """The loop bounds one store allows, and its value without the masks that imply them."""
    n_kept = len(kernel.kept)
    kept, reduced = range(n_kept), range(n_kept, len(kernel.domain))
    v, bounds = st.value, {}
    if isinstance(v, Compute) and v.prim == "where_valid":
        # Padding nobody reads: outside the mask any value will do, so the kept loops may skip
        # it, and elsewhere the value itself is a valid choice.
        found, _ = _bounds_of(v.args[0], kept)
        bounds.update(found)
        v = v.args[1]
    if st.reduce and st.reduce not in ("argmax", "argmin"):
        # A select of the identity may stop the loop where the order of the reduction does not
        # matter; a pad_fill (padding of a symbolic length) also where NumPy's pairwise order
        # does: NumPy sums x[:i] as i elements, not as n with zeros.
        prims = ("pad_fill",) if follows_numpy_blocks(st) or st.block == "tree" else ("pad_fill", "select")
        if isinstance(v, Compute) and v.prim in prims and _is_identity(v.args[2], st.reduce, st.value.dtype):
            found, rest = _bounds_of(v.args[0], reduced)
            if found:
                bounds.update(found)
                v = v.args[1] if not rest else Compute(v.prim, (_and(rest), v.args[1], v.args[2]), (), v.dtype)
    elif not st.reduce and isinstance(v, Compute) and v.prim == "select":
        old = v.args[2]
        if isinstance(old, Load) and old.buffer == st.buffer and old.offset == st.offset:
            # A masked write in place: a point outside the mask stores the value it holds.
            found, rest = _bounds_of(v.args[0], range(len(kernel.domain)))
            if found and len(kernel.stores) == 1:
                bounds.update(found)
                v = v.args[1] if not rest else Compute("select", (_and(rest), v.args[1], old), (), v.dtype)
    return bounds, v


def loop_limits(kernel: Any) -> tuple[Any, dict[int, dict]]:
    """(kernel without the masks that became bounds, {loop: {"lo"|"hi": invariant node}});
    (kernel, {}) when its stores do not all allow the same bounds."""
    if not isinstance(kernel, Kernel) or not kernel.stores:
        return kernel, {}
    limits: dict | None = None
    stores = []
    for st in kernel.stores:
        bounds, value = _store_bounds(kernel, st)
        if not bounds or (limits is not None and bounds != limits):
            return kernel, {}
        limits = bounds
        stores.append(st.with_value(value))
    written = {st.buffer for st in kernel.stores}
    for lohi in (limits or {}).values():
        for nd in lohi.values():
            if any(isinstance(x, Load) and x.buffer in written for x in postorder([nd])):
                return kernel, {}  # a bound this kernel itself changes is no bound
    last = len(kernel.domain) - 1
    for st in stores:
        if not st.reduce:
            continue
        blocked = st.block == "tree" or follows_numpy_blocks(st)
        if blocked and st.block != kernel.domain[last]:
            return kernel, {}  # NumPy's blocks span more than the last loop: keep the masks
    return replace(kernel, stores=stores), limits or {}
