"""Row fusion: kernels that iterate the same rows become one `RowKernel`.

Softmax, layer norm and variance are chains of reductions over the same rows and elementwise
kernels over the same rows; run separately, each pass streams the whole array through memory.
Fused, every row is read from memory once and stays in cache for the later phases, and
temporaries that live within a row shrink to one row of stack ("scratch").

A kernel joins a group when its outer loops equal the group's rows and everything it reads
from an earlier phase of the group belongs to the same row (checked on the index maps).
"""
from __future__ import annotations

import numpy as np

from ..ir.types import AType
from . import index as ix
from .index import Aff
from . import split
from .kernel_ir import (Buffer, Kernel, KernelProgram, LibraryCall, Load, RowKernel, Store, follows_numpy_blocks,
                        map_affs_by_buffer, rebuild)
from .loops import touched_buffers
from .split import kernel_computes

# Stack bytes all scratch rows of one row kernel may take (threads have 8 MiB stacks here; rows
# this small also stay in L2).
MAX_SCRATCH_BYTES = 256 * 1024


def _in_memory(kernel: Kernel) -> bool:
    return kernel.n_reduce == 0 and any(s.reduce for s in kernel.stores)


def _joins(kernel: object, outer: tuple[int, ...]) -> bool:
    if not isinstance(kernel, Kernel) or _in_memory(kernel):
        return False
    n = len(outer)
    if kernel.n_reduce:
        return kernel.kept == outer
    # An elementwise kernel over exactly the rows is the reduction's epilogue (a phase with no
    # inner loop).
    return kernel.domain[:n] == outer


def _row_split(offset: Aff, outer: tuple[int, ...], row_size: int) -> bool:
    """offset == row_size * (C-order index of the outer loops) + inner, 0 <= inner < row_size?"""
    n = len(outer)
    expected = ix.scale(ix.linearize([ix.var(d) for d in range(n)], outer), row_size)
    for d in range(n):
        if offset.coef(d) != expected.coef(d):
            return False
    inner = ix.add(offset, ix.scale(expected, -1))
    if any(d < n for d in inner.loop_vars()):
        return False
    return True


def _inner_in_row(offset: Aff, outer: tuple[int, ...], row_size: int, domain: tuple[int, ...]) -> bool:
    n = len(outer)
    expected = ix.scale(ix.linearize([ix.var(d) for d in range(n)], outer), row_size)
    inner = ix.add(offset, ix.scale(expected, -1))
    lo, hi = ix.value_range(inner, domain)
    return 0 <= lo and hi < row_size


def _row_local(buf: Buffer, offsets: list[tuple[Aff, tuple[int, ...]]], outer: tuple[int, ...]) -> bool:
    rows = 1
    for n in outer:
        rows *= n
    size = AType(buf.shape, buf.dtype).size
    if rows == 0 or size % rows:
        return False
    row_size = size // rows
    return all(_row_split(off, outer, row_size) and _inner_in_row(off, outer, row_size, dom)
               for off, dom in offsets)


def _group_ok(group: list[Kernel], outer: tuple[int, ...], buffers: dict[int, Buffer]) -> bool:
    """Whether the phases may run row by row: every buffer a phase reads after an earlier phase
    wrote it (read after write), or writes after an earlier phase read or wrote it (write after
    read, write after write: an in-place update of an array the row kernel also reads), is
    accessed by all of them within one row only."""
    written: dict[int, list[tuple[Aff, tuple[int, ...]]]] = {}
    accessed: dict[int, list[tuple[Aff, tuple[int, ...]]]] = {}
    for phase in group:
        for bid, offs in phase.loads().items():
            if bid in written and not _row_local(buffers[bid], written[bid] + [(o, phase.domain) for o in offs], outer):
                return False
        for st in phase.stores:
            if st.buffer in accessed and not _row_local(buffers[st.buffer], accessed[st.buffer] + [(st.offset, phase.domain)], outer):
                return False
        for bid, offs in phase.loads().items():
            accessed.setdefault(bid, []).extend((o, phase.domain) for o in offs)
        for st in phase.stores:
            written.setdefault(st.buffer, []).append((st.offset, phase.domain))
            accessed.setdefault(st.buffer, []).append((st.offset, phase.domain))
    return True


