"""How one traced Program splits along the chunked axes of its Dask arguments.

The planner walks the (optimised) Program once, equation by equation, and groups them into
*segments*: runs of equations that compute one block of every output from one block of every
input (Dask's `blockwise`). Inside a segment every array axis carries a *letter* (Dask's index
names); equations relate letters through the rules in `RULES`, a table keyed by primitive:

| primitive                         | rule                                                        |
|-----------------------------------|-------------------------------------------------------------|
| elementwise (ufuncs, convert, select) | same letter on the same axis of every input and output  |
| broadcast_in_dim                  | kept axes keep their letter; new / size-1-stretched axes get a new one |
| transpose                         | letters permuted                                            |
| reshape                           | letters kept when only size-1 axes are added or removed; otherwise Dask's own reshape of the existing array |
| reduce_sum/prod/max/min/and/or    | reduced axes whole in the block: blockwise (row kernels); a reduced axis that is chunked: a per-block *partial* (fused into the segment) plus a tree combine with our reduce kernel (`dask.array.reduction`) |
| argmax, argmin                    | a chunked axis: per-block index and extreme value (partials), one combine that picks the first extreme block and adds its offset; complex operands: that axis in one block |
| sort, argsort, partition, argpartition, accumulate (cumsum, ...), fft | that axis is rechunked to one block, the others stay split |
| dot_general                       | contracting and batch axes share letters; a chunked contraction: blockwise products (partials) plus a tree sum |
| slice                             | untouched axes keep their letter; slicing a chunked axis: Dask's own slicing of the existing array (the segment computing it is closed first) |
| concatenate                       | along an unchunked axis: blockwise; along a chunked one: Dask's own concatenate of the existing arrays |
| iota, constants                   | lazy Dask sources (one block, split by Dask's rechunk where they meet chunked axes) |
| cond, while_loop, fori_loop, scan  | per block when every sub-program is blockwise under these rules (control_flow.py); else as below |
| everything else (library calls, linalg, gathers/scatters, ...) | rechunked to one block (the whole array), with a RechunkWarning |

Refused with UnsupportedOperationError: functions that write an argument in place (Dask arrays
are immutable), and data-dependent output shapes (`x[mask]`, `np.nonzero`, `np.unique`).

A letter is *chunked* when one of the segment's inputs is split along an axis with that letter
(inputs split differently along one letter are rechunked to the common refinement, as Dask's
`unify_chunks` does), unless it is *pinned* whole (a blockwise reduction over it, a slice, a
rechunk rule): a pinned letter makes every input axis with it one block. Pinning a letter that is
chunked in a segment that already computes something first closes that segment, so the work
before the rechunk stays parallel. An array that would carry one letter twice (`x + x.T`) has that
letter pinned. A segment is closed when an equation reads the result of one of its partials;
that result is then the tree combine's output, and a new segment starts.
"""
from __future__ import annotations

import uuid
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir.semantics import accumulator_dtype
from ..errors import UnsupportedOperationError
from ..ir import AType, Program
from ..ir.primitives import PRIMITIVES, REDUCE_UFUNCS
from ..ir.program import Eqn, Var
from .worker import BlockProgram


class RechunkWarning(UserWarning):
    """A chunked axis of a Dask argument had to be rechunked to one block (the step that needs it
    is not partitioned along that axis): the work there runs in one task."""


# -- chunkings ---------------------------------------------------------------------------------
def refine(chunkings: list[tuple[int, ...]], size: int) -> tuple[int, ...]:
    """The common refinement of several chunkings of one axis (every boundary of each), without
    zero-size chunks: `refine([(2, 2), (3, 1)], 4) == (2, 1, 1)`."""
    bounds = {0, size}
    for chunks in chunkings:
        edge = 0
        for c in chunks:
            edge += c
            bounds.add(edge)
    edges = sorted(bounds)
    out = tuple(b - a for a, b in zip(edges, edges[1:]) if b > a)
    return out or (size,)


def without_empty_chunks(chunks: tuple[int, ...]) -> tuple[int, ...]:
    """An axis's chunking with its zero-size chunks dropped (a zero-size axis keeps one empty
    chunk): `without_empty_chunks((1, 0, 2)) == (1, 2)`. Dask arguments are rechunked to this
    before partitioning (graph.py): an empty block gave Dask's reshape of the blocks (`a.ravel()`,
    a flat `argmax`) a block it could not reshape, and an arg reduction an empty block to pick."""
    kept = tuple(c for c in chunks if c)
    return kept or (0,)


