"""Copy coalescing: after fusion, a whole-buffer copy from a buffer whose value is not needed
afterwards into a buffer not used before is dropped, and the two buffers become one.

Straight-line updates of an array that is also read elsewhere (`c[:, :, k] = f(c[:, :, k])`,
`b = d - c[:, :, k]; c[:, :, k] = ...`) are scheduled as a copy of the old array into a new
buffer, then a store into the region (fusion/update.py): the graph-level in-place rule
(`in_place_chains`) only applies when the old array is read by nothing else. On the final list
of steps, the question is simpler and exact: in which order do the steps touch the buffers?
When the old buffer X is read by no step after the copy's first writer of the new buffer O
(that writer excepted, see below) and O is touched by no step before the copy, their lifetimes
meet only at the copy, so one buffer can hold both: the copy has nothing to do.

The first step after the copy that touches O (`q`) may still read X, as an update's value reads
the old array (`c[:, :, k] * d` stored into `c[:, :, k]`): it is allowed when it is a plain
kernel whose one store into O is injective over its domain and every load of X or O is either
at the store's own offset and computed before that store (read before written, in the same
iteration; a reader of the old array that merge_siblings fused after the write is not) or at an
offset set provably disjoint from every stored offset (`c[:, :, k - 1]` read while `c[:, :, k]`
is written). Anything else keeps the copy.

The same holds for a native loop's carry: the renderer copies `init` into `out` before the
first trip unless they are the same buffer (backends/cpu/render_loops.py, cuda/flow_steps.py),
so a carry whose `init` is touched by nothing after the loop (and by nothing inside it) and
whose `out` is touched by nothing before gets one buffer for both.

The step lists of loop bodies and branches are scanned the same way, for the buffers local to
each (touched nowhere else): a loop body runs its list once per trip, and its local buffers are
written before they are read on every trip, so the order of touches within one trip decides. A
local buffer copied into the list's result (a branch's output, the `nxt` buffer of a body's
double-buffered carry) becomes that result: a shrinking loop's trip (mandelbrot2) computes its
new state in the buffer the loop carries, with no copy per trip.

Only temporaries and outputs are merged (never an input, whose memory is the caller's, a
constant, or a library step's output, whose array the library allocates), and never two
outputs.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from . import index as ix
from .index import Aff
from .kernel_ir import Kernel, KernelProgram, LibraryCall, Load, RowKernel, Store, postorder, rebuild
from .loops import BranchStep, LoopStep, all_steps, own_buffers, touched_buffers

# Domains enumerated to decide injectivity or disjointness when the index maps are not plain
# linear ones the closed-form tests settle (a few milliseconds of NumPy at most).
_ENUMERATE_LIMIT = 1 << 20

_KNOWN_STEPS = (Kernel, RowKernel, LibraryCall, LoopStep, BranchStep)


def coalesce_copies(kp: KernelProgram) -> KernelProgram:
    """`kp` with every copy (kernel or loop-carry initialisation) whose source and destination
    lifetimes meet only at the copy turned into one buffer; scanned again until nothing
    changes, since one merge can end another buffer's lifetime earlier. The step lists of loop
    bodies and branches are scanned the same way (see `_coalesce_list`)."""
    if not all(isinstance(s, _KNOWN_STEPS) for s in all_steps(kp.steps)):
        return kp  # a step kind this pass cannot rename buffers in: leave the program alone
    mergeable, results = _mergeable_buffers(kp)
    kp.steps = _coalesce_list(kp, kp.steps, mergeable, results, set(), set())
    return kp


def _coalesce_list(kp: KernelProgram, steps: list, mergeable: set[int], results: set[int], outside: set[int],
                   targets: set[int]) -> list:
    """`steps` (one step list: the program's, a loop's body or condition, a branch) with its
    copies coalesced, then those of the lists nested in it.

    `outside`: the buffers touched anywhere but in this list; a buffer that is not is local to
    the list, and in a nested list only local buffers are merged, with one exception: the
    buffers the list computes its results in (`targets`, `_written_results`; among `results`:
    mergeable buffers and a loop's carry aliases, never a library's array), so a local buffer
    copied into one of them becomes that result. A loop body runs its list once per trip, and a
    local buffer is written before it is read on every trip (only carries hold values from one
    trip to the next, and they are `Carry` aliases named by the loop step, never local), so the
    order of touches within one trip decides, as in a straight-line program."""
    steps = list(steps)
    local = mergeable - outside
    touched = [touched_buffers(s) for s in steps]
    changed = True
    while changed:
        changed = False
        p = 0
        while p < len(steps):
            found = _copy_pair(kp, steps, p, touched, local, local | targets)
            if found is None:
                p += 1
                continue
            x, o = found
            keep, drop = (o, x) if o in kp.outputs or o in targets else (x, o)
            if isinstance(steps[p], Kernel):  # the copy itself goes; a loop's carry copies nothing now
                del steps[p], touched[p]
            steps = [_rename(s, drop, keep) if drop in t else s for s, t in zip(steps, touched)]
            for t in touched:
                if drop in t:
                    t.discard(drop)
                    t.add(keep)
            del kp.buffers[drop]
            mergeable.discard(drop)
            results.discard(drop)
            local.discard(drop)
            changed = True
    for p, step in enumerate(steps):
        if not isinstance(step, (LoopStep, BranchStep)):
            continue
        around = outside | own_buffers(step) | set().union(*touched[:p], *touched[p + 1:])
        lists = [step.cond, step.body] if isinstance(step, LoopStep) else step.branches
        inner = [set().union(*(touched_buffers(s) for s in lst)) for lst in lists]
        written = _written_results(step) & results
        targets = [set(), written] if isinstance(step, LoopStep) else [written] * len(lists)  # (a condition writes none)
        new_lists = [_coalesce_list(kp, lst, mergeable, results, around.union(*inner[:k], *inner[k + 1:]), t)
                     for k, (lst, t) in enumerate(zip(lists, targets))]
        if isinstance(step, LoopStep):
            steps[p] = dataclasses.replace(step, cond=new_lists[0], body=new_lists[1])
        else:
            steps[p] = dataclasses.replace(step, branches=new_lists)
    return steps


def _written_results(step: LoopStep | BranchStep) -> set[int]:
    """The buffers a nested list computes its results in, which a local buffer copied into one
    of them may become: a branch's outputs (not one that is also an operand), a loop body's
    `nxt` of a double-buffered carry (memory apart from the `cur` the body reads, its old
    contents dead)."""
    if isinstance(step, BranchStep):
        found = [b for b in step.outs if b not in step.operands]
    else:
        found = [c.nxt for c in step.carries if c.spare is not None and c.nxt != c.cur]
    return {b for b in found if found.count(b) == 1}


def _mergeable_buffers(kp: KernelProgram) -> tuple[set[int], set[int]]:
    """Temporaries and outputs of at least one dimension that no library step writes (its
    output array is the library's, not a buffer the runtime allocates) and no row kernel keeps
    as a row of scratch; and those plus the loops' carry aliases no library step writes (the
    buffers a nested list may compute its results in, `_coalesce_list`)."""
    library_outputs: set[int] = set()
    scratch: set[int] = set()
    for s in all_steps(kp.steps):
        if isinstance(s, LibraryCall):
            library_outputs |= set(s.outputs)
        elif isinstance(s, RowKernel):
            scratch |= set(s.scratch)
    mergeable = {b.id for b in kp.buffers.values()
                 if b.role in ("temp", "output") and len(b.shape) >= 1 and b.id not in library_outputs
                 and b.id not in scratch and kp.outputs.count(b.id) <= 1}
    aliases = {b.id for b in kp.buffers.values()
               if b.role == "alias" and len(b.shape) >= 1 and b.id not in library_outputs}
    return mergeable, mergeable | aliases


def _copy_pair(kp: KernelProgram, steps: list, p: int, touched: list[set[int]], may_drop: set[int],
               may_keep: set[int]) -> tuple[int, int] | None:
    """(x, o) when step `p` of `steps` copies buffer x into o and the two may become one, else
    None. x must be in `may_drop`, o in `may_keep`."""
    step = steps[p]
    if isinstance(step, LoopStep) or (isinstance(step, BranchStep) and step.versioned):
        return _carry_pair(kp, p, step, touched, may_drop, may_keep)
    pair = _plain_copy(kp, step)
    if pair is None:
        return None
    x, o = pair
    if x not in may_drop or o not in may_keep or x in kp.outputs:
        return None
    if any(o in t for t in touched[:p]):
        return None
    later = range(p + 1, len(steps))
    q = next((k for k in later if o in touched[k]), None)
    for k in later:
        if x not in touched[k]:
            continue
        if q is not None and k > q:
            return None  # x read after o changed: it would see o's new values
        if k == q:
            if not _update_reads_safe(steps[k], x, o):
                return None
        elif not _only_reads(steps[k], x):
            return None
    return x, o


def _carry_pair(kp: KernelProgram, p: int, step: LoopStep | BranchStep, touched: list[set[int]],
                may_drop: set[int], may_keep: set[int]) -> tuple[int, int] | None:
    """The first array carry of loop `step` (or of the loop both versions of a versioned branch
    run, fusion/versioning.py: one carry list, the same buffers) whose initial buffer may
    become its output buffer."""
    if isinstance(step, BranchStep):
        if any(len(br) != 1 or not isinstance(br[0], LoopStep) for br in step.branches):
            return None
        loops = [br[0] for br in step.branches]
    else:
        loops = [step]
    inner: set[int] = set()
    for loop in loops:
        for s in loop.substeps():
            inner |= touched_buffers(s)
    loop = loops[0]
    named = [b for b in (loop.index, loop.lower, loop.upper, loop.cond_out) if b is not None]
    if isinstance(step, BranchStep):
        named.append(step.index)
    for c in loop.carries:
        named += [c.cur, c.nxt, c.init, c.out] + ([c.spare] if c.spare is not None else [])
    for c in loop.carries:
        x, o = c.init, c.out
        if x == o or x not in may_drop or o not in may_keep or x in kp.outputs:
            continue
        if c.spare is None and not c.in_place:
            continue  # a register carry: no buffer copied
        if x in inner or named.count(x) != 1 or named.count(o) != 1 or o in inner:
            continue
        if any(o in t for t in touched[:p]) or any(x in t for t in touched[p + 1:]):
            continue
        return x, o
    return None


def _plain_copy(kp: KernelProgram, step: Any) -> tuple[int, int] | None:
    """(x, o) when `step` is a kernel storing every element of o from the same element of x."""
    if not isinstance(step, Kernel) or step.n_reduce or len(step.stores) != 1:
        return None
    st = step.stores[0]
    v = st.value
    if st.reduce is not None or not isinstance(v, Load) or v.offset != st.offset or v.buffer == st.buffer:
        return None
    bx, bo = kp.buffers.get(v.buffer), kp.buffers.get(st.buffer)
    if bx is None or bo is None or bx.shape != bo.shape or bx.dtype != bo.dtype or v.dtype != bo.dtype:
        return None
    size = math.prod(bo.shape)
    if math.prod(step.domain) != size or not size:
        return None
    lo, hi = ix.value_range(st.offset, step.domain)
    if lo != 0 or hi != size - 1 or not _injective(st.offset, step.domain):
        return None  # n distinct offsets in [0, n): every element, once
    return v.buffer, st.buffer


def _only_reads(step: Any, b: int) -> bool:
    """Whether `step` reads buffer `b` and never writes it (a kernel's loads, a library input)."""
    if isinstance(step, LibraryCall):
        return b in step.inputs and b not in step.outputs
    if isinstance(step, Kernel):
        return all(s.buffer != b for s in step.stores)
    return False  # loops, branches, row kernels: not looked into


def _update_reads_safe(step: Any, x: int, o: int) -> bool:
    """Whether kernel `step`, the first writer of o after the copy, computes the same values when
    its loads of x read o instead: its one store into o is injective, and every load of x or o
    is at the store's offset and evaluated before that store (the element this iteration
    writes, read before it is written) or at offsets no iteration stores."""
    if not isinstance(step, Kernel) or step.n_reduce:
        return False
    stores = [s for s in step.stores if s.buffer in (x, o)]
    if len(stores) != 1 or stores[0].buffer != o or stores[0].reduce is not None:
        return False
    target = stores[0].offset
    if not _injective(target, step.domain):
        return False
    read_before = _read_before_store(step, stores[0])
    for nd in postorder([s.value for s in step.stores]):
        if not isinstance(nd, Load) or nd.buffer not in (x, o):
            continue
        if nd.offset == target and nd in read_before:
            continue
        if not _disjoint(nd.offset, target, step.domain):  # a gather's base reads at -1: never disjoint
            return False
    return True


def _read_before_store(step: Kernel, store: Store) -> set:
    """The nodes a point of `step` has computed when it executes `store`: the values of that store
    and of the stores before it. The renderers run a point's stores in list order, each value's
    nodes computed once per point (the CPU's memo) or all before any store (CUDA's `point`), so
    a load reached only from a later store reads memory after `store` wrote it. (A kernel from
    merge_siblings: `s = p[1:3].sum()` fused after `q[1:3] = 0`, q and p one buffer, read 0s.)"""
    k = next(i for i, s in enumerate(step.stores) if s is store)
    return set(postorder([s.value for s in step.stores[:k + 1]]))


def _linear(a: Aff) -> bool:
    return all(atom[0] == "i" for atom, _ in a.terms)


def _injective(a: Aff, domain: tuple[int, ...]) -> bool:
    """Whether distinct points of `domain` map to distinct offsets (proved, or enumerated)."""
    if _linear(a):
        # Mixed radix: each coefficient exceeds the span of all smaller ones together.
        used = {atom[1] for atom, _ in a.terms}
        if any(domain[d] > 1 and d not in used for d in range(len(domain))):
            return False  # a loop variable the offset does not depend on: repeated offsets
        spans = sorted((abs(c), domain[atom[1]]) for atom, c in a.terms if domain[atom[1]] > 1)
        reach = 0
        for c, n in spans:
            if c <= reach:
                break
            reach += c * (n - 1)
        else:
            return True
    values = _enumerate(a, domain)
    return values is not None and np.unique(values).size == values.size


def _disjoint(a: Aff, b: Aff, domain: tuple[int, ...]) -> bool:
    """Whether no point of `domain` maps through `a` to an offset some point maps to through `b`."""
    if any(atom[0] == "val" for atom, _ in a.terms + b.terms):
        return False  # run-time starts: not decided here
    a_lo, a_hi = ix.value_range(a, domain)
    b_lo, b_hi = ix.value_range(b, domain)
    if a_lo < 0 or b_lo < 0:
        return False  # a gather's base (GATHER_BASE) or a value read: never an element's offset
    if a_hi < b_lo or b_hi < a_lo:
        return True
    if _linear(a) and _linear(b) and a.terms == b.terms:
        # a - b is a constant d; an offset is shared only when sum(c * (i - j)) == d has a
        # solution, impossible when d is not a multiple of the coefficients' gcd.
        g = 0
        for atom, c in a.terms:
            if domain[atom[1]] > 1:
                g = math.gcd(g, abs(c))
        d = a.const - b.const
        if g and d % g:
            return True
    va, vb = _enumerate(a, domain), _enumerate(b, domain)
    return va is not None and vb is not None and not np.intersect1d(va, vb).size


def _enumerate(a: Aff, domain: tuple[int, ...]) -> np.ndarray | None:
    """The offsets of `a` at every point of `domain`, flattened; None when too many or when the
    map reads run-time values."""
    if math.prod(domain) > _ENUMERATE_LIMIT:
        return None
    grids = np.indices(domain, dtype=np.int64).reshape(len(domain), -1) if domain else np.zeros((0, 1), np.int64)

    def value(x: Aff) -> np.ndarray | None:
        total = np.full(grids.shape[1], x.const, dtype=np.int64)
        for atom, c in x.terms:
            if atom[0] == "i":
                total += c * grids[atom[1]]
                continue
            if atom[0] == "val":
                return None
            inner = value(atom[1])
            if inner is None:
                return None
            total += c * (inner // atom[2] if atom[0] == "div" else inner % atom[2])
        return total

    return value(a)


# -- renaming a buffer in every step ---------------------------------------------------------

def _rename(step: Any, old: int, new: int) -> Any:
    """`step` with buffer `old` named `new` everywhere (sub-steps of loops and branches too).
    Merged buffers have at least one dimension, so they are never a run-time start inside an
    index map (those are 0-d)."""
    def r(b: Any) -> Any:
        return new if b == old else b

    if isinstance(step, Kernel):
        def leaf(nd: Any) -> Any:
            return Load(new, nd.offset, nd.dtype) if isinstance(nd, Load) and nd.buffer == old else nd

        rebuilt = rebuild([s.value for s in step.stores], leaf)
        stores = [_store_to(s, r(s.buffer), rebuilt[id(s.value)]) for s in step.stores]
        return Kernel(step.name, step.domain, step.n_reduce, stores, step.graph_ops)
    if isinstance(step, RowKernel):
        return dataclasses.replace(step, phases=[_rename(k, old, new) for k in step.phases],
                                   scratch={r(b): n for b, n in step.scratch.items()})
    if isinstance(step, LibraryCall):
        return dataclasses.replace(step, inputs=[r(b) for b in step.inputs], outputs=[r(b) for b in step.outputs])
    if isinstance(step, LoopStep):
        carries = [dataclasses.replace(c, cur=r(c.cur), nxt=r(c.nxt), init=r(c.init), out=r(c.out), spare=r(c.spare))
                   for c in step.carries]
        return dataclasses.replace(step, carries=carries, body=[_rename(s, old, new) for s in step.body],
                                   cond=[_rename(s, old, new) for s in step.cond], index=r(step.index),
                                   lower=r(step.lower), upper=r(step.upper), cond_out=r(step.cond_out))
    if isinstance(step, BranchStep):
        return dataclasses.replace(step, index=r(step.index), outs=[r(b) for b in step.outs],
                                   operands=[r(b) for b in step.operands],
                                   branches=[[_rename(s, old, new) for s in br] for br in step.branches])
    raise TypeError(f"coalesce: unknown step {type(step).__name__}")  # excluded by _KNOWN_STEPS


def _store_to(s: Store, buffer: int, value: Any) -> Store:
    return dataclasses.replace(s, buffer=buffer, value=value)
