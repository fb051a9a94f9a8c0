"""Where NumPy puts the dimensions of an advanced index, for the gather and scatter kernels
(indexing.py): which x axis each index entry consumes, and which output dimension each
result axis is.

NumPy's rule (the "combined indexing" of its indexing docs): the index arrays and the integers
next to them are the advanced entries; their broadcast shape B replaces them where they stand
when they are adjacent in the index (no slice, newaxis or ellipsis between them), and goes first
otherwise. Slices keep their axes in order, newaxis adds a dimension of 1, an ellipsis stands
for the full slices of the axes no other entry consumes.

>>> lay = layout((2, 3, 4), (("int", 0), ("slice", None, None, None), ("array", 0)), [(5,)])
>>> lay.out_shape, [d.kind for d in lay.out_dims]
((5, 3), ['B', 'S'])
>>> layout((2, 3, 4), (("slice", None, None, None), ("array", 0)), [(5,)]).out_shape
(2, 5, 4)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .dynamic_params import Ext

FULL = ("slice", None, None, None)


class NotRendered(Exception):
    """This index form has no GPU layout here (the caller refuses the step, naming why)."""


@dataclass(frozen=True)
class OutDim:
    """One dimension of the result: "B" (dimension `j` of the broadcast index shape), "S" (the
    slice of x axis `axis`: start + step * coordinate) or "N" (a new axis of 1)."""

    kind: str
    size: Any
    j: int = -1
    axis: int = -1
    start: int = 0
    step: int = 1


@dataclass(frozen=True)
class AxisPick:
    """How one x axis is indexed: "S" (out dimension `dim`), "A" (index array `k`) or "I" (the
    integer `value`, already in range)."""

    kind: str
    dim: int = -1
    k: int = -1
    value: int = 0


@dataclass(frozen=True)
class Layout:
    out_dims: tuple[OutDim, ...]
    picks: tuple[AxisPick, ...]
    bshape: tuple[Any, ...]

    @property
    def out_shape(self) -> tuple:
        return tuple(d.size for d in self.out_dims)


def _is_static(n: Any) -> bool:
    """A compile-time size (an `Ext` is an int holding a run-time parameter's value)."""
    return isinstance(n, (int, np.integer)) and not isinstance(n, Ext)


def broadcast_sizes(shapes: Sequence[Sequence[Any]]) -> list:
    """NumPy's broadcast of the index arrays' shapes (a size from an array where it is not 1)."""
    np.broadcast_shapes(*[tuple(int(d) for d in sh) for sh in shapes])  # NumPy's error if they do not
    nb = max((len(sh) for sh in shapes), default=0)
    out = []
    for d in range(nb):
        sizes = [sh[d - nb + len(sh)] for sh in shapes if d - nb + len(sh) >= 0]
        out.append(next((n for n in sizes if int(n) != 1), 1))
    return out


def layout(xshape: Sequence[Any], index: tuple, index_shapes: Sequence[Sequence[Any]]) -> Layout:
    """The layout of x[index] (module docstring); NotRendered for entries it does not place
    (static booleans) or partial slices of a run-time extent."""
    if any(e[0] == "bool" for e in index):
        raise NotRendered("a Python bool in the index")
    consumed = sum(1 for e in index if e[0] in ("array", "int", "slice"))
    if consumed > len(xshape):
        raise NotRendered("more indices than dimensions")
    entries: list[tuple] = []
    for e in index:
        entries += [FULL] * (len(xshape) - consumed) if e[0] == "ellipsis" else [e]
    if not any(e[0] == "ellipsis" for e in index):
        entries += [FULL] * (len(xshape) - consumed)
    # Integers are advanced entries only next to index arrays (without any, x[0, :] is basic
    # indexing: the integer's axis is simply dropped, and B is empty)
    advanced = [p for p, e in enumerate(entries) if e[0] in ("array", "int")]
    if not any(entries[p][0] == "array" for p in advanced):
        advanced = []
    adjacent = not advanced or advanced == list(range(advanced[0], advanced[-1] + 1))
    bshape = broadcast_sizes(index_shapes)
    bdims = [OutDim("B", n, j=j) for j, n in enumerate(bshape)]
    out: list[OutDim] = [] if adjacent else list(bdims)
    picks: list[AxisPick] = []
    axis = 0
    for p, e in enumerate(entries):
        if adjacent and advanced and p == advanced[0]:
            out += bdims
        if e[0] == "none":
            out.append(OutDim("N", 1))
            continue
        size = xshape[axis]
        if e[0] == "slice":
            if e == FULL:
                start, step, n = 0, 1, size
            elif _is_static(size):
                start, stop, step = slice(*e[1:]).indices(int(size))
                n = len(range(start, stop, step))
            else:
                raise NotRendered("a partial slice of a run-time extent")
            picks.append(AxisPick("S", dim=len(out)))
            out.append(OutDim("S", n, axis=axis, start=start, step=step))
        elif e[0] == "array":
            picks.append(AxisPick("A", k=e[1]))
        else:  # a static integer next to the arrays: NumPy checked it when the program was traced
            v = int(e[1])
            if not _is_static(size):
                raise NotRendered("an integer index into a run-time extent")
            picks.append(AxisPick("I", value=v + int(size) if v < 0 else v))
        axis += 1
    return Layout(tuple(out), tuple(picks), tuple(bshape))