class Letters:
    """Union-find over axis letters with each class's size, chunkings and pin."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.size: list[int] = []
        self.chunkings: list[list[tuple[int, ...]]] = []
        self.pinned: list[bool] = []

    def new(self, size: int, chunks: tuple[int, ...] | None = None) -> int:
        self.parent.append(len(self.parent))
        self.size.append(int(size))
        self.chunkings.append([tuple(chunks)] if chunks is not None else [])
        self.pinned.append(False)
        return len(self.parent) - 1

    def find(self, a: int) -> int:
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: int, b: int) -> int:
        a, b = self.find(a), self.find(b)
        if a == b:
            return a
        if self.size[a] != self.size[b]:
            raise AssertionError(f"partition: letters of sizes {self.size[a]} and {self.size[b]} unified")
        self.parent[b] = a
        self.chunkings[a] += self.chunkings[b]
        self.pinned[a] = self.pinned[a] or self.pinned[b]
        return a

    def chunks(self, a: int) -> tuple[int, ...]:
        a = self.find(a)
        if self.pinned[a] or not self.chunkings[a]:
            return (self.size[a],)
        return refine(self.chunkings[a], self.size[a])

    def chunked(self, a: int) -> bool:
        return len(self.chunks(a)) > 1

    def pin(self, a: int) -> None:
        self.pinned[self.find(a)] = True


# -- the plan ----------------------------------------------------------------------------------
@dataclass
class Source:
    """A value that exists before any segment: an argument, a constant or an iota."""

    var: Var
    kind: str  # "arg" (leaf index), "const" (value), "iota" (params), "alias" (the Var it reads)
    payload: Any


@dataclass
class SegmentStep:
    bp: BlockProgram
    inputs: list[Var]
    in_chunks: list[tuple[tuple[int, ...], ...]]  # every input rechunked to these first
    grid: list[tuple[int, int]]  # (letter, number of blocks) of every chunked letter
    outputs: list[tuple[Var, tuple[int, ...], tuple[tuple[int, ...], ...]]]  # (var, letters, chunks)
    description: str = ""


@dataclass
class CombineStep:
    partial: Var
    out: Var
    prim: str
    axes: tuple[int, ...]
    chunks: tuple[tuple[int, ...], ...]
    description: str = ""


@dataclass
class DaskStep:
    """slice / concatenate / reshape of existing Dask arrays by Dask's own functions."""

    eqn: Eqn
    description: str = ""


def dask_index(starts: tuple, steps: tuple, shape: tuple) -> tuple:
    """The Python slices of a `slice` primitive's params (negative steps included)."""
    out = []
    for s, st, n in zip(starts, steps, shape):
        if n == 0:
            out.append(slice(0, 0))
        elif st > 0:
            out.append(slice(s, s + st * (n - 1) + 1, st))
        else:
            stop = s + st * (n - 1) - 1
            out.append(slice(s, stop if stop >= 0 else None, st))
    return tuple(out)


# The steps Dask runs itself on chunked axes: primitive -> (what the plan calls it,
# (params, input arrays, dask.array) -> the output array).
DASK_STEPS = {
    "slice": ("slicing", lambda p, arrays, da: arrays[0][dask_index(p["starts"], p["steps"], p["shape"])]),
    "concatenate": ("concatenate", lambda p, arrays, da: da.concatenate(arrays, axis=p["axis"])),
    "reshape": ("reshape", lambda p, arrays, da: arrays[0].reshape(tuple(p["new_shape"]))),
}


def apply_dask_step(eqn: Eqn, arrays: list, da: Any) -> Any:
    return DASK_STEPS[eqn.prim][1](eqn.params, arrays, da)


@dataclass
class ArgCombineStep:
    """argmax/argmin over a chunked axis: per block the local index and the extreme value (both
    kept as size 1 along the axis); the combine picks, per output block, the first block holding
    the extreme (NaN first, as NumPy) and adds that block's offset to its index."""

    index: Var
    value: Var
    out: Var
    prim: str
    axis: int
    offsets: tuple[int, ...]  # where each block along the axis starts
    chunks: tuple[tuple[int, ...], ...]
    description: str = ""


@dataclass
class Plan:
    program: Program
    steps: list[Any]
    chunks: dict[Var, tuple[tuple[int, ...], ...]]
    notes: list[str] = field(default_factory=list)
    rechunked: list[str] = field(default_factory=list)  # the reasons of RechunkWarnings

    def explain(self) -> str:
        segs = sum(isinstance(s, SegmentStep) for s in self.steps)
        combines = sum(isinstance(s, (CombineStep, ArgCombineStep)) for s in self.steps)
        lines = [f"dask partition of {self.program.name}: {segs} blockwise segment(s), {combines} tree reduction(s)"]
        for i, a in enumerate(self.program.invars):
            if a in self.chunks and self.chunks[a]:
                lines.append(f"  input {i}: {a.aval} chunks {_chunks_text(self.chunks[a])}")
        for step in self.steps:
            if isinstance(step, (SegmentStep, CombineStep, ArgCombineStep, DaskStep)):
                lines.append("  " + step.description)
        lines += [f"  rechunk: {n}" for n in self.rechunked]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _chunks_text(chunks: tuple[tuple[int, ...], ...]) -> str:
    parts = []
    for c in chunks:
        sizes = sorted(set(c))
        parts.append(f"{len(c)}x{c[0]}" if len(sizes) == 1 else f"{len(c)} blocks of {'/'.join(map(str, sizes))}")
    return "(" + ", ".join(parts) + ")"