def _make_row_kernel(group: list[Kernel], outer: tuple[int, ...], kp_buffers: dict[int, Buffer],
                     touched_outside: set[int], outputs: set[int]) -> RowKernel:
    rows = 1
    for n in outer:
        rows *= n
    written = {st.buffer for phase in group for st in phase.stores}
    scratch: dict[int, int] = {}
    for bid in written:
        buf = kp_buffers[bid]
        if buf.role != "temp" or bid in touched_outside or bid in outputs:
            continue
        row_size = AType(buf.shape, buf.dtype).size // max(rows, 1)
        used = sum(n * kp_buffers[b].dtype.itemsize for b, n in scratch.items())
        if used + row_size * buf.dtype.itemsize <= MAX_SCRATCH_BYTES:
            scratch[bid] = row_size
    for bid in scratch:  # no longer an array the runtime allocates
        b = kp_buffers[bid]
        kp_buffers[bid] = Buffer(b.id, b.shape, b.dtype, "scratch", b.position)
    phases = [_drop_outer(phase, scratch, len(outer)) for phase in group]
    ops: dict[str, None] = {}  # ordered and unique, in linear time
    for phase in group:
        ops.update(dict.fromkeys(phase.graph_ops))
    return RowKernel(f"{group[0].name}_rows", outer, phases, scratch, list(ops))


def _drop_outer(kernel: Kernel, scratch: dict[int, int], n_outer: int) -> Kernel:
    """Scratch buffers hold one row: index them by the inner part of their offsets only."""
    if not scratch:
        return kernel
    zero = {d: ix.const(0) for d in range(n_outer)}
    return map_affs_by_buffer(kernel, lambda bid, a: ix.substitute(a, zero, kernel.domain) if bid in scratch else a)


def fuse_rows(kp: KernelProgram) -> KernelProgram:
    """Group consecutive row-compatible kernels (see module doc) into RowKernels."""
    steps = kp.steps
    # Every step that reads or writes each buffer: a buffer another step touches is not the
    # group's own, so it cannot shrink to row scratch (a concatenate writes its result in one
    # kernel per operand; one of them may join a row kernel while the others stay outside).
    touchers: dict[int, set[int]] = {}
    for i, step in enumerate(steps):
        for b in touched_buffers(step):
            touchers.setdefault(b, set()).add(i)
    outputs = set(kp.outputs)
    new_steps: list = []
    i = 0
    while i < len(steps):
        k = steps[i]
        # A kernel too large for one function is split later (fusion/split.py); it stays out
        # of row kernels, whose phases are not split.
        if isinstance(k, Kernel) and k.n_reduce and k.kept and kernel_computes(k) <= split.MAX_KERNEL_COMPUTES:
            outer = k.kept
            group = [k]
            j = i + 1
            while (j < len(steps) and _joins(steps[j], outer) and kernel_computes(steps[j]) <= split.MAX_KERNEL_COMPUTES
                   and _group_ok(group + [steps[j]], outer, kp.buffers)):
                group.append(steps[j])
                j += 1
            if len(group) > 1:
                inside = set(range(i, j))
                touched_outside = {b for b, ts in touchers.items() if ts - inside}
                new_steps.append(_make_row_kernel(group, outer, kp.buffers, touched_outside, outputs))
                i = j
                continue
        new_steps.append(k)
        i += 1
    kp.steps = new_steps
    return kp


def merge_siblings(kp: KernelProgram) -> KernelProgram:
    """Multi-output kernels: consecutive kernels over the same loops (same domain, same reduced
    loops), none reading what an earlier one of them writes, become one kernel with several
    stores, so shared inputs are read once (e.g. `x + 1, x * 2`, or `x.sum(), x.max()`)."""
    merged: list = []  # steps, and _Group for a multi-output kernel being grown in place
    for step in kp.steps:
        prev = merged[-1] if merged else None
        if not (isinstance(step, Kernel) and isinstance(prev, (Kernel, _Group)) and step.domain == prev.domain
                and not _in_memory(step) and not (isinstance(prev, Kernel) and _in_memory(prev))):
            merged.append(step)
            continue
        group = prev if isinstance(prev, _Group) else _Group(prev)
        if not group.same_blocks(step):
            merged.append(step)
            continue
        loads = step.loads()
        if not group.no_write_hazard(step):
            merged.append(step)
            continue
        if not (set(loads) & group.written) and (
                step.n_reduce == group.n_reduce or _elementwise(step) or group.elementwise):
            group.add(step.stores, step)
        elif _absorbable(group, step, loads):
            group.add(_absorbed_stores(group, step), step, name=step.name)
        else:
            merged.append(step)
            continue
        merged[-1] = group
    kp.steps = [m.kernel() if isinstance(m, _Group) else m for m in merged]
    return drop_dead_stores(kp)


