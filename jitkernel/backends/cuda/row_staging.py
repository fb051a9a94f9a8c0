"""Input rows a row kernel reads in several phases, staged once per row in shared memory
(render.RowKernelWriter; docs/gpu.md, "What the renderer produces").

softmax reads x in its max phase and again in its sum phase; layer norm reads x in three. When
such an input's row fits the shared-memory budget next to the row scratch, the block copies
the row into a `__shared__` array once (one coalesced pass, then a barrier), and every phase
reads the copy. Staging changes where values come from, never their values: the results are
the same bits as without it.

A buffer is staged only when
- at least two phases read it and no phase writes it (the copy is never stale),
- every read is within the running row: offset == row_size * row + inner, with
  0 <= inner < row_size over the phase's loops (the check fusion/rows.py makes for scratch),
- the program has no run-time parameters (the source of a shape-generic program must not depend
  on its sizes: dynamic_params.py), and the staged rows fit the budget left by the scratch.

>>> StagedRow(bid=0, length=130, row_size=130, dtype=np.dtype("float32")).nbytes
520
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...fusion import index as ix
from ...fusion.index import Aff
from ...fusion.kernel_ir import KernelProgram, RowKernel
from .dynamic_params import has_params


@dataclass(frozen=True)
class StagedRow:
    """One staged input: `length` elements from the start of its row of `row_size` elements."""

    bid: int
    length: int
    row_size: int
    dtype: np.dtype

    @property
    def nbytes(self) -> int:
        return self.length * self.dtype.itemsize

    @property
    def name(self) -> str:
        return f"jk_row{self.bid}"


def row_index(n_outer: int, outer: list[int]) -> Aff:
    """The C-order index of the running row over the outer loops (the renderer's `row`)."""
    return ix.linearize([ix.var(d) for d in range(n_outer)], outer)


def inner_offset(offset: Aff, staged: StagedRow, row: Aff) -> Aff:
    """The part of a read's offset within its row (offset - row_size * row)."""
    return ix.add(offset, ix.scale(row, -staged.row_size))


def staged_rows(kp: KernelProgram, rk: RowKernel, written: set[int], budget: int) -> list[StagedRow]:
    """The inputs of `rk` to stage, in buffer order, while their rows fit `budget` bytes."""
    if has_params(kp) or not rk.phases:
        return []
    outer = [int(n) for n in rk.outer]
    rows = int(np.prod(outer, dtype=np.int64))
    if rows == 0:
        return []
    row = row_index(len(outer), outer)
    readers: dict[int, list[tuple[Aff, tuple]]] = {}
    for phase in rk.phases:
        for bid, offsets in phase.loads().items():
            readers.setdefault(bid, []).extend((o, tuple(int(n) for n in phase.domain)) for o in offsets)
    phases_reading = {bid: sum(bid in p.loads() for p in rk.phases) for bid in readers}
    out: list[StagedRow] = []
    for bid in sorted(readers):
        if phases_reading[bid] < 2 or bid in written or bid in rk.scratch:
            continue
        buf = kp.buffers[bid]
        size = int(np.prod([int(n) for n in buf.shape], dtype=np.int64))
        if size % rows:
            continue
        length = _row_length(readers[bid], row, size // rows, len(outer))
        if length is None:
            continue
        staged = StagedRow(bid, length, size // rows, np.dtype(buf.dtype))
        if staged.nbytes <= budget:
            out.append(staged)
            budget -= staged.nbytes
    return out


def _row_length(reads: list[tuple[Aff, tuple]], row: Aff, row_size: int, n_outer: int) -> int | None:
    """How many elements from the start of its row every read stays within, or None when a read
    leaves the row (or is not an element read)."""
    length = 0
    for offset, domain in reads:
        if any(offset.coef(d) != row_size * row.coef(d) for d in range(n_outer)):
            return None
        inner = ix.add(offset, ix.scale(row, -row_size))
        if any(d < n_outer for d in inner.loop_vars()):
            return None
        lo, hi = ix.value_range(inner, domain)
        if lo < 0 or hi >= row_size:
            return None
        length = max(length, hi + 1)
    return length
