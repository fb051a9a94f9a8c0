"""Run-time extents of reduced loops: a reduction over a padded axis whose padding is masked out
runs only over the valid prefix.

A dot or a sum over a slice of symbolic length (`L[i, :i] @ x[:i]`) is lowered to a reduction
over the padded axis with the padding replaced by the identity (passes/lower_symbolic.py): its
kernel stores `reduce(select(index(d) < V and ..., x, identity))` where `d` is a reduced loop and
`V` a value that does not change inside the kernel (the loop index of an enclosing native loop,
a length computed from it). Such a store gives the same result when loop `d` stops at `V`
instead (the skipped points add the identity), without the mask: `loop_limits` finds the
pattern, and the renderer bounds the loop by `min(extent, max(V, 0))`. For float sums that
follow NumPy's pairwise order (Store.block), only a block that is exactly loop `d` qualifies:
the pairwise sum then runs over the valid elements, which is NumPy's own order for `x[:i].sum()`.

>>> from jitkernel.fusion import index as ix
>>> from jitkernel.fusion.kernel_ir import Compute, IndexValue, Kernel, Literal, Load, Store
>>> import numpy as np
>>> i64, f64, b = np.dtype("int64"), np.dtype("float64"), np.dtype("bool")
>>> mask = Compute("less", (IndexValue(ix.var(0), i64), Load(7, ix.const(0), i64)), (), b)
>>> value = Compute("select", (mask, Load(1, ix.var(0), f64), Literal(0.0, f64)), (), f64)
>>> k, limits = loop_limits(Kernel("k", (299,), 1, [Store(2, ix.const(0), value, "sum", None, "free")]))
>>> list(limits), type(k.stores[0].value).__name__
([0], 'Load')
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


def _upper_bound(cond: Node, reduced: range) -> tuple[int, Node] | None:
    """`index(d) < V` for a reduced loop d and an invariant integer V."""
    if not (isinstance(cond, Compute) and cond.prim == "less"):
        return None
    i, v = cond.args
    if not isinstance(i, IndexValue) or i.index.const or len(i.index.terms) != 1:
        return None
    (atom, coef), = i.index.terms
    if atom[0] != "i" or coef != 1 or atom[1] not in reduced:
        return None
    if v.dtype.kind not in "iu" or not _invariant(v):
        return None
    return atom[1], v


def loop_limits(kernel: Any) -> tuple[Any, dict[int, Node]]:
    """(kernel without the masks, {reduced loop: invariant upper bound}); ({} when the
    pattern does not hold for every store of the kernel)."""
    if not isinstance(kernel, Kernel) or kernel.n_reduce == 0 or not kernel.stores:
        return kernel, {}
    n_kept = len(kernel.kept)
    reduced = range(n_kept, len(kernel.domain))
    limits: dict[int, Node] | None = None
    stores = []
    for st in kernel.stores:
        v = st.value
        if not st.reduce or st.reduce in ("argmax", "argmin") or not (isinstance(v, Compute) and v.prim == "select"):
            return kernel, {}
        cond, x, other = v.args
        if not _is_identity(other, st.reduce, st.value.dtype):
            return kernel, {}
        found: dict[int, Node] = {}
        rest: list[Node] = []
        for c in _conjuncts(cond):
            bound = _upper_bound(c, reduced)
            if bound is not None and bound[0] not in found:
                found[bound[0]] = bound[1]
            else:
                rest.append(c)
        if not found or (limits is not None and limits != found):
            return kernel, {}
        limits = found
        if rest:
            keep = rest[0]
            for c in rest[1:]:
                keep = Compute("logical_and", (keep, c), (), keep.dtype)
            x = Compute("select", (keep, x, other), (), v.dtype)
        stores.append(st.with_value(x))
    last = len(kernel.domain) - 1
    for st in stores:
        if st.block == "tree" or (follows_numpy_blocks(st) and st.block != kernel.domain[last]):
            return kernel, {}  # NumPy's blocks span more than the last loop: keep the mask
    return replace(kernel, stores=stores), limits or {}