class _Group:
    """A multi-output kernel under construction (see merge_siblings): stores, the buffers
    they write and the graph ops grow in place, so merging k kernels costs O(k), not O(k^2)."""

    def __init__(self, first: Kernel) -> None:
        self.name, self.domain, self.n_reduce = first.name, first.domain, first.n_reduce
        self.stores: list[Store] = []
        self.written: set[int] = set()
        self.read: dict[int, set] = {}  # buffer -> the offsets the group loads it at
        self.values: dict[int, object] = {}  # non-reduce stores: buffer -> value (the last one)
        self.offsets: dict[int, Aff] = {}
        self.reduced: set[int] = set()
        self.blocks: set[str] = set()  # NumPy block structures its reductions follow
        self.ops: dict[str, None] = {}
        self.elementwise = True
        self.add(first.stores, first)

    def same_blocks(self, step: Kernel) -> bool:
        """One loop nest follows one NumPy block structure (Store.block): reductions whose
        order depends on it may share a loop only when their blocks agree."""
        return len(self.blocks | {repr(s.block) for s in step.stores if follows_numpy_blocks(s)}) <= 1

    def no_write_hazard(self, step: Kernel) -> bool:
        """One loop runs the group's stores and `step`'s per element, interleaved; that is only
        what the kernels computed one after the other when every buffer `step` stores into,
        and that the group already reads or writes, is accessed at the same offset by all of
        them (an in-place update writing x[i] right after reading x[i]). Otherwise a later
        iteration would read or overwrite an element `step` already stored (an update through
        a reversed view stores x[2 - i] while the group copies x[i])."""
        for st in step.stores:
            b = st.buffer
            if b in self.written and (b in self.reduced or st.reduce or self.offsets.get(b) != st.offset
                                      or any(s.buffer == b and s.offset != st.offset for s in self.stores)):
                return False
            if any(off != st.offset for off in self.read.get(b, ())):
                return False
        return True

    def add(self, stores: list[Store], kernel: Kernel, name: str | None = None) -> None:
        for bid, offs in kernel.loads().items():
            self.read.setdefault(bid, set()).update(offs)
        self.stores.extend(stores)
        for st in stores:
            self.written.add(st.buffer)
            if st.reduce:
                self.reduced.add(st.buffer)
            else:
                self.values[st.buffer], self.offsets[st.buffer] = st.value, st.offset
            if follows_numpy_blocks(st):
                self.blocks.add(repr(st.block))
        self.ops.update(dict.fromkeys(kernel.graph_ops))
        self.n_reduce = max(self.n_reduce, kernel.n_reduce)
        self.elementwise = self.elementwise and _elementwise(kernel)
        if name is not None:
            self.name = name

    def kernel(self) -> Kernel:
        return Kernel(self.name, self.domain, self.n_reduce, self.stores, list(self.ops))


def _elementwise(kernel: Kernel) -> bool:
    return not kernel.n_reduce and not any(s.reduce for s in kernel.stores)


def _absorbable(prev: _Group, step: Kernel, loads: dict[int, list[Aff]]) -> bool:
    """An elementwise kernel followed by a kernel over the same loops that reads what it wrote
    exactly where it wrote it (`z = f(x); z * 2, z.sum()`): one loop can compute the value once,
    store it and use it."""
    if not (prev.n_reduce == step.n_reduce or prev.elementwise or _elementwise(step)):
        return False
    if any(b in prev.reduced for b in loads):
        return False  # a reduction's result exists only after the loop
    reads = {b: offs for b, offs in loads.items() if b in prev.offsets}
    return bool(reads) and all(off == prev.offsets[b] for b, offs in reads.items() for off in offs)


def drop_dead_stores(kp: KernelProgram) -> KernelProgram:
    """Stores to temporaries that no step reads any more (their readers absorbed the value)."""
    read: set[int] = set()
    for step in kp.steps:
        if isinstance(step, LibraryCall):
            read |= set(step.inputs)
        else:
            for phase in (step.phases if isinstance(step, RowKernel) else [step]):
                read |= set(phase.loads())
    dead = {b for b, buf in kp.buffers.items() if buf.role == "temp" and b not in read}
    if not dead:
        return kp
    steps = []
    for step in kp.steps:
        if isinstance(step, Kernel):
            stores = [s for s in step.stores if s.buffer not in dead]
            if not stores:
                continue
            step = Kernel(step.name, step.domain, step.n_reduce, stores, step.graph_ops)
        steps.append(step)
    still_written: set[int] = set()
    for s in steps:
        if isinstance(s, (RowKernel, LibraryCall)):
            still_written |= _step_writes(s)
    for b in dead - still_written:
        del kp.buffers[b]
    kp.steps = steps
    return kp


