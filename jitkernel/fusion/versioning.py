"""Loop versioning: a loop nest whose bounds are run-time values gets a second copy scheduled with
those bounds assumed in a range that proves its index checks away, and a branch that runs that
copy when the bounds at run time lie in the range (the checked copy otherwise).

A start read through a loop index (`A[i, j - 1]`) needs a run-time check (fusion/dynamic.py
`emit_checks`) unless the index's range proves it in bounds. Loops with constant bounds have
such ranges (and bounds computed from them: `range(i + 1, n)`), but `for j in range(1, N - 1)`
with `N` a run-time argument has none, so every trip checked `j` and `j - 1` and the call could
not know its length (runtime.py ran it on a thread of its own). Here, for the outermost such
loop, the checks of `index + c` in its nest tell which index ranges make them pass: `[-c, limit -
c]` over its checks. Those become assumed ranges of the bound buffers (a lower bound of at least
`a`, an upper bound of at most `b + 1`), which must be set before the loop and not written inside
it; the nest is scheduled again with the assumptions in `sched.ranges`, which proves the checks
and bounds the trip counts, and a check kernel compares the bounds at run time. The checked copy
is kept for any other bounds: NumPy's negative-index wrap and its IndexError, with the first
failing index in its message, stay exactly as they were.

Only the outermost loop with assumable bounds is versioned (nested loops are scheduled without
versioning inside both copies): two copies of a nest, never one per level.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import index as ix
from .kernel_ir import Compute, Kernel, Literal, Load, RowKernel, Store, postorder
from .loops import BranchStep, LoopStep, all_steps, is_control

INT64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)
# The open end of an assumed bound: far from int64's limits, so range arithmetic cannot wrap, and
# far beyond any array length, so it never decides which copy runs.
_OPEN = 1 << 40


def written_buffers(steps: list) -> set[int]:
    """Every buffer the steps (and their sub-steps) write, loop indices and carries included."""
    out: set[int] = set()
    for s in all_steps(steps):
        if isinstance(s, LoopStep):
            out |= {s.index} if s.index is not None else set()
            out |= {b for c in s.carries for b in (c.cur, c.nxt, c.out, c.spare) if b is not None}
            if s.cond_out is not None:
                out.add(s.cond_out)
        elif isinstance(s, BranchStep):
            out |= set(s.outs)
        elif hasattr(s, "prim"):  # LibraryCall
            out |= set(s.outputs)
        else:
            for phase in (s.phases if isinstance(s, RowKernel) else [s]):
                out |= {st.buffer for st in phase.stores}
    return out


def _index_offset(nd: Any, indices: set[int], defs: dict, depth: int = 0) -> tuple[int, int] | None:
    """(index buffer, c) when `nd` is `index + c` (or `index - c`) of a loop index in `indices`,
    through the 0-d values the nest computes (`defs`: `i + 1` stored by one kernel, checked by
    another)."""
    if depth > 8:
        return None
    if isinstance(nd, Load) and nd.dtype == INT64 and not nd.offset.terms:
        if nd.buffer in indices:
            return nd.buffer, 0
        return _index_offset(defs[nd.buffer], indices, defs, depth + 1) if nd.buffer in defs else None
    if isinstance(nd, Compute) and nd.prim in ("add", "subtract") and nd.dtype == INT64 and len(nd.args) == 2:
        a, b = nd.args
        if nd.prim == "add" and isinstance(a, Literal):
            a, b = b, a
        inner = _index_offset(a, indices, defs, depth + 1)
        if inner is not None and isinstance(b, Literal):
            return inner[0], inner[1] + (int(b.value) if nd.prim == "add" else -int(b.value))
    return None


def _needed_ranges(steps: list, loops: list[LoopStep]) -> dict[int, tuple[int, int]]:
    """index buffer -> the range in which every check of `index + c` in the nest passes."""
    indices = {lp.index for lp in loops}
    # The 0-d values computed by the nest's scalar kernels (only to see through them: which
    # checks an assumed range could prove; every proof is made again when the copy is built).
    defs = {st.buffer: st.value for s in all_steps(steps) if isinstance(s, Kernel) and not s.domain
            for st in s.stores if st.reduce is None and not st.offset.terms}
    need: dict[int, tuple[int, int]] = {}
    for s in all_steps(steps):
        if is_control(s) or hasattr(s, "prim"):
            continue
        for phase in (s.phases if isinstance(s, RowKernel) else [s]):
            for nd in postorder([st.value for st in phase.stores]):
                if not (isinstance(nd, Compute) and nd.prim == "index_check"
                        and all(isinstance(a, Literal) for a in nd.args[1:])):
                    continue
                form = _index_offset(nd.args[0], indices, defs)
                if form is None:
                    continue
                bid, c = form
                lo, hi = -c, int(nd.args[2].value) - c
                old = need.get(bid, (lo, hi))
                need[bid] = (max(old[0], lo), min(old[1], hi))
    return {b: r for b, r in need.items() if r[0] <= r[1]}


def assumptions(loop: LoopStep, steps: list, literal: Callable[[int], int | None],
                ranges: dict) -> dict[int, tuple[int, int]]:
    """Bound buffer -> assumed range that proves the checks of `index + c` in the nest of `loop`
    (whose body is `steps`); empty when there is nothing to gain. A bound qualifies when it is
    not written inside the nest (so one comparison before the loop holds for every trip) and
    has no range yet; a literal bound (`literal(bid)`) must already lie in the needed range."""
    loops = [loop] + [s for s in all_steps(steps) if isinstance(s, LoopStep) and s.kind == "fori"]
    need = _needed_ranges(steps, loops)
    written = written_buffers([loop])  # its own index and carries too: a carry changes every trip
    assumed: dict[int, tuple[int, int]] = {}
    for lp in loops:
        if lp.index not in need or lp.index in ranges:
            continue
        a, b = need[lp.index]
        wanted: dict[int, tuple[int, int]] = {}
        ok = True
        for bid, r in ((lp.lower, (a, _OPEN)), (lp.upper, (-_OPEN, b + 1))):
            value = literal(bid)
            if value is not None:
                ok = ok and r[0] <= value <= r[1]
            elif bid in written or bid in ranges:
                ok = False  # computed inside the nest, or already known: nothing to assume
            else:
                wanted[bid] = r
        if not ok or not wanted:
            continue
        for bid, (lo, hi) in wanted.items():
            old = assumed.get(bid, (-_OPEN, _OPEN))
            assumed[bid] = (max(old[0], lo), min(old[1], hi))
    return {b: r for b, r in assumed.items() if r[0] <= r[1]}


def condition_kernel(name: str, assumed: dict[int, tuple[int, int]], dtypes: dict[int, np.dtype],
                     out: int) -> Kernel:
    """A scalar kernel storing into `out` (int32) whether every assumed bound lies in its range."""
    test: Any = None
    for bid, (lo, hi) in sorted(assumed.items()):
        v: Any = Load(bid, ix.const(0), dtypes[bid])
        if dtypes[bid] != INT64:
            v = Compute("convert", (v,), (), INT64)
        inside = Compute("logical_and", (Compute("greater_equal", (v, Literal(lo, INT64)), (), BOOL),
                                         Compute("less_equal", (v, Literal(hi, INT64)), (), BOOL)), (), BOOL)
        test = inside if test is None else Compute("logical_and", (test, inside), (), BOOL)
    value = Compute("convert", (test,), (), np.dtype(np.int32))
    return Kernel(name, (), 0, [Store(out, ix.const(0), value)], ["loop versioning: bounds in range"])