def partial_dtype(combine_prim: str, dtype: np.dtype) -> np.dtype:
    """The dtype the per-block partials of a reduction to `dtype` and their tree combine
    accumulate in: NumPy's accumulator (ir/semantics.py), so a chunked reduction rounds
    to `dtype` once, at the end, as NumPy's loop does over the whole axis."""
    return accumulator_dtype(combine_prim.removeprefix("reduce_"), np.dtype(dtype))


# -- the segment under construction ------------------------------------------------------------
class _Retry(Exception):
    """Raised by a rule that needs the open segment closed first (a pin of a chunked letter)."""


class Segment:
    def __init__(self, planner: "Planner") -> None:
        self.planner = planner
        self.L = Letters()
        self.letters: dict[Var, tuple[int, ...]] = {}
        self.inputs: list[Var] = []
        self.constvars: list[Var] = []
        self.entries: list[tuple] = []
        self.defined: list[Var] = []
        # program var -> ("reduce", partial, combine prim, reduced axes, source prim)
        #              | ("arg", index partial, value partial, prim, axis): read only after the combine
        self.pending: dict[Var, tuple] = {}
        self.partials: list[tuple[Var, tuple[int, ...], tuple[int, ...]]] = []  # (partial var, letters, reduced)
        self.free: set[Var] = set()  # values computed from scalar constants only
        self.reads_inputs = False  # whether some entry reads an input (closing the segment saves work)
        self.sub_vars: list[Var] = []  # variables of blockwise control flow's sub-programs (control_flow.py)

    def of(self, v: Var) -> tuple[int, ...]:
        """The letters of `v`, registering it as an input (or an embedded scalar constant)."""
        if v not in self.letters:
            p = self.planner
            if v in p.scalar_consts:
                self.constvars.append(v)
                self.letters[v] = ()
            else:
                chunks = p.chunks[v]
                self.letters[v] = tuple(self.L.new(n, c) for n, c in zip(v.aval.shape, chunks))
                self.inputs.append(v)
        return self.letters[v]

    def fresh(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(self.L.new(n) for n in shape)

    def need_whole(self, letters: tuple[int, ...] | list[int], why: str) -> None:
        """Pin `letters` whole; a chunked one in a segment that already computes something closes
        the segment first (_Retry), so that the work before stays parallel."""
        chunked = [a for a in letters if self.L.chunked(a)]
        if chunked and self.reads_inputs:
            raise _Retry()
        if chunked:
            self.planner.rechunked.append(why)
        for a in letters:
            self.L.pin(a)

    def define(self, eqn: Eqn, out_letters: list[tuple[int, ...]]) -> None:
        if all(v in self.planner.scalar_consts or v in self.free for v in eqn.inputs):
            self.free.update(eqn.outputs)  # computed from scalar constants only
        else:
            self.reads_inputs = True
        for o, letters in zip(eqn.outputs, out_letters):
            self.letters[o] = tuple(letters)
            self.defined.append(o)
        self.entries.append(("eqn", eqn, [tuple(x) for x in out_letters]))

    def partial(self, eqn: Eqn, letters: tuple[int, ...], reduced: tuple[int, ...], prim: str) -> None:
        out = eqn.outputs[0]
        shape = tuple(1 if d in reduced else self.L.size[self.L.find(a)] for d, a in enumerate(letters))
        # The partials and their combine hold NumPy's accumulator (a float16 sum in float32),
        # rounded to `out`'s dtype once after the combine: rounded per block, two float16
        # partials of 60000 + 60000 and -60000 - 60000 were inf and -inf, and their sum NaN.
        pvar = Var(AType(shape, partial_dtype(prim, out.aval.dtype)))
        self.letters[pvar] = tuple(letters)
        self.reads_inputs = True
        self.entries.append(("partial", eqn, pvar, tuple(letters), tuple(reduced)))
        self.partials.append((pvar, tuple(letters), tuple(reduced)))
        self.pending[out] = ("reduce", pvar, prim, tuple(reduced), eqn.prim)

    def partial_arg(self, eqn: Eqn, letters: tuple[int, ...], axis: int) -> None:
        (x,), out = eqn.inputs, eqn.outputs[0]
        shape = tuple(1 if d == axis else self.L.size[self.L.find(a)] for d, a in enumerate(letters))
        index, value = Var(AType(shape, out.aval.dtype)), Var(AType(shape, x.aval.dtype))
        for v in (index, value):
            self.letters[v] = tuple(letters)
            self.partials.append((v, tuple(letters), (axis,)))
        self.reads_inputs = True
        self.entries.append(("partial_arg", eqn, index, value, tuple(letters), (axis,)))
        self.pending[out] = ("arg", index, value, eqn.prim, axis)


# -- rules -------------------------------------------------------------------------------------
RULES: dict[str, Any] = {}


def rule(*names: str):
    def register(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return register


def elementwise_rule(seg: Segment, eqn: Eqn) -> None:
    ins = [seg.of(v) for v in eqn.inputs]
    ranked = [x for x in ins if x]
    if any(len(x) != len(ranked[0]) for x in ranked) or any(
            v.aval.shape != eqn.outputs[0].aval.shape for v in eqn.inputs if v.aval.ndim):
        return fallback_rule(seg, eqn)
    base = ranked[0] if ranked else ()
    for other in ranked[1:]:
        for a, b in zip(base, other):
            seg.L.union(a, b)
    seg.define(eqn, [base for _ in eqn.outputs])


@rule("broadcast_in_dim")
def broadcast_rule(seg: Segment, eqn: Eqn) -> None:
    (x,) = eqn.inputs
    xl = seg.of(x)
    shape, dims = eqn.params["shape"], eqn.params["broadcast_dimensions"]
    out = list(seg.fresh(shape))
    for src, dst in enumerate(dims):
        if x.aval.shape[src] == shape[dst]:
            out[dst] = xl[src]
    seg.define(eqn, [tuple(out)])


@rule("transpose")
def transpose_rule(seg: Segment, eqn: Eqn) -> None:
    xl = seg.of(eqn.inputs[0])
    seg.define(eqn, [tuple(xl[p] for p in eqn.params["permutation"])])


@rule("reshape")
def reshape_rule(seg: Segment, eqn: Eqn) -> None:
    (x,) = eqn.inputs
    xl = seg.of(x)
    new = tuple(eqn.params["new_shape"])
    kept_in = [(d, n) for d, n in enumerate(x.aval.shape) if n != 1]
    kept_out = [(d, n) for d, n in enumerate(new) if n != 1]
    if [n for _, n in kept_in] != [n for _, n in kept_out]:
        if _dask_level(seg, eqn, lambda v: range(v.aval.ndim)):
            return
        return fallback_rule(seg, eqn, "reshape that merges or splits axes")
    out = list(seg.fresh(new))
    for (src, _), (dst, _) in zip(kept_in, kept_out):
        out[dst] = xl[src]
    seg.define(eqn, [tuple(out)])


@rule(*REDUCE_UFUNCS)
def reduce_rule(seg: Segment, eqn: Eqn) -> None:
    (x,) = eqn.inputs
    xl = seg.of(x)
    axes = tuple(eqn.params["axes"])
    if rounds_every_step(eqn.prim, x.aval, axes):
        # Every block must reduce in NumPy's order of the whole array: the reduced axes whole,
        # and no kept axis cut to size-1 blocks (a (6, 1) block sums pairwise, once rounded).
        whole = [xl[a] for a in axes] + [xl[d] for d in range(x.aval.ndim)
                                         if d not in axes and 1 in seg.L.chunks(xl[d]) and x.aval.shape[d] > 1]
        seg.need_whole(whole, f"{eqn.prim} of {x.aval} over axes {axes}: NumPy rounds a float16 sum/product to "
                              "float16 at every step along an outer axis, an order only a block of the same "
                              "layout keeps: the reduced axes (and kept axes cut to size 1) in one block")
    if not any(seg.L.chunked(xl[a]) for a in axes):
        for a in axes:
            seg.L.pin(xl[a])  # the whole reduced axis stays in each block (a row kernel)
        seg.define(eqn, [tuple(l for d, l in enumerate(xl) if d not in axes)])
        return
    seg.partial(eqn, xl, axes, eqn.prim)


def rounds_every_step(prim: str, x: AType, axes: tuple[int, ...]) -> bool:
    """Does NumPy's reduction of C-ordered `x` round its accumulator to x's dtype at every step
    (so that a float32 partial of a block, partial_dtype, would differ from it)? A float16
    sum/product accumulates in float32 only along NumPy's inner loop: when the reduced axes
    (size-1 axes aside) are the trailing ones, they coalesce into that loop and NumPy rounds
    once; otherwise the inner loop runs along a kept axis and every step along a reduced outer
    axis is rounded to float16 (`[[2048], [1], [1]]` sums to 2048, not 2050)."""
    if partial_dtype(prim, x.dtype) == x.dtype:
        return False
    big = [d for d, n in enumerate(x.shape) if n != 1]
    reduced = [d for d in big if d in axes]
    return reduced != big[len(big) - len(reduced):]


@rule("argmax", "argmin")
def arg_rule(seg: Segment, eqn: Eqn) -> None:
    (x,) = eqn.inputs
    xl = seg.of(x)
    axis = eqn.params["axis"]
    if seg.L.chunked(xl[axis]) and x.aval.dtype.kind in "biuf":
        return seg.partial_arg(eqn, xl, axis)
    seg.need_whole([xl[axis]], f"{eqn.prim} over chunked axis {axis} of {x.aval}: that axis in one block")
    seg.define(eqn, [tuple(l for d, l in enumerate(xl) if d != axis)])


@rule("dot_general")
def dot_rule(seg: Segment, eqn: Eqn) -> None:
    lhs, rhs = eqn.inputs
    ll, rl = seg.of(lhs), seg.of(rhs)
    (lc, rc), (lb, rb) = eqn.params["contracting"], eqn.params["batch"]
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        seg.L.union(ll[a], rl[b])
    lfree = [d for d in range(lhs.aval.ndim) if d not in lc and d not in lb]
    rfree = [d for d in range(rhs.aval.ndim) if d not in rc and d not in rb]
    out = tuple(ll[d] for d in lb) + tuple(ll[d] for d in lfree) + tuple(rl[d] for d in rfree)
    if not any(seg.L.chunked(ll[a]) for a in lc):
        for a in lc:
            seg.L.pin(ll[a])
        seg.define(eqn, [out])
        return
    contracted = tuple(ll[a] for a in lc)
    letters = out + contracted
    seg.partial(eqn, letters, tuple(range(len(out), len(letters))), "reduce_sum")


def _dask_level(seg: Segment, eqn: Eqn, axes_of: Any) -> bool:
    """Run `eqn` with Dask's own array function (slicing, concatenate, reshape: graph-level, no
    copy until computed) when it cuts a chunked axis of an array that exists before the segment:
    True when done. An array the open segment computes closes the segment first (_Retry), so
    that it exists. `axes_of(v)`: the axes of input v the step cuts."""
    p = seg.planner
    chunked = False
    for v in eqn.inputs:
        if v in p.chunks:
            chunked = chunked or any(len(p.chunks[v][d]) > 1 for d in axes_of(v))
        elif v in seg.letters and any(seg.L.chunked(seg.letters[v][d]) for d in axes_of(v)):
            if seg.reads_inputs:
                raise _Retry()
            return False
    if not chunked or not all(v in p.chunks for v in eqn.inputs):
        return False
    return p.dask_step(eqn)


@rule("slice")
def slice_rule(seg: Segment, eqn: Eqn) -> None:
    (x,) = eqn.inputs
    starts, steps, shape = eqn.params["starts"], eqn.params["steps"], eqn.params["shape"]
    cut = [d for d, n in enumerate(x.aval.shape) if not (starts[d] == 0 and steps[d] == 1 and shape[d] == n)]
    if _dask_level(seg, eqn, lambda v: cut):
        return
    xl = seg.of(x)
    seg.need_whole([xl[d] for d in cut], f"slice of {x.aval} along chunked axis/axes {cut}: those axes in one block")
    out = list(seg.fresh(shape))
    for d in range(len(shape)):
        if d not in cut:
            out[d] = xl[d]
    seg.define(eqn, [tuple(out)])


@rule("concatenate")
def concatenate_rule(seg: Segment, eqn: Eqn) -> None:
    axis = eqn.params["axis"]
    if _dask_level(seg, eqn, lambda v: [axis]):
        return
    ins = [seg.of(v) for v in eqn.inputs]
    seg.need_whole([x[axis] for x in ins], f"concatenate along chunked axis {axis}: that axis in one block")
    for other in ins[1:]:
        for d, (a, b) in enumerate(zip(ins[0], other)):
            if d != axis:
                seg.L.union(a, b)
    out = list(ins[0])
    out[axis] = seg.L.new(eqn.outputs[0].aval.shape[axis])
    seg.define(eqn, [tuple(out)])


ALONG_AXIS = {"sort": "axis", "argsort": "axis", "partition": "axis", "argpartition": "axis",
              "accumulate": "axis", "fft": "axes"}


@rule(*ALONG_AXIS)
def along_axis_rule(seg: Segment, eqn: Eqn) -> None:
    """Steps along one axis (sort, cumsum, fft, ...): that axis in one block, the others split."""
    (x,) = eqn.inputs
    axes = eqn.params.get(ALONG_AXIS[eqn.prim])
    axes = (axes,) if isinstance(axes, int) else axes
    out = eqn.outputs[0]
    if len(eqn.outputs) != 1 or not isinstance(axes, tuple) or out.aval.ndim != x.aval.ndim:
        return fallback_rule(seg, eqn)
    axes = tuple(a % x.aval.ndim for a in axes)
    xl = seg.of(x)
    seg.need_whole([xl[a] for a in axes], f"{eqn.prim} along chunked axis/axes {axes} of {x.aval}: "
                                          "those axes in one block")
    letters = list(xl)
    for a in axes:
        letters[a] = seg.L.new(out.aval.shape[a])
        seg.L.pin(letters[a])
    seg.define(eqn, [tuple(letters)])


def fallback_rule(seg: Segment, eqn: Eqn, what: str | None = None) -> None:
    """Not partitioned: every input whole (one block), outputs whole."""
    ins = [seg.of(v) for v in eqn.inputs]
    seg.need_whole([a for x in ins for a in x],
                   f"{what or eqn.prim} is not partitioned: its inputs are rechunked to one block")
    outs = []
    for o in eqn.outputs:
        letters = seg.fresh(o.aval.shape)
        for a in letters:
            seg.L.pin(a)
        outs.append(letters)
    seg.define(eqn, outs)


def rule_for(prim: str) -> Any:
    letter_rule = RULES.get(prim)
    if letter_rule is not None:
        return letter_rule
    p = PRIMITIVES.get(prim)
    if p is not None and p.kind == "elementwise":
        return elementwise_rule
    return fallback_rule


# -- the planner -------------------------------------------------------------------------------
class Planner:
    def __init__(self, program: Program, in_chunks: list[tuple[tuple[int, ...], ...]], backend: str,
                 fastmath: bool, disk_cache: bool = True) -> None:
        self.program, self.backend, self.fastmath, self.disk_cache = program, backend, fastmath, disk_cache
        self.steps: list[Any] = []
        self.chunks: dict[Var, tuple[tuple[int, ...], ...]] = {}
        self.rechunked: list[str] = []
        self.notes: list[str] = []
        self.scalar_consts: set[Var] = set()
        for i, (v, c) in enumerate(zip(program.invars, in_chunks)):
            self.chunks[v] = tuple(c)
            self.steps.append(Source(v, "arg", i))
        for v, value in zip(program.constvars, program.consts):
            if v.aval.ndim == 0:
                self.scalar_consts.add(v)
            self.chunks[v] = tuple((n,) for n in v.aval.shape)
            self.steps.append(Source(v, "const", value))
        self.last_use: dict[Var, int] = {}
        for i, eqn in enumerate(program.eqns):
            for v in eqn.inputs:
                self.last_use[v] = i
        for v in program.outvars:
            self.last_use[v] = len(program.eqns)
        self.segment = Segment(self)
        self.count = 0

    def plan(self) -> Plan:
        for i, eqn in enumerate(self.program.eqns):
            if eqn.prim == "iota":
                self.flush_if_reads(eqn, i)
                (o,) = eqn.outputs
                self.chunks[o] = tuple((n,) for n in o.aval.shape)
                self.steps.append(Source(o, "iota", dict(eqn.params)))
                continue
            self.flush_if_reads(eqn, i)
            seg = self.segment
            mark = (len(seg.inputs), dict(seg.letters))
            try:
                rule_for(eqn.prim)(seg, self.aliased(eqn))
            except _Retry:  # the rule pins a chunked letter: close the segment, then apply it
                seg.inputs, seg.letters = seg.inputs[:mark[0]], mark[1]
                self.flush(i)
                rule_for(eqn.prim)(self.segment, self.aliased(eqn))
            if PRIMITIVES[eqn.prim].effect:
                # A print closes its segment: one task over whole values prints once per compute
                # (its token is tied to an output, distributed/effects.py), not once per block.
                self.flush(i + 1)
        self.flush(len(self.program.eqns))
        return Plan(self.program, self.steps, self.chunks, self.notes, self.rechunked)

    def dask_step(self, eqn: Eqn) -> bool:
        """Plan `eqn` as Dask's own function of existing arrays; False where Dask cannot (a
        reshape that splits axes unevenly: the caller's rechunk rule applies)."""
        import dask.array as da
        dummies = [da.empty(v.aval.shape, chunks=self.chunks[v], dtype=v.aval.dtype) for v in eqn.inputs]
        try:
            out = apply_dask_step(eqn, dummies, da)
        except NotImplementedError:
            return False
        self.chunks[eqn.outputs[0]] = tuple(tuple(c) for c in out.chunks)
        what = DASK_STEPS[eqn.prim][0]
        self.steps.append(DaskStep(eqn, f"dask {what} of {', '.join(str(v.aval) for v in eqn.inputs)} -> "
                                        f"{eqn.outputs[0].aval} along chunked axes (Dask's own: the axes stay split)"))
        return True

    def aliased(self, eqn: Eqn) -> Eqn:
        """`eqn` reading a new alias of every materialised array it reads: each read of an array
        that exists before the segment gets its own letters, so `x @ x.T` or
        `x[:, None] * x[None, :]` are blockwise (block (i, j) reads blocks i and j of x)."""
        defined = set(self.segment.defined)
        inputs = []
        for v in eqn.inputs:
            if v in defined or v in self.scalar_consts:
                inputs.append(v)
                continue
            alias = Var(v.aval)
            self.chunks[alias] = self.chunks[v]
            self.steps.append(Source(alias, "alias", v))
            inputs.append(alias)
        return Eqn(eqn.prim, inputs, eqn.outputs, eqn.params)

    def merge_aliases(self, seg: Segment) -> None:
        """Give the reads of one array the same letters wherever that puts no letter twice on an
        array: `x * x.sum()` then runs one task per block of x, not one per pair of blocks,
        while `x @ x.T` keeps two independent letters."""
        L = seg.L
        by_source: dict[Var, list[Var]] = {}
        for step in self.steps:
            if isinstance(step, Source) and step.kind == "alias" and step.var in seg.letters:
                by_source.setdefault(step.payload, []).append(step.var)
        for aliases in by_source.values():
            for k, b in enumerate(aliases[1:], 1):
                for a in aliases[:k]:
                    merged: dict[int, int] = {}  # the unions tried, on the roots (a small union-find)

                    def top(r: int) -> int:
                        while r in merged:
                            r = merged[r]
                        return r
                    for x, y in zip(seg.letters[a], seg.letters[b]):
                        rx, ry = top(L.find(x)), top(L.find(y))
                        if rx != ry:
                            merged[ry] = rx
                    if all(len({top(L.find(x)) for x in letters}) == len(letters)
                           for letters in seg.letters.values()):
                        for x, y in zip(seg.letters[a], seg.letters[b]):
                            L.union(y, x)
                        break

    def flush_if_reads(self, eqn: Eqn, i: int) -> None:
        if any(v in self.segment.pending for v in eqn.inputs):
            self.flush(i)

    def flush(self, i: int) -> None:
        seg = self.segment
        self.segment = Segment(self)
        if not seg.entries:
            return
        L = seg.L
        self.merge_aliases(seg)
        # An array carrying one letter twice (x + x.T) cannot be split by a grid of letters.
        for v, letters in seg.letters.items():
            roots = [L.find(a) for a in letters]
            for a in {r for r in roots if roots.count(r) > 1}:
                if L.chunked(a):
                    self.rechunked.append(f"{v.aval} uses one chunked axis twice (e.g. x + x.T): it is one block")
                L.pin(a)
        canon = lambda letters: tuple(L.find(a) for a in letters)  # noqa: E731
        # Values computed from scalar constants only (a broadcast 2.0) are computed again by the
        # next segment instead of being stored as Dask arrays of the full shape.
        free = seg.free if i < len(self.program.eqns) else set()
        carried = [e[1] for e in seg.entries if e[0] == "eqn" and e[1].outputs[0] in free]
        outputs = [v for v in seg.defined if self.last_use.get(v, -1) >= i and v not in free]
        out_vars = outputs + [p for p, _, _ in seg.partials]
        if not out_vars:  # nothing but values the next segment computes again
            for eqn in carried:
                rule_for(eqn.prim)(self.segment, eqn)
            return
        out_letters = [canon(seg.letters[v]) for v in outputs] + [canon(l) for _, l, _ in seg.partials]
        reduced = [()] * len(outputs) + [r for _, _, r in seg.partials]
        roots = {L.find(a) for x in seg.letters.values() for a in x}
        sizes = {r: L.size[r] for r in roots}
        grid = sorted((r, len(L.chunks(r))) for r in roots if L.chunked(r))
        entries = []
        for e in seg.entries:
            if e[0] == "eqn":
                entries.append(("eqn", e[1], [canon(x) for x in e[2]]))
            elif e[0] == "partial":
                entries.append(("partial", e[1], e[2], canon(e[3]), e[4]))
            else:
                entries.append(("partial_arg", e[1], e[2], e[3], canon(e[4]), e[5]))
        self.count += 1
        name = f"{self.program.name}_block{self.count}"
        bp = BlockProgram(name=name, token=uuid.uuid4().hex, backend=self.backend, fastmath=self.fastmath,
                          invars=list(seg.inputs), in_letters=[canon(seg.letters[v]) for v in seg.inputs],
                          constvars=list(seg.constvars),
                          consts=[self.program.consts[self.program.constvars.index(v)] for v in seg.constvars],
                          entries=entries, outvars=out_vars, out_letters=out_letters, letter_size=sizes,
                          disk_cache=self.disk_cache, sub_letters={v: canon(seg.letters[v]) for v in seg.sub_vars})
        step_outputs = []
        for v, letters, red in zip(out_vars, out_letters, reduced):
            chunks = tuple((1,) * len(L.chunks(a)) if d in red else L.chunks(a) for d, a in enumerate(letters))
            self.chunks[v] = chunks
            step_outputs.append((v, letters, chunks))
        in_chunks = [tuple(L.chunks(a) for a in canon(seg.letters[v])) for v in seg.inputs]
        blocks = len(needed_tasks([r for r, _ in grid], [(letters, chunks) for _, letters, chunks in step_outputs]))
        shapes = int(np.prod([len(set(L.chunks(r))) for r, _ in grid])) if grid else 1
        prims = [e[1].prim if e[0] == "eqn" else f"partial {e[1].prim}" for e in seg.entries]
        desc = (f"segment {self.count}: blockwise, {blocks} block task(s), {shapes} distinct block shape(s) "
                f"(one compile each): {', '.join(prims)}")
        self.steps.append(SegmentStep(bp, list(seg.inputs), in_chunks, grid, step_outputs, desc))
        for eqn in carried:
            rule_for(eqn.prim)(self.segment, eqn)
        for out, info in seg.pending.items():
            pvar = info[1]
            letters = canon(seg.letters[pvar])
            red = info[3] if info[0] == "reduce" else (info[4],)
            kept = tuple(L.chunks(a) for d, a in enumerate(letters) if d not in red)
            self.chunks[out] = kept
            n = int(np.prod([len(L.chunks(letters[d])) for d in red]))
            if info[0] == "arg":
                along = L.chunks(letters[info[4]])
                offsets = tuple(int(o) for o in np.cumsum((0,) + along[:-1]))
                self.steps.append(ArgCombineStep(info[1], info[2], out, info[3], info[4], offsets, kept,
                                                 f"arg reduction (per-block index and extreme + one combine): "
                                                 f"{info[3]} of {n} partial(s) over axis {info[4]}"))
                continue
            what = "blockwise products + tree sum" if info[4] == "dot_general" else "per-block partials + tree combine"
            acc = "" if pvar.aval.dtype == out.aval.dtype else \
                f", in {pvar.aval.dtype} (NumPy's accumulator), rounded to {out.aval.dtype} once"
            self.steps.append(CombineStep(pvar, out, info[2], red, kept,
                                          f"tree reduction ({what}): {info[2]} of {n} partial(s) over axes {red}{acc}"))


def needed_tasks(grid_letters: list[int], outputs: list[tuple[tuple[int, ...], tuple]]) -> set[tuple[int, ...]]:
    """The grid points some output block reads (graph.py builds exactly these tasks): letters an
    output does not carry are at block 0."""
    import itertools
    needed = set()
    for letters, chunks in outputs:
        for bidx in itertools.product(*[range(len(c)) for c in chunks]):
            pos = dict(zip(letters, bidx))
            needed.add(tuple(pos.get(letter, 0) for letter in grid_letters))
    return needed


def check_partitionable(program: Program, name: str) -> None:
    if program.written_args:
        raise UnsupportedOperationError(
            f"{name} writes its argument(s) {', '.join(program.written_names) or ''} in place; Dask arrays are "
            "immutable, so a jitted function called with Dask arrays must return new arrays instead")
    if program.trimmed_outputs:
        raise UnsupportedOperationError(
            f"{name} has outputs whose shape depends on the data (x[mask], np.nonzero, np.unique): they cannot be "
            "built blockwise over Dask arrays; call .compute() on the arguments first, or use dask.array's own "
            "function for that step")


def plan(program: Program, in_chunks: list, backend: str, fastmath: bool = False, disk_cache: bool = True) -> Plan:
    """The partition of `program` for arguments chunked as `in_chunks` (one Dask chunks tuple per
    input; a NumPy argument or scalar is one block)."""
    check_partitionable(program, program.name)
    result = Planner(program, in_chunks, backend, fastmath, disk_cache).plan()
    return result


def warn_rechunks(plan_: Plan, name: str, stacklevel: int = 3) -> None:
    """One RechunkWarning per call listing every chunked axis the plan puts in one block."""
    if plan_.rechunked:
        warnings.warn(f"jit over dask ({name}): " + "; ".join(plan_.rechunked) + " (jitkernel.distributed.explain "
                      "shows the partition)", RechunkWarning, stacklevel=stacklevel + 1)