def _step_writes(step: object) -> set[int]:
    if isinstance(step, LibraryCall):
        return set(step.outputs)
    return {s.buffer for p in step.phases for s in p.stores}


def _absorbed_stores(prev: _Group, step: Kernel) -> list[Store]:
    """step's stores, reading prev's values instead of loading them back: one loop stores
    prev's values and reduces them in a register, instead of writing them and reading them
    back."""
    values = prev.values

    def leaf(nd):
        return values[nd.buffer] if isinstance(nd, Load) and nd.buffer in values else nd

    new = rebuild([s.value for s in step.stores], leaf)
    return [s.with_value(new[id(s.value)]) for s in step.stores]


SPLIT_MIN_ELEMENTS = 1 << 20
PAIRWISE_LEAF = 128  # NumPy's PW_BLOCKSIZE
SPLIT_PARTS = (64, 32, 16, 8)


def _split_parts(step: Kernel) -> int | None:
    """How many chunk partials a whole-array reduction may be split into without leaving
    NumPy's order: integer, bool and max/min reductions split anywhere; a float sum only where
    NumPy's pairwise recursion itself halves exactly down to the chunks (a power-of-two count
    of chunks that are multiples of 8 and longer than a pairwise leaf), so the partials combine
    as a balanced tree; float products (sequential in NumPy) and float16 sums never."""
    n = step.domain[0]
    for parts in SPLIT_PARTS:
        if n % parts:
            continue
        chunk = n // parts
        ok = True
        for s in step.stores:
            dt = s.value.dtype
            if s.reduce == "prod" and dt.kind == "f" or (s.reduce == "sum" and dt == np.float16):
                return None
            if follows_numpy_blocks(s) and not (s.block == n and chunk % 8 == 0 and chunk > PAIRWISE_LEAF):
                ok = False
        if ok:
            return parts
    return None


def split_full_reductions(kp: KernelProgram) -> KernelProgram:
    """A reduction of a whole large array (no kept loop) cannot be split across threads as it
    is: reduce it in two stages instead, `parts` partial results over contiguous chunks (a
    kernel whose outer loop is kept, hence splittable), then the partials. Only when a chunk
    count divides the length (no ragged tail) and NumPy's order allows it (_split_parts);
    argmax/argmin keep their single pass."""
    steps: list = []
    for step in kp.steps:
        if not (isinstance(step, Kernel) and len(step.domain) == 1 and step.n_reduce == 1
                and isinstance(step.domain[0], int) and step.domain[0] >= SPLIT_MIN_ELEMENTS
                and any(s.reduce for s in step.stores)
                and all(s.reduce in (None, "sum", "prod", "max", "min", "and", "or") for s in step.stores)):
            steps.append(step)
            continue
        n = step.domain[0]
        parts = _split_parts(step)
        if parts is None:
            steps.append(step)
            continue
        chunk = n // parts
        flat = {0: ix.add(ix.scale(ix.var(0), chunk), ix.var(1))}
        first = map_affs_by_buffer(Kernel(step.name, (parts, chunk), 1, step.stores, step.graph_ops),
                                   lambda _bid, a: ix.substitute(a, flat, (parts, chunk)))
        partial_stores, final_stores = [], []
        next_id = max(kp.buffers) + 1
        for st in first.stores:
            if st.reduce is None:  # an elementwise output computed in the same loop
                partial_stores.append(st)
                continue
            bid, next_id = next_id, next_id + 1
            dt = st.value.dtype
            kp.buffers[bid] = Buffer(bid, (parts,), dt, "temp")
            pairwise = follows_numpy_blocks(st)
            free = "free" if st.block == "free" else None  # a dot's sum stays free (ir/symdim_prims.py)
            partial_stores.append(Store(bid, ix.var(0), st.value, st.reduce, block=chunk if pairwise else free))
            final_stores.append(Store(st.buffer, st.offset, Load(bid, ix.var(0), dt), st.reduce,
                                      block="tree" if pairwise else free))
        steps.append(Kernel(f"{step.name}_partials", (parts, chunk), 1, partial_stores, step.graph_ops))
        steps.append(Kernel(f"{step.name}_combine", (parts,), 1, final_stores, []))
    kp.steps = steps
    return kp
