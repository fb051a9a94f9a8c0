"""Index maps of the movement primitives: the element of the input that an output element at
`index` reads. A movement equation fused into a kernel costs nothing but this map (the
scheduler, fusion/schedule.py, follows it instead of computing the movement)."""
from __future__ import annotations

from typing import Any, Callable

from ..ir import Eqn
from . import dynamic
from . import index as ix
from .index import Aff

Index = tuple[Aff, ...]


def _broadcast_in_dim(sched: Any, eqn: Eqn, index: Index, extents: tuple[int, ...]) -> Index:
    x = eqn.inputs[0]
    return tuple(ix.const(0) if x.aval.shape[s] == 1 else index[d]
                 for s, d in enumerate(eqn.params["broadcast_dimensions"]))


def _transpose(sched: Any, eqn: Eqn, index: Index, extents: tuple[int, ...]) -> Index:
    src: list = [None] * eqn.inputs[0].aval.ndim
    for j, pj in enumerate(eqn.params["permutation"]):
        src[pj] = index[j]
    return tuple(src)


def _slice(sched: Any, eqn: Eqn, index: Index, extents: tuple[int, ...]) -> Index:
    p = eqn.params
    return tuple(ix.add(ix.const(s), ix.scale(i, st)) for s, st, i in zip(p["starts"], p["steps"], index))


def _dynamic_slice(sched: Any, eqn: Eqn, index: Index, extents: tuple[int, ...]) -> Index:
    return dynamic.slice_source(sched, eqn, index)


def _reshape(sched: Any, eqn: Eqn, index: Index, extents: tuple[int, ...]) -> Index:
    linear = ix.linearize(index, eqn.outputs[0].aval.shape)
    return tuple(ix.unravel(linear, eqn.inputs[0].aval.shape, extents))


SOURCE_INDEX: dict[str, Callable[[Any, Eqn, Index, tuple[int, ...]], Index]] = {
    "broadcast_in_dim": _broadcast_in_dim,
    "transpose": _transpose,
    "slice": _slice,
    dynamic.SLICE: _dynamic_slice,
    "reshape": _reshape,
}


def source_index(sched: Any, eqn: Eqn, index: Index, extents: tuple[int, ...]) -> Index:
    """The index into `eqn`'s input read by its output at `index` (`extents`: the loop extents
    of the kernel, which bound the `//` and `%` of a reshape's map).

    >>> from jitkernel.ir import AType, Eqn, Var
    >>> x, y = Var(AType((2, 3), "float32")), Var(AType((3, 2), "float32"))
    >>> flip = Eqn("transpose", [x], [y], {"permutation": (1, 0)})
    >>> source_index(None, flip, (ix.var(0), ix.var(1)), (3, 2)) == (ix.var(1), ix.var(0))
    True
    """
    rule = SOURCE_INDEX.get(eqn.prim)
    if rule is None:
        raise AssertionError(f"cannot fuse {eqn.prim} as an expression")
    return rule(sched, eqn, index, extents)
